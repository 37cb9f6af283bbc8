"""Loaders that turn VQA-style data into a validated VQA table (see :mod:`.table`).

Formats, recognised by content, not by file name:

* VQA v2: a questions file ``{"questions": [...]}`` and an annotations file
  ``{"annotations": [...]}``; optional COCO instances ``{"annotations", "categories"}`` give the
  objects per image;
* VQA-VS release: bare JSON lists of questions ``{image_id, question, question_id}`` and of
  annotations (VQA v2 annotation objects), or a ``.zip`` holding both (``Val.zip``);
* a CSV or JSONL table with the table's columns (``answers``/``objects`` as JSON lists in CSV,
  or ``|``-separated);
* ``easy-vqa``: the embedded easy-VQA data set (the ``easy-vqa`` package).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.utils.io import open_zip, read_zip_member
from shortcutlab.vqa.table import make_table

__all__ = [
    "EASY_VQA",
    "EASY_VQA_COLORS",
    "EASY_VQA_SHAPES",
    "load_easy_vqa",
    "load_json_sources",
    "load_table",
    "load_tabular",
]

EASY_VQA = "easy-vqa"
EASY_VQA_SHAPES: tuple[str, ...] = ("circle", "rectangle", "triangle")
EASY_VQA_COLORS: tuple[str, ...] = (
    "red", "green", "blue", "yellow", "gray", "teal", "black", "brown",
)  # fmt: skip
FORMATS = (
    "easy-vqa", "VQA v2 JSON (+ COCO instances)", "VQA-VS JSON lists or .zip", "CSV", "JSONL",
)  # fmt: skip


# ---------------------------------------------------------------------------------- JSON family
def read_json_bytes(raw: bytes, name: str) -> Any:
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise VQAError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise VQAError(f"{name}: not valid JSON ({exc})") from exc
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise VQAError(f"{name}: JSON nested too deeply to read (VQA files are flat lists "
                       "of records)") from None


def _json_documents(path: Path) -> list[tuple[str, Any]]:
    if not path.exists():
        raise DataNotFoundError(f"VQA data file {str(path)!r} does not exist")
    if path.suffix.lower() == ".zip":
        docs = []
        with open_zip(path, VQAError) as zf:
            for info in zf.infolist():
                base = info.filename.rsplit("/", 1)[-1]
                if info.is_dir() or "__MACOSX" in info.filename or base.startswith("."):
                    continue
                if base.lower().endswith(".json"):
                    name = f"{path}:{info.filename}"
                    raw = read_zip_member(zf, info, name, VQAError)
                    docs.append((name, read_json_bytes(raw, name)))
        if not docs:
            raise VQAError(f"{path}: the zip holds no .json files")
        return docs
    return [(str(path), read_json_bytes(path.read_bytes(), str(path)))]


def _kind(doc: Any) -> str:
    if isinstance(doc, dict):
        if "questions" in doc:
            return "questions"
        if "annotations" in doc and "categories" in doc:
            return "instances"
        if "annotations" in doc:
            return "annotations"
    if isinstance(doc, list) and doc and isinstance(doc[0], dict):
        if "answers" in doc[0] or "multiple_choice_answer" in doc[0]:
            return "annotations"
        if "question" in doc[0]:
            return "questions"
    return "unknown"


def _records(doc: Any, key: str) -> list[dict[str, Any]]:
    return doc[key] if isinstance(doc, dict) else doc


def load_json_sources(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Load VQA v2 / VQA-VS JSON files (or zips), joined by question id into a VQA table."""
    questions: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    objects: dict[str, list[str]] = {}
    names: list[str] = []
    for p in paths:
        for name, doc in _json_documents(Path(p)):
            kind = _kind(doc)
            names.append(name)
            if kind == "questions":
                questions += _records(doc, "questions")
            elif kind == "annotations":
                annotations += _records(doc, "annotations")
            elif kind == "instances":
                objects.update(_coco_objects(doc, name))
            else:
                raise VQAError(
                    f"{name}: unrecognised JSON content; valid choices: VQA questions "
                    "({'questions': [...]} or a list of {question_id, image_id, question}), "
                    "VQA annotations ({'annotations': [...]} or a list with 'answers'), "
                    "COCO instances ({'annotations', 'categories'})"
                )
    if not questions or not annotations:
        which = "questions" if not questions else "annotations"
        raise VQAError(f"no {which} file among {', '.join(names)}; need questions and answers")
    qdf = pd.DataFrame.from_records(questions)
    adf = pd.DataFrame.from_records(annotations)
    for frame, label in ((qdf, "questions"), (adf, "annotations")):
        if "question_id" not in frame.columns:
            raise VQAError(f"{label} records lack the field question_id")
        frame["question_id"] = frame["question_id"].astype(str)
    if "answers" in adf.columns:
        adf["answers"] = [
            _answer_texts(ans, qid) if isinstance(ans, list) else []
            for ans, qid in zip(adf["answers"], adf["question_id"], strict=True)
        ]
    adf = adf.rename(columns={"multiple_choice_answer": "answer"})
    keep = [
        c for c in ("question_id", "question_type", "answer_type", "answer", "answers") if c in adf
    ]
    for label, frame in (("questions", qdf), ("annotations", adf)):
        dup = frame["question_id"].duplicated()
        if dup.any():
            ids = sorted(set(frame.loc[dup, "question_id"]))
            raise VQAError(
                f"{label}: {len(ids)} duplicate question id(s): {', '.join(ids[:5])}"
                + (" ..." if len(ids) > 5 else "")
            )
    merged = qdf.merge(adf[keep], on="question_id", how="left", indicator=True)
    unanswered = merged.loc[merged["_merge"] == "left_only", "question_id"].tolist()
    if unanswered:
        raise VQAError(
            f"{len(unanswered)} question(s) have no annotation: {', '.join(unanswered[:5])}"
            + (" ..." if len(unanswered) > 5 else "")
        )
    merged = merged.drop(columns="_merge")
    merged["image_id"] = merged["image_id"].astype(str) if "image_id" in merged else None
    if objects:
        merged["objects"] = [objects.get(i, []) for i in merged["image_id"]]
    return make_table(merged, source=" + ".join(names))


