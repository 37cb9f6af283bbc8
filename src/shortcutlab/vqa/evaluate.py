"""Score predictions: on built VQA-VS splits, on any annotated question set, or (through
:mod:`.release`) on the VQA-VS release as published.

Results are flat dictionaries of accuracies as fractions in [0, 1] (WILDS-style; percent only
for display), with per-set counts, per-answer-type accuracy where the data has answer types, and
a ``metric`` entry that names the metric, the vocabulary filter and the single-answer rule.

Predictions come in any of the forms people have (:func:`parse_predictions`): a dict
``{question_id: answer}``, a list of ``{question_id, answer}`` records (the file format of the
command line and of the VQA evaluation server), a DataFrame or Series; integer and string ids
are the same id.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence, Set
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import DataNotFoundError, VQAError, unknown_choice
from shortcutlab.utils.display import ShowsResult
from shortcutlab.utils.sanitize import json_safe
from shortcutlab.vqa.accuracy import METRICS, Metric, vqa_accuracies, vqa_vs_accuracy
from shortcutlab.vqa.concepts import SHORTCUT_GROUPS, SHORTCUTS

__all__ = [
    "NUMBER_RULES",
    "ParsedPredictions",
    "VQAScores",
    "EVAL_SPLITS",
    "accuracies",
    "load_predictions",
    "metric_info",
    "parse_predictions",
    "scalar_text",
    "score_sets",
    "score_splits",
    "score_table",
]

PREDICTION_FORMS = (
    "a dict {question_id: answer}, a list of {question_id, answer} records, "
    "a DataFrame with columns question_id and answer (or a dict of those two columns), "
    "or a Series indexed by question id"
)


# How an answer written as a JSON number (``"answer": 2``) is scored. The authors' scorer
# compares it with the human answers (strings) and gives it 0; the official script fails on it.
NUMBER_RULES: tuple[str, ...] = ("wrong", "text")


_HEADLINE = ("iid", "ood_mean", "gap", "language", "visual", "multimodal", "overall")


class VQAScores(ShowsResult, dict[str, Any]):
    """A scoring result: the plain dict the functions document (keys and values unchanged,
    JSON-ready) that prints its headline (``print(scores)``, Jupyter): IID, the OOD mean, the
    gap, the three groups and each OOD set, as fractions."""

    __repr__ = dict.__repr__  # ``repr`` stays the plain dict's

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        rows: dict[str, Any] = {k: self[k] for k in _HEADLINE if k in self}
        rows.update({f"ood: {k}": v for k, v in (self.get("ood") or {}).items()})
        frame = pd.DataFrame({"accuracy": pd.Series(rows, dtype=float)})
        metric = (self.get("metric") or {}).get("name", "?")
        split = f" on the {self['split']} split" if "split" in self else ""
        title = (f"VQA accuracy{split} ({metric} metric, fractions); "
                 f"{self.get('missing', 0)} question(s) without a prediction")
        return title, frame, ["the dict holds counts, per-answer-type accuracies and the metric"]




class ParsedPredictions(dict[str, str]):
    """``{question_id: answer}`` with answers as text, remembering in ``numeric`` the ids whose
    answer was written as a number (scored 0 under the default ``numbers="wrong"``)."""

    numeric: frozenset[str] = frozenset()


def _preview(ids: list[str], limit: int = 5) -> str:
    return ", ".join(repr(i) for i in ids[:limit]) + (", ..." if len(ids) > limit else "")


def scalar_text(value: Any) -> str | None:
    """An id or answer as text: strings as they are, integers (also integral floats, which
    pandas makes of integer columns) as digits; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return str(int(value)) if float(value).is_integer() else str(float(value))
    return None


