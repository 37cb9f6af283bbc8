"""The ImageNet-X section of the HTML report, and a standalone ImageNet-X report.

:func:`analyse` runs everything a report shows (evaluation, bootstrap intervals for the models
drawn, group tests, dataset statistics); :func:`add_imagenetx_section` renders it into a shared
:class:`~shortcutlab.utils.html.HtmlReport`; :func:`write_report` writes ``index.html`` with
``imagenetx.json``, ``summary.csv`` (the package's table) and ``meta_labels.csv`` beside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.imagenetx.annotations import Annotations, Which, load_annotations
from shortcutlab.imagenetx.evaluate import (
    BootstrapCI,
    ErrorType,
    EvaluationResult,
    bootstrap_ci,
    evaluate,
)
from shortcutlab.imagenetx.predictions import Predictions
from shortcutlab.utils.html import HtmlReport
from shortcutlab.utils.io import write_json, write_text

MAX_TABLE_MODELS = 30
MAX_BAR_MODELS = 6


@dataclass
class ImagenetXAnalysis:
    """Everything the ImageNet-X report section shows; only ``result`` is required."""

    result: EvaluationResult
    ci: BootstrapCI | None = None
    groups: dict[str, str] | None = None
    group_tests: pd.DataFrame | None = None
    spearman: tuple[pd.DataFrame, pd.DataFrame] | None = None
    chi2: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready results (per-model numbers, group tests, χ²)."""
        out: dict[str, Any] = {
            "settings": {
                "which": self.result.which,
                "error_type": self.result.error_type,
                "n_images": self.result.n_images,
                **self.result.options,
            },
            "models": self.result.to_dict(),
        }
        if self.group_tests is not None:
            frame = self.group_tests.replace({np.nan: None})
            out["group_tests"] = frame.to_dict(orient="index")
        if self.chi2 is not None:
            out["chi2_train_vs_val"] = {k: v for k, v in self.chi2.items() if k != "counts"}
        return out


def analyse(
    predictions: Predictions,
    which: Which = "top",
    error_type: ErrorType = "class",
    ignore_empty_real: bool = False,
    groups: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    dataset_statistics: bool = True,
    annotations: Annotations | None = None,
) -> ImagenetXAnalysis:
    """Evaluate, bootstrap the models drawn in the bar chart, test groups, describe the data."""
    from shortcutlab.imagenetx import statistics

    annotations = annotations or load_annotations(which, "val")
    result = evaluate(predictions, annotations, error_type, ignore_empty_real)
    analysis = ImagenetXAnalysis(result)
    if n_boot > 0:
        shown = list(result.models[:MAX_BAR_MODELS])
        analysis.ci = bootstrap_ci(
            predictions.select(shown), annotations, error_type, ignore_empty_real, n_boot,
            seed=seed,
        )
    if groups:
        analysis.groups = dict(groups)
        analysis.group_tests = statistics.alexander_govern_by_factor(
            result.table("error_ratio"), analysis.groups
        )
    if dataset_statistics:
        analysis.spearman = statistics.spearman_factors_meta_labels(annotations)
        analysis.chi2 = statistics.chi2_train_vs_val(
            load_annotations(annotations.which, "train"), annotations
        )
    return analysis


def add_imagenetx_section(
    report: HtmlReport, results: ImagenetXAnalysis | EvaluationResult
) -> None:
    """Append the ImageNet-X section (tables, figures, tests) to ``report``."""
    from shortcutlab.imagenetx import figures

    analysis = results if isinstance(results, ImagenetXAnalysis) else ImagenetXAnalysis(results)
    result = analysis.result
    ignored = ""
    if result.options.get("ignore_empty_real"):
        ignored = ", images with an empty ReaL set ignored"
    report.heading("ImageNet-X: which factors are the models' mistakes associated with?")
    report.paragraph(
        f"{len(result.models)} model(s) on {result.n_images:,} annotated validation images "
        f"({result.which} factor, error type {result.error_type}{ignored}). "
        "Error ratio = (1 − accuracy on images with the factor) / (1 − overall accuracy): above "
        "1 the factor is over-represented among the model's mistakes."
    )
    for note in analysis.notes:
        report.paragraph(note, note=True)
    summary = result.table("error_ratio")
    summary.insert(0, "worst_factor_name", result.worst_factor_name)
    summary.insert(0, "average_accuracy", result.average)
    if len(summary) > MAX_TABLE_MODELS:
        report.paragraph(f"First {MAX_TABLE_MODELS} of {len(summary)} models shown.", note=True)
    report.table(summary.head(MAX_TABLE_MODELS).T)
    shown = list(result.models[:MAX_BAR_MODELS])
    report.figure(
        figures.error_ratio_bars(result, shown, analysis.ci),
        "Error ratio per factor (dashed line: a model whose mistakes ignore the factor).",
    )
    if analysis.groups and analysis.group_tests is not None:
        report.heading("Model groups", level=3)
        report.paragraph(
            "Alexander-Govern test per factor of equal mean error ratio across the model groups "
            "(robust to unequal variances); factors with p > 0.05 are drawn transparent."
        )
        report.figure(
            figures.group_comparison(
                result.table("error_ratio"), analysis.groups, analysis.group_tests
            ),
            "Mean error ratio per model group (as paper figure 1b).",
        )
        report.table(analysis.group_tests)
    report.heading("By meta-label", level=3)
    for model in result.models[:2]:
        report.figure(
            figures.meta_label_heatmap(result, model),
            f"{model}: error ratio per meta-label and factor.",
        )
    shift = result.table("prevalence_shift").head(MAX_TABLE_MODELS)
    report.paragraph("Prevalence shift of each factor among the mistakes ((P(f | wrong) − P(f)) / "
                     "P(f)):")
    report.table(shift.T)
    if analysis.spearman is not None:
        report.heading("The annotations themselves", level=3)
        corr, pvals = analysis.spearman
        report.figure(
            figures.correlation_heatmap(corr, pvals),
            "Spearman correlations between factors and meta-labels over validation images "
            "(paper figure 8; only p ≤ 0.05 shown).",
        )
    if analysis.chi2 is not None:
        chi2 = analysis.chi2
        report.paragraph(
            f"χ² test of the factor distribution of the training subset against the validation "
            f"set: χ² = {chi2['statistic']:.1f}, dof = {chi2['dof']}, p = {chi2['pvalue']:.3g}, "
            f"Cramér's V = {chi2['cramers_v']:.3f} (with tens of thousands of images even small "
            "differences are significant; V measures how large they are)."
        )
        report.table(chi2["counts"].T, float_format="{:.0f}")


def write_report(
    results: ImagenetXAnalysis | EvaluationResult,
    out_dir: str | os.PathLike[str],
    title: str = "ImageNet-X error analysis",
) -> Path:
    """Write ``index.html``, ``imagenetx.json``, ``summary.csv``, ``meta_labels.csv``."""
    analysis = results if isinstance(results, ImagenetXAnalysis) else ImagenetXAnalysis(results)
    out = Path(out_dir)
    report = HtmlReport(title)
    add_imagenetx_section(report, analysis)
    write_json(out / "imagenetx.json", analysis.to_dict())
    write_text(out / "summary.csv", analysis.result.summary().to_csv())
    write_text(out / "meta_labels.csv", analysis.result.meta_long().to_csv(index=False))
    return report.write(out / "index.html")
