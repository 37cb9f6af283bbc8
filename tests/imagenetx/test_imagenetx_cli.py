"""The ``shortcutlab imagenetx`` commands, the report and the tiny-model ``predict``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from scipy import stats
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.imagenetx.predict import build_model, predict_folder

runner = CliRunner()


def test_evaluate_original_labels_json():
    out = runner.invoke(
        app, ["imagenetx", "evaluate", "--original-labels", "--error-type", "real_class", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    model = data["original_labels"]
    assert model["average"] == pytest.approx(0.835220, abs=5e-7)
    assert model["worst_factor_name"] == "subcategory"
    # one meaning of worst_factor everywhere: the lowest factor accuracy, as in Python's table
    from shortcutlab.imagenetx import get_factor_accuracies, original_labels_predictions

    table = get_factor_accuracies(original_labels_predictions(), error_type="real_class")
    assert model["worst_factor"] == pytest.approx(float(table["worst_factor"].iloc[0]))
    assert model["worst_factor"] == pytest.approx(
        model["factors"]["subcategory"]["accuracy"])
    assert round(model["factors"]["pose"]["error_ratio"], 3) == 0.746
    assert model["factors"]["pose"]["count"] == 15_064
    assert set(model["factors"]) == {
        "pose", "background", "pattern", "color", "smaller", "shape", "partial_view",
        "subcategory", "texture", "larger", "darker", "object_blocking", "person_blocking",
        "style", "brighter", "multiple_objects"}


def test_evaluate_csv_folder_table_and_ignore_empty_real(model_dir, tmp_path):
    out = runner.invoke(app, ["imagenetx", "evaluate", str(model_dir), "--which", "multi",
                              "--error-type", "metaclass", "--out", str(tmp_path / "r.json")])
    assert out.exit_code == 0, out.output
    assert "m0" in out.stdout and "texture" in out.stdout
    saved = json.loads((tmp_path / "r.json").read_text())
    assert list(saved) == ["m0", "m1", "m2"]
    out = runner.invoke(app, ["imagenetx", "evaluate", "--original-labels", "--error-type",
                              "real_class", "--ignore-empty-real", "--json"])
    assert json.loads(out.stdout)["original_labels"]["n_images"] == 46_110 - 3_085


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--error-type", "top5", "--original-labels"], "unknown error type 'top5'"),
        (["--which", "all", "--original-labels"], "unknown factor selection 'all'"),
        ([], "--original-labels"),
        (["missing.csv"], "does not exist"),
    ],
)
def test_evaluate_bad_input_exits_cleanly(args, message):
    out = runner.invoke(app, ["imagenetx", "evaluate", *args])
    assert out.exit_code == 2
    assert message in out.output and "Traceback" not in out.output


def test_evaluate_refuses_partial_predictions_below_min_coverage(tmp_path):
    (tmp_path / "part.csv").write_text(
        "file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,65\n")
    out = runner.invoke(app, ["imagenetx", "evaluate", str(tmp_path / "part.csv"),
                              "--min-coverage", "0.5"])
    assert out.exit_code == 2
    assert "predicts 1 of 46,110 annotated images (coverage 0.0% < min_coverage 50%)" in " ".join(
        out.output.split())
    ok = runner.invoke(app, ["imagenetx", "evaluate", "--original-labels", "--min-coverage", "1"])
    assert ok.exit_code == 0, ok.output


def test_evaluate_bad_rows_are_reported(tmp_path):
    (tmp_path / "bad.csv").write_text(
        "file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,1001\n"
    )
    out = runner.invoke(app, ["imagenetx", "evaluate", str(tmp_path / "bad.csv")])
    assert out.exit_code == 2 and "on lines 2" in out.output


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_report_with_groups(model_dir, tmp_path):
    groups = tmp_path / "groups.csv"
    pd.DataFrame({"model": ["m0", "m1", "m2", "original_labels"],
                  "group": ["weak", "weak", "strong", "strong"]}).to_csv(groups, index=False)
    out = runner.invoke(app, ["imagenetx", "report", str(model_dir), "--original-labels",
                              "--groups", str(groups), "--bootstrap", "20",
                              "--error-type", "real_class", "--out", str(tmp_path / "rep"),
                              "--json"])
    assert out.exit_code == 0, out.output
    html = (tmp_path / "rep" / "index.html").read_text()
    assert html.count("data:image/png;base64") >= 5
    assert "Alexander-Govern" in html and "Cramér" in html
    # figures 8 and 9: Spearman maps over the validation and the training images
    assert "(paper figure 8; only p ≤ 0.05 shown)" in html
    assert "(paper figure 9; only p ≤ 0.05 shown)" in html
    assert "top factor only (paper figure 2)" in html  # and its numbers beside the report
    assert len(pd.read_csv(tmp_path / "rep" / "factor_shares.csv")) == 4 * 16
    data = json.loads((tmp_path / "rep" / "imagenetx.json").read_text())
    assert json.loads(out.stdout) == data
    # the synthetic models have probabilities, the original labels none: said, not skipped
    assert not (tmp_path / "rep" / "calibration.csv").exists()
    assert "(calibration.csv not written): the original labels carry no probabilities" in html
    said = [line for line in out.stderr.splitlines() if "calibration.csv not written" in line]
    assert len(said) == 1 and "leave out --original-labels" in said[0]  # on the terminal too
    summary = pd.read_csv(tmp_path / "rep" / "summary.csv", index_col=0)
    factors = list(summary.columns[:16])
    assert set(data["group_tests"]) == set(factors)
    # The test's numbers against an independent computation: error ratios from the written
    # accuracies, scipy's Alexander-Govern test on the two groups of models.
    ratios = (1 - summary[factors]).divide(1 - summary["average"], axis=0)
    for factor in factors:
        expected = stats.alexandergovern(ratios.loc[["m0", "m1"], factor],
                                         ratios.loc[["m2", "original_labels"], factor])
        got = data["group_tests"][factor]
        assert got["pvalue"] == pytest.approx(expected.pvalue, rel=1e-9), factor
        assert got["statistic"] == pytest.approx(expected.statistic, rel=1e-9), factor
        assert got["significant"] == (expected.pvalue <= 0.05)
        assert got["mean_weak"] == pytest.approx(ratios.loc[["m0", "m1"], factor].mean())


@pytest.fixture(scope="module")
def result_tables(tmp_path_factory):
    """The authors' results folder layout, filled with synthetic tables (figures 4/1b/6/17)."""
    from .test_imagenetx_analyses import _fake_group

    results = tmp_path_factory.mktemp("results")
    root = results / "val" / "top_factor"
    parts = {"crop": ("crop", [8, 30, 50, 70, 92]), "colorjitter": ("color", [0, 50, 100]),
             "gaussian_blur": ("smoothing", [0, 50, 100])}
    tables = {g: _fake_group(g, name, levels, {"pose": -0.2}, i)
              for i, (g, (name, levels)) in enumerate(parts.items())}
    tables["colorjitter_crop"] = tables["adaptive_colorjitter"] = tables["colorjitter"]
    known = ["resnet50", "alexnet", "BiT-M-R50x1-ILSVRC2012", "BiT-M-R101x1-ILSVRC2012", "MoCo",
             "PIRL", "alexnet_lpf2", "densenet121_lpf2"]  # two per main family
    tables["imagenet_testbed"] = tables["crop"].iloc[:8].set_axis(known)
    for group, table in tables.items():
        folder = root / group / "class"
        folder.mkdir(parents=True)
        table.drop(columns="group").rename_axis("model").to_csv(
            folder / "accuracies_per_factor.csv")
    return results


