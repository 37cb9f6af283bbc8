"""The VQA-VS release as published (PhoebusSi/VQA-VS): read it and score IID-test predictions
on the IID test set and on the nine OOD test sets, which are subsets of the IID test questions.

Layout (each top folder may also be a ``.zip`` holding it, as the authors distribute them)::

    DIR/IID-Test/IID-Test-Ans.json          VQA v2 annotations of the IID test questions
    DIR/OOD-Test/<S>/OOD-Test-<S>-Ques.json  questions of the OOD set S (or -Ans.json)
    DIR/test_annotations.json               the authors' packed scoring file (alternative):
                                            {"annotations": [{question_id, answer_type,
                                            answer_count, answers_word, ...}], "QT_qid": [...],
                                            "KW_qid": [...], ..., "QTKWKO_qid": [...]}
    DIR/test_annotations.json.zip           the same, zipped
    DIR/Training/Training-Ans.json          the training answer vocabulary (also as
                                            Training/Training-Ans.json.zip or Training.zip)

``S`` is one of QT, KW, KWP, QT+KW, KO, KOP, QT+KO, KW+KO, QT+KW+KO. Answers come from
``IID-Test-Ans.json`` where present, otherwise from ``test_annotations.json``; each OOD set
from its folder, otherwise from the packed file. The vocabulary of the ``vqa-vs`` metric comes
from ``Training-Ans.json`` (answers that are the normalised multiple-choice answer of at least
nine training questions, as the authors' preprocessing keeps them) or, without it, from the
packed file's ``answers_word`` (the human answers already filtered by that vocabulary).
"""

from __future__ import annotations

import json
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.utils.io import open_zip, read_zip_member
from shortcutlab.vqa.accuracy import VOCABULARY_MIN_COUNT, training_vocabulary
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.evaluate import scalar_text, score_sets
from shortcutlab.vqa.loaders import read_json_bytes as _load_json

__all__ = [
    "LAYOUT",
    "PACKED",
    "VQAVSRelease",
    "read_release",
    "read_test_annotations",
    "read_vocabulary",
    "score_release",
]

PACKED = "test_annotations.json"
LAYOUT = (
    "IID-Test/IID-Test-Ans.json and OOD-Test/<S>/OOD-Test-<S>-Ques.json for S in "
    f"{', '.join(SHORTCUTS)} (folders or .zip files), or {PACKED}; optionally "
    "Training/Training-Ans.json for the vqa-vs vocabulary"
)


def _packed_key(shortcut: str) -> str:
    return shortcut.replace("+", "") + "_qid"  # QT+KW -> QTKW_qid, as in the packed file


@dataclass
class VQAVSRelease:
    """The scoring part of a VQA-VS release.

    ``test``: one row per IID test question (``question_id``, ``answers``, ``answer_type``,
    ``question_type``; the last two ``""`` where unknown); ``ood``: shortcut -> question ids;
    ``vocabulary``: the training answer vocabulary (None when the release has none);
    ``sources``: what was read.
    """

    test: pd.DataFrame
    ood: dict[str, frozenset[str]]
    vocabulary: frozenset[str] | None = None
    vocabulary_source: str | None = None
    sources: list[str] = field(default_factory=list)

    def masks(self) -> dict[str, np.ndarray]:
        """Per shortcut, a boolean mask over ``test`` of its OOD set."""
        qids = self.test["question_id"].to_numpy(dtype=object)
        return {
            s: np.fromiter((q in self.ood[s] for q in qids), bool, count=len(qids))
            for s in SHORTCUTS
        }


# ------------------------------------------------------------------------------ file access
def _zip_member(archive: Path, rel: str) -> tuple[str, Any] | None:
    """The member of ``archive`` named ``rel`` (or ending in ``/rel``), read as JSON; a
    VQAError if several members match (unzip would keep the last, we would read the first)."""
    with open_zip(archive, VQAError) as zf:
        matches = [info for info in zf.infolist()
                   if "__MACOSX" not in info.filename and not info.is_dir()
                   and (info.filename == rel or info.filename.endswith("/" + rel))]
        if len(matches) > 1:
            names = ", ".join(dict.fromkeys(info.filename for info in matches))
            raise VQAError(f"{archive} holds {rel} {len(matches)} times ({names}); keep one "
                           "copy in the zip")
        if matches:
            label = f"{archive}:{matches[0].filename}"
            return label, _load_json(read_zip_member(zf, matches[0], label, VQAError), label)
    return None


