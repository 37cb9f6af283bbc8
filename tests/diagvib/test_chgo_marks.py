"""A CHGO − ZGO improvement over fewer (pair, sample) cells than the complete study must say
so wherever a reader sees it (terminal table, report table and figure), as FAAvg/FAMin over
fewer correlated factors do: the JSON/CSV ``n_cells`` alone is not enough."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.figures import plot_chgo_improvement
from shortcutlab.diagvib.metrics import DiagvibMetrics, compute_metrics
from shortcutlab.diagvib.report import factor_frame, write_report
from tests.diagvib.tables import synthetic_table

SHORT = "hue"  # the predicted factor whose CHGO runs cover only two correlated factors


@pytest.fixture(scope="module")
def complete() -> pd.DataFrame:
    return synthetic_table(studies=("ZGO", "CHGO"), samples=(0, 1))


@pytest.fixture(scope="module")
def partial(complete: pd.DataFrame) -> pd.DataFrame:
    """CHGO predicting SHORT finished for two of its five correlated factors only."""
    table = complete.copy()
    kept = [f for f in FACTORS if f != SHORT][:2]
    gone = ((table["study"] == "CHGO") & (table["predicted"] == SHORT)
            & ~table["correlated"].isin(kept))
    table.loc[gone, "status"] = "failed"
    return table


def _mark(metrics: DiagvibMetrics) -> str:
    """The mark the SHORT improvement should carry, from the metrics' own counts: its cells out
    of the 5 correlated factors × the model's dataset samples."""
    row = metrics.chgo.set_index("factor").loc[SHORT]
    full = (len(FACTORS) - 1) * int(metrics.chgo["n"].max())
    assert int(row["n"]) == int(metrics.chgo["n"].max())  # no sample is missing: only pairs
    assert int(row["n_cells"]) < full
    return f"({int(row['n_cells'])}/{full} cells)"


def test_chgo_table_marks_an_improvement_over_fewer_cells(partial, complete):
    metrics = compute_metrics(partial)
    mark = _mark(metrics)
    frame = factor_frame(metrics.chgo, ["label"], err="std", scale=100, digits=1)
    row = frame.loc[("small_cnn",)]
    assert row[SHORT].endswith(mark)
    assert not any("cells" in row[f] for f in FACTORS if f != SHORT)
    whole = factor_frame(compute_metrics(complete).chgo, ["label"], err="std", scale=100)
    assert not whole.stack().str.contains("cells").any()


def test_metrics_command_marks_a_partial_chgo_improvement(partial, complete, tmp_path):
    mark = _mark(compute_metrics(partial))
    for name, table in (("partial", partial), ("complete", complete)):
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(tmp_path / "partial.csv")],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    chgo_table = res.output[res.output.index("CHGO over ZGO"):]
    assert mark in chgo_table
    assert "(k/m cells)" in res.output  # the note says what the mark means
    whole = CliRunner().invoke(app, ["diagvib", "metrics", str(tmp_path / "complete.csv")],
                               env={"COLUMNS": "200"})
    assert whole.exit_code == 0, whole.output
    assert "cells)" not in whole.output


def test_report_marks_a_partial_chgo_improvement_in_table_note_and_caption(partial, tmp_path):
    mark = _mark(compute_metrics(partial))
    html = write_report(partial, tmp_path / "r").read_text(encoding="utf-8")
    section = html[html.index("CHGO over ZGO (paper Table 2)"):]
    section = section[:section.find("<h2", 1)] if "<h2" in section[1:] else section
    assert mark in section  # the table
    assert "(k/m cells)" in section  # the note, in this section, not only above it
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", section, flags=re.S)
    assert any(SHORT in c and mark.strip("()") in c for c in captions), captions


def test_chgo_figure_hatches_a_bar_over_fewer_cells(partial, complete):
    bars = plot_chgo_improvement(compute_metrics(partial)).axes[0].patches
    hatched = [b for b in bars if b.get_hatch()]
    assert len(hatched) == 1
    centre = hatched[0].get_x() + hatched[0].get_width() / 2
    assert int(np.rint(centre)) == FACTORS.index(SHORT)
    whole = plot_chgo_improvement(compute_metrics(complete)).axes[0].patches
    assert not any(b.get_hatch() for b in whole)


def test_chgo_bars_and_error_bars_are_both_in_percentage_points(complete):
    """Table 2 as bars: height 100 × the mean CHGO − ZGO improvement, whisker 100 × its std
    over dataset samples (one unit for both, the axis's percentage points)."""
    metrics = compute_metrics(complete)
    ax = plot_chgo_improvement(metrics).axes[0]
    bars = next(c for c in ax.containers if isinstance(c, BarContainer))
    chgo = metrics.chgo.set_index("factor").loc[list(FACTORS)]
    assert chgo["std"].gt(0.001).all()  # a spread to draw
    np.testing.assert_allclose([b.get_height() for b in bars.patches], 100 * chgo["mean"])
    segments = bars.errorbar.lines[2][0].get_segments()
    half = np.array([(s[1, 1] - s[0, 1]) / 2 for s in segments])
    np.testing.assert_allclose(half, 100 * chgo["std"])
