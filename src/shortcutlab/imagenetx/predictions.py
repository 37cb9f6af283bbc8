"""Model predictions on ImageNet images: CSV files, folders of CSVs, or models × images matrices.

Every source becomes one :class:`Predictions` (models × images class-id matrix, -1 where a model
has no prediction). Reading validates the input and names the offending rows: missing columns,
file names that are not images of the partition, class ids outside 0–999 and duplicate rows.

Formats
-------
* CSV, one model per file (model name = file stem):
  ``file_name,predicted_class[,predicted_probability]``, or what timm's ``inference.py`` writes:
  ``filename,index,...`` with ``--include-index``, top-k lists such as ``[ 65 970   1]`` or
  ``index_0`` columns (the first is taken); its default ``filename,label,prob`` only with
  ``--label-type name`` (WordNet ids such as ``n01440764``): class descriptions are refused, as
  they do not name a class id unambiguously. Other column names: ``file_col``/``pred_col``
  (``--file-col``/``--pred-col``). File names may be full paths; only the base name counts.
* In Python: a DataFrame with those columns, or a mapping / Series file name -> class id
  (:func:`as_predictions`).
* A folder: every ``*.csv`` inside it, in sorted order.
* ``.npz``: ``predictions`` (models × images ints), ``file_names`` (images), optional ``models``
  and ``probabilities``.
* ``.npy``: a models × images (or images) int matrix with the file names one per line in
  ``<stem>.file_names.txt`` beside it, and optionally model names in ``<stem>.models.txt``.
"""

from __future__ import annotations

import os
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeAlias

import numpy as np
import pandas as pd

from shortcutlab.errors import ImagenetXError, unknown_choice
from shortcutlab.factor_analysis.timm import base_names as timm_base_names
from shortcutlab.factor_analysis.timm import top1
from shortcutlab.imagenetx.annotations import (
    PARTITION_CHOICES,
    load_annotations,
    original_val_labels,
    val_image_index,
)
from shortcutlab.utils.imagenet import NUM_CLASSES, imagenet_classes
from shortcutlab.utils.io import read_text_file, write_npz

REQUIRED_COLUMNS = ("file_name", "predicted_class")
FILE_COLUMNS = ("file_name", "filename")  # ours / imagenet-x, timm's inference.py
CLASS_COLUMNS = ("predicted_class", "index", "index_0", "label", "label_0")
_LABEL_COLUMNS = ("label", "label_0")  # timm's: WordNet ids (--label-type name) or descriptions
PROBABILITY_COLUMNS = ("predicted_probability", "prob", "prob_0")
MISSING = -1
_SHOWN = 5


@dataclass(frozen=True)
class Predictions:
    """Top-1 predictions of several models on a common list of images.

    ``classes[m, i]`` is model ``m``'s class id for ``file_names[i]`` or -1 if it has none;
    ``probabilities`` (same shape, NaN where missing) is present only when every source had it.
    """

    models: tuple[str, ...]
    file_names: np.ndarray
    classes: np.ndarray
    probabilities: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.classes.ndim != 2 or self.classes.shape != (len(self.models), len(self.file_names)):
            raise ImagenetXError(
                f"predictions matrix has shape {self.classes.shape}; expected "
                f"({len(self.models)} models, {len(self.file_names)} images)"
            )
        if not np.issubdtype(self.classes.dtype, np.integer):
            raise ImagenetXError(
                f"predicted classes must be integer class ids, got dtype {self.classes.dtype}"
            )
        if self.classes.size and (
            self.classes.min() < MISSING or self.classes.max() >= NUM_CLASSES
        ):
            outside = (self.classes < MISSING) | (self.classes >= NUM_CLASSES)
            rows = [self.models[i] for i in np.flatnonzero(outside.any(axis=1))[:_SHOWN]]
            raise ImagenetXError(
                f"class ids must be in 0–{NUM_CLASSES - 1} (-1 = no prediction); models "
                f"{', '.join(rows)} have {int(outside.sum())} values outside that range"
            )

    @property
    def num_models(self) -> int:
        return len(self.models)

    def column_index(self, file_names: np.ndarray) -> np.ndarray | None:
        """Column of each of ``file_names`` (-1 where absent); None when already aligned."""
        file_names = np.asarray(file_names)
        if len(file_names) == len(self.file_names) and np.array_equal(file_names, self.file_names):
            return None
        return pd.Index(self.file_names).get_indexer(file_names)

    def align(
        self, file_names: np.ndarray, rows: slice = slice(None), index: np.ndarray | None = None
    ) -> np.ndarray:
        """Class ids for ``file_names`` in that order (models × images), -1 where absent.

        ``rows`` picks models; ``index`` reuses a :meth:`column_index` computed before.
        """
        if index is None:
            index = self.column_index(file_names)
            if index is None:
                return self.classes[rows]
        out = np.take(self.classes[rows], np.maximum(index, 0), axis=1)
        if (index < 0).any():
            out[:, index < 0] = MISSING
        return out

    def select(self, models: Iterable[str]) -> Predictions:
        """Only the named models, in the order given."""
        position = {m: i for i, m in enumerate(self.models)}
        chosen = list(models)
        unknown = [m for m in chosen if m not in position]
        if unknown:
            raise ImagenetXError(unknown_choice("model", unknown[0], self.models))
        rows = [position[m] for m in chosen]
        probs = None if self.probabilities is None else self.probabilities[rows]
        return Predictions(tuple(chosen), self.file_names, self.classes[rows], probs)


