"""``shortcutlab factors evaluate`` on a user's own tables (CSV, Parquet, JSON lines)."""

from __future__ import annotations

import json

import numpy as np
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


FACTORS = {"background=land": ("background", "land"), "background=water": ("background", "water"),
           "blurry": ("blurry", 1), "site=1": ("site", 1), "site=2": ("site", 2),
           "site=3": ("site", 3)}


def _rows(text: str, model: str) -> dict[str, list[str]]:
    """The cells of the worst-factors table of ``model`` in evaluate's text output, by factor."""
    block = text.split(f"{model}: worst factors")[1].split("class ")[0]
    cells = ([c.strip() for c in line.split("│")[1:-1]] for line in block.splitlines()
             if line.startswith("│"))
    return {c[0]: c for c in cells}


@pytest.fixture(scope="module")
def two_models(files):
    """Model ``a``: the planted background shortcut; model ``b``: wrong on 40% of the blurry
    items and 5% of the others (its mistakes concentrate on ``blurry``)."""
    folder, annotations, predictions = files
    gen = np.random.default_rng(5)
    truth = annotations.set_index("id")["label"]
    blurry = annotations.set_index("id")["blurry"].to_numpy() == 1
    wrong = gen.random(len(truth)) < np.where(blurry, 0.4, 0.05)
    other = np.where(truth == "landbird", "waterbird", "landbird")
    b = pd.DataFrame({"id": truth.index, "prediction": np.where(wrong, other, truth.to_numpy())})
    both = pd.concat([predictions.assign(model="a"), b.assign(model="b")])
    both.to_csv(folder / "two.csv", index=False)
    return folder / "two.csv", both


def test_evaluate_prints_each_models_accuracy_and_holm_adjusted_p_values(files, two_models):
    """Each model's line carries its own accuracy (M264), and the p (Holm) column is the χ²
    test of factor vs rest, Holm-adjusted over the model's factors (scipy and statsmodels by
    hand; the unadjusted p-value is up to 6 times smaller, M263)."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    folder, annotations, _ = files
    path, both = two_models
    out = runner.invoke(app, ["factors", "evaluate", "--annotations", str(folder / "ann.csv"),
                              "--predictions", str(path), "--model-col", "model",
                              "--bootstrap", "0"])
    assert out.exit_code == 0, out.output
    for model in ("a", "b"):
        frame = _plain(annotations, both[both["model"] == model].drop(columns="model"))
        assert f"{model}: accuracy {frame['right'].mean():.4f} on 2,000" in out.output
        raw = []
        for col, value in FACTORS.values():
            inside = frame[col] == value
            table = [[(frame["right"] & inside).sum(), (~frame["right"] & inside).sum()],
                     [(frame["right"] & ~inside).sum(), (~frame["right"] & ~inside).sum()]]
            raw.append(stats.chi2_contingency(np.array(table)).pvalue)
        holm = dict(zip(FACTORS, multipletests(raw, method="holm")[1], strict=True))
        rows = _rows(out.output, model)
        assert len(rows) == 5
        for factor, cells in rows.items():
            assert cells[5] == f"{holm[factor]:.2g}", (model, factor, cells)
    # the test has teeth: b's blurry p-value is small, and its Holm adjustment shows
    p_blurry = raw[list(FACTORS).index("blurry")]
    assert p_blurry < 1e-10 and f"{p_blurry:.2g}" != _rows(out.output, "b")["blurry"][5]


def test_evaluate_passes_seed_and_min_count_to_the_analysis(files):
    """--seed draws the bootstrap (the CLI's intervals are those of analyse_factors with that
    seed, not seed 0's; M265); --min-count bounds the worst group (a plain group-by over the
    groups of at least that many items; M266)."""
    from shortcutlab.factor_analysis import analyse_factors

    folder, annotations, predictions = files
    predictions.to_csv(folder / "plain.csv", index=False)
    args = ["factors", "evaluate", "--annotations", str(folder / "ann.csv"), "--predictions",
            str(folder / "plain.csv"), "--bootstrap", "20", "--json"]
    seeded = json.loads(runner.invoke(app, [*args, "--seed", "3"]).stdout)
    expected, zero = (analyse_factors(folder / "ann.csv", folder / "plain.csv", n_boot=20,
                                      seed=seed).to_dict() for seed in (3, 0))

    def lower(data: dict) -> list[float]:
        return [r["error_ratio_lower"] for r in data["factors"]]

    assert lower(seeded) == pytest.approx(lower(expected)) and lower(zero) != lower(expected)
    data = json.loads(runner.invoke(app, [*args, "--bootstrap", "0", "--min-count",
                                          "600"]).stdout)
    frame = _plain(annotations, predictions)
    lowest = min(
        part.loc[part["size"] >= 600, "mean"].min()
        for part in (frame.groupby(["label", c])["right"].agg(["mean", "size"])
                     for c in ("background", "blurry", "site")))
    assert data["worst_group"]["model"]["acc_wg"] == pytest.approx(lowest)


def test_evaluate_refuses_predictions_missing_for_a_few_items_by_default(files):
    """--min-coverage is 1.0 unless lowered: a model that predicts 1,990 of the 2,000 annotated
    items is refused (its accuracy is not that of the annotated set), not scored (M267)."""
    folder, _, predictions = files
    predictions.iloc[:1990].to_csv(folder / "most.csv", index=False)
    args = ["factors", "evaluate", "--annotations", str(folder / "ann.csv"), "--predictions",
            str(folder / "most.csv"), "--bootstrap", "0"]
    out = runner.invoke(app, args)
    assert out.exit_code == 2 and "predicts 1,990 of 2,000" in out.output, out.output
    assert runner.invoke(app, [*args, "--min-coverage", "0.99"]).exit_code == 0