def _records(predictions: Any, source: str) -> list[Any]:
    if isinstance(predictions, pd.DataFrame):
        missing = [c for c in ("question_id", "answer") if c not in predictions.columns]
        if missing:
            raise VQAError(
                f"{source}: the DataFrame lacks column(s) {', '.join(missing)} (has: "
                f"{', '.join(map(str, predictions.columns)) or 'none'}); it needs question_id "
                "and answer"
            )
        frame = predictions[["question_id", "answer"]]
        return [
            dict(zip(("question_id", "answer"), row, strict=True))
            for row in frame.itertuples(index=False, name=None)
        ]
    if isinstance(predictions, pd.Series):
        return [{"question_id": k, "answer": v} for k, v in predictions.items()]
    if isinstance(predictions, Mapping):
        if set(predictions) == {"question_id", "answer"} and all(
            isinstance(v, (list, tuple, np.ndarray, pd.Series)) for v in predictions.values()
        ):  # columns, e.g. DataFrame.to_dict("list")
            lengths = {len(v) for v in predictions.values()}
            if len(lengths) != 1:
                raise VQAError(
                    f"{source}: the columns question_id and answer differ in length "
                    f"({len(predictions['question_id'])} and {len(predictions['answer'])})"
                )
            return _records(pd.DataFrame(dict(predictions)), source)
        return [{"question_id": k, "answer": v} for k, v in predictions.items()]
    if isinstance(predictions, (list, tuple)):
        return list(predictions)
    raise VQAError(f"{source}: expected {PREDICTION_FORMS}; got {type(predictions).__name__}")


def parse_predictions(predictions: Any, source: str = "predictions") -> ParsedPredictions:
    """Validate predictions in any supported form into ``{question_id (str): answer (str)}``.

    Forms: a dict ``{question_id: answer}``, a list of ``{question_id, answer}`` records, a
    DataFrame with columns ``question_id`` and ``answer``, a Series indexed by question id. Ids
    may be integers or strings (``1`` and ``"1"`` are the same id); answers are strings; an
    answer written as a number is turned into text and its id recorded in the result's
    ``numeric`` (scoring gives it 0 unless told ``numbers="text"``). Raises :class:`VQAError`
    on a malformed entry or a duplicate id.
    """
    if isinstance(predictions, ParsedPredictions):
        return predictions
    out = ParsedPredictions()
    numeric: set[str] = set()
    dups: list[str] = []
    for n, rec in enumerate(_records(predictions, source)):
        if not isinstance(rec, Mapping) or "question_id" not in rec or "answer" not in rec:
            have = ", ".join(map(str, rec)) if isinstance(rec, Mapping) else type(rec).__name__
            raise VQAError(
                f"{source}: entry {n} lacks question_id or answer (has: {have}); each entry "
                "needs the fields question_id, answer"
            )
        qid = scalar_text(rec["question_id"])
        if qid is None:
            raise VQAError(
                f"{source}: entry {n} has question_id {rec['question_id']!r}; an id must be a "
                "string or an integer"
            )
        answer = scalar_text(rec["answer"])
        if answer is None:
            raise VQAError(
                f"{source}: entry {n} (question_id {rec['question_id']!r}) has answer "
                f"{rec['answer']!r}; an answer must be a string (or a number)"
            )
        if qid in out:
            dups.append(qid)
        out[qid] = answer
        if not isinstance(rec["answer"], str):
            numeric.add(qid)
    if dups:
        raise VQAError(f"{source}: {len(dups)} duplicate question id(s): {_preview(sorted(dups))}")
    out.numeric = frozenset(numeric)
    return out


def load_predictions(path: str | Path) -> ParsedPredictions:
    """Read a predictions JSON file: a list of records or an object ``{question_id: answer}``
    (see :func:`parse_predictions`)."""
    p = Path(path)
    if not p.exists():
        raise DataNotFoundError(f"predictions file {str(p)!r} does not exist")
    if p.is_dir():
        raise VQAError(f"predictions file {str(p)!r} is a folder; give the JSON file")
    try:
        records = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise VQAError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise VQAError(f"{p}: not valid JSON ({exc})") from exc
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise VQAError(f"{p}: JSON nested too deeply to read (predictions are a flat list or "
                       "object)") from None
    if not isinstance(records, (list, dict)):
        raise VQAError(
            f"{p}: expected a JSON list of {{question_id, answer}} objects (or an object "
            f"{{question_id: answer}}), got {type(records).__name__}"
        )
    return parse_predictions(records, str(p))


