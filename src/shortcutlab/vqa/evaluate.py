"""Score predictions with the official VQA accuracy: on built VQA-VS splits or any question set.

Results are flat dictionaries of accuracies in percent (WILDS-style), with per-set counts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.utils.sanitize import json_safe
from shortcutlab.vqa.accuracy import vqa_accuracies
from shortcutlab.vqa.concepts import SHORTCUTS

__all__ = ["load_predictions", "parse_predictions", "score_splits", "score_table"]


def _preview(ids: list[str], limit: int = 5) -> str:
    return ", ".join(repr(i) for i in ids[:limit]) + (", ..." if len(ids) > limit else "")


def parse_predictions(records: Any, source: str = "predictions") -> dict[str, str]:
    """Validate ``[{question_id, answer}, ...]`` (or ``{question_id: answer}``) into a dict."""
    if isinstance(records, Mapping):
        records = [{"question_id": k, "answer": v} for k, v in records.items()]
    if not isinstance(records, list):
        raise VQAError(
            f"{source}: expected a JSON list of {{question_id, answer}} objects, "
            f"got {type(records).__name__}"
        )
    out: dict[str, str] = {}
    dups: list[str] = []
    for n, rec in enumerate(records):
        if not isinstance(rec, Mapping) or "question_id" not in rec or "answer" not in rec:
            have = ", ".join(map(str, rec)) if isinstance(rec, Mapping) else type(rec).__name__
            raise VQAError(
                f"{source}: entry {n} lacks question_id or answer (has: {have}); each entry "
                "needs the fields question_id, answer"
            )
        answer = rec["answer"]
        if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
            raise VQAError(
                f"{source}: entry {n} (question_id {rec['question_id']!r}) has answer "
                f"{answer!r}; an answer must be a string (or a number)"
            )
        qid = str(rec["question_id"])
        if qid in out:
            dups.append(qid)
        out[qid] = str(answer)
    if dups:
        raise VQAError(f"{source}: {len(dups)} duplicate question id(s): {_preview(sorted(dups))}")
    return out


def load_predictions(path: str | Path) -> dict[str, str]:
    """Read a predictions JSON file (see :func:`parse_predictions`)."""
    p = Path(path)
    if not p.exists():
        raise DataNotFoundError(f"predictions file {str(p)!r} does not exist")
    try:
        records = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise VQAError(f"{p}: not valid JSON ({exc})") from exc
    return parse_predictions(records, str(p))


def _per_question(
    question_ids: np.ndarray,
    answers: Iterable[list[str]],
    known: Iterable[str],
    predictions: Mapping[str, str],
    count_missing_wrong: bool,
) -> tuple[np.ndarray, int]:
    known_set = set(known)
    unknown = sorted(q for q in predictions if q not in known_set)
    if unknown:
        raise VQAError(
            f"{len(unknown)} prediction(s) for unknown question ids: {_preview(unknown)}"
        )
    missing_mask = np.fromiter((q not in predictions for q in question_ids), bool,
                               count=len(question_ids))  # fmt: skip
    n_missing = int(missing_mask.sum())
    if n_missing and not count_missing_wrong:
        ids = question_ids[missing_mask].tolist()
        raise VQAError(
            f"{n_missing} of {len(question_ids)} questions have no prediction: "
            f"{_preview(ids)}; pass --count-missing-wrong (count_missing_wrong=True) to "
            "score them as wrong"
        )
    answers = list(answers)
    acc = np.zeros(len(question_ids), dtype=np.float64)
    have = np.flatnonzero(~missing_mask)
    acc[have] = vqa_accuracies(
        [predictions[question_ids[i]] for i in have], [answers[i] for i in have]
    )
    return acc, n_missing


def _pct(acc: np.ndarray, mask: np.ndarray) -> float:
    return float(100.0 * acc[mask].mean()) if mask.any() else float("nan")


def score_splits(
    samples: pd.DataFrame, predictions: Mapping[str, str], count_missing_wrong: bool = False
) -> dict[str, Any]:
    """Accuracy on the IID test set, each OOD test set (tail), each head split, and the gap.

    ``samples`` is a built split table (:func:`shortcutlab.vqa.store.read_samples`). Every IID
    test question needs a prediction unless ``count_missing_wrong``; predictions for train/val
    questions are ignored, ids unknown to the table are an error.
    """
    test = samples["split"].to_numpy() == "test"
    sub = samples.loc[test]
    qids = sub["question_id"].to_numpy(dtype=object)
    acc, n_missing = _per_question(
        qids, sub["answers"], samples["question_id"], predictions, count_missing_wrong
    )
    everything = np.ones(len(sub), dtype=bool)
    ood = {s: _pct(acc, sub[f"tail:{s}"].to_numpy()) for s in SHORTCUTS}
    head = {s: _pct(acc, sub[f"head:{s}"].to_numpy()) for s in SHORTCUTS}
    valid = [v for v in ood.values() if not math.isnan(v)]
    iid = _pct(acc, everything)
    ood_mean = float(np.mean(valid)) if valid else float("nan")
    result = {
        "iid": iid,
        "ood": ood,
        "ood_mean": ood_mean,
        "gap": iid - ood_mean,
        "head": head,
        "tail": dict(ood),
        "counts": {
            "iid": int(len(sub)),
            "ood": {s: int(sub[f"tail:{s}"].sum()) for s in SHORTCUTS},
            "head": {s: int(sub[f"head:{s}"].sum()) for s in SHORTCUTS},
        },
        "missing": n_missing,
    }
    return json_safe(result)


def score_table(
    table: pd.DataFrame, predictions: Mapping[str, str], count_missing_wrong: bool = False
) -> dict[str, Any]:
    """Accuracy over any annotated question set, overall and per question type."""
    qids = table["question_id"].to_numpy(dtype=object)
    acc, n_missing = _per_question(
        qids, table["answers"], qids, predictions, count_missing_wrong
    )
    per_type: dict[str, float] = {}
    if "question_type" in table.columns and (table["question_type"] != "").any():
        qt = table["question_type"].to_numpy(dtype=object)
        for t in sorted(set(qt)):
            per_type[t] = _pct(acc, qt == t)
    overall = _pct(acc, np.ones(len(qids), dtype=bool))
    return json_safe(
        {"overall": overall, "count": int(len(qids)), "missing": n_missing,
         "per_question_type": per_type}
    )  # fmt: skip