def _rows(lines: np.ndarray) -> str:
    shown = ", ".join(str(int(v)) for v in lines[:_SHOWN])
    more = f" and {len(lines) - _SHOWN} more" if len(lines) > _SHOWN else ""
    return f"{shown}{more}"


def _image_ids(names: np.ndarray, partition: str) -> np.ndarray:
    """Integer id of each file name within the partition's images, -1 for unknown names."""
    if partition not in PARTITION_CHOICES:
        raise ImagenetXError(unknown_choice("partition", partition, PARTITION_CHOICES))
    if partition == "val":  # all 50,000 ILSVRC2012_val_%08d.JPEG names; parsed, not hashed
        return val_image_index(names)
    return _train_index().get_indexer(names)


@lru_cache(maxsize=1)
def _train_index() -> pd.Index:
    return pd.Index(load_annotations("top", "train", filter_prototypes=False).file_names)


def _check_class_ids(values: np.ndarray, where: str, lines: np.ndarray,
                     column: str = "predicted_class") -> np.ndarray:
    """Integer class ids in 0–999 or an error naming the column and the offending lines."""
    numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(numeric) | (numeric != np.round(numeric))
    bad |= (numeric < 0) | (numeric >= NUM_CLASSES)
    if bad.any():
        first = values[np.flatnonzero(bad)[0]]
        first = first.item() if isinstance(first, np.generic) else first
        raise ImagenetXError(
            f"{where}: column {column!r} must hold integer class ids in 0–{NUM_CLASSES - 1}; "
            f"{int(bad.sum())} bad values (first: {first!r}) on lines {_rows(lines[bad])}"
        )
    return numeric.astype(np.int16)


def _wordnet_class_ids(values: pd.Series, where: str, lines: np.ndarray,
                       column: str) -> np.ndarray:
    """Class ids of timm's ``label`` column when it holds WordNet ids (or plain class ids); an
    error naming the column when it holds class descriptions."""
    ids = pd.Index(imagenet_classes()).get_indexer(values.astype(str).str.strip())
    bad = ids < 0
    if bad.all() and pd.to_numeric(values, errors="coerce").notna().all():
        return _check_class_ids(values.to_numpy(), where, lines, column)  # ids after all
    if bad.any():
        first = str(values.iloc[int(np.flatnonzero(bad)[0])])
        raise ImagenetXError(
            f"{where}: column {column!r} holds class names such as {first!r} (timm's default "
            f"--label-type description), not class ids; {int(bad.sum())} rows, lines "
            f"{_rows(lines[bad])}. Rerun timm's inference.py with --include-index (an 'index' "
            "column) or --label-type name (WordNet ids), or name the class-id column with "
            "--pred-col"
        )
    return ids.astype(np.int16)


def _check_file_names(names: np.ndarray, partition: str, where: str, lines: np.ndarray) -> None:
    ids = _image_ids(names, partition)
    unknown = ids < 0
    if unknown.any():
        example = str(names[np.flatnonzero(unknown)[0]])
        expected = (
            "validation names ILSVRC2012_val_00000001.JPEG ... ILSVRC2012_val_00050000.JPEG"
            if partition == "val"
            else "the file names of the imagenet-x training annotations, e.g. "
            f"{_train_index()[0]!r}"
        )
        raise ImagenetXError(
            f"{where}: {int(unknown.sum())} file names are not ImageNet images of the {partition} "
            f"partition (first: {example!r}; expected {expected}) on lines "
            f"{_rows(lines[unknown])}"
        )
    duplicated = np.bincount(ids)[ids] > 1
    if duplicated.any():
        example = str(names[np.flatnonzero(duplicated)[0]])
        raise ImagenetXError(
            f"{where}: {int(duplicated.sum())} rows repeat a file name (first: {example!r}) on "
            f"lines {_rows(lines[duplicated])}; give one prediction per image"
        )


