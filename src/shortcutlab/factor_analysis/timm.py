"""Prediction tables as timm's ``inference.py`` writes them, read into the engine's layout.

timm writes ``filename`` (a path), ``index`` (class indices, with ``--include-index``) and/or
``label`` (class names, ``--label-type``) and ``prob``; with ``--topk`` above 1 a cell holds a
list such as ``[ 65 970   1]`` or ``['tench' 'goldfish']``, or the entries are split into
``index_0``, ``label_0``, ``prob_0``, ... columns. The top-1 entry is the prediction; the file
name is matched with the annotation ids as given, as its base name or as its base name without
extension (whichever matches most ids).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from shortcutlab.errors import FactorAnalysisError, unknown_choice

__all__ = ["PREDICTION_FORMATS", "base_names", "from_timm", "is_timm", "resolve_format", "top1"]

#: ``--predictions-format`` / ``predictions_format`` choices.
PREDICTION_FORMATS = ("auto", "table", "timm")
TIMM_LABEL_COLUMNS = ("index", "index_0", "label", "label_0")
TIMM_PROB_COLUMNS = ("prob", "prob_0")


def is_timm(frame: pd.DataFrame, id_col: str, pred_col: str) -> bool:
    """Whether a prediction table looks like timm's: ``filename`` and ``index``/``label``
    columns, and not the id and prediction columns named for the table layout."""
    columns = set(map(str, frame.columns))
    return ("filename" in columns and bool(columns & set(TIMM_LABEL_COLUMNS))
            and not {id_col, pred_col} <= columns)


def resolve_format(fmt: str, frame: pd.DataFrame, id_col: str, pred_col: str) -> str:
    """``table`` or ``timm`` for a prediction table (``auto``: timm when it looks like it)."""
    if fmt not in PREDICTION_FORMATS:
        raise FactorAnalysisError(unknown_choice("predictions format", fmt, PREDICTION_FORMATS))
    if fmt == "auto":
        return "timm" if is_timm(frame, id_col, pred_col) else "table"
    return fmt


def top1(values: pd.Series) -> pd.Series:
    """The top-1 entry of each cell: the cell itself (a number, or a name that may hold commas
    and spaces), or the first of a list (``[65 970 1]``, ``['tench' 'goldfish']``,
    ``[0.9, 0.05]``); a numeric column is returned as it is."""
    if pd.api.types.is_numeric_dtype(values):
        return values
    text = values.astype(str).str.strip()
    listed = text.str.startswith("[")
    if not listed.any():  # one prediction per cell: nothing to parse (and 50,000 rows fast)
        return text
    inner = text.str.slice(1).str.lstrip()
    quoted = inner.str.extract(r"^['\"]([^'\"]*)['\"]", expand=False)  # a name may hold spaces
    bare = inner.str.split(r"[\s,\]]+", regex=True).str[0]
    return text.where(~listed, quoted.fillna(bare))


def base_names(names: pd.Series) -> pd.Series:
    """File names without their folders (``/`` and ``\\`` both separate)."""
    # what follows the last separator; one regex (vectorised on Arrow strings), not two splits
    return names.str.replace(r"(?s)^.*[/\\]", "", regex=True)


def from_timm(
    frame: pd.DataFrame,
    ids: pd.Index,
    label_set: Sequence[str],
    *,
    id_col: str = "id",
    pred_col: str = "prediction",
    prob_col: str = "probability",
) -> pd.DataFrame:
    """timm's table as the engine's: ``id_col`` (the file name matched to ``ids``),
    ``pred_col`` (top-1 of ``index`` or ``label``, whichever names more of ``label_set``; index
    on a tie) and, when timm wrote probabilities, ``prob_col`` (the top-1 probability)."""
    present = [c for c in TIMM_LABEL_COLUMNS if c in frame.columns]
    if "filename" not in frame.columns or not present:
        raise FactorAnalysisError(
            f"predictions are not timm's inference.py output: need columns filename and index "
            f"or label; found {list(map(str, frame.columns))[:12]}")
    names = frame["filename"].astype(str).str.strip()
    known = pd.Index(ids.astype(str))
    candidates = [names, base_names(names), base_names(names).str.replace(
        r"\.[^.]*$", "", regex=True)]
    matches = [int(pd.Index(c).isin(known).sum()) for c in candidates]
    chosen = candidates[int(np.argmax(matches))]
    labels = pd.Index(list(label_set))
    tops = {c: top1(frame[c]) for c in present}
    column = max(present, key=lambda c: (int(tops[c].isin(labels).sum()),
                                         c.startswith("index")))
    out = pd.DataFrame({id_col: chosen.to_numpy(), pred_col: tops[column].to_numpy()})
    prob = next((c for c in TIMM_PROB_COLUMNS if c in frame.columns), None)
    if prob is not None:
        out[prob_col] = pd.to_numeric(top1(frame[prob]), errors="coerce").to_numpy()
    return out