# ------------------------------------------------------------------------------------- metrics
def check_metric(metric: str) -> Metric:
    if metric not in METRICS:
        raise VQAError(unknown_choice("metric", metric, METRICS))
    return metric


def metric_info(
    metric: str = "official",
    vocabulary: Set[str] | None = None,
    single_answer_questions: int = 0,
    vocabulary_source: str | None = None,
    numbers: str = "wrong",
    numeric_answers: int = 0,
) -> dict[str, Any]:
    """What a score means: the metric's rule, the vocabulary filter, the single-answer rule and
    how answers written as JSON numbers were scored (and how many there were)."""
    metric = check_metric(metric)
    numbers = check_numbers(numbers)
    if metric == "official":
        rule = (
            "official VQA accuracy: prediction and human answers normalised (punctuation, case, "
            "number words, articles) when the human answers differ; min(1, matches / 3) "
            "averaged over the leave-one-out subsets of the human answers"
        )
    else:
        rule = (
            "VQA-VS authors' scorer: min(1, count / 3) of the raw prediction among the raw "
            "human answers, no normalisation, no leave-one-out averaging; "
            + (
                "predictions outside the training vocabulary score 0"
                if vocabulary is not None
                else "no vocabulary filter (no training split given)"
            )
        )
    return {
        "name": metric,
        "rule": rule,
        "vocabulary": None if vocabulary is None else len(vocabulary),
        "vocabulary_source": vocabulary_source if vocabulary is not None else None,
        "single_answer": (
            "a question with one reference answer is scored by exact match (the official "
            "leave-one-out rule would give 0, the authors' rule 1/3)"
        ),
        "single_answer_questions": int(single_answer_questions),
        "numbers": numbers,
        "numbers_rule": (
            "answers written as JSON numbers score 0, as in the authors' scorer (the official "
            "script fails on them)"
            if numbers == "wrong"
            else "answers written as JSON numbers are scored as their text (e.g. 2 as '2')"
        ),
        "numeric_answers": int(numeric_answers),
    }


def check_numbers(numbers: str) -> str:
    if numbers not in NUMBER_RULES:
        raise VQAError(unknown_choice("numbers rule", numbers, NUMBER_RULES))
    return numbers


def accuracies(
    predictions: Sequence[str],
    answers: Sequence[Sequence[str]],
    metric: str = "official",
    vocabulary: Set[str] | None = None,
) -> np.ndarray:
    """Per-question accuracy (float64 in [0, 1]) under ``metric`` (``official`` or ``vqa-vs``).

    ``vocabulary`` (``vqa-vs`` only) scores predictions outside it as 0. A question with a
    single reference answer is an exact match under both metrics.
    """
    metric = check_metric(metric)
    if metric == "official":
        if vocabulary is not None:
            raise VQAError("a vocabulary filter belongs to the vqa-vs metric only")
        return vqa_accuracies(predictions, answers)
    if len(predictions) != len(answers):
        raise ValueError(
            f"{len(predictions)} predictions but {len(answers)} answer lists; they must align"
        )
    return np.fromiter(
        (
            (float(p == a[0]) if vocabulary is None or p in vocabulary else 0.0)
            if len(a) == 1
            else vqa_vs_accuracy(p, a, vocabulary)
            for p, a in zip(predictions, answers, strict=True)
        ),
        dtype=np.float64,
        count=len(predictions),
    )


