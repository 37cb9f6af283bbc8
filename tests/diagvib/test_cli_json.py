"""``--json`` on every DiagViB-6 command that prints data (issue 34): factors, studies,
render, export and inspect print one JSON object on stdout and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS, n_combinations

runner = CliRunner()


def _json(args: list[str]) -> dict:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # fails on any text around the object


def test_factors_json() -> None:
    out = _json(["diagvib", "factors", "--json"])
    assert out["n_combinations"] == n_combinations() and set(out["factors"]) == set(FACTORS)
    assert out["factors"]["hue"]["classes"] == list(FACTOR_TABLE["hue"].classes)
    assert out["factors"]["shape"]["regions"] == [[] for _ in FACTOR_TABLE["shape"].classes]


def test_studies_json(tmp_path: Path) -> None:
    out = _json(["diagvib", "studies", "--out", str(tmp_path / "b"), "--study", "ZGO",
                 "--pair", "hue-shape", "--samples", "0", "--samples", "1", "--scale", "0.01",
                 "--json"])
    assert out["experiments"] == ["ZGO/hue-shape/0", "ZGO/hue-shape/1"]
    assert Path(out["index"]).is_file() and out["out"] == str(tmp_path / "b")


def test_render_and_export_json(tmp_path: Path) -> None:
    out = _json(["diagvib", "render", "--n", "6", "--set", "hue=red", "--image-size", "32",
                 "--out", str(tmp_path / "r.npz"), "--device", "cpu", "--json"])
    assert out["images"] == 6 and out["image_size"] == 32 and out["classes"]["hue"] == {"red": 6}
    assert sum(out["classes"]["shape"].values()) == 6
    with np.load(tmp_path / "r.npz") as npz:
        assert npz["images"].shape == (6, 3, 32, 32)
    exported = _json(["diagvib", "export", "ZSO/hue/0", "--split", "test", "--limit", "5",
                      "--scale", "0.01", "--out", str(tmp_path / "e.npz"), "--json"])
    assert exported["experiment"] == "ZSO/hue/0" and exported["images"] == 5
    assert Path(exported["out"]).is_file() and exported["format"] == "npz"


def test_inspect_json(tmp_path: Path, monkeypatch) -> None:
    import shortcutlab.diagvib.inspect as inspect_module

    def fake(run_dir, out, *, progress, **kw):  # the drawing itself: tests/diagvib/test_inspect
        for job in ("a1b2", "c3d4"):
            progress(job)
        return tmp_path / "inspect" / "index.html"

    monkeypatch.setattr(inspect_module, "write_inspection", fake)
    out = _json(["diagvib", "inspect", str(tmp_path), "--json"])
    assert out == {"page": str(tmp_path / "inspect" / "index.html"), "jobs": ["a1b2", "c3d4"]}


def test_export_image_seed_reaches_the_pixels(tmp_path: Path) -> None:
    """--image-seed is the dataset's pixel seed (default 0), apart from the benchmark --seed:
    the same experiment exported with another image seed has other pixels, the same one the
    same pixels."""
    def images(name: str, *extra: str) -> np.ndarray:
        _json(["diagvib", "export", "ZSO/hue/0", "--split", "test", "--limit", "3",
               "--scale", "0.01", "--out", str(tmp_path / name), *extra, "--json"])
        with np.load(tmp_path / name) as npz:
            return npz["images"]

    default, zero, five = images("d.npz"), images("z.npz", "--image-seed", "0"), images(
        "f.npz", "--image-seed", "5")
    assert np.array_equal(default, zero)
    assert not np.array_equal(zero, five)
