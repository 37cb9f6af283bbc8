"""DiagViB-6 as a dataset of the factor-analysis engine: which factor classes a model's test
mistakes concentrate on ("errors are 3× more frequent on dark objects").

Every DiagViB-6 image carries its six factor classes, so a trained model's test predictions
go straight into :mod:`shortcutlab.factor_analysis`: each factor is a categorical column
(``lightness=dark``, ``texture=wood``, ...) and the cell tag (``01-ood``) one more. The
predicted factor is left out by default (its class is the label).

    from shortcutlab.diagvib import DiagvibDataset
    from shortcutlab.diagvib.factor_errors import factor_report
    report = factor_report(DiagvibDataset(spec, "test"), y_pred)
    print(report.worst)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from shortcutlab.diagvib.evaluation import predicted_labels, split_predictions
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.errors import DiagvibError, unknown_choice
from shortcutlab.factor_analysis import FactorReport, analyse_factors

if TYPE_CHECKING:
    from shortcutlab.diagvib.dataset import DiagvibDataset

__all__ = ["factor_inputs", "factor_report"]


def factor_inputs(
    source: DiagvibDataset | pd.DataFrame,
    y_pred: Any,
    *,
    predicted: str | None = None,
    indices: Any | None = None,
    include_predicted: bool = False,
    include_tag: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(annotations, predictions) tables for :func:`~shortcutlab.factor_analysis.analyse_factors`.

    ``source`` is a :class:`DiagvibDataset` (its ``metadata()``) or the metadata table of
    ``diagvib export`` (``metadata.csv`` or the ``.npz`` arrays as a DataFrame: index, label, one
    class-name column per factor, tag; then name the ``predicted`` factor to leave it out).
    ``y_pred`` holds one class id (or score row) per image in ``source`` order, or per entry
    of ``indices`` (the images' ``index``).
    """
    if isinstance(source, pd.DataFrame):
        meta = source
        missing = [c for c in ("index", "label", *FACTORS) if c not in meta.columns]
        if missing:
            raise DiagvibError(
                f"metadata has no column {missing[0]!r}; expected index, label, "
                f"{', '.join(FACTORS)}, tag (as diagvib export writes)")
        preds = np.asarray(y_pred)
        idx = np.arange(len(meta)) if indices is None else np.asarray(indices, dtype=np.int64)
        if preds.shape[:1] != idx.shape:
            raise DiagvibError(f"{preds.shape[0] if preds.ndim else 0} predictions for "
                               f"{idx.size} images")
    else:
        meta = source.metadata()
        predicted = source.spec.predicted if predicted is None else predicted
        preds, idx = split_predictions(source, y_pred, indices)
    if predicted is not None and predicted not in FACTORS:
        raise DiagvibError(unknown_choice("predicted factor", predicted, FACTORS))
    factors = [f for f in FACTORS if include_predicted or f != predicted]
    columns = ["index", "label", *factors, *(["tag"] if include_tag and "tag" in meta else [])]
    annotations = meta[columns].rename(columns={"index": "id"})
    predictions = pd.DataFrame({
        "id": meta["index"].to_numpy()[idx],
        "prediction": predicted_labels(np.asarray(preds), len(idx)),
    })
    return annotations, predictions


def factor_report(
    source: DiagvibDataset | pd.DataFrame,
    y_pred: Any,
    *,
    predicted: str | None = None,
    indices: Any | None = None,
    min_coverage: float = 1.0,
    **options: Any,
) -> FactorReport:
    """:func:`~shortcutlab.factor_analysis.analyse_factors` of a model's predictions on a
    DiagViB-6 split: per-factor-class accuracy and error ratio, worst factor classes overall
    and per class, tests, worst-group accuracy (``options`` go to ``analyse_factors``)."""
    annotations, predictions = factor_inputs(source, y_pred, predicted=predicted,
                                             indices=indices)
    return analyse_factors(annotations, predictions, min_coverage=min_coverage,
                           factor_cols=[c for c in annotations.columns
                                        if c not in ("id", "label")], **options)