def _per_question(
    question_ids: np.ndarray,
    answers: Iterable[list[str]],
    known: Iterable[str],
    predictions: Mapping[str, str],
    count_missing_wrong: bool,
    metric: str,
    vocabulary: Set[str] | None,
) -> tuple[np.ndarray, int]:
    known_set = set(known)
    unknown = sorted(q for q in predictions if q not in known_set)
    if unknown:
        raise VQAError(
            f"{len(unknown)} prediction(s) for unknown question ids: {_preview(unknown)}"
        )
    missing_mask = np.fromiter(
        (q not in predictions for q in question_ids), bool, count=len(question_ids)
    )
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
    acc[have] = accuracies(
        [predictions[question_ids[i]] for i in have],
        [answers[i] for i in have],
        metric,
        vocabulary,
    )
    return acc, n_missing


def _mean(acc: np.ndarray, mask: np.ndarray) -> float:
    return float(acc[mask].mean()) if mask.any() else float("nan")


def _means_of(values: Iterable[float]) -> float:
    valid = [v for v in values if not math.isnan(v)]
    return float(np.mean(valid)) if valid else float("nan")


def _per_label(acc: np.ndarray, frame: pd.DataFrame, column: str) -> dict[str, float]:
    if column not in frame.columns:
        return {}
    labels = frame[column].fillna("").astype(str).to_numpy(dtype=object)
    if not (labels != "").any():
        return {}
    return {t: _mean(acc, labels == t) for t in sorted(set(labels)) if t != ""}


def _row(acc: np.ndarray, frame: pd.DataFrame, sets: Mapping[str, np.ndarray]) -> dict[str, Any]:
    masks = {s: np.asarray(sets[s], dtype=bool) for s in SHORTCUTS}
    ood = {s: _mean(acc, masks[s]) for s in SHORTCUTS}
    iid = _mean(acc, np.ones(len(frame), dtype=bool))
    ood_mean = _means_of(ood.values())
    return {
        "iid": iid,
        "ood": ood,
        **{g: _means_of(ood[s] for s in members) for g, members in SHORTCUT_GROUPS.items()},
        "ood_mean": ood_mean,
        "gap": iid - ood_mean,
        "per_answer_type": _per_label(acc, frame, "answer_type"),
        "ood_per_answer_type": {
            s: _per_label(acc[masks[s]], frame.loc[masks[s]], "answer_type") for s in SHORTCUTS
        },
        "counts": {"iid": int(len(frame)), "ood": {s: int(masks[s].sum()) for s in SHORTCUTS}},
    }


def _scored(
    frame: pd.DataFrame,
    predictions: Any,
    known: Iterable[str] | None,
    count_missing_wrong: bool,
    metric: str,
    vocabulary: Set[str] | None,
    vocabulary_source: str | None,
    numbers: str = "wrong",
) -> tuple[np.ndarray, dict[str, Any]]:
    """Per-question accuracy of ``frame``'s questions and the result's missing/metric entries."""
    numbers = check_numbers(numbers)
    preds = parse_predictions(predictions)
    qids = frame["question_id"].astype(str).to_numpy(dtype=object)
    acc, n_missing = _per_question(
        qids,
        frame["answers"],
        qids if known is None else known,
        preds,
        count_missing_wrong,
        metric,
        vocabulary,
    )
    numeric = np.fromiter((q in preds.numeric for q in qids), bool, count=len(qids))
    if numbers == "wrong":
        acc[numeric] = 0.0
    single = sum(len(a) == 1 for a in frame["answers"])
    info = metric_info(metric, vocabulary, single, vocabulary_source, numbers, int(numeric.sum()))
    return acc, {"missing": n_missing, "metric": info}


