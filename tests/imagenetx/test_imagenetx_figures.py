"""Figures: what is drawn matches the numbers (bar heights, whiskers, transparency, cells)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS
from shortcutlab.imagenetx.evaluate import bootstrap_ci, evaluate
from shortcutlab.imagenetx.figures import (
    active_factors_bars,
    error_ratio_bars,
    factor_shares_bars,
    factor_vs_overall,
    group_comparison,
    meta_label_heatmap,
)


@pytest.fixture(scope="module")
def result_and_ci(model_predictions, top_val):
    preds = model_predictions.select(["m0", "m2"])
    return evaluate(preds, top_val, "class"), bootstrap_ci(preds, top_val, "class", n_boot=20)


def test_error_ratio_bars_heights_and_whiskers(result_and_ci):
    result, ci = result_and_ci
    fig = error_ratio_bars(result, ["m2"], ci)
    ax = fig.axes[0]
    order = [t.get_text().replace(" ", "_") for t in ax.get_xticklabels()]
    assert sorted(order) == sorted(FACTORS)
    heights = [p.get_height() for p in ax.patches]
    expected = result.table("error_ratio").loc["m2", order].to_numpy()
    np.testing.assert_allclose(heights, expected)
    assert heights == sorted(heights, reverse=True)  # factors ordered by error ratio
    # Whisker of the first bar spans the bootstrap interval of that factor.
    bars = next(c for c in ax.containers if isinstance(c, BarContainer))
    segments = bars.errorbar.lines[2][0].get_segments()
    np.testing.assert_allclose(segments[0][:, 1], ci.table("m2").loc[order[0]].to_numpy())
    with pytest.raises(ImagenetXError, match="model 'zz' not in the result"):
        error_ratio_bars(result, ["zz"])


def test_group_comparison_is_transparent_where_not_significant():
    gen = np.random.default_rng(0)
    table = pd.DataFrame(gen.normal(1, 0.05, (6, 2)), columns=["pose", "texture"],
                         index=[f"m{i}" for i in range(6)])
    groups = {m: "a" if i < 3 else "b" for i, m in enumerate(table.index)}
    tests = pd.DataFrame({"pvalue": [0.5, 0.001]}, index=["pose", "texture"])
    fig = group_comparison(table, groups, tests)
    ax = fig.axes[0]
    assert sorted(p.get_alpha() for p in ax.patches) == [0.3, 0.3, 1.0, 1.0]
    order = [t.get_text() for t in ax.get_xticklabels()]
    faint = {order[int(round(p.get_x() + p.get_width() / 2))] for p in ax.patches
             if p.get_alpha() == 0.3}
    assert faint == {"pose"}
    means = table.groupby(pd.Series(groups)).mean()
    tall = sorted(p.get_height() for p in ax.patches)
    np.testing.assert_allclose(tall, sorted(means.to_numpy().ravel()))
    with pytest.raises(ImagenetXError, match="no group for models"):
        group_comparison(table, {"m0": "a"})


def test_group_comparison_error_bars_are_the_standard_error_of_each_group_mean():
    """Figure 1b's whiskers (axis: "± s.e.m."): std (ddof 1) / √(models in the group), by hand."""
    table = pd.DataFrame({"pose": [1.0, 1.2, 1.7, 0.8, 1.0], "texture": [2.0, 2.6, 2.9, 1.1, 1.5]},
                         index=[f"m{i}" for i in range(5)])
    groups = {"m0": "a", "m1": "a", "m2": "a", "m3": "b", "m4": "b"}
    ax = group_comparison(table, groups).axes[0]
    order = [t.get_text() for t in ax.get_xticklabels()]
    half = {}
    for bars in (c for c in ax.containers if isinstance(c, BarContainer)):
        (patch,) = bars.patches
        (segment,) = bars.errorbar.lines[2][0].get_segments()
        factor = order[int(round(patch.get_x() + patch.get_width() / 2))]
        half[(round(patch.get_height(), 6), factor)] = (segment[1, 1] - segment[0, 1]) / 2
    def sem(values: list[float]) -> float:
        return float(np.std(values, ddof=1) / np.sqrt(len(values)))
    expected = {(round(float(np.mean(v)), 6), f): sem(v) for f, v in
                [("pose", [1.0, 1.2, 1.7]), ("pose", [0.8, 1.0]),
                 ("texture", [2.0, 2.6, 2.9]), ("texture", [1.1, 1.5])]}
    assert half.keys() == expected.keys()
    for key, value in expected.items():
        assert half[key] == pytest.approx(value), key

