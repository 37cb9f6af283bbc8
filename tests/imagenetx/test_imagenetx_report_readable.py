"""The report's figures read for any data size (markers, cell counts, colour scales, tables,
log axes with names literal) and figure 9 (training-set Spearman)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib import cbook
from matplotlib.figure import Figure
from matplotlib.text import Text

from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS, load_annotations
from shortcutlab.imagenetx.evaluate import evaluate
from shortcutlab.imagenetx.figures import (
    active_factors_bars,
    correlation_heatmap,
    factor_vs_overall,
    meta_label_heatmap,
    text_colour,
)
from shortcutlab.imagenetx.report import (
    ImagenetXAnalysis,
    analyse,
    chi2_table,
    factor_shares_table,
    write_report,
)
from shortcutlab.imagenetx.statistics import chi2_train_vs_val
from shortcutlab.utils.html import HtmlReport, figure_to_png, literal_text


def _renders_math(text: Text) -> bool:
    """Whether matplotlib draws ``text`` as mathtext (as Text._preprocess_math decides)."""
    return bool(text.get_parse_math() and cbook.is_math_text(text.get_text()))


def _shown(text: Text) -> str:
    """What a literal text shows (escaped dollars are drawn as dollars)."""
    return text.get_text().replace(r"\$", "$")


def test_log_axis_ticks_render_and_names_stay_literal():
    with literal_text():  # as the reports build their figures
        fig = active_factors_bars(pd.DataFrame({"val": [10, 20_000, 300]}),
                                  pd.DataFrame({0: [0.9], 1: [0.8], 2: [0.7]}, index=["$x$"]))
        fig.axes[0].set_title("$\\frac{$")  # not valid mathtext: must not crash the drawing
    assert figure_to_png(fig)[:4] == b"\x89PNG"
    counts, accuracy = fig.axes[:2]
    log_ticks = [t for t in counts.get_yticklabels() if t.get_text()]
    assert log_ticks and all("mathdefault" in t.get_text() for t in log_ticks)
    assert all(_renders_math(t) for t in log_ticks)  # 10^4, not "$\mathdefault{10^{4}}$"
    legend = [t for t in accuracy.get_legend().get_texts()]
    assert [t.get_text() for t in legend] == ["$x$"] and not _renders_math(legend[0])
    assert not _renders_math(counts.title) and counts.get_title() == "$\\frac{$"


def test_category_tick_labels_made_at_draw_time_are_literal():
    fig = Figure()
    ax = fig.add_subplot()
    ax.bar(["$x$", "a$b$c"], [1, 1000])
    ax.set_yscale("log")
    figure_to_png(fig)
    names = ax.get_xticklabels()
    assert [_shown(t) for t in names] == ["$x$", "a$b$c"]
    assert not any(_renders_math(t) for t in names)
    assert figure_to_png(fig)[:4] == b"\x89PNG"  # twice: the escaping is not applied twice
    assert [_shown(t) for t in ax.get_xticklabels()] == ["$x$", "a$b$c"]


@pytest.fixture(scope="module")
def result(model_predictions, top_val):
    return evaluate(model_predictions, top_val, "class")


def test_figure4_markers_are_readable_for_few_and_many_models(result):
    few = factor_vs_overall(result.summary(), pd.Series(dtype=object))
    sizes = np.concatenate([c.get_sizes() for c in few.axes[0].collections])
    assert sizes.min() >= 36  # three models: large dots (area in points²; was 8)
    many = pd.DataFrame(np.random.default_rng(0).random((2000, 2)),
                        columns=["average", "pose"])
    fig = factor_vs_overall(many, pd.Series("supervised_1k", index=many.index))
    assert np.concatenate([c.get_sizes() for c in fig.axes[0].collections]).min() >= 16


def test_heatmap_counts_are_legible_on_their_cells(result):
    fig = meta_label_heatmap(result, "m0", min_count=10)
    ax = fig.axes[0]
    image = ax.images[0]
    assert ax.texts and not any(p.get_hatch() for p in ax.patches)
    data = np.ma.filled(image.get_array(), np.nan)
    for text in ax.texts:
        f, g = (round(v) for v in text.get_position())
        if np.isfinite(data[g, f]):
            cell = image.cmap(image.norm(data[g, f]))
            assert text.get_color() == text_colour(cell)
    assert text_colour((0.0, 0.0, 0.3, 1.0)) == "white"
    assert text_colour((0.95, 0.95, 0.9, 1.0)) == "black"


def test_spearman_colours_span_the_largest_correlation_shown():
    names = ["a", "b", "c"]
    corr = pd.DataFrame([[1, 0.28, -0.12], [0.28, 1, 0.5], [-0.12, 0.5, 1]], names, names)
    pvals = pd.DataFrame([[0, 0.01, 0.02], [0.01, 0, 0.2], [0.02, 0.2, 0]], names, names)
    fig = correlation_heatmap(corr, pvals)
    image = fig.axes[0].images[0]
    assert (image.norm.vmin, image.norm.vmax) == pytest.approx((-0.3, 0.3))  # 0.5 not shown
    assert "±0.30" in fig.axes[1].get_ylabel()


def test_chi2_table_fits_the_page_one_row_per_factor():
    counts = chi2_train_vs_val(load_annotations("top", "train"),
                               load_annotations("top", "val"))["counts"]
    table = chi2_table(counts)
    assert table.shape == (len(FACTORS), 4)  # was 2 rows × 16 columns, cut at the right
    assert table.loc["partial view", "train"] == counts.loc["partial_view", "train"]
    assert table["val %"].sum() == pytest.approx(100, abs=0.1)
    page = HtmlReport("t")
    page.table(table, float_format="{:.1f}")
    header = page.render().split("<thead>")[1].split("</tr>")[0]
    assert header.count("<th") == 5  # the factor names, then four columns


def test_report_draws_figure2_beside_the_annotation_sections_and_writes_its_csv(tmp_path,
                                                                                top_val):
    """Figure 2 in "The annotations themselves", its numbers in factor_shares.csv and the JSON
    (a model right on 50 images keeps the rest of the report to a few lines)."""
    import json

    from shortcutlab.imagenetx.analyses import factor_shares
    from shortcutlab.imagenetx.predictions import Predictions

    shares = factor_shares(load_annotations("top", "train"), top_val)
    few = top_val.take(np.arange(50))
    result = evaluate(Predictions(("m",), few.file_names, few.labels[None, :]), few)
    html = write_report(ImagenetXAnalysis(result, factor_shares=shares), tmp_path).read_text()
    section = html.split("<h3>The annotations themselves</h3>")[1]
    assert "top factor only (paper figure 2)" in section and "data:image/png;base64" in section
    written = pd.read_csv(tmp_path / "factor_shares.csv")
    pd.testing.assert_frame_equal(written, shares)
    assert json.loads((tmp_path / "imagenetx.json").read_text())["factor_shares"][0] == {
        **shares.iloc[0].to_dict(), "count": int(shares["count"].iloc[0])}
    table = factor_shares_table(shares)
    assert list(table.columns) == ["train top", "val top", "train top %", "val top %"]
    assert table.loc["partial view", "val top"] == shares.query(
        "partition == 'val' and factor == 'partial_view'")["count"].item()
    assert table["val top %"].sum() == pytest.approx(100, abs=0.1)
    assert table.to_html().count("<tr>") == len(FACTORS) + 1  # shown as one row per factor


def test_figure9_is_the_training_spearman_of_the_package(model_predictions):
    """Figure 9 = figure 8 over the training images: equal to imagenet-x's
    spearman_corr_heatmaps on its training annotations (drawn in the report: see
    test_imagenetx_cli.py::test_report_with_groups)."""
    from imagenet_x.aggregate import spearman_corr_heatmaps
    from imagenet_x.utils import FACTORS as PKG_FACTORS
    from imagenet_x.utils import METACLASSES
    from imagenet_x.utils import load_annotations as package_annotations

    analysis = analyse(model_predictions.select(["m0"]), n_boot=0)
    assert analysis.spearman_train is not None
    corr, pvals = analysis.spearman_train
    expected, expected_p = spearman_corr_heatmaps(package_annotations("top", "train"),
                                                  PKG_FACTORS, METACLASSES)
    ours = [*FACTORS, *META_LABELS]
    theirs = [*PKG_FACTORS, *METACLASSES]
    a = corr.loc[ours, ours].to_numpy()
    b = expected.loc[theirs, theirs].to_numpy()
    off = ~np.eye(len(ours), dtype=bool) & np.isfinite(b)
    np.testing.assert_allclose(a[off], b[off], atol=1e-12)
    np.testing.assert_allclose(pvals.loc[ours, ours].to_numpy()[off],
                               expected_p.loc[theirs, theirs].to_numpy()[off], atol=1e-12)
    assert not np.allclose(a[off], analysis.spearman[0].loc[ours, ours].to_numpy()[off])
    # figure 2 beside it: the four annotation sets of the paper
    from shortcutlab.imagenetx.analyses import factor_shares

    assert analysis.factor_shares is not None
    pd.testing.assert_frame_equal(analysis.factor_shares, factor_shares())
    # that the report draws both maps is checked on the report test_imagenetx_cli.py draws once