@pytest.fixture(scope="module")
def welch_report(model_dir, result_tables, tmp_path_factory):
    """One report drawn once for the tests below: the three CSV models and the original labels
    under error type class, with the authors' tables and the welch spill-over procedure."""
    out = tmp_path_factory.mktemp("welch") / "rep"
    res = runner.invoke(app, ["imagenetx", "report", str(model_dir), "--original-labels",
                              "--bootstrap", "0", "--results", str(result_tables),
                              "--spillover", "welch", "--out", str(out)])
    return res, out


WELCH_REPORT = pytest.mark.xdist_group("imagenetx_welch_report")  # one worker draws it once


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
@WELCH_REPORT
def test_report_with_the_authors_result_tables(model_dir, result_tables, welch_report, tmp_path):
    """--results adds figures 4/1b/6/17 (here: synthetic tables of the same layout)."""
    res, welch = welch_report
    # the cubic procedure on one model's CSV (it has probabilities: calibration.csv)
    cubic = tmp_path / "cubic"
    cubic.mkdir()
    (cubic / "old.csv").write_text("x\n1\n")  # no file of this report: not said to be written
    out = runner.invoke(app, ["imagenetx", "report", str(model_dir / "m0.csv"), "--bootstrap",
                              "0", "--results", str(result_tables), "--spillover", "cubic",
                              "--out", str(cubic)])
    for method, done, folder in (("welch", res, welch), ("cubic", out, cubic)):
        assert done.exit_code == 0, done.output
        html = (folder / "index.html").read_text()
        assert "figure 17" in html and "figure 7" in html and "Table 3" in html
        data = json.loads((folder / "imagenetx.json").read_text())
        assert data["result_tables"]["spillover_method"] == method
        assert len(data["result_tables"]["paper_claims"]) == 10
        assert data["result_tables"]["spillover"]["crop"]["pose"]["direction"] == "lower"
        closing = next(line for line in done.output.splitlines() if "report written to" in line)
        for name in {p.name for p in folder.iterdir()} - {"index.html", "old.csv"}:
            assert name in closing, f"the closing line leaves out {name}: {closing}"
        assert "old.csv" not in closing
    assert "cubic fit" in html
    assert (cubic / "table3.csv").is_file()
    assert (cubic / "calibration.csv").is_file()  # CSVs with probabilities
    bad = runner.invoke(app, ["imagenetx", "report", str(model_dir), "--spillover", "loess"])
    assert bad.exit_code == 2 and "cubic" in bad.output


