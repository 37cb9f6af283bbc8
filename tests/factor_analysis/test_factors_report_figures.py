"""``factors report``'s bar chart: factor names from the data are drawn as typed (a ``$`` is
no mathtext), the numeric axis keeps its formatting."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import cbook
from matplotlib.container import BarContainer

from shortcutlab.factor_analysis import analyse_factors, error_ratio_bars, write_report
from shortcutlab.factor_analysis.report import worst_factor_table
from shortcutlab.utils.html import figure_to_png, literal_text


def test_dollar_factor_names_are_literal_in_the_bar_chart(tmp_path):
    gen = np.random.default_rng(0)
    n = 400
    label = gen.integers(0, 2, n)
    annotations = pd.DataFrame({"id": np.arange(n), "label": label,
                                "$x$": (gen.random(n) < 0.4).astype(int),
                                "a$\\frac{$": gen.choice(["u", "v"], n)})
    right = gen.random(n) < np.where(annotations["$x$"] == 1, 0.6, 0.9)
    predictions = pd.DataFrame({"id": np.arange(n), "prediction": np.where(right, label,
                                                                           1 - label)})
    report = analyse_factors(annotations, predictions, n_boot=0, min_count=10)
    with literal_text():
        fig = error_ratio_bars(report, "model")
    figure_to_png(fig)
    ax = fig.axes[0]
    names = [t for t in ax.get_yticklabels() if t.get_text()]
    shown = [t.get_text().replace(r"\$", "$") for t in names]
    assert any(s.startswith("$x$ (n=") for s in shown), shown
    assert any(s.startswith("a$\\frac{$=u (n=") for s in shown), shown
    assert not any(t.get_parse_math() and cbook.is_math_text(t.get_text()) for t in names)
    assert (tmp_path / "rep" / "index.html") == write_report(report, tmp_path / "rep")


def test_bar_whiskers_span_each_factors_own_bootstrap_interval():
    """Each bar's whisker runs from the factor's lower to its upper bootstrap bound (intervals
    of a ratio are asymmetric: the lower whisker is not the upper one mirrored)."""
    gen = np.random.default_rng(1)
    n = 600
    label = gen.integers(0, 2, n)
    annotations = pd.DataFrame({"id": np.arange(n), "label": label,
                                "dark": (gen.random(n) < 0.3).astype(int),
                                "small": (gen.random(n) < 0.5).astype(int)})
    right = gen.random(n) < np.where(annotations["dark"] == 1, 0.6, 0.9)
    predictions = pd.DataFrame({"id": np.arange(n),
                                "prediction": np.where(right, label, 1 - label)})
    report = analyse_factors(annotations, predictions, n_boot=50, min_count=10)
    long = report.result.long().set_index("factor")
    ax = error_ratio_bars(report, "model").axes[0]
    factors = [t.get_text().split(" (n=")[0] for t in ax.get_yticklabels()]
    assert sorted(factors) == sorted(long.index)
    bars = next(c for c in ax.containers if isinstance(c, BarContainer))
    np.testing.assert_allclose([p.get_width() for p in bars.patches],
                               long.loc[factors, "error_ratio"])
    spans = np.array([seg[:, 0] for seg in bars.errorbar.lines[2][0].get_segments()])
    np.testing.assert_allclose(spans[:, 0], long.loc[factors, "error_ratio_lower"])
    np.testing.assert_allclose(spans[:, 1], long.loc[factors, "error_ratio_upper"])
    lower = long["error_ratio"] - long["error_ratio_lower"]
    upper = long["error_ratio_upper"] - long["error_ratio"]
    assert not np.allclose(lower, upper)  # the data tell the two whiskers apart


def test_the_reports_worst_factor_table_shows_holm_adjusted_p_values():
    """p_holm of each listed factor is statsmodels' Holm adjustment of the model's χ²
    p-values, not the raw p-value (several factors: the two differ)."""
    from statsmodels.stats.multitest import multipletests

    gen = np.random.default_rng(2)
    n = 500
    label = gen.integers(0, 2, n)
    annotations = pd.DataFrame({"id": np.arange(n), "label": label,
                                **{f"f{j}": (gen.random(n) < 0.3).astype(int) for j in range(5)}})
    right = gen.random(n) < np.where(annotations["f0"] == 1, 0.7, 0.85)
    predictions = pd.DataFrame({"id": np.arange(n),
                                "prediction": np.where(right, label, 1 - label)})
    report = analyse_factors(annotations, predictions, n_boot=0, min_count=10)
    raw = report.tests.set_index("factor")["pvalue"]
    holm = pd.Series(multipletests(raw.to_numpy(), method="holm")[1], index=raw.index)
    table = worst_factor_table(report, "model")
    assert len(table) == 5
    np.testing.assert_allclose(table["p_holm"], holm.loc[table["factor"]], rtol=1e-12)
    assert (table["p_holm"].to_numpy() > raw.loc[table["factor"]].to_numpy()).any()
