"""ImageNet-X predict with models named as for training (``timm:``/``torchvision:<arch>``),
its warnings in the CLI's ``Warning:`` form, and how its result objects print."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.imagenetx import analyse, evaluate, original_labels_predictions
from shortcutlab.imagenetx.predict import PredictResult, build_model, predict_folder
from shortcutlab.imagenetx.predictions import Predictions

runner = CliRunner()
HAS_TIMM = importlib.util.find_spec("timm") is not None


def _image_folder(root, n=3):
    gen = np.random.default_rng(0)
    root.mkdir(parents=True)
    for i in range(n):
        pixels = gen.integers(0, 255, (40, 48, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / f"ILSVRC2012_val_{i + 1:08d}.JPEG")
    return root


def _predict_with_saved_weights(tmp_path, name):
    """Save ``name``'s weights, predict through the CLI with them, and check the CSV against
    the same model predicting in Python (so the CLI built that architecture with 1000 outputs
    and loaded the file)."""
    folder = _image_folder(tmp_path / "val")
    torch.manual_seed(0)
    model = build_model(name)
    weights = tmp_path / "w.pt"
    torch.save(model.state_dict(), weights)
    out = runner.invoke(app, ["imagenetx", "predict", "--model", name, "--weights", str(weights),
                              "--imagenet-val", str(folder), "--out", str(tmp_path / "p.csv"),
                              "--image-size", "64", "--batch-size", "3"])
    assert out.exit_code == 0, out.output
    assert "predictions for 3 images written to" in out.stdout
    assert "Warning" not in out.stderr  # weights were given
    frame = pd.read_csv(tmp_path / "p.csv")
    assert len(frame) == 3 and frame["predicted_class"].between(0, 999).all()
    predict_folder(build_model(name, weights), folder, tmp_path / "q.csv", image_size=64,
                   show_progress=False)
    assert (tmp_path / "q.csv").read_text() == (tmp_path / "p.csv").read_text()
    return model


def test_predict_with_a_torchvision_model_by_name(tmp_path):
    model = _predict_with_saved_weights(tmp_path, "torchvision:mobilenet_v3_small")
    assert type(model).__module__.startswith("torchvision.models")


@pytest.mark.skipif(not HAS_TIMM, reason="timm (the extra shortcutlab[timm]) is not installed")
def test_predict_with_a_timm_model_by_name(tmp_path):
    model = _predict_with_saved_weights(tmp_path, "timm:test_resnet")
    assert type(model).__module__.startswith("timm.")


def test_bare_torchvision_name_points_to_the_prefixed_one(tmp_path):
    """Training and ImageNet-X accept the same names: a bare torchvision architecture that is
    not registered is refused with the name to use."""
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "mobilenet_v3_small",
                              "--imagenet-val", str(tmp_path), "--out", str(tmp_path / "p.csv")])
    assert out.exit_code == 2
    assert "'torchvision:mobilenet_v3_small'" in out.stderr
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "torchvision:no_such_net",
                              "--imagenet-val", str(tmp_path), "--out", str(tmp_path / "p.csv")])
    assert out.exit_code == 2 and "unknown torchvision model 'no_such_net'" in out.stderr
    assert not (tmp_path / "p.csv").exists()


def test_predict_without_weights_warns_in_the_clis_form(tmp_path):
    folder = _image_folder(tmp_path / "val", n=1)
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--imagenet-val",
                              str(folder), "--out", str(tmp_path / "p.csv"), "--image-size", "32"])
    assert out.exit_code == 0, out.output
    assert out.stderr.startswith("Warning: no --weights given")


def test_trivial_original_labels_warn_in_the_clis_form():
    out = runner.invoke(app, ["imagenetx", "evaluate", "--original-labels", "--json"])
    assert out.exit_code == 0, out.output
    assert out.stderr.startswith("Warning: with --error-type class")


def _four_models() -> Predictions:
    labels = original_labels_predictions()
    truth = labels.classes[0]
    gen = np.random.default_rng(0)
    rows = [np.where(gen.random(truth.size) < q, truth, (truth + 1) % 1000)
            for q in (0.6, 0.7, 0.8, 0.9)]
    return Predictions(("a", "b", "c", "d"), labels.file_names, np.stack(rows))


def test_evaluation_result_prints_its_headline(top_val):
    result = evaluate(original_labels_predictions(), top_val, "real_class")
    text = str(result)
    assert repr(result) == text and len(text.splitlines()) == 5  # title, header x2, a model, note
    assert "1 model(s) on 46,110 images (top factors, error type real_class)" in text
    row = text.splitlines()[3].split()
    assert row[0] == "original_labels" and row[1:3] == ["0.835", "subcategory"]
    assert float(row[4]) == pytest.approx(result.error_ratio[0].max(), abs=5e-4)
    html = result._repr_html_()
    assert "<table" in html and "subcategory" in html and "46,110 images" in html


def test_evaluation_result_shows_coverage_and_caps_rows(top_val):
    preds = _four_models()
    half = preds.classes.copy()
    half[1, ::2] = -1  # model b predicts half the images
    result = evaluate(Predictions(preds.models, preds.file_names, half), top_val, "class")
    frame = result.headline()
    assert frame.loc["a", "images"] == 46_110
    assert abs(frame.loc["b", "images"] - 46_110 / 2) < 500  # every other image of the list
    assert "images" in str(result)
    many = evaluate(Predictions(tuple(f"m{i}" for i in range(25)), preds.file_names,
                                np.repeat(preds.classes[:1], 25, axis=0)), top_val, "class")
    assert "first 20 of 25 models shown" in str(many) and "m24" not in str(many)
    assert "m19" in many._repr_html_() and "m20" not in many._repr_html_()


def test_analysis_prints_headline_intervals_and_tests(top_val):
    analysis = analyse(_four_models(), groups={"a": "x", "b": "x", "c": "y", "d": "y"},
                       n_boot=20, seed=0, annotations=top_val)
    text = str(analysis)
    lines = text.splitlines()
    assert lines[0].startswith("ImageNet-X analysis: 4 model(s) on 46,110 images")
    worst = analysis.result.worst_factor_name[0]
    low, high = analysis.ci.table("a").loc[worst]
    assert f"{low:.3f}–{high:.3f}" in next(line for line in lines if line.startswith("a "))
    assert "Alexander-Govern across 2 groups" in text and "Cramér's V" in text
    assert "Cramér&#x27;s V" in analysis._repr_html_()


def test_predict_result_is_one_line(tmp_path):
    result = PredictResult(tmp_path / "p.csv", 3)
    assert str(result) == f"predictions for 3 images written to {tmp_path / 'p.csv'}"
    assert str(tmp_path / "p.csv") in result._repr_html_()
