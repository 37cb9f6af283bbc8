import json

import numpy as np
import pytest

from shortcutlab.utils import io, rng


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError, match="^crash$"):
        with io.atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("crash")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_write_json_is_byte_stable(tmp_path):
    a = io.write_json(tmp_path / "a.json", {"b": 1, "a": [1, 2]})
    b = io.write_json(tmp_path / "b.json", {"a": [1, 2], "b": 1})
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text()) == {"a": [1, 2], "b": 1}


def test_rng_streams_depend_only_on_key():
    x = rng.rng(3, "train", 5).random(4)
    y = rng.rng(3, "train", 5).random(4)
    z = rng.rng(3, "val", 5).random(4)
    assert np.array_equal(x, y)
    assert not np.array_equal(x, z)
    assert rng.torch_seed(1, "a") == rng.torch_seed(1, "a") != rng.torch_seed(1, "b")


def test_a_name_near_the_file_system_limit_can_be_written_atomically(tmp_path):
    target = tmp_path / ("r" * 250 + ".csv")
    io.write_text(target, "x")
    assert target.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_failed_write_names_the_users_path_not_the_temporary(tmp_path):
    import errno

    target = tmp_path / "table.csv"
    try:
        with io.atomic_path(target) as tmp:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
    except OSError as exc:
        assert exc.filename == str(target) and exc.errno == errno.ENOSPC
    else:
        raise AssertionError("the error was swallowed")
    assert list(tmp_path.iterdir()) == []


def test_rng_streams_depend_on_the_seed():
    """The seed is a component of every stream: two seeds, same key, two streams (a seed the
    derivation dropped would give every training seed the same shuffles and dropout)."""
    assert not np.array_equal(rng.rng(3, "train", 5).random(4), rng.rng(4, "train", 5).random(4))
    assert not np.array_equal(rng.rng(0).random(4), rng.rng(1).random(4))
    assert rng.torch_seed(1, "a") != rng.torch_seed(2, "a")


def test_rng_streams_are_the_same_in_another_process():
    """Same seed, same bytes across processes: a string key must not go through Python's
    ``hash``, which is salted per process (PYTHONHASHSEED)."""
    import os
    import subprocess
    import sys

    code = ("from shortcutlab.utils import rng; "
            "print(rng.rng(7, 'train', 2).random(3).tolist(), rng.torch_seed(7, 'val'))")
    here = f"{rng.rng(7, 'train', 2).random(3).tolist()} {rng.torch_seed(7, 'val')}"
    for salt in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": salt})
        assert out.stdout.strip() == here


def test_a_streamed_npz_with_more_rows_than_declared_is_refused(tmp_path):
    """The header is written before the rows: extra rows would sit in the file unread (np.load
    reads the declared shape), dropped without a word; refused like too few, nothing left."""
    data = np.arange(6 * 2, dtype=np.uint8).reshape(6, 2)
    with pytest.raises(ValueError, match="6 rows written for an array of 5"):
        io.write_npz_streaming(tmp_path / "s.npz", "x", (5, 2), [data[:3], data[3:]])
    assert list(tmp_path.iterdir()) == []
    out = io.write_npz_streaming(tmp_path / "s.npz", "x", (6, 2), [data[:3], data[3:]])
    with np.load(out) as z:
        assert np.array_equal(z["x"], data)


@pytest.mark.parametrize("value", ["0", "abc", "1.5", "-3"])
def test_a_bad_unzip_cap_is_refused_not_taken_for_the_default(tmp_path, monkeypatch, value):
    import zipfile

    from shortcutlab.utils.io import read_zip_member

    monkeypatch.setenv("SHORTCUTLAB_MAX_UNZIPPED_MB", value)
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("m.json", b"[]")
    with zipfile.ZipFile(path) as zf, pytest.raises(LookupError,
                                                    match="SHORTCUTLAB_MAX_UNZIPPED_MB="):
        read_zip_member(zf, zf.getinfo("m.json"), "m.json", LookupError)


def test_the_unzip_cap_the_user_sets_holds_and_unset_is_the_default(tmp_path, monkeypatch):
    import zipfile

    from shortcutlab.utils.io import read_zip_member

    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("m.json", b"x" * (2**20 + 1))
    monkeypatch.delenv("SHORTCUTLAB_MAX_UNZIPPED_MB", raising=False)
    with zipfile.ZipFile(path) as zf:
        assert read_zip_member(zf, zf.getinfo("m.json"), "m", LookupError) == b"x" * (2**20 + 1)
        monkeypatch.setenv("SHORTCUTLAB_MAX_UNZIPPED_MB", " 1 ")
        with pytest.raises(LookupError, match="the limit is 1 MB"):
            read_zip_member(zf, zf.getinfo("m.json"), "m", LookupError)


def test_a_member_whose_header_understates_its_size_is_refused_as_damaged(tmp_path):
    """The cap holds against a lying header: no more than the header's size is unpacked, and
    the member then fails its CRC check."""
    import struct
    import zipfile

    from shortcutlab.utils.io import read_zip_member

    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("m.json", b"x" * (3 * 2**20))
    raw = bytearray(path.read_bytes())
    struct.pack_into("<I", raw, raw.find(b"PK\x01\x02") + 24, 1000)  # central directory
    struct.pack_into("<I", raw, raw.find(b"PK\x03\x04") + 22, 1000)  # local header
    path.write_bytes(bytes(raw))
    with zipfile.ZipFile(path) as zf, pytest.raises(LookupError, match="m: damaged zip member"):
        read_zip_member(zf, zf.getinfo("m.json"), "m", LookupError)


def test_yaml_aliases_are_refused_however_small_the_file():
    import yaml

    assert io.load_yaml("a: 1\nb: [2, 3]\n") == {"a": 1, "b": [2, 3]}
    with pytest.raises(yaml.YAMLError, match="aliases"):
        io.load_yaml("a: &x 1\nb: *x\n")


def test_a_streamed_npz_chunk_of_another_dtype_is_refused(tmp_path):
    chunks = [np.zeros((2, 3), np.uint8), np.ones((1, 3), np.float32)]
    with pytest.raises(ValueError, match="chunk of float32"):
        io.write_npz_streaming(tmp_path / "a.npz", "x", (3, 3), chunks)
    assert not (tmp_path / "a.npz").exists()
    io.write_npz_streaming(tmp_path / "a.npz", "x", (3, 3), chunks[:1] + [np.ones((1, 3),
                                                                           np.uint8)])
    assert np.load(tmp_path / "a.npz")["x"].tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 1]]