def _answer_texts(answers: list[Any], qid: str) -> list[str]:
    """The texts of one question's human answers (VQA answer objects or plain values); an
    answer object without ``answer``, or a null or non-scalar answer, is an error."""
    texts = []
    for a in answers:
        value = a.get("answer") if isinstance(a, dict) else a
        if value is None or isinstance(value, (bool, dict, list)):
            raise VQAError(f"annotations: question {qid} has an answer that is not text "
                           f"({json.dumps(a)[:60]}); every answer must be a text string")
        texts.append(str(value))
    return texts


def _coco_objects(doc: dict[str, Any], source: str) -> dict[str, list[str]]:
    try:
        names = {c["id"]: c["name"] for c in doc["categories"]}
    except (KeyError, TypeError):
        raise VQAError(f"{source}: every COCO category needs an id and a name") from None
    per_image: dict[str, set[str]] = {}
    for n, ann in enumerate(doc["annotations"]):
        if not isinstance(ann, dict) or "image_id" not in ann or "category_id" not in ann:
            raise VQAError(f"{source}: instance {n} lacks image_id or category_id; every COCO "
                           "instance needs both")
        if ann["category_id"] not in names:
            raise VQAError(f"{source}: instance {n} has category_id {ann['category_id']!r}, "
                           f"which is not among the {len(names)} categories of the file")
        per_image.setdefault(str(ann["image_id"]), set()).add(names[ann["category_id"]])
    return {k: sorted(v) for k, v in per_image.items()}