def _find(root: Path, folder: str, rel: str) -> tuple[str, Any] | None:
    """``root/folder/rel`` as a file, zipped on its own (``root/folder/rel.zip``, as the authors
    ship ``Training/Training-Ans.json.zip``), or as a member of ``root/folder.zip``; None if
    absent."""
    path = root / folder / rel
    if path.is_file():
        return str(path), _load_json(path.read_bytes(), str(path))
    single = path.with_name(path.name + ".zip")
    if single.is_file():
        found = _zip_member(single, path.name)
        if found is None:
            raise VQAError(f"{single} does not hold {path.name}")
        return found
    archive = root / f"{folder}.zip"
    return _zip_member(archive, rel) if archive.is_file() else None


def _annotation_list(doc: Any, name: str) -> list[dict[str, Any]]:
    records = doc.get("annotations") if isinstance(doc, dict) else doc
    if not isinstance(records, list) or (records and not isinstance(records[0], dict)):
        raise VQAError(f"{name}: expected a list of VQA annotations (or {{'annotations': [...]}})")
    for n, rec in enumerate(records):
        if "question_id" not in rec:
            raise VQAError(f"{name}: annotation {n} lacks the field question_id")
    return records


def _ids(doc: Any, name: str) -> frozenset[str]:
    records = doc.get("questions", doc.get("annotations")) if isinstance(doc, dict) else doc
    if not isinstance(records, list):
        raise VQAError(f"{name}: expected a list of questions with question_id")
    ids = [scalar_text(r.get("question_id") if isinstance(r, dict) else r) for r in records]
    if None in ids:  # int() made 2.7 question 2 and True question 1
        raise VQAError(f"{name}: every entry needs a question_id (an integer or a string)")
    return frozenset(cast("list[str]", ids))


def _answer_frame(records: list[dict[str, Any]], name: str, packed: bool) -> pd.DataFrame:
    rows = []
    for rec in records:
        if packed:
            counts = rec.get("answer_count")
            if not isinstance(counts, dict) or not counts:
                raise VQAError(
                    f"{name}: question {rec['question_id']} has no answer_count; the packed "
                    "file needs answer_count {answer: count} per annotation"
                )
            if not all(type(c) is int and c >= 0 for c in counts.values()):
                raise VQAError(f"{name}: question {rec['question_id']} has an answer_count "
                               "that is not a whole number >= 0")
            if not sum(counts.values()):
                raise VQAError(f"{name}: question {rec['question_id']} has no answer_count "
                               "above 0; a question needs at least one human answer")
            answers = [a for a, c in counts.items() for _ in range(c)]
        else:
            raw = rec.get("answers")
            if not isinstance(raw, list) or not raw:
                raise VQAError(f"{name}: question {rec['question_id']} has no answers")
            answers = [a.get("answer") if isinstance(a, dict) else a for a in raw]
            bad = next((a for a in answers if not isinstance(a, str)), "")
            if not isinstance(bad, str):
                raise VQAError(f"{name}: question {rec['question_id']} has the answer "
                               f"{json.dumps(bad)}; every answer must be a text string")
        rows.append(
            (
                str(rec["question_id"]),
                answers,
                str(rec.get("answer_type") or ""),
                str(rec.get("question_type") or ""),
            )
        )
    frame = pd.DataFrame(rows, columns=["question_id", "answers", "answer_type", "question_type"])
    dup = frame["question_id"].duplicated()
    if dup.any():
        ids = sorted(set(frame.loc[dup, "question_id"]))
        raise VQAError(f"{name}: {len(ids)} duplicate question id(s): {', '.join(ids[:5])}")
    return frame