def _image_folder(root, n=5):
    gen = np.random.default_rng(0)
    for i in range(n):
        sub = root / f"n0000000{i % 2}"
        sub.mkdir(parents=True, exist_ok=True)
        pixels = gen.integers(0, 255, (40, 48, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(sub / f"ILSVRC2012_val_{i + 1:08d}.JPEG")
    return root


def test_predict_tiny_model_on_generated_folder(tmp_path):
    folder = _image_folder(tmp_path / "val")
    torch.manual_seed(0)
    weights = tmp_path / "w.pt"
    torch.save(build_model("small_cnn").state_dict(), weights)
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                              str(weights), "--imagenet-val", str(folder), "--out",
                              str(tmp_path / "p.csv"), "--image-size", "32", "--batch-size", "2"])
    assert out.exit_code == 0, out.output
    frame = pd.read_csv(tmp_path / "p.csv")
    assert frame["file_name"].tolist() == [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, 6)]
    assert frame["predicted_class"].between(0, 999).all()
    # Same bytes with another batch size; and the CSV is readable by evaluate.
    model = build_model("small_cnn", weights)
    predict_folder(model, folder, tmp_path / "q.csv", batch_size=5, image_size=32,
                   show_progress=False)
    assert (tmp_path / "q.csv").read_text() == (tmp_path / "p.csv").read_text()
    res = runner.invoke(app, ["imagenetx", "evaluate", str(tmp_path / "p.csv"), "--json"])
    assert res.exit_code == 0, res.output


def test_predict_bad_input(tmp_path):
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "no_such_net", "--imagenet-val",
                              str(tmp_path), "--out", str(tmp_path / "p.csv")])
    assert out.exit_code == 2 and "unknown model 'no_such_net'" in out.output
    torch.save({"fc.weight": torch.zeros(3, 3)}, tmp_path / "w.pt")
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                              str(tmp_path / "w.pt"), "--imagenet-val", str(tmp_path),
                              "--out", str(tmp_path / "p.csv")])
    assert out.exit_code == 2 and "do not fit" in out.output
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--imagenet-val",
                              str(tmp_path / "nowhere"), "--out", str(tmp_path / "p.csv")])
    assert out.exit_code == 2 and "does not exist" in out.output
    assert not (tmp_path / "p.csv").exists()
    # rn50_in is built from its ImageNet weights: without --weights, say so.
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "rn50_in", "--imagenet-val",
                              str(tmp_path), "--out", str(tmp_path / "p.csv")])
    assert out.exit_code == 2 and "needs its ImageNet weights: pass --weights" in out.output


