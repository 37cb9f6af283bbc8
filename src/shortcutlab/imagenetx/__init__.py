"""ImageNet-X: which factors of variation (pose, background, texture, ...) an ImageNet model's
mistakes are associated with, vectorised over thousands of models (Idrissi et al. 2022).

Typical use (predictions as files, folders, timm's inference CSV, a DataFrame or a dict)::

    from shortcutlab.imagenetx import get_factor_accuracies, error_ratio
    table = get_factor_accuracies("preds/", error_type="real_class")
    error_ratio(table)

Nothing here imports torch except :func:`predict_folder` / :func:`build_model` (running a
model over local ImageNet images), which load on first use.
"""

from __future__ import annotations

from shortcutlab.utils.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "FACTORS": "annotations", "META_LABELS": "annotations", "load_annotations": "annotations",
    "original_val_labels": "annotations",
    "ERROR_TYPES": "evaluate", "EvaluationResult": "evaluate", "bootstrap_ci": "evaluate",
    "error_ratio": "evaluate", "evaluate": "evaluate", "get_factor_accuracies": "evaluate",
    "Predictions": "predictions", "as_predictions": "predictions",
    "load_predictions": "predictions", "original_labels_predictions": "predictions",
    "save_prediction_matrix": "predictions", "combine": "predictions",
    "gather_predictions": "predictions",
    "alexander_govern_by_factor": "statistics", "augmentation_strength_effects": "statistics",
    "chi2_train_vs_val": "statistics", "spearman_factors_meta_labels": "statistics",
    "welch_by_factor": "statistics",
    "correlation_heatmap": "figures", "error_ratio_bars": "figures",
    "group_comparison": "figures", "meta_label_heatmap": "figures",
    "build_model": "predict", "predict_folder": "predict",
    "add_imagenetx_section": "report", "analyse": "report", "write_report": "report",
    **{name: "analyses" for name in (
        "load_model_families", "model_families", "read_result_tables", "figure4_models",
        "factor_shares", "active_factor_counts", "accuracy_by_active_factors",
        "calibration_by_factor",
        "wilson_interval", "meta_label_listing", "listing_text", "tailored_augmentation")},
    **{name: "spillover" for name in ("group_spillover", "claim_verdicts")},
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