# ---------------------------------------------------------------------------------- readers
def read_vocabulary(path: str | Path, min_count: int = VOCABULARY_MIN_COUNT) -> frozenset[str]:
    """The training answer vocabulary from ``Training-Ans.json`` (VQA annotations with
    ``multiple_choice_answer``), a ``Training.zip`` or a release folder holding either."""
    p = Path(path)
    found: tuple[str, Any] | None = None
    if p.is_dir():
        found = _find(p, "Training", "Training-Ans.json")
    elif p.suffix.lower() == ".zip" and p.is_file():
        found = _find(p.parent, p.stem, "Training-Ans.json")
    elif p.is_file():
        found = (str(p), _load_json(p.read_bytes(), str(p)))
    if found is None:
        raise DataNotFoundError(
            f"no training annotations at {str(p)!r}; expected Training-Ans.json, Training.zip "
            "or a release folder with Training/Training-Ans.json"
        )
    return _vocabulary(*found, min_count)


def _vocabulary(name: str, doc: Any, min_count: int = VOCABULARY_MIN_COUNT) -> frozenset[str]:
    records = _annotation_list(doc, name)
    if records and "multiple_choice_answer" not in records[0]:
        raise VQAError(f"{name}: annotations lack multiple_choice_answer; need VQA annotations")
    return training_vocabulary(
        [r["question_id"] for r in records],
        [r["multiple_choice_answer"] for r in records],
        min_count,
    )


def read_test_annotations(path: str | Path) -> VQAVSRelease:
    """Read the authors' packed ``test_annotations.json`` or ``test_annotations.json.zip``
    (answers, answer types, the nine OOD id lists; the vocabulary is the union of its
    vocabulary-filtered ``answers_word``)."""
    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(f"{str(p)!r} does not exist; expected the release's {PACKED}")
    if p.suffix.lower() == ".zip":
        found = _zip_member(p, PACKED)
        if found is None:
            raise VQAError(f"{p} does not hold {PACKED}")
        return _from_packed(*found)
    return _from_packed(str(p), _load_json(p.read_bytes(), str(p)))


def _from_packed(name: str, doc: Any) -> VQAVSRelease:
    if not isinstance(doc, dict) or "annotations" not in doc:
        raise VQAError(f"{name}: expected {{'annotations': [...], 'QT_qid': [...], ...}}")
    missing = [_packed_key(s) for s in SHORTCUTS if _packed_key(s) not in doc]
    if missing:
        raise VQAError(f"{name}: missing OOD id list(s) {', '.join(missing)}")
    records = _annotation_list(doc, name)
    words: set[str] = set()
    for rec in records:
        words.update(map(str, rec.get("answers_word") or ()))
    return VQAVSRelease(
        test=_answer_frame(records, name, packed=True),
        ood={s: _ids(doc[_packed_key(s)], f"{name}:{_packed_key(s)}") for s in SHORTCUTS},
        vocabulary=frozenset(words),
        vocabulary_source=f"{name} (answers_word)",
        sources=[name],
    )