# ----------------------------------------------------------------------------------- CSV / JSONL
def _split_list(value: object) -> object:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return list(json.loads(text))  # make_table checks that items are text
            except json.JSONDecodeError as exc:
                raise VQAError(f"cannot parse list {text!r}: {exc}") from exc
            except RecursionError:
                raise VQAError(f"cannot parse list {text[:40]!r}...: nested too deeply") from None
        return [v for v in text.split("|") if v] if text else []
    return value


def _check_row_lengths(path: Path, width: int) -> None:
    """Refuse a CSV row with fewer fields than the header (pandas pads it silently)."""
    import csv

    with path.open(encoding="utf-8", newline="") as fh:
        for number, row in enumerate(csv.reader(fh), start=1):
            if row and len(row) != width:
                raise VQAError(f"{path}: row {number} has {len(row)} field(s), the header "
                               f"{width}; every row needs one value per column")


def load_tabular(path: str | Path) -> pd.DataFrame:
    """Load a CSV or JSONL VQA table (columns as in :mod:`.table`)."""
    path = Path(path)
    if not path.exists():
        raise DataNotFoundError(f"VQA data file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "empty"
            raise VQAError(f"{path}: not a readable CSV table ({reason})") from None
        _check_row_lengths(path, len(df.columns))
        for col in ("answers", "objects"):
            if col in df.columns:
                df[col] = [_split_list(v) for v in df[col]]
    elif suffix in (".jsonl", ".ndjson"):
        try:
            df = pd.read_json(path, lines=True, dtype=False)
        except ValueError as exc:
            raise VQAError(f"{path}: not valid JSON lines ({exc})") from exc
    else:
        raise VQAError(f"unknown table format {suffix!r}; valid choices: .csv, .jsonl")
    return make_table(df, source=str(path))


# -------------------------------------------------------------------------------------- easy-VQA
def _easy_vqa_module() -> Any:
    try:
        import easy_vqa
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise DataNotFoundError(
            "easy-VQA data needs the 'easy-vqa' package: pip install easy-vqa"
        ) from exc
    return easy_vqa


def _mine_attributes(
    questions: Sequence[str], answers: Sequence[str], images: Sequence[int]
) -> dict[int, dict[str, str]]:
    """Each image's shape and colour from its own question/answer pairs (easy-VQA templates)."""
    vocab = {"shape": set(EASY_VQA_SHAPES), "color": set(EASY_VQA_COLORS)}
    known: dict[int, dict[str, str]] = {}
    absent: dict[int, dict[str, set[str]]] = {}
    for q, a, im in zip(questions, answers, images, strict=True):
        words = q.rstrip("?").split()
        facts = known.setdefault(im, {})
        for attr, values in vocab.items():
            mentioned = [w for w in words if w in values]
            if a in values:
                facts[attr] = a
            elif a not in ("yes", "no") and len(mentioned) == 1:
                facts[attr] = mentioned[0]  # "what color is the triangle?" -> triangle
            elif a in ("yes", "no") and len(mentioned) == 1:
                negated = "not" in words or "no" in words
                if (a == "yes") != negated:
                    facts[attr] = mentioned[0]
                else:
                    absent.setdefault(im, {}).setdefault(attr, set()).add(mentioned[0])
    for im, by_attr in absent.items():
        for attr, gone in by_attr.items():
            left = vocab[attr] - gone
            if attr not in known[im] and len(left) == 1:
                known[im][attr] = next(iter(left))
    return known


def _pixel_features(path: str) -> np.ndarray:
    from PIL import Image

    arr = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64)
    background = arr[0, 0]
    mask = np.abs(arr - background).sum(axis=2) > 30
    if not mask.any():
        return np.array([*background, 0.0])
    rows, cols = np.nonzero(mask)
    box = (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)
    return np.array([*np.median(arr[mask], axis=0), mask.sum() / box])


