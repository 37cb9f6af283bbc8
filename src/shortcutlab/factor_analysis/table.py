"""Annotation tables and predictions joined on the item id, checked on the way in.

An annotation table has one row per item: an id, the true label and factor columns. A factor
column is *binary* (0/1 or booleans: the factor is present or not, several per item, as
ImageNet-X's) or *categorical* (strings or a few integers: one class per item, expanded to
``factor=class`` indicators). A missing value means "not annotated" for that factor.

Predictions are joined on the id; the coverage (annotated items with a prediction) is always
reported and below ``min_coverage`` the join is refused, so a partial prediction file is never
scored as if it were the dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import FactorAnalysisError

__all__ = ["MAX_CLASSES", "FactorTable", "Joined", "annotation_table", "join_predictions"]

#: A categorical factor column may have at most this many classes (more: probably an id or a
#: continuous measurement; bin it first or raise ``max_classes``).
MAX_CLASSES = 50


def _examples(values: Sequence[Any] | np.ndarray, k: int = 5) -> str:
    shown = [str(v) for v in list(values)[:k]]
    return ", ".join(shown) + (" ..." if len(values) > k else "")


@dataclass(frozen=True)
class FactorTable:
    """Items with ids, labels and 0/1 factor indicators (``items × indicators``).

    ``names[j]`` is indicator ``j`` (a binary column's name, or ``column=class``) and
    ``columns[j]`` the annotation column it comes from. Labels are compared as text:
    ``label_codes[i]`` indexes ``label_set`` (sorted).
    """

    ids: pd.Index  # integer ids stay integers, anything else is text
    label_codes: np.ndarray
    label_set: tuple[str, ...]
    names: tuple[str, ...]
    columns: tuple[str, ...]
    indicators: np.ndarray
    values: pd.DataFrame  # the factor columns as given (for combinations of factors)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def labels(self) -> np.ndarray:
        """The true label of each item (text)."""
        return np.asarray(self.label_set, dtype=object)[self.label_codes]


def _id_keys(ids: pd.Series, integer: bool) -> pd.Index:
    """Ids as integers (both tables integer ids: fast) or as text (anything else)."""
    return pd.Index(ids.to_numpy(dtype=np.int64) if integer else ids.astype(str).to_numpy())


def _is_integer(ids: pd.Series | pd.Index) -> bool:
    return pd.api.types.is_integer_dtype(ids)


def _column_kind(name: str, values: pd.Series, max_classes: int) -> str:
    """``binary`` or ``categorical``, or a one-line error naming the column."""
    present = values.dropna()
    if present.empty:
        raise FactorAnalysisError(f"factor column {name!r} is empty: no item has a value")
    if pd.api.types.is_bool_dtype(present) or pd.api.types.infer_dtype(present) == "boolean" or (
        pd.api.types.is_numeric_dtype(present) and set(present.unique()) <= {0, 1}
    ):
        if not present.astype(bool).any():
            raise FactorAnalysisError(
                f"factor column {name!r} is empty: binary, and no item has the factor")
        return "binary"
    n_classes = present.nunique()
    integral = pd.api.types.is_numeric_dtype(present) and bool(
        (present == np.round(present.astype(float))).all())
    if not pd.api.types.is_numeric_dtype(present) or integral:
        if n_classes > max_classes:
            raise FactorAnalysisError(
                f"factor column {name!r} has {n_classes} classes (more than max_classes="
                f"{max_classes}): neither binary nor categorical; bin it, leave it out or "
                "raise max_classes")
        return "categorical"
    raise FactorAnalysisError(
        f"factor column {name!r} holds non-integer numbers (e.g. {present.iloc[0]!r}): neither "
        "binary (0/1, true/false) nor categorical (strings or integer classes); bin it first")


def annotation_table(
    frame: pd.DataFrame,
    id_col: str = "id",
    label_col: str = "label",
    factor_cols: Sequence[str] | None = None,
    max_classes: int = MAX_CLASSES,
) -> FactorTable:
    """Check an annotation frame and expand its factors into indicators.

    ``factor_cols`` defaults to every column but the id and the label. Refused with a one-line
    error: a missing id/label column, missing or duplicated ids, missing labels, no factor
    column, a factor column that is empty or neither binary nor categorical.
    """
    for role, col in (("id", id_col), ("label", label_col)):
        if col not in frame.columns:
            raise FactorAnalysisError(
                f"annotations have no {role} column {col!r}; columns: "
                f"{_examples(frame.columns, 12)} (name it with --{role}-col / {role}_col=)")
    if factor_cols is None:
        factor_cols = [c for c in frame.columns if c not in (id_col, label_col)]
    else:
        unknown = [c for c in factor_cols if c not in frame.columns]
        if unknown:
            raise FactorAnalysisError(
                f"factor columns {unknown} not in the annotations; columns: "
                f"{_examples(frame.columns, 12)}")
    if not factor_cols:
        raise FactorAnalysisError("annotations have no factor column besides the id and label")
    repeated = sorted({str(c) for c in factor_cols if list(factor_cols).count(c) > 1})
    if repeated:
        raise FactorAnalysisError(f"factor columns repeated: {_examples(repeated)}; name each once")
    ids = frame[id_col]
    if ids.isna().any():
        raise FactorAnalysisError(
            f"annotations: {int(ids.isna().sum())} rows without an id in column {id_col!r}")
    ids = _id_keys(ids, _is_integer(ids))
    dup = ids[ids.duplicated()].unique()
    if len(dup):
        raise FactorAnalysisError(
            f"annotations: {len(dup)} duplicated ids ({_examples(dup)}); ids must be unique")
    labels = frame[label_col]
    if labels.isna().any():
        raise FactorAnalysisError(
            f"annotations: {int(labels.isna().sum())} rows without a label in column "
            f"{label_col!r}")
    names: list[str] = []
    columns: list[str] = []
    blocks: list[np.ndarray] = []
    for col in factor_cols:
        values = frame[col]
        if _column_kind(col, values, max_classes) == "binary":
            names.append(str(col))
            columns.append(str(col))
            blocks.append(values.astype(object).where(values.notna(), False).astype(bool)
                          .to_numpy()[:, None])
            continue
        classes = sorted(values.dropna().unique().tolist(), key=str)
        for cls in classes:
            names.append(f"{col}={cls}")
            columns.append(str(col))
        blocks.append(np.stack([(values == cls).to_numpy() for cls in classes], axis=1))
    raw_codes, raw = pd.factorize(labels)  # text only for the few distinct labels
    text = pd.Index(np.asarray(raw, dtype=object)).astype(str)
    uniques = np.sort(text.unique())
    codes = pd.Index(uniques).get_indexer(text)[raw_codes]
    return FactorTable(
        ids=ids,
        label_codes=codes.astype(np.int32),
        label_set=tuple(str(u) for u in uniques),
        names=tuple(names),
        columns=tuple(columns),
        indicators=np.concatenate(blocks, axis=1),
        values=frame[list(factor_cols)].reset_index(drop=True),
    )


@dataclass(frozen=True)
class Joined:
    """Predictions of one or more models aligned with a :class:`FactorTable`'s items.

    ``predicted`` is models × items of indices into the table's ``label_set`` (−1 where a
    model has no prediction), ``valid`` says
    which are scored and ``correct`` which equal the true label; ``probabilities`` (or None)
    holds the confidence of each prediction. ``coverage`` has one row per model: annotated,
    predicted and matched items and their ratio.
    """

    models: tuple[str, ...]
    predicted: np.ndarray
    valid: np.ndarray
    correct: np.ndarray
    probabilities: np.ndarray | None
    coverage: pd.DataFrame


def join_predictions(
    table: FactorTable,
    predictions: pd.DataFrame,
    id_col: str = "id",
    pred_col: str = "prediction",
    prob_col: str | None = None,
    model_col: str | None = None,
    min_coverage: float = 1.0,
) -> Joined:
    """Align predictions (one row per item, or per (model, item) with ``model_col``) with the
    annotated items.

    Refused with a one-line error: missing columns, ids not in the annotations, duplicated
    (model, id) rows, predicted labels outside the annotations' label set, and a model whose
    coverage (annotated items it predicts) is below ``min_coverage``.
    """
    if not 0 <= min_coverage <= 1:
        raise FactorAnalysisError(f"min_coverage must be in [0, 1], got {min_coverage}")
    needed = [c for c in (id_col, pred_col, prob_col, model_col) if c is not None]
    missing = [c for c in needed if c not in predictions.columns]
    if missing:
        raise FactorAnalysisError(
            f"predictions have no column {missing[0]!r}; columns: "
            f"{_examples(predictions.columns, 12)}")
    frame = predictions
    if frame[id_col].isna().any():
        raise FactorAnalysisError(
            f"predictions: {int(frame[id_col].isna().sum())} rows without an id in column "
            f"{id_col!r}")
    if model_col is not None and frame[model_col].isna().any():
        raise FactorAnalysisError(
            f"predictions: {int(frame[model_col].isna().sum())} rows without a model in column "
            f"{model_col!r}")
    if model_col is None:
        model_col = "__model__"
        frame = frame.assign(**{model_col: "model"})
    ids = _id_keys(frame[id_col], _is_integer(frame[id_col]) and _is_integer(table.ids))
    index = table.ids if _is_integer(ids) or not _is_integer(table.ids) else pd.Index(
        table.ids.astype(str))
    position = index.get_indexer(ids)
    if (position < 0).any():
        unknown = ids[position < 0].unique()
        known = len(np.unique(position[position >= 0]))
        raise FactorAnalysisError(
            f"{len(unknown)} prediction ids are not in the annotations ({_examples(unknown)}); "
            f"the others cover {known:,} of {len(table):,} annotated items "
            f"({known / len(table):.1%}); check --id-col / id_col and that both tables are of "
            "the same items")
    model_codes, model_names = pd.factorize(frame[model_col].astype(str))
    pair = position.astype(np.int64) + len(table) * model_codes.astype(np.int64)
    dup_mask = pd.Index(pair).duplicated()
    if dup_mask.any():
        dup = ids[dup_mask].unique()
        raise FactorAnalysisError(
            f"predictions: {int(dup_mask.sum())} duplicated ids ({_examples(dup)}); one "
            "prediction per item (and model)")
    if frame[pred_col].isna().any():
        raise FactorAnalysisError(
            f"predictions: {int(frame[pred_col].isna().sum())} rows without a value in "
            f"{pred_col!r}")
    pred_codes, pred_uniques = pd.factorize(frame[pred_col])
    label_of = pd.Index(table.label_set).get_indexer([str(u) for u in pred_uniques])
    if (label_of < 0).any():
        outside = [str(u) for u in np.asarray(pred_uniques, dtype=object)[label_of < 0]]
        raise FactorAnalysisError(
            f"{len(outside)} predicted labels are outside the annotations' label set "
            f"({_examples(outside)}); labels: {_examples(table.label_set, 8)}")
    models = tuple(str(m) for m in model_names)
    rows = model_codes
    n = len(table)
    predicted = np.full((len(models), n), -1, dtype=np.int32)
    predicted[rows, position] = label_of[pred_codes]
    valid = predicted >= 0
    correct = predicted == table.label_codes[None, :]
    probs = None
    if prob_col is not None:
        values = pd.to_numeric(frame[prob_col], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < 0) | (values > 1)
        if bad.any():
            first = frame[prob_col].iloc[int(np.flatnonzero(bad)[0])]
            raise FactorAnalysisError(
                f"predictions: column {prob_col!r} must hold probabilities in [0, 1]; "
                f"{int(bad.sum())} bad values (first: {first!r})")
        probs = np.full((len(models), n), np.nan)
        probs[rows, position] = values
    matched = valid.sum(axis=1)
    coverage = pd.DataFrame(
        {"annotated": n, "matched": matched, "coverage": matched / n},
        index=pd.Index(models, name="model"))
    low = coverage[coverage["coverage"] < min_coverage]
    if len(low):
        first = low.iloc[0]
        raise FactorAnalysisError(
            f"model {low.index[0]!r} predicts {int(first['matched']):,} of {n:,} annotated items "
            f"(coverage {first['coverage']:.1%} < min_coverage {min_coverage:.0%}); give "
            "predictions for every item or lower min_coverage / --min-coverage")
    return Joined(models, predicted, valid, correct, probs, coverage)