def base_names(names: Iterable[object]) -> np.ndarray:
    """File names without their folders (``/data/val/ILSVRC2012_val_00000001.JPEG`` ->
    ``ILSVRC2012_val_00000001.JPEG``; ``/`` and ``\\`` both separate)."""
    series = (names.astype(str) if isinstance(names, pd.Series)
              else pd.Series(list(names), dtype=str))
    return timm_base_names(series).to_numpy(dtype=str)


def _pick(frame: pd.DataFrame, given: str | None, candidates: tuple[str, ...], what: str,
          where: str, option: str) -> str | None:
    if given is not None:
        if given not in frame.columns:
            raise ImagenetXError(f"{where}: no column {given!r} for the {what}; found "
                                 f"{list(map(str, frame.columns))}")
        return given
    for name in candidates:
        if name in frame.columns:
            return name
    if what == "probability":
        return None
    raise ImagenetXError(
        f"{where}: no {what} column; found {list(map(str, frame.columns))}; expected one of "
        f"{', '.join(candidates)} (file_name,predicted_class[,predicted_probability], or timm's "
        f"filename,index[,prob] of --include-index), or name it with {option}"
    )


def predictions_from_frame(
    frame: pd.DataFrame,
    model: str,
    partition: str = "val",
    *,
    file_col: str | None = None,
    pred_col: str | None = None,
    where: str | None = None,
) -> Predictions:
    """One model's predictions from a table: a file-name column (full paths are reduced to base
    names), a top-1 class column and optionally a probability column; see the module doc."""
    where = where or f"predictions of {model}"
    fcol = _pick(frame, file_col, FILE_COLUMNS, "file name", where, "--file-col/file_col")
    ccol = _pick(frame, pred_col, CLASS_COLUMNS, "predicted class", where, "--pred-col/pred_col")
    assert fcol is not None and ccol is not None  # only the probability column is optional
    if frame.empty:
        raise ImagenetXError(f"{where}: no predictions (the table has a header but no rows)")
    lines = np.arange(len(frame)) + 2  # line 1 is the header
    names = base_names(frame[fcol])
    if ccol in _LABEL_COLUMNS:
        classes = _wordnet_class_ids(top1(frame[ccol]), where, lines, ccol)
    else:
        classes = _check_class_ids(top1(frame[ccol]).to_numpy(), where, lines, ccol)
    _check_file_names(names, partition, where, lines)
    probs = None
    pcol = _pick(frame, None, PROBABILITY_COLUMNS, "probability", where, "")
    if pcol is not None:
        probs = pd.to_numeric(top1(frame[pcol]), errors="coerce").to_numpy()
        bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)
        if bad.any():
            raise ImagenetXError(
                f"{where}: {pcol} must be a number in [0, 1]; bad on lines {_rows(lines[bad])}"
            )
        probs = probs.astype(np.float32)[None, :]
    return Predictions((model,), names, classes[None, :], probs)


def read_prediction_csv(
    path: str | os.PathLike[str],
    model: str | None = None,
    partition: str = "val",
    *,
    file_col: str | None = None,
    pred_col: str | None = None,
) -> Predictions:
    """Read one model's CSV (ours, imagenet-x's or timm's inference CSV; see the module doc)."""
    path = Path(path)
    if not path.is_file():
        raise ImagenetXError(f"predictions file {str(path)!r} does not exist")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ImagenetXError(f"{path}: not a readable CSV file ({exc})") from exc
    return predictions_from_frame(frame, model or path.stem, partition, file_col=file_col,
                                  pred_col=pred_col, where=str(path))


