"""Atomic file output (write to a temporary file beside the target, then rename: a crash never
leaves a file that looks complete; :func:`output_set` does the same for the several files of one
command, all or none) and bounded reading of untrusted files (YAML without aliases,
zip members under a size cap)."""

from __future__ import annotations

import errno
import io
import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

_LONG_NAME = 200


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
    # a name near the 255-byte limit would not leave room for the temporary's additions
    stem = target.name if len(target.name.encode()) <= _LONG_NAME else target.name[:64]
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{stem}.", suffix=suffix)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; results are ordinary files
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as exc:  # name the user's path, not our temporary one
        if exc.errno is not None and str(tmp_path) in (str(exc.filename), str(exc.filename2)):
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


class OutputSet:
    """The files of one command, staged under temporary names beside their targets and renamed
    into place together by :func:`output_set`; see there."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []

    def path(self, target: str | os.PathLike[str], suffix: str = "") -> Path:
        """A temporary path beside ``target`` to write it to (``suffix`` as in
        :func:`atomic_path`); renamed onto ``target`` when the whole set is written."""
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        stem = target.name if len(target.name.encode()) <= _LONG_NAME else target.name[:64]
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{stem}.", suffix=suffix)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())
        self._staged.append((Path(tmp), target))
        return Path(tmp)

    def write_text(self, target: str | os.PathLike[str], text: str) -> Path:
        self.path(target).write_text(text, encoding="utf-8")
        return Path(target)

    def write_bytes(self, target: str | os.PathLike[str], data: bytes) -> Path:
        self.path(target).write_bytes(data)
        return Path(target)

    def write_json(self, target: str | os.PathLike[str], obj: Any,
                   indent: int | None = 2) -> Path:
        """JSON as :func:`write_json` writes it."""
        return self.write_text(target, json.dumps(obj, indent=indent, sort_keys=True) + "\n")

    def _commit(self) -> None:
        for tmp, target in self._staged:
            try:
                os.replace(tmp, target)
            except OSError as exc:  # name the user's path, not our temporary one
                raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc

    def _discard(self) -> None:
        for tmp, _ in self._staged:
            with suppress(OSError):
                tmp.unlink()


@contextmanager
def output_set() -> Iterator[OutputSet]:
    """Write several files all or none: inside the block, write each file to
    ``outputs.path(target)`` (or with ``outputs.write_text`` / ``write_bytes`` /
    ``write_json``); when the block ends normally every file is renamed onto its target, in the
    order staged. When the block raises (a writer fails, a full disk), every temporary is removed
    and no target is touched: old files stay as they were, no new one appears.

    The commit is a series of renames on the same file systems, which need no space and do not
    fail in practice; a process killed during it can leave part of the new set beside part of
    the old (temporaries of a killed process stay as hidden ``.<name>.*`` files).
    """
    outputs = OutputSet()
    try:
        yield outputs
        outputs._commit()
    except OSError as exc:  # a writer's error names our temporary: name the user's path
        for tmp, target in outputs._staged:
            if exc.errno is not None and str(tmp) in (str(exc.filename), str(exc.filename2)):
                raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise
    finally:
        outputs._discard()


def check_output_folder(folder: str | os.PathLike[str]) -> None:
    """Raise the ``OSError`` that writing files into ``folder`` would raise (a file where the
    folder goes, a path under a file, a folder one may not write to), creating nothing: a
    command refuses a bad ``--out`` before a long computation instead of after it."""
    path = Path(folder)
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():  # a path under a regular file
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


def check_output_file(target: str | os.PathLike[str]) -> None:
    """Raise the ``OSError`` that writing the file ``target`` would raise (a folder where the
    file goes, or what :func:`check_output_folder` finds for its folder), creating nothing."""
    path = Path(target)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    check_output_folder(path.parent)


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
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: allow_pickle
    return Path(target)


def write_npz_streaming(
    target: str | os.PathLike[str],
    name: str,
    shape: tuple[int, ...],
    chunks: Iterable[np.ndarray],
    arrays: Mapping[str, np.ndarray] | None = None,
    dtype: np.dtype | type = np.uint8,
) -> Path:
    """Atomically write an uncompressed .npz whose array ``name`` (``dtype``, ``shape``) arrives
    in ``chunks`` along its first axis, so it never has to be in memory at once; ``arrays`` are
    written whole after it. Same format as ``np.savez`` (``np.load`` reads it).

    Raises ``ValueError`` for a chunk of the wrong dtype or trailing shape, or when the chunks do
    not add up to ``shape[0]`` rows; nothing is left at ``target`` then.
    """
    want = np.dtype(dtype)
    rows, *trailing = (int(d) for d in shape)
    header = {"descr": np.lib.format.dtype_to_descr(want), "fortran_order": False,
              "shape": (rows, *trailing)}
    written = 0
    with atomic_path(target, suffix=".npz") as tmp:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array_header_2_0(fh, header)
                for chunk in chunks:
                    chunk = np.asarray(chunk)
                    if chunk.dtype != want or list(chunk.shape[1:]) != trailing:
                        raise ValueError(f"chunk of {chunk.dtype} {chunk.shape} for an array "
                                         f"of {want} {header['shape']}")
                    fh.write(np.ascontiguousarray(chunk).tobytes())
                    written += len(chunk)
            if written != rows:
                raise ValueError(f"{written} rows written for an array of {rows}")
            for key, value in (arrays or {}).items():
                with zf.open(f"{key}.npy", "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asanyarray(value), allow_pickle=False)
    return Path(target)


# ------------------------------------------------------------------ reading untrusted files


def read_text_file(path: str | os.PathLike[str], what: str, error: type[Exception]) -> str:
    """The UTF-8 text of the file ``path``; one that is not UTF-8 raises ``error`` naming it
    as ``what`` (e.g. "class map")."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save "
                    "it as UTF-8") from None