def read_release(path: str | Path) -> VQAVSRelease:
    """Read a VQA-VS release folder (see the module docstring) or its ``test_annotations.json``.

    Raises :class:`DataNotFoundError` naming the missing files and the expected layout, and
    :class:`VQAError` when an OOD set holds ids outside the IID test set.
    """
    root = Path(path)
    if root.is_file() and root.name.endswith((".json", ".json.zip")):
        return read_test_annotations(root)
    if root.is_file():
        raise VQAError(
            f"{root} is a file; give the release folder (unpacked, or holding the per-folder "
            f"zips) or its {PACKED}; expected {LAYOUT}"
        )
    if not root.is_dir():
        raise DataNotFoundError(f"VQA-VS release {str(root)!r} does not exist; expected {LAYOUT}")
    packed_path = next(
        (p for p in (root / PACKED, root / f"{PACKED}.zip") if p.is_file()), None
    )
    packed = read_test_annotations(packed_path) if packed_path is not None else None
    sources: list[str] = []
    answers = _find(root, "IID-Test", "IID-Test-Ans.json")
    if answers is not None:
        test = _answer_frame(_annotation_list(answers[1], answers[0]), answers[0], packed=False)
        sources.append(answers[0])
    elif packed is not None:
        test = packed.test
        sources += packed.sources
    else:
        raise DataNotFoundError(
            f"{root}: neither IID-Test/IID-Test-Ans.json (nor IID-Test.zip) nor {PACKED}; "
            f"expected {LAYOUT}"
        )
    ood: dict[str, frozenset[str]] = {}
    absent: list[str] = []
    for s in SHORTCUTS:
        found = _find(root, "OOD-Test", f"{s}/OOD-Test-{s}-Ques.json") or _find(
            root, "OOD-Test", f"{s}/OOD-Test-{s}-Ans.json"
        )
        if found is not None:
            ood[s] = _ids(found[1], found[0])
            sources.append(found[0])
        elif packed is not None:
            ood[s] = packed.ood[s]
        else:
            absent.append(f"OOD-Test/{s}/OOD-Test-{s}-Ques.json")
    if absent:
        raise DataNotFoundError(
            f"{root}: missing {', '.join(absent[:3])}{' ...' if len(absent) > 3 else ''} "
            f"({len(absent)} of 9 OOD sets) and no {PACKED}; expected {LAYOUT}"
        )
    if packed is not None and packed.sources[0] not in sources:
        sources += packed.sources
    iid = set(test["question_id"])
    for s, ids in ood.items():
        outside = sorted(ids - iid)
        if outside:
            raise VQAError(
                f"OOD set {s}: {len(outside)} question id(s) are not IID test questions "
                f"({', '.join(outside[:5])}); the OOD sets must be subsets of the IID test set"
            )
    vocabulary, vocab_source = None, None
    training = _find(root, "Training", "Training-Ans.json")
    if training is not None:
        vocabulary = _vocabulary(*training)
        vocab_source = (
            f"{training[0]} (multiple-choice answers of >= {VOCABULARY_MIN_COUNT} questions)"
        )
    elif packed is not None:
        vocabulary, vocab_source = packed.vocabulary, packed.vocabulary_source
    return VQAVSRelease(test, ood, vocabulary, vocab_source, sources)


def score_release(
    release: VQAVSRelease,
    predictions: Any,
    metric: str = "official",
    count_missing_wrong: bool = False,
    vocabulary: Set[str] | None | bool = True,
    vocabulary_source: str | None = None,
    numbers: str = "wrong",
) -> dict[str, Any]:
    """Score one IID-test prediction file on the IID test set and each OOD set (by question-id
    subset): the paper's table row (see :func:`shortcutlab.vqa.evaluate.score_sets`).

    ``vocabulary`` (``vqa-vs`` metric only): True uses the release's training vocabulary and
    raises :class:`DataNotFoundError` when the release has none (the authors' scorer always
    filters by it), False scores without one (an explicit opt-out), or give a set
    (``vocabulary_source`` names where it came from). ``numbers``: see ``score_sets``. The
    result's ``metric`` entry says what applied.
    """
    source = None
    if vocabulary is True:
        vocab = release.vocabulary if metric == "vqa-vs" else None
        source = release.vocabulary_source
        if metric == "vqa-vs" and vocab is None:
            raise DataNotFoundError(
                "the vqa-vs metric filters predictions by the training answer vocabulary, and "
                "the release has none (no Training/Training-Ans.json, Training-Ans.json.zip, "
                f"Training.zip or {PACKED}); give --train FILE, or --no-vocabulary "
                "(vocabulary=False) to score without it"
            )
    elif vocabulary is False or vocabulary is None:
        vocab = None
    else:
        vocab, source = frozenset(vocabulary), vocabulary_source or "given"
    return score_sets(
        release.test,
        predictions,
        release.masks(),
        None,
        count_missing_wrong,
        metric,
        vocab,
        source,
        numbers,
    )
