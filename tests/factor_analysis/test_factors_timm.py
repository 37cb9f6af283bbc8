"""timm-style prediction CSVs (what timm's inference.py writes) in ``factors`` and the engine,
and the one declaration of the two commands' options."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from shortcutlab.cli.factors import FactorOptions
from shortcutlab.cli.main import app
from shortcutlab.errors import FactorAnalysisError
from shortcutlab.factor_analysis import analyse_factors
from shortcutlab.factor_analysis.timm import top1

runner = CliRunner()
N = 600


def _tables() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Annotations with file-name ids and integer labels; a model's top-3 classes and
    probabilities, wrong more often on blurry items."""
    gen = np.random.default_rng(3)
    label = gen.integers(0, 5, N)
    blurry = (gen.random(N) < 0.3).astype(int)
    weather = gen.choice(["sun", "rain"], N)
    annotations = pd.DataFrame({"id": [f"img_{i:04d}.JPEG" for i in range(N)], "label": label,
                                "blurry": blurry, "weather": weather})
    right = gen.random(N) < np.where(blurry == 1, 0.5, 0.9)
    first = np.where(right, label, (label + 1) % 5)
    topk = np.stack([first, (first + 2) % 5, (first + 3) % 5], axis=1)
    probs = np.round(np.sort(gen.dirichlet(np.ones(3), N), axis=1)[:, ::-1], 4)
    return annotations, topk, probs


def _timm_lists(topk: np.ndarray, probs: np.ndarray) -> pd.DataFrame:
    """timm's layout with --topk 3 --include-index: numpy-printed lists, full paths."""
    return pd.DataFrame({
        "filename": [f"/data/val/img_{i:04d}.JPEG" for i in range(N)],
        "index": [np.array2string(row) for row in topk],
        "label": [str(np.array([f"class {c}" for c in row])) for row in topk],
        "prob": [np.array2string(row) for row in probs],
    })


def test_timm_csv_is_detected_and_scored_as_a_plain_group_by(tmp_path):
    annotations, topk, probs = _tables()
    annotations.to_csv(tmp_path / "ann.csv", index=False)
    _timm_lists(topk, probs).to_csv(tmp_path / "timm.csv", index=False)
    out = runner.invoke(app, ["factors", "evaluate", "--annotations", str(tmp_path / "ann.csv"),
                              "--predictions", str(tmp_path / "timm.csv"), "--bootstrap", "0",
                              "--min-count", "10", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    right = pd.Series(topk[:, 0] == annotations["label"].to_numpy())
    overall = right.mean()
    factors = {(r["model"], r["factor"]): r for r in data["factors"]}
    for name, mask in (("blurry", annotations["blurry"] == 1),
                       ("weather=rain", annotations["weather"] == "rain")):
        acc = right[mask].mean()
        assert factors[("model", name)]["accuracy"] == pytest.approx(acc)
        assert factors[("model", name)]["error_ratio"] == pytest.approx(
            (1 - acc) / (1 - overall))
    assert data["worst_factors"][0]["factor"] == "blurry"
    assert data["coverage"][0]["coverage"] == 1.0
    assert data["calibration"] is not None  # timm's prob column: the top-1 probability


def test_split_columns_and_the_same_numbers_as_the_table_layout():
    annotations, topk, probs = _tables()
    split = pd.DataFrame({"filename": [f"img_{i:04d}.JPEG" for i in range(N)],
                          **{f"index_{k}": topk[:, k] for k in range(3)},
                          **{f"prob_{k}": probs[:, k] for k in range(3)}})
    plain = pd.DataFrame({"id": annotations["id"], "prediction": topk[:, 0],
                          "probability": probs[:, 0]})
    a = analyse_factors(annotations, split, n_boot=0, min_count=10)
    b = analyse_factors(annotations, plain, n_boot=0, min_count=10, prob_col="probability")
    pd.testing.assert_frame_equal(a.result.long(), b.result.long())
    pd.testing.assert_frame_equal(a.calibration, b.calibration)


def test_formats_named_and_refused():
    annotations, topk, probs = _tables()
    timm = _timm_lists(topk, probs)
    with pytest.raises(FactorAnalysisError, match="predictions have no column 'id'"):
        analyse_factors(annotations, timm, n_boot=0, predictions_format="table")
    with pytest.raises(FactorAnalysisError, match=r"unknown predictions format 'onnx'.*timm"):
        analyse_factors(annotations, timm, n_boot=0, predictions_format="onnx")
    with pytest.raises(FactorAnalysisError, match="one model: leave out model_col"):
        analyse_factors(annotations, timm, n_boot=0, model_col="model")
    plain = pd.DataFrame({"id": annotations["id"], "prediction": topk[:, 0]})
    with pytest.raises(FactorAnalysisError, match="not timm's inference.py output"):
        analyse_factors(annotations, plain, n_boot=0, predictions_format="timm")
    cells = pd.Series(["[ 65 970   1]", "12", "['great white shark' 'tench']", "[0.91, 0.05]"])
    assert top1(cells).tolist() == ["65", "12", "great white shark", "0.91"]


def test_both_commands_take_the_options_declared_once():
    from typer.main import get_command

    group = get_command(app).commands["factors"]  # type: ignore[attr-defined]
    declared = {f.name for f in fields(FactorOptions)}
    assert {"annotations", "predictions_format", "group_cols"} <= declared
    for name in ("evaluate", "report"):
        params = {p.name for p in group.commands[name].params}
        assert declared <= params, (name, declared - params)
    option = next(f for f in fields(FactorOptions) if f.name == "predictions_format")
    assert isinstance(option.metadata["option"], typer.models.OptionInfo)


def test_base_names_cut_both_path_separators():
    from shortcutlab.factor_analysis.timm import base_names

    names = pd.Series([r"C:\data\val\img1.JPEG", "/data/val/img2.JPEG", "img3.JPEG",
                       r"mixed/dir\img4.png"])
    assert base_names(names).tolist() == ["img1.JPEG", "img2.JPEG", "img3.JPEG", "img4.png"]