def read_json_file(path: str | os.PathLike[str], what: str, error: type[Exception]) -> Any:
    """The JSON value in the file ``path``; not UTF-8 or not JSON raises ``error`` naming it."""
    text = read_text_file(path, what, error)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise error(f"{what} {path}: not valid JSON ({exc})") from None


def read_csv_file(path: str | os.PathLike[str], what: str, error: type[Exception],
                  **kwargs: Any) -> Any:
    """``pandas.read_csv`` of the file ``path`` (``kwargs`` passed on); not UTF-8, empty or
    not CSV raises ``error`` naming it."""
    import pandas as pd

    text = read_text_file(path, what, error)
    try:
        return pd.read_csv(io.StringIO(text), **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise error(f"{what} {path}: not a readable CSV table ({exc})") from None


def _refuse_aliases() -> type:
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """PyYAML's safe loader that refuses aliases: ``*name`` references let a few hundred
        bytes expand to gigabytes (the "billion laughs" bomb)."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "YAML aliases (*name) are not accepted here; write the values "
                    "out", event.start_mark)
            return super().compose_node(parent, index)

    return NoAliasLoader


def load_yaml(text: str) -> Any:
    """Parse untrusted YAML (JSON is YAML) with the safe loader, refusing aliases so that a
    small file cannot expand without bound; errors are ``yaml.YAMLError``."""
    import yaml

    if "*" not in text:  # no alias possible: the fast C loader when there is one
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return yaml.load(text, Loader=_refuse_aliases())  # a SafeLoader subclass


UNZIP_LIMIT_ENV = "SHORTCUTLAB_MAX_UNZIPPED_MB"
DEFAULT_UNZIP_LIMIT_MB = 2048
SUSPICIOUS_RATIO, SUSPICIOUS_MB = 100, 16  # JSON compresses ~10:1; a bomb of zeros ~1000:1


def unzip_limit_mb(error: type[Exception] = ValueError) -> int | None:
    """The cap on one zip member's unpacked size in MB that the user set
    (:data:`UNZIP_LIMIT_ENV`; the ratio check is then off), None when unset (the default
    :data:`DEFAULT_UNZIP_LIMIT_MB` holds); a value that is no whole number >= 1 raises
    ``error``, so that a misspelt cap is never silently the default."""
    value = os.environ.get(UNZIP_LIMIT_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise error(f"{UNZIP_LIMIT_ENV}={value!r}: give the cap on an unzipped member as a "
                    "whole number of MB >= 1 (or unset it for the default)")
    return int(value)


@contextmanager
def open_zip(path: Path, error: type[Exception]) -> Iterator[zipfile.ZipFile]:
    """``zipfile.ZipFile(path)``; a damaged archive raises ``error`` naming ``path``."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise error(f"{path}: not a readable zip file ({exc})") from None
    with zf:
        yield zf


def read_zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str,
                    error: type[Exception]) -> bytes:
    """The unpacked bytes of member ``info``, refused with ``error`` (naming ``label``) when
    damaged, larger than the cap, or compressed so well that it is likely a zip bomb; the
    cap holds even when the member's header lies about its size (zipfile unpacks no more
    than the header says, and such a member fails its CRC check: damaged)."""
    chosen = unzip_limit_mb(error)
    cap = (chosen or DEFAULT_UNZIP_LIMIT_MB) * 2**20
    hint = (f"the limit is {cap // 2**20} MB; set {UNZIP_LIMIT_ENV}=<MB> to allow more if "
            "you trust the file")
    if info.file_size > cap:
        raise error(f"{label} unzips to {info.file_size / 2**20:.0f} MB; {hint}")
    ratio = info.file_size / max(info.compress_size, 1)
    if chosen is None and info.file_size > SUSPICIOUS_MB * 2**20 and ratio > SUSPICIOUS_RATIO:
        raise error(f"{label} unzips {ratio:.0f}:1 to {info.file_size / 2**20:.0f} MB, like a "
                    f"zip bomb; {hint}")
    try:  # zipfile unpacks no more than the header says (a lie fails its CRC check)
        return zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise error(f"{label}: damaged zip member ({exc})") from None