def _fill_from_pixels(
    known: dict[str, dict[str, str]], paths: dict[str, str]
) -> dict[str, dict[str, str]]:
    """Complete missing shapes/colours by nearest centroid on pixel features of known images."""
    incomplete = [k for k in paths if len(known.get(k, {})) < 2]
    if not incomplete:
        return known
    feats = {k: _pixel_features(p) for k, p in paths.items()}
    for attr, cols in (("color", slice(0, 3)), ("shape", slice(3, 4))):
        labelled = [k for k in paths if attr in known.get(k, {})]
        classes = sorted({known[k][attr] for k in labelled})
        centroids = np.stack(
            [np.mean([feats[k][cols] for k in labelled if known[k][attr] == c], axis=0)
             for c in classes]
        )  # fmt: skip
        for k in incomplete:
            if attr not in known.setdefault(k, {}):
                dist = ((centroids - feats[k][cols]) ** 2).sum(axis=1)
                known[k][attr] = classes[int(np.argmin(dist))]
    return known


def load_easy_vqa(max_questions: int | None = None) -> pd.DataFrame:
    """The embedded easy-VQA data set as a VQA table.

    Image and question ids are namespaced ``train/<n>`` and ``test/<n>`` (the package's train and
    test image ids overlap). Each image's shape and colour, recovered from its question/answer
    pairs (pixels where those are silent), fill ``objects`` and the extra columns ``shape``,
    ``color``. ``max_questions`` keeps a deterministic prefix (for tests and quick looks).
    """
    df = _easy_vqa_frame()
    if max_questions is not None:
        df = df.iloc[:max_questions]
    return make_table(df, source="easy-VQA")  # a copy with lists of its own: the cache stays


@functools.cache
def _easy_vqa_frame() -> pd.DataFrame:
    """The whole embedded data set with its recovered attributes, built once per process (about
    2 s of CPU, most of it the pixels of 5,000 images): the package's files do not change."""
    ev = _easy_vqa_module()
    frames = []
    for split, get_q, get_p in (
        ("train", ev.get_train_questions, ev.get_train_image_paths),
        ("test", ev.get_test_questions, ev.get_test_image_paths),
    ):
        texts, answers, images = get_q()
        mined = _mine_attributes(texts, answers, images)
        known = {f"{split}/{k}": v for k, v in mined.items()}
        paths = {f"{split}/{k}": v for k, v in get_p().items()}
        known = _fill_from_pixels(known, paths)
        image_ids = [f"{split}/{i}" for i in images]
        frames.append(
            pd.DataFrame(
                {
                    "question_id": [f"{split}/{n}" for n in range(len(texts))],
                    "image_id": image_ids,
                    "question": texts,
                    "answers": [[a] for a in answers],
                    "answer": answers,
                    "shape": [known[i]["shape"] for i in image_ids],
                    "color": [known[i]["color"] for i in image_ids],
                    "image_path": [paths[i] for i in image_ids],
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    df["objects"] = [[c, s] for c, s in zip(df["color"], df["shape"], strict=True)]
    return df


# ------------------------------------------------------------------------------------- dispatch
def load_table(data: Sequence[str | Path] | str | Path) -> pd.DataFrame:
    """Load a VQA table from ``easy-vqa``, JSON/zip files (VQA v2, VQA-VS, COCO) or CSV/JSONL."""
    items = [data] if isinstance(data, (str, Path)) else list(data)
    if not items:
        raise VQAError(f"no data given; valid choices: {', '.join(FORMATS)}")
    if len(items) == 1 and str(items[0]) == EASY_VQA:
        return load_easy_vqa()
    suffixes = {Path(p).suffix.lower() for p in items}
    if suffixes <= {".json", ".zip"}:
        return load_json_sources(items)
    if len(items) == 1 and suffixes <= {".csv", ".jsonl", ".ndjson"}:
        return load_tabular(items[0])
    raise VQAError(
        f"unknown data {', '.join(map(str, items))!r}; valid choices: {', '.join(FORMATS)} "
        "(pass JSON/zip files together, a single CSV/JSONL, or 'easy-vqa')"
    )
