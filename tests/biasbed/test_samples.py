"""``biasbed samples`` (the paper's Figure 1 from the user's folders): the figure, the seeded
draw from the right folders, and bad input refused with one line, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.biasbed.samples import sample_sets
from shortcutlab.cli.main import app
from tests.biasbed.conftest import write_folder

runner = CliRunner()


@pytest.fixture
def two_sets(tmp_path: Path) -> dict[str, Path]:
    """An ImageNet-layout folder (red and green WordNet ids) and a sketch folder (all blue)."""
    return {"imagenet": write_folder(tmp_path / "in", {"n01440764": 0, "n02102040": 1}, 4, 0),
            "sketch": write_folder(tmp_path / "sk", {"airplane": 2, "bear": 2, "cat": 2}, 3, 1)}


def _chosen(sets) -> list[list[str]]:
    return [[str(f) for f in s.files] for s in sets]


def test_figure_rows_show_each_folders_images(two_sets, tmp_path: Path) -> None:
    out = tmp_path / "fig1.png"
    res = runner.invoke(app, ["biasbed", "samples", "--train-dir",
                              f"imagenet={two_sets['imagenet']}", "--test-dir",
                              f"sketch={two_sets['sketch']}", "--per-set", "3", "--size", "16",
                              "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert [(s["role"], s["name"], s["images"], s["classes"]) for s in report["sets"]] == [
        ("train", "imagenet", 8, 2), ("test", "sketch", 9, 3)]
    for entry, root in zip(report["sets"], (two_sets["imagenet"], two_sets["sketch"]), strict=True):
        assert len(entry["files"]) == 3
        assert len({f["path"] for f in entry["files"]}) == 3  # drawn without replacement
        for f in entry["files"]:
            path = Path(f["path"])
            assert path.parent.parent == root and path.parent.name == f["class"] and path.is_file()
    # the picture: the first row is red/green ImageNet images, the second the blue sketches
    pixels = np.asarray(Image.open(out).convert("RGB"), dtype=float)
    top, bottom = pixels[: len(pixels) // 2], pixels[len(pixels) // 2 :]
    blue = [(half[..., 2] > 150) & (half[..., :2].max(axis=-1) < 100) for half in (top, bottom)]
    red_green = [(half[..., :2].max(axis=-1) > 150) & (half[..., 2] < 100)
                 for half in (top, bottom)]
    assert blue[1].sum() > 100 * blue[0].sum() + 100, "the sketch row shows no blue images"
    assert red_green[0].sum() > 100 * red_green[1].sum() + 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig1.png", "in", "sk"]  # no temporary


def test_same_seed_same_files_other_seed_others(two_sets) -> None:
    dirs = [f"{k}={v}" for k, v in two_sets.items()]
    first = _chosen(sample_sets(test_dirs=dirs, per_set=3, seed=0, size=16))
    assert first == _chosen(sample_sets(test_dirs=dirs, per_set=3, seed=0, size=16))
    assert first != _chosen(sample_sets(test_dirs=dirs, per_set=3, seed=1, size=16))
    # a folder's draw depends on the seed and that folder only
    assert first[1] == _chosen(sample_sets(test_dirs=dirs[1:], per_set=3, seed=0, size=16))[0]
    # fewer images than --per-set: all of them, each once (drawn without replacement)
    every = sample_sets(test_dirs=dirs[:1], per_set=32, size=16)[0].files
    assert sorted(every) == sorted(two_sets["imagenet"].glob("*/*.png")) and len(every) == 8


@pytest.mark.parametrize("case", ["missing folder", "no images", "no class folders",
                                  "malformed test", "malformed train", "name twice", "per-set 0",
                                  "per-set 33", "seed -1", "size 15", "size 513",
                                  "name of no folder", "name of named folders",
                                  "out folder missing", "out is a folder", "out format",
                                  "no folder"])
def test_bad_input_is_one_error_line_and_writes_nothing(two_sets, tmp_path: Path,
                                                        case: str) -> None:
    good = f"imagenet={two_sets['imagenet']}"
    out = tmp_path / "fig.png"
    empty = tmp_path / "empty"
    (empty / "n01440764").mkdir(parents=True)
    (empty / "n01440764" / "notes.txt").write_text("no image")
    (tmp_path / "flat").mkdir()
    args, fragment = {
        "missing folder": (["--test-dir", f"a={tmp_path / 'nope'}"], "does not exist"),
        "no images": (["--test-dir", f"a={empty}"], "has no image files in its class subfolders"),
        "no class folders": (["--test-dir", f"a={tmp_path / 'flat'}"], "has no class subfolders"),
        "malformed test": (["--test-dir", str(two_sets["imagenet"])],
                           "--test-dir expects NAME=DIR"),
        "malformed train": (["--train-dir", "=x"], "--train-dir expects DIR or NAME=DIR"),
        "name twice": (["--test-dir", good, "--test-dir", good], "name 'imagenet' is given twice"),
        "per-set 0": (["--test-dir", good, "--per-set", "0"],
                      "--per-set must be an integer >= 1 and <= 32 (got 0)"),
        "per-set 33": (["--test-dir", good, "--per-set", "33"],
                       "--per-set must be an integer >= 1 and <= 32 (got 33)"),
        "seed -1": (["--test-dir", good, "--seed", "-1"],
                    "'--seed'"),
        "size 15": (["--test-dir", good, "--size", "15"],
                    "--size must be an integer >= 16 and <= 512 (got 15)"),
        "size 513": (["--test-dir", good, "--size", "513"],
                     "--size must be an integer >= 16 and <= 512 (got 513)"),
        # --name names a --train-dir/--val-dir given as a bare DIR; with none it would be ignored
        "name of no folder": (["--test-dir", good, "--name", "sin"],
                              "--name 'sin' names a --train-dir/--val-dir given as DIR"),
        "name of named folders": (["--train-dir", good, "--name", "sin"],
                                  "--name 'sin' names a --train-dir/--val-dir given as DIR"),
        "out folder missing": (["--test-dir", good, "--out", str(tmp_path / "no" / "f.png")],
                               "does not exist (create it first"),
        "out is a folder": (["--test-dir", good, "--out", str(tmp_path)],
                            "a folder is where a file should go"),
        "out format": (["--test-dir", good, "--out", str(tmp_path / "f.gif")],
                       "valid choices: .png, .pdf, .svg"),
        "no folder": ([], "no image folder given"),
    }[case]
    if "--out" not in args:
        args = [*args, "--out", str(out)]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    res = runner.invoke(app, ["biasbed", "samples", *args])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0] and "Traceback" not in res.output, res.output
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_name_names_a_bare_train_or_val_folder(two_sets) -> None:
    bare = str(two_sets["imagenet"])
    named = sample_sets(train_dirs=[bare], val_dirs=[bare], name="sin", per_set=1, size=16)
    assert [s.label for s in named] == ["sin (train)", "sin (val)"]
    assert [s.label for s in sample_sets(val_dirs=[bare], name="sin", per_set=1, size=16)] == [
        "sin (val)"]
    default = sample_sets(train_dirs=[bare], per_set=1, size=16)
    assert [s.label for s in default] == ["folders (train)"]
    # a bare DIR next to NAME=DIR folders: --name applies to it
    mixed = sample_sets(train_dirs=[bare, f"sk={two_sets['sketch']}"], name="sin", per_set=1,
                        size=16)
    assert [s.name for s in mixed] == ["sin", "sk"]


def test_the_command_draws_with_its_seed_and_name(two_sets, tmp_path: Path) -> None:
    bare = str(two_sets["imagenet"])
    draws = {}
    for seed in (0, 1):
        res = runner.invoke(app, ["biasbed", "samples", "--train-dir", bare, "--name", "sin",
                                  "--per-set", "3", "--size", "16", "--seed", str(seed),
                                  "--out", str(tmp_path / f"f{seed}.png"), "--json"])
        assert res.exit_code == 0, res.output
        (entry,) = json.loads(res.stdout)["sets"]
        assert entry["name"] == "sin"
        draws[seed] = [f["path"] for f in entry["files"]]
        library = sample_sets(train_dirs=[bare], name="sin", per_set=3, seed=seed, size=16)
        assert draws[seed] == _chosen(library)[0]
    assert draws[0] != draws[1]