def test_meta_label_heatmap_cells(result_and_ci):
    result, _ = result_and_ci
    fig = meta_label_heatmap(result, "m0", min_count=10)
    data = fig.axes[0].images[0].get_array()
    table = result.meta_table("m0", "error_ratio")
    counts = result.meta_table("m0", "count")
    dog, pose = META_LABELS.index("dog"), FACTORS.index("pose")
    assert data[dog, pose] == pytest.approx(table.loc["dog", "pose"])
    counts = counts[list(FACTORS)].to_numpy()
    few = (counts < 10) & (counts > 0)
    values = table[list(FACTORS)].to_numpy()
    # Small cells are drawn (not blank), framed (no hatch over the count) and labelled with
    # their image count.
    assert few.any()
    np.testing.assert_allclose(np.ma.filled(data, np.nan)[few], values[few])
    assert not any(p.get_hatch() for p in fig.axes[0].patches)
    framed = [p for p in fig.axes[0].patches if not p.get_fill()]
    assert len(framed) == int(few.sum())
    labels = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
              for t in fig.axes[0].texts}
    g, f = map(int, np.argwhere(few)[0])
    assert labels[(g, f)] == str(int(counts[g, f]))


def test_factor_vs_overall_panels_and_points(result_and_ci):
    result, _ = result_and_ci
    summary = result.summary()
    families = pd.Series({"m0": "supervised_1k", "m2": "more_data"})
    fig = factor_vs_overall(summary, families)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels][-2:] == ["worst factor", "worst 100 classes"]
    assert len(panels) == len(FACTORS) + 2
    pose = panels[0]
    points = np.concatenate([c.get_offsets() for c in pose.collections])
    expected = summary[["average", "pose"]].to_numpy()
    np.testing.assert_allclose(sorted(map(tuple, points)), sorted(map(tuple, expected)))


def test_active_factors_bars_heights():
    counts = pd.DataFrame({"val": [5, 100, 10], "train": [1, 20, 3]})
    fig = active_factors_bars(counts)
    heights = sorted(p.get_height() for p in fig.axes[0].patches)
    assert heights == sorted(counts.to_numpy().ravel().tolist())


def test_factor_shares_bars_heights_order_and_legend(top_val):
    from shortcutlab.imagenetx.analyses import factor_shares
    from shortcutlab.imagenetx.annotations import load_annotations

    shares = factor_shares(load_annotations("multi", "val"), top_val)
    fig = factor_shares_bars(shares)
    assert len(fig.axes) == 4  # 16 factors, 4 to a panel, each on its own scale
    table = shares.pivot(index="factor", columns="which", values="share")
    mean = table.mean(axis=1).sort_values(ascending=False, kind="stable")
    drawn = []
    for ax in fig.axes:
        names = [t.get_text().replace(" ", "_") for t in ax.get_xticklabels()]
        drawn += names
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        assert [b.get_label() for b in bars] == ["val, all factors", "val, top factor"]
        for bar, which in zip(bars, ("multi", "top"), strict=True):
            heights = [p.get_height() for p in bar.patches]
            np.testing.assert_allclose(heights, table.loc[names, which].to_numpy())
    assert drawn == mean.index.tolist()
    assert drawn[:2] == ["pose", "background"]


def test_group_comparison_draws_a_factor_with_p_equal_to_alpha_opaque():
    """Transparent only where p > alpha (the title says so): p = alpha is a group difference."""
    table = pd.DataFrame({"pose": [1.0, 1.2, 1.7, 0.8], "texture": [2.0, 2.6, 2.9, 1.1]},
                         index=[f"m{i}" for i in range(4)])
    groups = {"m0": "a", "m1": "a", "m2": "b", "m3": "b"}
    tests = pd.DataFrame({"pvalue": [0.05, 0.0500001]}, index=["pose", "texture"])
    ax = group_comparison(table, groups, tests, alpha=0.05).axes[0]
    order = [t.get_text() for t in ax.get_xticklabels()]
    alpha_of = {}
    for p in ax.patches:
        alpha_of.setdefault(order[int(round(p.get_x() + p.get_width() / 2))], set()).add(
            p.get_alpha())
    assert alpha_of == {"pose": {1.0}, "texture": {0.3}}
