"""Factor-annotated error analysis for any dataset: ImageNet-X's questions on any table.

Which factors of variation (background, pose, scanner, weather, ...) are a model's mistakes
associated with, and is that more than chance? From a table of per-item annotations (an id,
the true label, binary or categorical factor columns) joined with predictions::

    from shortcutlab.factor_analysis import analyse_factors
    report = analyse_factors("annotations.csv", "predictions.csv")  # or DataFrames
    print(report.worst)        # per model, the factors its mistakes concentrate on

The steps one by one: :func:`annotation_table` (check, expand categorical factors),
:func:`join_predictions` (coverage, refusals), :func:`factor_result` (accuracy, error ratio,
bootstrap intervals), :func:`worst_factors`, :func:`worst_factors_by_class`,
:func:`worst_group_accuracy`, :func:`calibration_by_factor`, :func:`factor_error_tests`.

Pure functions over pandas/numpy (no torch, no dataset named); ImageNet-X is one dataset of
it (``shortcutlab.imagenetx`` counts with :class:`SegmentCounter` and the same formulas).
"""

from __future__ import annotations

from shortcutlab.utils.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **{name: "table" for name in (
        "MAX_CLASSES", "FactorTable", "Joined", "annotation_table", "join_predictions")},
    **{name: "counts" for name in (
        "SegmentCounter", "bootstrap_intervals", "bootstrap_weights", "calibration_error",
        "error_ratio", "group_counts", "ratio")},
    **{name: "analysis" for name in (
        "FactorResult", "calibration_by_factor", "factor_error_tests", "factor_result",
        "worst_factors", "worst_factors_by_class", "worst_group_accuracy")},
    **{name: "one_call" for name in (
        "FORMATS", "FactorReport", "analyse_factors", "read_table")},
    "write_report": "report", "error_ratio_bars": "report",
    "PREDICTION_FORMATS": "timm", "from_timm": "timm",
    **{name: "significance" for name in (
        "alexander_govern_by_factor", "chi2_homogeneity", "spearman_matrix",
        "welch_by_factor")},
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