def test_predict_uses_the_models_data_config(tmp_path):
    """--data-config (timm-style) gives the same CSV as the Python transform it describes."""
    from shortcutlab.imagenetx.predict import eval_transform

    folder = _image_folder(tmp_path / "val")
    torch.manual_seed(0)
    weights = tmp_path / "w.pt"
    torch.save(build_model("small_cnn").state_dict(), weights)
    config = {"input_size": [3, 24, 24], "crop_pct": 1.0, "interpolation": "bicubic",
              "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}
    (tmp_path / "cfg.json").write_text(json.dumps(config))
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                              str(weights), "--imagenet-val", str(folder), "--out",
                              str(tmp_path / "p.csv"), "--data-config", str(tmp_path / "cfg.json")])
    assert out.exit_code == 0, out.output
    transform = eval_transform(24, 1.0, "bicubic", (0.5,) * 3, (0.25,) * 3)
    assert transform(Image.new("RGB", (40, 30))).shape == (3, 24, 24)
    predict_folder(build_model("small_cnn", weights), folder, tmp_path / "q.csv",
                   transform=transform, show_progress=False)
    assert (tmp_path / "q.csv").read_text() == (tmp_path / "p.csv").read_text()
    (tmp_path / "bad.json").write_text(json.dumps({"interpolation": "lanczos9"}))
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                              str(weights), "--imagenet-val", str(folder), "--out",
                              str(tmp_path / "r.csv"), "--data-config", str(tmp_path / "bad.json")])
    assert out.exit_code == 2 and "unknown interpolation 'lanczos9'" in out.output


def test_evaluate_any_csv_with_file_and_pred_columns(tmp_path):
    names = [f"/imagenet/val/ILSVRC2012_val_{i:08d}.JPEG" for i in (1, 2, 3)]
    pd.DataFrame({"img": names, "top1": [65, 970, 230]}).to_csv(tmp_path / "m.csv", index=False)
    out = runner.invoke(app, ["imagenetx", "evaluate", str(tmp_path / "m.csv"), "--json"])
    assert out.exit_code == 2 and "--file-col" in out.output
    out = runner.invoke(app, ["imagenetx", "evaluate", str(tmp_path / "m.csv"), "--file-col",
                              "img", "--pred-col", "top1", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["m"]["n_images"] == 3


def test_data_config_crop_mode_squash_is_honoured_border_refused(tmp_path):
    """timm's crop_mode: squash resizes both sides (no content cropped at crop_pct 1); border
    is refused by name instead of silently becoming a centre crop."""
    from torchvision.transforms import functional as tf

    from shortcutlab.imagenetx.predict import transform_from_config

    img = Image.new("RGB", (40, 10), (255, 0, 0))
    img.paste((0, 0, 255), (0, 0, 10, 10))  # a blue left quarter that a centre crop loses
    base = {"input_size": [3, 8, 8], "crop_pct": 1.0, "mean": [0, 0, 0], "std": [1, 1, 1]}
    squashed = transform_from_config({**base, "crop_mode": "squash"})(img)
    expected = tf.to_tensor(tf.resize(img, [8, 8], antialias=True))
    assert torch.allclose(squashed, expected)
    assert squashed[2, :, 0].min() > 0.9  # the blue quarter is there
    centred = transform_from_config(base)(img)
    assert centred[2].max() < 0.1  # a centre crop shows red only
    (tmp_path / "border.json").write_text(json.dumps({**base, "crop_mode": "border"}))
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--imagenet-val",
                              str(tmp_path), "--out", str(tmp_path / "p.csv"), "--data-config",
                              str(tmp_path / "border.json")])
    assert out.exit_code == 2 and "unknown crop_mode 'border'" in out.output


