"""Content fingerprints of local files and folders, so results never mix data sources."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from shortcutlab.errors import DataNotFoundError

_CHUNK = 1 << 20


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def content_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (relative names and contents, sorted;
    hidden files ignored). Equal content gives equal digests wherever it lies."""
    root = Path(path)
    if root.is_file():
        return _file_sha256(root)
    if not root.is_dir():
        raise DataNotFoundError(f"data path not found: {root}")
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        digest.update(rel.as_posix().encode() + b"\0" + _file_sha256(file).encode() + b"\n")
    return digest.hexdigest()
