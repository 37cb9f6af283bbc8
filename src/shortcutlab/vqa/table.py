"""The VQA table: one row per question, validated once so everything downstream can trust it.

Columns (all loaders produce these; extra columns such as ``shape``/``color`` are kept):

``question_id`` (str), ``image_id`` (str), ``question`` (str), ``question_type`` (str, ``""``
when unknown), ``answer`` (str, the single label used for grouping, e.g. VQA's
``multiple_choice_answer``), ``answers`` (list of str: the ten human answers, or one),
``objects`` (list of str: object names in the image, possibly empty).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError

__all__ = ["COLUMNS", "REQUIRED", "make_table", "validate_table"]

COLUMNS: tuple[str, ...] = (
    "question_id", "image_id", "question", "question_type", "answer", "answers", "objects",
)  # fmt: skip
REQUIRED: tuple[str, ...] = ("question_id", "image_id", "question")


def _preview(values: Iterable[object], limit: int = 5) -> str:
    items = list(values)
    shown = ", ".join(repr(v) for v in items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _majority(answers: list[str]) -> str:
    counts = Counter(answers)
    top = max(counts.values())
    return min(a for a, c in counts.items() if c == top)  # a tie: alphabetically first


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, np.ndarray):  # list columns read from parquet: a fresh list
        value = value.tolist()
    elif isinstance(value, list):
        value = list(value)  # never share lists with the caller's frame
    if isinstance(value, list) and all(type(v) is str for v in value):
        return value  # the common case, ~8x faster than converting each item
    if not isinstance(value, Iterable):
        return []  # a scalar such as NaN
    try:
        items = list(value)
    except TypeError:  # iterable in name only (its __iter__ raises TypeError)
        return []
    for v in items:
        if v is None or isinstance(v, (dict, list, tuple, set, np.ndarray)):
            raise _NotText(v)
    return [str(v) for v in items]


class _NotText(Exception):
    """An item of an answers/objects list that is null or a container, not text."""


def _lists(out: pd.DataFrame, column: str, source: str) -> list[list[str]]:
    """``column`` as lists of strings; an item that is null, a record or a list is an error."""
    try:
        return [_as_list(v) for v in out[column]]
    except _NotText as exc:
        for qid, value in zip(out["question_id"], out[column], strict=True):
            try:
                _as_list(value)
            except _NotText:
                raise VQAError(
                    f"{source}: question {qid!r} has an {column} entry that is not text "
                    f"({str(exc.args[0])[:60]}); {column} is a list of strings"
                ) from None
        raise  # pragma: no cover - the loop finds the row


def make_table(df: pd.DataFrame, source: str = "table") -> pd.DataFrame:
    """Validate and normalise a raw frame into a VQA table (a new frame, original untouched).

    Needs ``question_id``, ``image_id``, ``question`` and at least one of ``answers`` or
    ``answer``. Raises :class:`VQAError` naming the missing fields, empty answers or duplicate
    question ids.
    """
    missing = [c for c in REQUIRED if c not in df.columns]
    if "answers" not in df.columns and "answer" not in df.columns:
        missing.append("answers (or answer)")
    if missing:
        raise VQAError(
            f"{source}: missing field(s) {', '.join(missing)}; columns present: "
            f"{', '.join(map(str, df.columns)) or 'none'}; required: "
            f"{', '.join(REQUIRED)}, answers (or answer)"
        )
    out = df.copy()
    for col in REQUIRED:
        null = out[col].isna()
        if null.any():
            raise VQAError(f"{source}: {int(null.sum())} row(s) have no {col}")
    out["question_id"] = out["question_id"].astype(str)
    out["image_id"] = out["image_id"].astype(str)
    out["question"] = out["question"].astype(str)
    if "answers" in out.columns:
        out["answers"] = _lists(out, "answers", source)
    else:
        out["answers"] = _lists(out, "answer", source)
    empty = [q for q, a in zip(out["question_id"], out["answers"], strict=True) if not a]
    if empty:
        raise VQAError(f"{source}: {len(empty)} question(s) have no answers: {_preview(empty)}")
    blank = [q for q, a in zip(out["question_id"], out["answers"], strict=True)
             if any(not v.strip() for v in a)]
    if "answer" in out.columns:
        blank += [q for q, v in zip(out["question_id"], out["answer"], strict=True)
                  if isinstance(v, str) and not v.strip()]
    if blank:
        blank = list(dict.fromkeys(blank))
        raise VQAError(f"{source}: {len(blank)} question(s) have an empty answer: "
                       f"{_preview(blank)}")
    if "answer" not in out.columns:
        out["answer"] = [_majority(a) for a in out["answers"]]
    else:
        # a mask, not Series.where(..., None): pandas fills an object column with NaN there,
        # and str(NaN) made the label "nan" for every question without one
        known = out["answer"].notna()
        out["answer"] = [
            str(v) if k else _majority(a)
            for v, k, a in zip(out["answer"], known, out["answers"], strict=True)
        ]
    if "question_type" not in out.columns:
        out["question_type"] = ""
    out["question_type"] = out["question_type"].fillna("").astype(str)
    if "objects" not in out.columns:
        out["objects"] = [[] for _ in range(len(out))]
    else:
        out["objects"] = _lists(out, "objects", source)
    validate_table(out, source)
    rest = [c for c in out.columns if c not in COLUMNS]
    return out[list(COLUMNS) + rest].reset_index(drop=True)


def validate_table(df: pd.DataFrame, source: str = "table") -> None:
    """Check a VQA table: all columns present and question ids unique."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise VQAError(
            f"{source}: missing column(s) {', '.join(missing)}; a VQA table needs "
            f"{', '.join(COLUMNS)}"
        )
    dup = df["question_id"].duplicated(keep=False)
    if dup.any():
        ids = sorted(set(df.loc[dup, "question_id"]))
        raise VQAError(f"{source}: {len(ids)} duplicate question id(s): {_preview(ids)}")