def read_prediction_folder(
    folder: str | os.PathLike[str], partition: str = "val", **columns: str | None
) -> Predictions:
    """Read every ``*.csv`` in ``folder`` (sorted by name); each file is one model.
    ``columns``: ``file_col``/``pred_col`` of :func:`read_prediction_csv`."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".csv")
    if not files:
        raise ImagenetXError(f"folder {str(folder)!r} holds no prediction .csv files")
    return combine([read_prediction_csv(p, partition=partition, **columns) for p in files])


def _sidecar_lines(path: Path) -> list[str] | None:
    if not path.is_file():
        return None
    text = read_text_file(path, "class list", ImagenetXError)
    return [line.strip() for line in text.splitlines() if line.strip()]


def read_prediction_matrix(
    path: str | os.PathLike[str], partition: str = "val"
) -> Predictions:
    """Read a models × images matrix of class ids from ``.npz`` or ``.npy`` (see module doc)."""
    path = Path(path)
    if not path.is_file():
        raise ImagenetXError(f"predictions file {str(path)!r} does not exist")
    probabilities = None
    # a damaged file or object (pickled) arrays: ValueError, BadZipFile, EOFError from numpy
    unreadable = (ValueError, EOFError, zipfile.BadZipFile)
    if path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as archive:
                keys = set(archive.files)
                missing = [k for k in ("predictions", "file_names") if k not in keys]
                if missing:
                    raise ImagenetXError(
                        f"{path}: missing arrays {missing}; found {sorted(keys)}; expected "
                        "predictions, file_names[, models, probabilities]"
                    )
                matrix = archive["predictions"]
                names = archive["file_names"].astype(str)
                models = archive["models"].astype(str).tolist() if "models" in keys else None
                if "probabilities" in keys:
                    probabilities = np.atleast_2d(archive["probabilities"]).astype(np.float32)
        except unreadable as exc:
            raise ImagenetXError(f"{path}: not a readable .npz of plain arrays ({exc}); expected "
                                 "predictions, file_names[, models, probabilities]") from None
    elif path.suffix == ".npy":
        try:
            matrix = np.load(path, allow_pickle=False)
        except unreadable as exc:
            raise ImagenetXError(f"{path}: not a readable .npy of class ids ({exc})") from None
        sidecar = path.with_name(f"{path.stem}.file_names.txt")
        lines = _sidecar_lines(sidecar)
        if lines is None:
            raise ImagenetXError(
                f"{path}: a .npy matrix needs its file names, one per line, in {sidecar}"
            )
        names = np.asarray(lines, dtype=str)
        models = _sidecar_lines(path.with_name(f"{path.stem}.models.txt"))
    else:
        raise ImagenetXError(unknown_choice("matrix format", path.suffix, (".npz", ".npy")))
    matrix = np.atleast_2d(matrix)
    if matrix.ndim != 2 or matrix.shape[1] != len(names):
        raise ImagenetXError(
            f"{path}: matrix of shape {matrix.shape} does not match {len(names)} file names; "
            "expected models × images"
        )
    if models is None:
        models = [f"{path.stem}_{i}" for i in range(len(matrix))]
        if len(matrix) == 1:
            models = [path.stem]
    if len(models) != len(matrix):
        raise ImagenetXError(f"{path}: {len(models)} model names for {len(matrix)} matrix rows")
    if not np.issubdtype(matrix.dtype, np.integer):
        raise ImagenetXError(f"{path}: predictions must be integer class ids, got {matrix.dtype}")
    columns = np.arange(len(names)) + 1
    outside = (matrix < MISSING) | (matrix >= NUM_CLASSES)
    if outside.any():
        raise ImagenetXError(
            f"{path}: class ids must be in 0–{NUM_CLASSES - 1} (-1 = no prediction); bad values "
            f"in model rows {_rows(np.flatnonzero(outside.any(axis=1)) + 1)} at image columns "
            f"{_rows(columns[outside.any(axis=0)])}"
        )
    _check_file_names(names, partition, str(path), columns)
    if probabilities is not None and probabilities.shape != matrix.shape:
        raise ImagenetXError(f"{path}: probabilities shape {probabilities.shape} != {matrix.shape}")
    if probabilities is not None:  # NaN: no prediction (as save_prediction_matrix writes it)
        bad = np.isinf(probabilities) | (probabilities < 0) | (probabilities > 1)
        if bad.any():
            raise ImagenetXError(
                f"{path}: probabilities must be numbers in [0, 1] (NaN: none); bad values in "
                f"model rows {_rows(np.flatnonzero(bad.any(axis=1)) + 1)} at image columns "
                f"{_rows(columns[bad.any(axis=0)])}"
            )
    return Predictions(tuple(models), names, matrix.astype(np.int16), probabilities)


def combine(parts: Sequence[Predictions]) -> Predictions:
    """Stack the models of several prediction sets onto the union of their images."""
    if not parts:
        raise ImagenetXError("no predictions given")
    models = [m for p in parts for m in p.models]
    repeated = sorted(m for m, n in Counter(models).items() if n > 1)
    if repeated:
        raise ImagenetXError(f"model names must be unique; repeated: {', '.join(repeated)}")
    first = parts[0].file_names
    if all(np.array_equal(p.file_names, first) for p in parts):
        names = first
        classes = np.concatenate([p.classes for p in parts])
    else:
        names = np.unique(np.concatenate([p.file_names for p in parts]))
        classes = np.concatenate([p.align(names) for p in parts])
    probs = None
    if all(p.probabilities is not None for p in parts):
        probs = np.concatenate(
            [_align_probs(p, names) for p in parts]
        )
    return Predictions(tuple(models), names, classes, probs)


def _align_probs(part: Predictions, names: np.ndarray) -> np.ndarray:
    assert part.probabilities is not None
    if np.array_equal(part.file_names, names):
        return part.probabilities
    index = pd.Index(part.file_names).get_indexer(names)
    out = part.probabilities[:, np.maximum(index, 0)].astype(np.float32)
    out[:, index < 0] = np.nan
    return out


def load_predictions(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    partition: str = "val",
    *,
    file_col: str | None = None,
    pred_col: str | None = None,
) -> Predictions:
    """Load predictions from any mix of CSV files, folders of CSVs and ``.npz``/``.npy`` files
    (one path or several). ``file_col``/``pred_col`` name the CSV columns when they are neither
    ours nor timm's."""
    columns = {"file_col": file_col, "pred_col": pred_col}
    parts: list[Predictions] = []
    for raw in [paths] if isinstance(paths, str | os.PathLike) else paths:
        path = Path(raw)
        if path.is_dir():
            parts.append(read_prediction_folder(path, partition, **columns))
        elif path.suffix.lower() == ".csv":
            parts.append(read_prediction_csv(path, partition=partition, **columns))
        elif path.suffix in (".npz", ".npy"):
            parts.append(read_prediction_matrix(path, partition))
        elif not path.exists():
            raise ImagenetXError(f"predictions path {str(path)!r} does not exist")
        else:
            raise ImagenetXError(
                unknown_choice("predictions format", path.suffix or path.name,
                               ("folder", ".csv", ".npz", ".npy"))
            )
    return combine(parts)