def test_original_labels_with_class_error_type_warn_on_stderr():
    out = runner.invoke(app, ["imagenetx", "evaluate", "--original-labels", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["original_labels"]["average"] == 1.0  # trivially right
    assert "score 1.0 by construction" in out.stderr and "real_class" in out.stderr
    quiet = runner.invoke(app, ["imagenetx", "evaluate", "--original-labels", "--error-type",
                                "real_class", "--json"])
    assert quiet.exit_code == 0 and "by construction" not in quiet.stderr


@WELCH_REPORT
@pytest.mark.slow  # was a report of its own; now it reads the shared welch_report
def test_report_leaves_out_the_original_labels_blank_figures_with_a_note(welch_report):
    """Under error type class the original labels make no mistakes: no bars, no heatmap for
    them (it would be blank), and the HTML says why and which option scores them."""
    out, folder = welch_report
    assert out.exit_code == 0, out.output
    html = (folder / "index.html").read_text()
    for model in ("m0", "m1", "m2"):
        assert f"{model}: error ratio per meta-label and factor." in html
    assert "original_labels: error ratio per meta-label" not in html
    assert "No heatmap for original_labels: no mistakes under error type class" in html
    assert "original_labels scores 1.0 by construction" in html
    assert html.count("--error-type real_class") == 2


@pytest.mark.parametrize("error_type", ["class", "real_class"])
def test_original_labels_alone_draw_no_empty_figure(error_type, tmp_path):
    from shortcutlab.imagenetx.predictions import original_labels_predictions
    from shortcutlab.imagenetx.report import analyse, write_report

    analysis = analyse(original_labels_predictions(), "top", error_type, n_boot=0,
                       dataset_statistics=False)
    html = write_report(analysis, tmp_path / "rep", "t").read_text()
    trivial = error_type == "class"
    assert ("original_labels: error ratio per meta-label and factor." in html) is not trivial
    assert ("Error ratio per factor (dashed line" in html) is not trivial  # no empty bars
    assert ("No heatmap for original_labels" in html) is trivial
    assert ("by construction" in html) is trivial
    # no dataset statistics: no figure 2 and no factor_shares.csv
    assert "paper figure 2" not in html and not (tmp_path / "rep" / "factor_shares.csv").exists()


@pytest.mark.parametrize("where", ["a file", "under a file", "read-only"])
def test_report_refuses_a_bad_out_before_reading_or_analysing(tmp_path, monkeypatch, where):
    """An --out that cannot become a folder is refused first, with the message writing it would
    give (tests/cli/test_bad_inputs.py), not after minutes of bootstrap and figures."""
    import shortcutlab.imagenetx.predictions as predictions
    import shortcutlab.imagenetx.report as report

    def never(*args, **kwargs):
        raise AssertionError("the predictions were read before --out was checked")

    monkeypatch.setattr(predictions, "gather_predictions", never)
    monkeypatch.setattr(report, "analyse", never)
    taken = tmp_path / "taken.txt"
    taken.write_text("x")
    out = {"a file": taken, "under a file": taken / "sub" / "rep",
           "read-only": tmp_path / "new" / "rep"}[where]
    if where == "read-only":  # as for a user without write permission (the tests run as root)
        import os

        monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)
    res = runner.invoke(app, ["imagenetx", "report", "--original-labels", "--out", str(out)])
    assert res.exit_code == 2, res.output
    reason = {"a file": "File exists", "under a file": "Not a directory",
              "read-only": "Permission denied"}[where]
    hint = ("choose a location you may write to" if where == "read-only"
            else "a file is where a folder should go; give a folder path")
    assert f"Error: {out}: {reason} ({hint})" in res.output, res.output
    assert taken.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["taken.txt"]


@pytest.mark.parametrize("workers", [0, 2])
def test_predict_leaves_the_global_rng_alone(tmp_path, workers):
    """Predicting draws nothing from torch's global RNG (the DataLoader's base seed comes from a
    generator of its own), so a script that predicts between seeding and training trains as
    one that does not; the CSV is the same for any number of workers."""
    folder = _image_folder(tmp_path / "val")
    torch.manual_seed(0)
    model = build_model("small_cnn")
    state = torch.get_rng_state()
    predict_folder(model, folder, tmp_path / "p.csv", batch_size=2, image_size=32,
                   num_workers=workers, show_progress=False)
    assert torch.equal(torch.get_rng_state(), state)
    predict_folder(model, folder, tmp_path / "q.csv", batch_size=2, image_size=32,
                   show_progress=False)
    assert (tmp_path / "p.csv").read_bytes() == (tmp_path / "q.csv").read_bytes()
