"""Atomic file output: write to a temporary file beside the target, then rename.

A crash never leaves a file that looks complete.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(target: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``target`` on success.

    ``suffix`` keeps an extension on the temporary name for libraries that infer the format
    from it (e.g. ``.png``, ``.parquet``).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; results are ordinary files
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(target: str | os.PathLike[str], text: str) -> Path:
    """Atomically write a text file (UTF-8)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(target)


def write_bytes(target: str | os.PathLike[str], data: bytes) -> Path:
    """Atomically write a binary file."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return Path(target)


def write_json(target: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> Path:
    """Atomically write JSON (sorted keys, so equal objects give equal bytes)."""
    return write_text(target, json.dumps(obj, indent=indent, sort_keys=True) + "\n")


def write_npz(target: str | os.PathLike[str], **arrays: np.ndarray) -> Path:
    """Atomically write an uncompressed .npz archive."""
    with atomic_path(target, suffix=".npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    return Path(target)