PredictionSource: TypeAlias = (
    Predictions | pd.DataFrame | pd.Series | Mapping[str, int] | str | os.PathLike[str]
    | Sequence[str | os.PathLike[str]]
)


def as_predictions(
    source: PredictionSource,
    model: str = "model",
    partition: str = "val",
    *,
    file_col: str | None = None,
    pred_col: str | None = None,
) -> Predictions:
    """Predictions from whatever one has: a :class:`Predictions`, prediction files or folders
    (see :func:`load_predictions`), a DataFrame (ours, imagenet-x's or timm's columns), or a
    mapping / Series from file name (or full path) to class id. ``model`` names a single
    in-memory model."""
    if isinstance(source, Predictions):
        return source
    if isinstance(source, pd.DataFrame):
        return predictions_from_frame(source, model, partition, file_col=file_col,
                                      pred_col=pred_col)
    if isinstance(source, pd.Series | Mapping):
        items = pd.Series(source)
        frame = pd.DataFrame({"file_name": items.index.astype(str),
                              "predicted_class": items.to_numpy()})
        return predictions_from_frame(frame, model, partition)
    if isinstance(source, str | os.PathLike) or (
        isinstance(source, Sequence) and all(isinstance(p, str | os.PathLike) for p in source)
    ):
        return load_predictions(source, partition, file_col=file_col, pred_col=pred_col)
    raise ImagenetXError(
        f"cannot read predictions from a {type(source).__name__}; give a DataFrame, a mapping "
        "file name -> class id, prediction files or folders, or Predictions"
    )


def original_labels_predictions(name: str = "original_labels") -> Predictions:
    """The original ImageNet validation labels as a model (against ReaL: a human baseline)."""
    labels = original_val_labels()
    return Predictions((name,), labels.index.to_numpy(dtype=str), labels.to_numpy()[None, :])


def gather_predictions(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    *,
    original_labels: bool = False,
    file_col: str | None = None,
    pred_col: str | None = None,
) -> Predictions:
    """The models to evaluate: the original labels (first, as ``original_labels``) when asked,
    then every model of the prediction files/folders ``paths``; refused when both are empty."""
    parts = [original_labels_predictions()] if original_labels else []
    if paths:
        parts.append(load_predictions(paths, file_col=file_col, pred_col=pred_col))
    if not parts:
        raise ImagenetXError(
            "give prediction files/folders (CSV, .npz, .npy) or --original-labels"
        )
    return combine(parts)


def save_prediction_matrix(path: str | os.PathLike[str], predictions: Predictions) -> Path:
    """Write predictions as an ``.npz`` matrix (atomically) that :func:`load_predictions` reads."""
    arrays = {
        "predictions": predictions.classes.astype(np.int16),
        "file_names": predictions.file_names.astype(str),
        "models": np.asarray(predictions.models, dtype=str),
    }
    if predictions.probabilities is not None:
        arrays["probabilities"] = predictions.probabilities.astype(np.float32)
    return write_npz(path, **arrays)
