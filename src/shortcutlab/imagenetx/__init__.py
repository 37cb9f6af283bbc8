"""ImageNet-X: which factors of variation (pose, background, texture, ...) an ImageNet model's
mistakes are associated with, vectorised over thousands of models (Idrissi et al. 2022).

Typical use::

    from shortcutlab.imagenetx import load_annotations, load_predictions, evaluate
    result = evaluate(load_predictions(["preds/"]), load_annotations("top"), "real_class")
    result.table("error_ratio")
"""

from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS, load_annotations
from shortcutlab.imagenetx.evaluate import ERROR_TYPES, bootstrap_ci, evaluate
from shortcutlab.imagenetx.predictions import load_predictions, original_labels_predictions

__all__ = [
    "ERROR_TYPES",
    "FACTORS",
    "META_LABELS",
    "bootstrap_ci",
    "evaluate",
    "load_annotations",
    "load_predictions",
    "original_labels_predictions",
]
