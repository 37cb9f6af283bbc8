"""``content_digest``: the hash that names a job's input data. Equal content gives equal digests
wherever it lies; a change a job would see (a renamed or swapped file) changes it; what a job never
reads (hidden files and folders: ``.git``, ``.ipynb_checkpoints``) does not."""

from __future__ import annotations

import hashlib

import pytest

from shortcutlab.errors import DataNotFoundError
from shortcutlab.utils.digest import content_digest


def _folder(root, files: dict[str, bytes]):
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_a_file_digest_is_the_sha256_of_its_bytes(tmp_path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"abc")
    assert content_digest(path) == hashlib.sha256(b"abc").hexdigest()
    with pytest.raises(DataNotFoundError, match="not found"):
        content_digest(tmp_path / "missing")


def test_swapped_file_names_change_a_folder_digest(tmp_path) -> None:
    a = _folder(tmp_path / "a", {"train.npy": b"TRAIN", "test.npy": b"TEST"})
    b = _folder(tmp_path / "b", {"train.npy": b"TEST", "test.npy": b"TRAIN"})  # same bytes
    c = _folder(tmp_path / "c", {"train.npy": b"TRAIN", "test.npy": b"TEST"})
    assert content_digest(a) == content_digest(c)  # equal content, elsewhere: equal digest
    assert content_digest(a) != content_digest(b)
    d = _folder(tmp_path / "d", {"train.npy": b"TRAIN", "sub/test.npy": b"TEST"})
    assert content_digest(a) != content_digest(d)  # a moved file too


def test_hidden_files_and_folders_do_not_change_a_folder_digest(tmp_path) -> None:
    root = _folder(tmp_path / "data", {"x.npy": b"X", "sub/y.npy": b"Y"})
    before = content_digest(root)
    _folder(root, {".DS_Store": b"1", ".git/objects/ab": b"2",
                   "sub/.ipynb_checkpoints/y-checkpoint.npy": b"3"})
    assert content_digest(root) == before
    _folder(root, {"sub/z.npy": b"Z"})
    assert content_digest(root) != before
