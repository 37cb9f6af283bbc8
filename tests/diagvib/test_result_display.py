"""DiagViB-6 results that read well in a notebook (issue 34): the metrics' headline
(``print``, ``_repr_html_``) and the report's figures drawn panel by panel on one's own ``ax``,
with the report cosmetics fixed (title, cell text colour, colour-bar ticks, markers at 0)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from shortcutlab.diagvib import figures as figs
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.metrics import CHANCE, compute_metrics
from shortcutlab.errors import DiagvibError
from tests.diagvib.tables import synthetic_table


@pytest.fixture(scope="module")
def metrics():
    return compute_metrics(synthetic_table(models=("a", "b"), studies=("ZSO", "ZGO", "CGO-1")))


def test_print_shows_the_headline_not_nested_frames(metrics) -> None:
    text = str(metrics)
    assert text == repr(metrics) and len(text.splitlines()) <= 12
    head = metrics.headline()
    assert list(head.columns) == ["FAAvg", "FAMin", "jobs done", "incomplete"]
    assert (head["incomplete"] == "").all() and "incomplete" not in text  # nothing lacks
    assert list(head.index) == [(m, s) for m in ("a", "b") for s in ("ZSO", "ZGO", "CGO-1")]
    zgo = metrics.aggregates.query("label == 'a' and study == 'ZGO' and metric == 'FAMin'")
    assert head.loc[("a", "ZGO"), "FAMin"] == pytest.approx(zgo["mean"].mean())
    assert f"{head.loc[('a', 'ZGO'), 'FAMin']:.3f}" in text and "90/90" in text
    html = metrics._repr_html_()
    assert html.startswith("<div>") and "<table" in html and "FAAvg" in html


def test_panels_draw_on_the_callers_axes(metrics) -> None:
    fig = Figure()
    left, right = fig.subplots(1, 2)
    image = figs.plot_panel(metrics, "a", "ZGO", left)
    assert image.get_array().shape == (6, 6) and left.get_title() == "ZGO"
    figs.plot_factor_aggregate(metrics, "hue", "FAMin", "CGO", ax=right)
    assert [t.get_text() for t in right.get_xticklabels()] == ["ZSO", "CGO-1", "ZGO"]
    assert len(right.lines) >= 3  # chance line + one line per model
    assert figs.plot_pair_symmetry(metrics, "ZGO", ax=left) is fig
    with pytest.raises(DiagvibError, match="valid choices: ZSO, ZGO, CGO-1"):
        figs.plot_panel(metrics, "a", "FGO-5", left)


def test_pair_symmetry_plots_p_ij_against_one_minus_p_ji(metrics) -> None:
    """Section 5's check: each unordered pair (i, j) of a model is the point
    (1 − P_ji, P_ij), read here from the model's accuracy matrix (rows predicted, columns
    correlated); on the diagonal when one factor of the pair dominates."""
    ax = figs.plot_pair_symmetry(metrics, "ZGO").axes[0]
    sym = metrics.symmetry[metrics.symmetry["study"] == "ZGO"]
    drawn = {c.get_label(): c.get_offsets() for c in ax.collections}
    assert sorted(drawn) == ["a", "b"]
    for label, group in sym.groupby("label"):
        matrix = metrics.matrix(str(label), "ZGO")
        expected = [(1.0 - matrix.loc[j, i], matrix.loc[i, j])
                    for i, j in zip(group["factor_i"], group["factor_j"], strict=True)]
        assert len(expected) == 15  # the 6 factors' unordered pairs
        np.testing.assert_allclose(np.asarray(drawn[str(label)]), expected)

def test_cell_text_reads_on_its_colour() -> None:
    assert figs.text_colour(0.0) == "white"  # dark red: was black "0.00"
    assert figs.text_colour(1.0) == "white"  # dark blue
    assert figs.text_colour(CHANCE) == "black"  # white-ish middle


def test_colour_bar_ticks_are_spread_over_the_bar(metrics) -> None:
    fig = figs.plot_accuracy_matrices(metrics, "a")
    bar = fig.axes[-1]
    ticks = bar.get_yticks()
    assert ticks == pytest.approx(figs.COLOUR_BAR_TICKS) and CHANCE in ticks
    positions = [float(figs._NORM(t)) for t in ticks]  # where each tick sits on the bar
    assert np.diff(positions) == pytest.approx([0.25] * 4)


def test_title_names_the_studies_drawn_not_a_sequence_that_did_not_run() -> None:
    ends = compute_metrics(synthetic_table(studies=("ZSO", "ZGO")))
    fig = figs.plot_factor_aggregates(ends, "CGO")
    assert fig.get_suptitle().endswith("(ZSO → ZGO)")
    cgo = compute_metrics(synthetic_table(studies=("ZSO", "CGO-1", "ZGO")))
    assert figs.plot_factor_aggregates(cgo, "CGO").get_suptitle().endswith("(CGO)")


def test_points_at_zero_keep_their_whole_marker(metrics) -> None:
    ax = figs.plot_factor_aggregate(metrics, "texture", "FAMin", "CGO")
    low = ax.get_ylim()[0]
    # a 3-point marker is ~0.015 of a 3-inch axis; the old limit (-0.02) cut it in half
    assert low <= -0.05


def test_matrix_panel_rows_are_predicted_and_cell_numbers_sit_on_their_cells(metrics) -> None:
    """Fig. 4a: rows the predicted factor, columns the correlated one. The synthetic table plants
    ZGO accuracy ~0.95 when the predicted factor comes before the correlated one in FACTORS
    (easier) and ~0.05 otherwise, so the upper triangle is high and the lower low; every
    cell's text is the value of the cell it is drawn on (x = column, y = row)."""
    fig = Figure()
    ax = fig.subplots()
    values = np.asarray(figs.plot_panel(metrics, "a", "ZGO", ax).get_array())
    n = len(FACTORS)
    for r in range(n):
        for c in range(n):
            if r < c:
                assert values[r, c] > 0.8, (FACTORS[r], FACTORS[c])
            elif r > c:
                assert values[r, c] < 0.2, (FACTORS[r], FACTORS[c])
    texts = ax.texts
    assert len(texts) == n * (n - 1)  # the diagonal is empty
    for t in texts:
        x, y = t.get_position()
        assert t.get_text() == f"{values[int(y), int(x)]:.2f}", (x, y)
    # the text rows differ: a transposed placement would put a high number in the low triangle
    assert any(float(t.get_text()) > 0.8 and t.get_position()[1] < t.get_position()[0]
               for t in texts)
