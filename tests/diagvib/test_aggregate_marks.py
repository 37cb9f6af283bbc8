"""An FAAvg/FAMin number over fewer than the five correlated factors in some sample, or over
fewer dataset samples than the model's most, must say so in the FAAvg/FAMin figures (and the
report's caption for them) and in ``print(metrics)``, as the tables' "(k/5 pairs)" and "(k/m
samples)" marks do."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from matplotlib.lines import Line2D

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.figures import plot_factor_aggregate, plot_factor_aggregates
from shortcutlab.diagvib.metrics import DiagvibMetrics, compute_metrics
from shortcutlab.diagvib.report import write_report
from tests.diagvib.tables import synthetic_table

STUDY = "CGO-1"
PAIRS = "hue"  # in sample 0 of STUDY only two of its correlated factors finished
SAMPLES = "texture"  # in STUDY one of the three dataset samples did not finish


@pytest.fixture(scope="module")
def complete() -> pd.DataFrame:
    return synthetic_table(studies=("ZSO", STUDY, "ZGO"))


@pytest.fixture(scope="module")
def partial(complete: pd.DataFrame) -> pd.DataFrame:
    table = complete.copy()
    study = table["study"] == STUDY
    kept = [f for f in FACTORS if f != PAIRS][:2]
    gone = (study & (table["predicted"] == PAIRS) & (table["sample"] == 0)
            & ~table["correlated"].isin(kept))
    gone |= study & (table["predicted"] == SAMPLES) & (table["sample"] == 2)
    table.loc[gone, "status"] = "failed"
    return table


def _counts(metrics: DiagvibMetrics) -> tuple[int, int, int]:
    """(n_pairs of PAIRS, n of SAMPLES, the model's most n) in STUDY, from the metrics."""
    agg = metrics.aggregates[(metrics.aggregates["study"] == STUDY)
                             & (metrics.aggregates["metric"] == "FAMin")].set_index("factor")
    most = int(metrics.aggregates["n"].max())
    assert int(agg.at[PAIRS, "n_pairs"]) < len(FACTORS) - 1 and int(agg.at[PAIRS, "n"]) == most
    assert int(agg.at[SAMPLES, "n"]) < most
    return int(agg.at[PAIRS, "n_pairs"]), int(agg.at[SAMPLES, "n"]), most


def _hollow(ax) -> list[Line2D]:
    """Drawn points (not legend proxies) with a white face."""
    return [line for line in ax.lines if len(line.get_xdata())
            and line.get_markerfacecolor() in ("white", "w", (1.0, 1.0, 1.0, 1.0))]


def test_aggregate_panel_marks_a_point_over_fewer_pairs_or_samples(partial, complete):
    metrics = compute_metrics(partial)
    pairs, n, most = _counts(metrics)
    for factor, mark in ((PAIRS, f"{pairs}/{len(FACTORS) - 1} pairs"),
                         (SAMPLES, f"{n}/{most} samples")):
        ax = plot_factor_aggregate(metrics, factor, "FAMin", "CGO")
        x = [t.get_text() for t in ax.get_xticklabels()].index(STUDY)
        hollow = _hollow(ax)
        assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [x]
        assert [t.get_text() for t in ax.texts] == [mark]
        _, labels = ax.get_legend_handles_labels()
        assert any("k/5 pairs" in lab and "k/m samples" in lab for lab in labels), labels
    whole = compute_metrics(complete)
    for factor in (PAIRS, SAMPLES):
        ax = plot_factor_aggregate(whole, factor, "FAMin", "CGO")
        assert not _hollow(ax) and not ax.texts
        assert ax.get_legend_handles_labels()[1] == ["small_cnn"]


def test_aggregate_figure_legend_explains_the_marks(partial, complete):
    fig = plot_factor_aggregates(compute_metrics(partial), "CGO")
    texts = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "small_cnn" in texts and any("k/5 pairs" in t for t in texts), texts
    whole = plot_factor_aggregates(compute_metrics(complete), "CGO")
    assert [t.get_text() for legend in whole.legends for t in legend.get_texts()] == ["small_cnn"]


def test_report_caption_names_the_marked_aggregates(partial, complete, tmp_path):
    pairs, n, most = _counts(compute_metrics(partial))
    html = write_report(partial, tmp_path / "r").read_text(encoding="utf-8")
    captions = [c for c in re.findall(r"<figcaption>(.*?)</figcaption>", html, flags=re.S)
                if c.startswith("FAAvg and FAMin")]
    assert captions
    assert any(f"small_cnn {STUDY} {PAIRS} ({pairs}/5 pairs)" in c
               and f"small_cnn {STUDY} {SAMPLES} ({n}/{most} samples)" in c
               for c in captions), captions
    whole = write_report(complete, tmp_path / "w").read_text(encoding="utf-8")
    captions = [c for c in re.findall(r"<figcaption>(.*?)</figcaption>", whole, flags=re.S)
                if c.startswith("FAAvg and FAMin")]
    assert captions and not any("pairs)" in c or "samples)" in c for c in captions)


def test_printed_headline_names_the_incomplete_factors_without_changing_numbers(partial, complete):
    metrics = compute_metrics(partial)
    pairs, n, most = _counts(metrics)
    head = metrics.headline()
    cgo = metrics.aggregates[(metrics.aggregates["study"] == STUDY)]
    for metric in ("FAAvg", "FAMin"):  # still the plain mean over the predicted factors
        mean = cgo.loc[cgo["metric"] == metric, "mean"].mean()
        assert head.loc[("small_cnn", STUDY), metric] == pytest.approx(mean)
    row = next(line for line in str(metrics).splitlines() if STUDY in line)
    assert f"{PAIRS} {pairs}/5 pairs" in row and f"{SAMPLES} {n}/{most} samples" in row, row
    for study in ("ZSO", "ZGO"):
        line = next(line for line in str(metrics).splitlines() if study in line)
        assert "pairs" not in line and "samples" not in line, line
    assert "incomplete" in str(metrics)  # a note says what the marks mean
    assert "incomplete" not in str(compute_metrics(complete))


def test_headline_says_when_a_predicted_factor_is_missing_from_the_average(complete):
    table = complete.copy()
    gone = (table["study"] == STUDY) & (table["predicted"] == PAIRS)
    table.loc[gone, "status"] = "failed"
    metrics = compute_metrics(table)
    cgo = metrics.aggregates[(metrics.aggregates["study"] == STUDY)]
    factors = cgo["factor"].nunique()
    assert factors == len(FACTORS) - 1
    row = next(line for line in str(metrics).splitlines() if STUDY in line)
    assert f"{factors}/{len(FACTORS)} factors" in row, row
