"""A factor-analysis report: ``index.html`` (coverage, worst factors overall and per class with
their intervals and tests, worst groups, calibration, one bar chart per model) beside the
numbers as ``factors.json`` and CSV tables, written all or none."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from shortcutlab.factor_analysis.one_call import FactorReport
from shortcutlab.utils.html import HtmlReport, literal_text
from shortcutlab.utils.io import output_set
from shortcutlab.utils.sanitize import json_safe

__all__ = ["error_ratio_bars", "worst_factor_table", "write_report"]

#: Factors drawn per model in the bar chart (the highest error ratios first).
MAX_BARS = 25


def error_ratio_bars(report: FactorReport, model: str, min_count: int = 1) -> Figure:
    """Horizontal bars of one model's error ratio per factor (highest on top, at most
    :data:`MAX_BARS`), bootstrap whiskers when computed, a dashed line at 1 (no association)."""
    long = report.result.long()
    long = long[(long["model"] == model) & (long["count"] >= min_count)
                & np.isfinite(long["error_ratio"])]
    long = long.sort_values("error_ratio", ascending=False, kind="stable").head(MAX_BARS)[::-1]
    fig = Figure(figsize=(7, 0.8 + 0.3 * max(len(long), 1)))
    ax = fig.add_subplot()
    y = np.arange(len(long))
    xerr = None
    if "error_ratio_lower" in long.columns:
        xerr = np.abs(np.stack([long["error_ratio"] - long["error_ratio_lower"],
                                long["error_ratio_upper"] - long["error_ratio"]]))
    ax.barh(y, long["error_ratio"], xerr=xerr, color="#4c72b0", ecolor="#333", capsize=2)
    ax.set_yticks(y, [f"{f} (n={c:,})" for f, c in zip(long["factor"], long["count"],
                                                       strict=True)])
    ax.axvline(1.0, color="#c44e52", linestyle="--", linewidth=1)
    ax.set_xlabel("error ratio (1 − acc on the factor) / (1 − acc)")
    ax.set_title(f"{model}: error ratio per factor")
    fig.tight_layout()
    return fig


def worst_factor_table(report: FactorReport, model: str) -> pd.DataFrame:
    """One model's worst factors as the report shows them, with ``p_holm``: the
    Holm-adjusted p-value of each factor's χ² test."""
    tests = report.tests.set_index(["model", "factor"])["pvalue_holm"]
    worst = report.worst[report.worst["model"] == model].drop(columns="model")
    return worst.assign(p_holm=[tests.get((model, f), np.nan) for f in worst["factor"]])


def write_report(
    report: FactorReport, out_dir: str | os.PathLike[str], title: str = "Factor analysis",
    min_count: int = 30,
) -> Path:
    """Write ``index.html``, ``factors.json``, ``factors.csv`` (every model × factor),
    ``worst_factors.csv``, ``by_class.csv``, ``tests.csv``, ``groups.csv`` and (with
    probabilities) ``calibration.csv`` to ``out_dir``; returns the path of ``index.html``."""
    out = Path(out_dir)
    page = HtmlReport(title)
    with literal_text():  # factor and class names are data, not mathtext
        page.paragraph(
            "Error ratio = (1 − accuracy on the items with a factor) / (1 − overall accuracy): "
            "above 1 the factor is over-represented among the model's mistakes. Intervals: "
            "bootstrap over items, 95%. p (Holm): χ² test of the error rate with against "
            "without the factor, Holm-adjusted over the model's factors.")
        page.heading("Coverage", level=2)
        page.table(report.coverage, "{:.4f}")
        for model in report.result.models:
            page.heading(model, level=2)
            wg = report.worst_group[model]
            page.paragraph(f"Worst-group accuracy {wg['acc_wg']:.4f} ({wg['worst_group']}, "
                           f"{wg['n_groups']} groups of {report.worst_group['min_count']}+ "
                           f"items; {len(wg['excluded'])} smaller groups excluded).")
            page.table(worst_factor_table(report, model).set_index("rank"), "{:.3g}")
            page.figure(error_ratio_bars(report, model, min_count),
                        "Error ratio per factor (dashed: a model whose mistakes ignore it).")
            by_class = report.by_class[report.by_class["model"] == model]
            if not by_class.empty:
                page.paragraph("Worst factors within each class (error ratio against the "
                               "class's own accuracy):")
                page.table(by_class.drop(columns="model").set_index(["class", "rank"]), "{:.3g}")
        if report.calibration is not None:
            page.heading("Calibration per factor", level=2)
            page.table(report.calibration.T, "{:.4f}")
        html = page.render()
    tables = {
        "factors.csv": report.result.long(), "worst_factors.csv": report.worst,
        "by_class.csv": report.by_class, "tests.csv": report.tests,
        "groups.csv": report.worst_group["groups"],
    }
    if report.calibration is not None:
        tables["calibration.csv"] = report.calibration.reset_index()
    with output_set() as outputs:
        outputs.write_json(out / "factors.json", json_safe(report.to_dict()))
        for name, frame in tables.items():
            outputs.write_text(out / name, pd.DataFrame(frame).to_csv(index=False))
        return outputs.write_text(out / "index.html", html)