def score_sets(
    frame: pd.DataFrame,
    predictions: Any,
    sets: Mapping[str, np.ndarray],
    known: Iterable[str] | None = None,
    count_missing_wrong: bool = False,
    metric: str = "official",
    vocabulary: Set[str] | None = None,
    vocabulary_source: str | None = None,
    numbers: str = "wrong",
) -> dict[str, Any]:
    """The paper's table row for the questions of ``frame`` (the IID test set) and its OOD
    subsets ``sets`` (shortcut -> boolean mask over ``frame``).

    ``frame`` needs ``question_id`` and ``answers``; ``answer_type`` gives per-answer-type
    accuracy. ``known``: every id a prediction may name (default: ``frame``'s); predictions for
    known ids outside ``frame`` are ignored. Keys: ``iid``, ``ood`` (shortcut -> accuracy),
    ``language``, ``visual``, ``multimodal`` (means of their OOD sets), ``ood_mean`` (mean of the
    nine), ``gap`` (IID - OOD mean), ``per_answer_type`` (IID), ``ood_per_answer_type``,
    ``counts``, ``missing``, ``metric``; fractions in [0, 1]. Empty sets score None and are left
    out of the means. ``numbers``: ``"wrong"`` (the authors' rule: an answer written as a JSON
    number scores 0) or ``"text"`` (scored as its text); the count is in ``metric``.
    """
    acc, extra = _scored(
        frame, predictions, known, count_missing_wrong, metric, vocabulary, vocabulary_source,
        numbers,
    )  # fmt: skip
    return VQAScores(json_safe({**_row(acc, frame, sets), **extra}))


EVAL_SPLITS: tuple[str, ...] = ("test", "val")


def score_splits(
    samples: pd.DataFrame,
    predictions: Any,
    count_missing_wrong: bool = False,
    metric: str = "official",
    vocabulary: Set[str] | None = None,
    numbers: str = "wrong",
    on: str = "test",
) -> dict[str, Any]:
    """Accuracy on the IID set, each OOD set (tail), each head split, and the gap, of one
    evaluation split: ``on="test"`` (IID test and the nine OOD test sets) or ``on="val"``
    (IID val and the nine OOD val sets, built from the val split as the OOD test sets are from
    the test split: the paper's Table 4 selects models on them).

    ``samples`` is a built split table (:func:`shortcutlab.vqa.store.read_samples`). Every
    question of the split needs a prediction unless ``count_missing_wrong``; predictions for
    other splits' questions are ignored, ids unknown to the table are an error. Keys as
    :func:`score_sets`, plus ``head`` and ``tail`` (= ``ood``) per shortcut and ``split``.
    """
    if on not in EVAL_SPLITS:
        raise VQAError(unknown_choice("evaluation split", on, EVAL_SPLITS))
    sub = samples.loc[samples["split"].to_numpy() == on].reset_index(drop=True)
    acc, extra = _scored(
        sub,
        predictions,
        samples["question_id"].astype(str),
        count_missing_wrong,
        metric,
        vocabulary,
        "training split",
        numbers,
    )
    result = {**_row(acc, sub, {s: sub[f"tail:{s}"].to_numpy() for s in SHORTCUTS}), **extra}
    heads = {s: sub[f"head:{s}"].to_numpy(dtype=bool) for s in SHORTCUTS}
    result["head"] = {s: _mean(acc, heads[s]) for s in SHORTCUTS}
    result["tail"] = dict(result["ood"])
    result["counts"]["head"] = {s: int(heads[s].sum()) for s in SHORTCUTS}
    result["split"] = on
    return VQAScores(json_safe(result))


def score_table(
    table: pd.DataFrame,
    predictions: Any,
    count_missing_wrong: bool = False,
    metric: str = "official",
    vocabulary: Set[str] | None = None,
    vocabulary_source: str | None = None,
    numbers: str = "wrong",
) -> dict[str, Any]:
    """Accuracy over any annotated question set: ``overall``, ``count``, ``missing``,
    ``per_question_type`` and ``per_answer_type`` (where the data has them), as fractions, and
    the ``metric`` statement."""
    acc, extra = _scored(
        table, predictions, None, count_missing_wrong, metric, vocabulary, vocabulary_source,
        numbers,
    )  # fmt: skip
    return VQAScores(json_safe(
        {
            "overall": _mean(acc, np.ones(len(table), dtype=bool)),
            "count": int(len(table)),
            "per_question_type": _per_label(acc, table, "question_type"),
            "per_answer_type": _per_label(acc, table, "answer_type"),
            **extra,
        }
    ))
