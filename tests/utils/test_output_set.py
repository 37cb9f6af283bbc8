"""utils.io.output_set: the files of one command land together or not at all."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from shortcutlab.utils.io import output_set


def test_all_files_appear_together_when_the_block_ends(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "sub" / "b.txt"
    with output_set() as outputs:
        outputs.write_json(a, {"x": 1})
        outputs.write_text(b, "new")
        assert not a.exists() and not b.exists()  # nothing in place before the end
    assert a.read_text() == '{\n  "x": 1\n}\n' and b.read_text() == "new"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.json", "b.txt", "sub"]


def test_a_failure_leaves_old_files_and_no_temporaries(tmp_path: Path) -> None:
    old = tmp_path / "metrics.json"
    old.write_text("old")
    with pytest.raises(OSError, match="No space left") as info, output_set() as outputs:
        outputs.write_text(old, "new")
        tmp = outputs.path(tmp_path / "index.html")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
    assert info.value.filename == str(tmp_path / "index.html")  # the user's path
    assert old.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_mathtext_is_off_for_names_with_dollars() -> None:
    from matplotlib.figure import Figure

    from shortcutlab.utils.html import figure_to_png, literal_text

    fig = Figure()
    fig.add_subplot().set_title("$\\frac{$")  # made before the block: still literal
    assert figure_to_png(fig)[:4] == b"\x89PNG"
    with literal_text():
        other = Figure()
        ax = other.add_subplot()
        ax.bar(["$x$", "a$\\frac{$"], [1, 2])  # tick labels made while drawing
        other.tight_layout()


def test_output_set_json_is_byte_identical_to_write_json(tmp_path: Path) -> None:
    """``outputs.write_json`` writes JSON "as write_json writes it": sorted keys, so equal
    objects give equal bytes whatever their insertion order (hashes and diffs stay stable)."""
    from shortcutlab.utils.io import write_json

    obj = {"b": 1, "a": {"d": [1, 2], "c": None}}
    write_json(tmp_path / "ref.json", {"a": {"c": None, "d": [1, 2]}, "b": 1})
    with output_set() as outputs:
        outputs.write_json(tmp_path / "set.json", obj)
    assert (tmp_path / "set.json").read_bytes() == (tmp_path / "ref.json").read_bytes()
