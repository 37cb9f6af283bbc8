"""``shortcutlab factors evaluate`` on a user's own tables (CSV, Parquet, JSON lines)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app

from .test_engine import _plain, waterbirds_like

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    annotations, predictions = waterbirds_like()
    annotations.to_csv(folder / "ann.csv", index=False)
    predictions.rename(columns={"id": "image", "prediction": "pred"}).to_parquet(
        folder / "pred.parquet")
    predictions.iloc[:500].to_json(folder / "part.jsonl", orient="records", lines=True)
    return folder, annotations, predictions


def test_evaluate_names_the_planted_factor_and_matches_pandas(files):
    folder, annotations, predictions = files
    args = ["factors", "evaluate", "--annotations", str(folder / "ann.csv"), "--predictions",
            str(folder / "pred.parquet"), "--pred-col", "pred", "--bootstrap", "50"]
    out = runner.invoke(app, [*args, "--id-col", "image"])
    assert out.exit_code == 2 and "no id column 'image'" in out.output  # annotations use "id"
    annotations.rename(columns={"id": "image"}).to_csv(folder / "ann2.csv", index=False)
    args[3] = str(folder / "ann2.csv")
    out = runner.invoke(app, [*args, "--id-col", "image"])
    assert out.exit_code == 0, out.output
    assert "coverage 100.0%" in out.output
    # Overall, the background hides (each bird is mostly on its own background); per class
    # the minority background carries the mistakes, and it is the worst group.
    assert "class landbird: worst factor background=water" in out.output
    assert "class waterbird: worst factor background=land" in out.output
    frame = _plain(annotations, predictions)
    lowest = min(
        part.loc[part["size"] >= 30, "mean"].min()
        for part in (frame.groupby(["label", c])["right"].agg(["mean", "size"])
                     for c in ("background", "blurry", "site")))
    assert f"worst-group accuracy {lowest:.4f} (label=landbird, background=water)" in out.output
    data = json.loads(runner.invoke(app, [*args, "--id-col", "image", "--json"]).stdout)
    water = frame.loc[frame["background"] == "water", "right"].mean()
    row = next(r for r in data["factors"] if r["factor"] == "background=water")
    assert row["error_ratio"] == pytest.approx((1 - water) / (1 - frame["right"].mean()))
    assert data["worst_group"]["model"]["acc_wg"] == pytest.approx(lowest)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--predictions", "{folder}/part.jsonl"], "predicts 500 of 2,000"),
        (["--predictions", "{folder}/missing.csv"], "does not exist"),
        (["--predictions", "{folder}/ann.csv", "--pred-col", "label"], None),
        (["--predictions", "{folder}/pred.parquet"], "no column 'id'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(files, extra, message):
    folder, _, _ = files
    args = ["factors", "evaluate", "--annotations", str(folder / "ann.csv"), "--bootstrap", "0",
            *[a.format(folder=folder) for a in extra]]
    out = runner.invoke(app, args)
    if message is None:  # the annotations' own labels as predictions: a perfect model
        assert out.exit_code == 0, out.output
        return
    assert out.exit_code == 2, out.output
    assert message in out.output and len(out.output.strip().splitlines()) == 1


def test_report_writes_the_page_and_the_numbers(files, tmp_path):
    folder, annotations, predictions = files
    out = runner.invoke(app, ["factors", "report", "--annotations", str(folder / "ann.csv"),
                              "--predictions", str(folder / "part.jsonl"), "--min-coverage",
                              "0.2", "--prob-col", "probability", "--bootstrap", "20",
                              "--out", str(tmp_path / "rep"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data == json.loads((tmp_path / "rep" / "factors.json").read_text())
    assert data["coverage"][0]["matched"] == 500
    html = (tmp_path / "rep" / "index.html").read_text()
    assert html.count("data:image/png;base64") == 1 and "Calibration per factor" in html
    table = pd.read_csv(tmp_path / "rep" / "factors.csv").set_index("factor")
    frame = _plain(annotations, predictions.iloc[:500])
    blurry = frame.loc[frame["blurry"] == 1, "right"].mean()
    assert table.loc["blurry", "accuracy"] == pytest.approx(blurry)
    assert {"calibration.csv", "groups.csv", "by_class.csv", "tests.csv"} <= {
        p.name for p in (tmp_path / "rep").iterdir()}
    bad = runner.invoke(app, ["factors", "report", "--annotations", str(folder / "ann.csv"),
                              "--predictions", str(folder / "part.jsonl"),
                              "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and not (tmp_path / "bad").exists()  # nothing half-written
