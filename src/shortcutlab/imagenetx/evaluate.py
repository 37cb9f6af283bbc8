"""Per-factor accuracy, error ratio and prevalence shift of many models at once.

The whole evaluation is three array operations per chunk of models: a comparison giving a
models × images boolean matrix of correct predictions, a segmented sum over images sorted by
their design row (meta-label and factor set: 253 distinct rows for top factors, 2,900 for
multi), and a small product with the signatures × groups design matrix whose columns are "all
images", each factor, each meta-label and each (meta-label, factor) pair. Every statistic is a
ratio of the resulting counts, so thousands of models take seconds.

Conventions follow the imagenet-x package: accuracy is the fraction of correct predictions over
images with the factor active; error ratio = (1 − acc(factor)) / (1 − acc); an image whose ReaL
label set is empty counts as wrong for ``real_class`` (``ignore_empty_real`` drops such images
instead); for ``metaclass`` a prediction is right when its meta-label equals the label's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd
import scipy.sparse as sp

from shortcutlab.errors import FactorAnalysisError, ImagenetXError, unknown_choice
from shortcutlab.factor_analysis import counts as engine
from shortcutlab.imagenetx.annotations import (
    FACTORS,
    META_LABELS,
    Annotations,
    Partition,
    Which,
    class_to_meta_label,
    load_annotations,
    real_labels,
)
from shortcutlab.imagenetx.predictions import Predictions, PredictionSource, as_predictions
from shortcutlab.utils.display import ShowsResult
from shortcutlab.utils.imagenet import NUM_CLASSES
from shortcutlab.utils.sanitize import finite_or_none as num

ErrorType = Literal["class", "metaclass", "real_class"]
ERROR_TYPES: tuple[ErrorType, ...] = get_args(ErrorType)
CHUNK = 256
BOOTSTRAP_STREAM = "imagenetx-bootstrap"
#: models a printed result shows (the rest are in its tables)
MAX_SHOWN = 20
_NF = len(FACTORS)
_NM = len(META_LABELS)
# Column layout of the design matrix.
_AVG = 0
_FAC = slice(1, 1 + _NF)
_META = slice(1 + _NF, 1 + _NF + _NM)
_META_FAC = slice(1 + _NF + _NM, 1 + _NF + _NM + _NM * _NF)
_NCOLS = 1 + _NF + _NM + _NM * _NF


def _check_error_type(error_type: str) -> None:
    if error_type not in ERROR_TYPES:
        raise ImagenetXError(unknown_choice("error type", error_type, ERROR_TYPES))


def evaluation_images(
    annotations: Annotations, error_type: ErrorType = "class", ignore_empty_real: bool = False
) -> tuple[Annotations, np.ndarray | None]:
    """The annotations to score on and, for ``real_class``, their ReaL label matrix.

    With ``ignore_empty_real`` images whose ReaL set is empty are dropped (any error type).
    """
    _check_error_type(error_type)
    real = None
    if error_type == "real_class" or ignore_empty_real:
        if annotations.partition != "val":
            raise ImagenetXError(
                "ReaL labels exist only for the validation partition; use error type 'class' "
                "or 'metaclass' on the training subset"
            )
        real = real_labels(annotations.file_names)
        if ignore_empty_real:
            keep = real[:, 0] >= 0
            annotations, real = annotations.subset(keep), real[keep]
    return annotations, (real if error_type == "real_class" else None)


def correct_matrix(
    classes: np.ndarray,
    annotations: Annotations,
    error_type: ErrorType = "class",
    real: np.ndarray | None = None,
) -> np.ndarray:
    """Boolean models × images matrix: is each prediction right under ``error_type``?

    ``classes`` is aligned with ``annotations`` (-1 = no prediction, never right); ``real`` is
    the ReaL matrix from :func:`evaluation_images` (needed for ``real_class``).
    """
    _check_error_type(error_type)
    classes = np.atleast_2d(classes)
    if error_type == "class":
        return classes == annotations.labels[None, :]
    if error_type == "metaclass":
        # Class -1 indexes the appended sentinel -1, which equals no meta-label.
        lookup = np.append(class_to_meta_label(), np.int8(-1))
        return np.take(lookup, classes) == annotations.meta_label[None, :]
    if real is None:
        real = real_labels(annotations.file_names)
    out = classes == real[None, :, 0]
    for k in range(1, real.shape[1]):
        idx = np.flatnonzero(real[:, k] >= 0)
        if len(idx) == 0:
            break
        if len(idx) > real.shape[0] // 4:
            out |= classes == real[None, :, k]
        else:
            out[:, idx] |= classes[:, idx] == real[None, idx, k]
    # The -1 padding of ReaL rows equals a missing (-1) prediction: never right. Empty ReaL
    # rows are all padding, so every prediction on them is wrong.
    out &= classes >= 0
    return out


def design_matrix(annotations: Annotations) -> sp.csr_matrix:
    """Sparse images × groups 0/1 matrix: all images, factors, meta-labels, (meta, factor)."""
    n = len(annotations)
    images = np.arange(n)
    meta = annotations.meta_label.astype(np.int64)
    img, fac = np.nonzero(annotations.factors)
    rows = np.concatenate([images, img, images, img])
    cols = np.concatenate(
        [
            np.full(n, _AVG),
            _FAC.start + fac,
            _META.start + meta,
            _META_FAC.start + meta[img] * _NF + fac,
        ]
    )
    data = np.ones(len(rows), dtype=np.float32)
    return sp.csr_matrix((data, (rows, cols)), shape=(n, _NCOLS))


def signatures(annotations: Annotations) -> engine.SegmentCounter:
    """The engine's segmented counter over the design rows (meta-label and factor set)."""
    bits = annotations.factors.astype(np.int64) @ (1 << np.arange(_NF, dtype=np.int64))
    key = annotations.meta_label.astype(np.int64) << _NF | bits
    return engine.SegmentCounter.of(design_matrix(annotations), key=key)


@contextmanager
def engine_errors() -> Iterator[None]:
    """The factor-analysis engine's errors as :class:`ImagenetXError` (same message)."""
    try:
        yield
    except FactorAnalysisError as exc:
        raise ImagenetXError(str(exc)) from None




@dataclass(frozen=True, repr=False)
class EvaluationResult(ShowsResult):
    """Per-model, per-factor and per-meta-label results of one evaluation.

    Arrays are indexed [model, factor] or [model, meta_label, factor] in the order of
    ``models``, :data:`FACTORS` and :data:`META_LABELS`. Accuracies are NaN where a group has
    no image; error ratios are NaN where the model has no error overall. ``n_images`` images
    were scored; ``evaluated[m]`` of them have a prediction of model ``m``.
    """

    models: tuple[str, ...]
    error_type: ErrorType
    which: Which
    n_images: int
    average: np.ndarray
    correct: np.ndarray
    count: np.ndarray
    meta_correct: np.ndarray
    meta_count: np.ndarray
    meta_images_correct: np.ndarray
    meta_images: np.ndarray
    evaluated: np.ndarray
    options: dict[str, Any] = field(default_factory=dict)
    class_correct: np.ndarray | None = None  # (models, 1000) right predictions per class
    class_count: np.ndarray | None = None  # (models, 1000) predicted images per class

    @property
    def accuracy(self) -> np.ndarray:
        return engine.ratio(self.correct, self.count)

    @property
    def error_ratio(self) -> np.ndarray:
        return engine.error_ratio(self.accuracy, self.average)

    @property
    def prevalence_shift(self) -> np.ndarray:
        """(P(factor | mistake) − P(factor)) / P(factor), factor shares normalised over factors.

        As in the imagenet-x package; NaN (no mistakes, absent factor) reads as 0.
        """
        wrong = self.count - self.correct
        p_wrong = engine.ratio(wrong, wrong.sum(axis=1, keepdims=True))
        p_all = engine.ratio(self.count, self.count.sum(axis=1, keepdims=True))
        shift = engine.ratio(p_wrong - p_all, p_all)
        return np.nan_to_num(shift, nan=0.0)

    @property
    def worst_factor_name(self) -> list[str | None]:
        """Name of each model's factor with the lowest accuracy (highest error ratio)."""
        acc = self.accuracy
        out: list[str | None] = []
        for row in acc:
            out.append(None if np.isnan(row).all() else FACTORS[int(np.nanargmin(row))])
        return out

    @property
    def worst_factor(self) -> list[float]:
        """Each model's lowest factor accuracy (NaN if none): ``worst_factor`` is this number
        everywhere, as in the imagenet-x package's table; the factor is
        :attr:`worst_factor_name`."""
        acc = self.accuracy
        return [math.nan if np.isnan(row).all() else float(np.nanmin(row)) for row in acc]

    @property
    def meta_accuracy(self) -> np.ndarray:
        return engine.ratio(self.meta_correct, self.meta_count)

    @property
    def meta_average(self) -> np.ndarray:
        return engine.ratio(self.meta_images_correct, self.meta_images)

    @property
    def meta_error_ratio(self) -> np.ndarray:
        return engine.error_ratio(self.meta_accuracy, self.meta_average)

    def table(self, metric: str = "error_ratio") -> pd.DataFrame:
        """Models × factors: ``accuracy``, ``error_ratio``, ``prevalence_shift`` or ``count``."""
        choices = ("accuracy", "error_ratio", "prevalence_shift", "count")
        if metric not in choices:
            raise ImagenetXError(unknown_choice("metric", metric, choices))
        values = getattr(self, metric)
        frame = pd.DataFrame(values, index=list(self.models), columns=list(FACTORS))
        frame.index.name = "model"
        return frame

    def worst_classes_accuracy(self, k: int = 100) -> np.ndarray:
        """Accuracy of each model over the images of its ``k`` worst classes (pooled).

        As the authors' ``worst_k_class_acc``: classes ranked by the model's accuracy (ties by
        class id), the images of the ``k`` lowest pooled.
        """
        if self.class_correct is None or self.class_count is None:
            raise ImagenetXError("this result has no per-class counts (evaluate() records them)")
        if not 1 <= k <= NUM_CLASSES:
            raise ImagenetXError(f"k must be in 1–{NUM_CLASSES}, got {k}")
        acc = engine.ratio(self.class_correct, self.class_count)
        acc = np.where(self.class_count > 0, acc, np.inf)  # classes without images rank last
        worst = np.argsort(acc, axis=1, kind="stable")[:, :k]
        right = np.take_along_axis(self.class_correct, worst, axis=1).sum(axis=1)
        total = np.take_along_axis(self.class_count, worst, axis=1).sum(axis=1)
        return engine.ratio(right, total)

    def summary(self, worst_classes: int | None = 100) -> pd.DataFrame:
        """The authors' ``accuracies_per_factor.csv`` layout: factor accuracies,
        ``worst_factor`` (min), ``average`` and ``worst_<k>_classes`` (None: left out, as the
        package's ``get_factor_accuracies``)."""
        frame = self.table("accuracy")
        frame["worst_factor"] = frame.min(axis=1)
        frame["average"] = self.average
        if worst_classes is not None and self.class_correct is not None:
            frame[f"worst_{worst_classes}_classes"] = self.worst_classes_accuracy(worst_classes)
        return frame

    def meta_table(self, model: str, metric: str = "error_ratio") -> pd.DataFrame:
        """Meta-labels × factors table of ``accuracy``, ``error_ratio`` or ``count`` for a model."""
        choices = ("accuracy", "error_ratio", "count")
        if metric not in choices:
            raise ImagenetXError(unknown_choice("metric", metric, choices))
        m = self._model_index(model)
        values = {
            "accuracy": self.meta_accuracy,
            "error_ratio": self.meta_error_ratio,
            "count": self.meta_count,
        }[metric][m]
        frame = pd.DataFrame(values, index=list(META_LABELS), columns=list(FACTORS))
        frame.insert(0, "average", self.meta_average[m])
        frame.index.name = "meta_label"
        return frame

    def meta_long(self) -> pd.DataFrame:
        """Tidy per-meta-label table: model, meta_label, factor, accuracy, error_ratio, count."""
        m, g, f = np.meshgrid(
            np.arange(len(self.models)), np.arange(_NM), np.arange(_NF), indexing="ij"
        )
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[m.ravel()],
                "meta_label": np.asarray(META_LABELS, dtype=object)[g.ravel()],
                "factor": np.asarray(FACTORS, dtype=object)[f.ravel()],
                "accuracy": self.meta_accuracy.ravel(),
                "error_ratio": self.meta_error_ratio.ravel(),
                "count": self.meta_count.ravel().astype(np.int64),
            }
        )

    def _model_index(self, model: str) -> int:
        try:
            return self.models.index(model)
        except ValueError:
            raise ImagenetXError(unknown_choice("model", model, self.models)) from None

    def flat(self, model: str) -> dict[str, float]:
        """WILDS-style flat dict: ``acc_avg``, ``acc_<factor>``, ``count_<factor>``, ratios."""
        m = self._model_index(model)
        out: dict[str, float] = {"acc_avg": float(self.average[m])}
        acc, ratio = self.accuracy[m], self.error_ratio[m]
        for k, factor in enumerate(FACTORS):
            out[f"acc_{factor}"] = float(acc[k])
            out[f"error_ratio_{factor}"] = float(ratio[k])
            out[f"count_{factor}"] = float(self.count[m, k])
        out["acc_worst_factor"] = float(np.nanmin(acc)) if not np.isnan(acc).all() else math.nan
        return out

    def headline(self) -> pd.DataFrame:
        """Per model: average accuracy, the worst factor (lowest accuracy, so highest error
        ratio) with its accuracy and error ratio, and the images it predicted."""
        m = np.arange(len(self.models))
        worst = np.array([FACTORS.index(n) if n is not None else -1
                          for n in self.worst_factor_name], dtype=np.int64)
        found = worst >= 0
        pick = np.where(found, worst, 0)

        def at(values: np.ndarray) -> np.ndarray:
            return np.where(found, values[m, pick], np.nan)

        frame = pd.DataFrame({
            "accuracy": np.asarray(self.average, dtype=float),
            "worst factor": [n or "–" for n in self.worst_factor_name],
            "its accuracy": at(self.accuracy),
            "its error ratio": at(self.error_ratio),
            "images": np.asarray(self.evaluated, dtype=np.int64),
        }, index=pd.Index(list(self.models), name="model"))
        return frame

    def shown(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
        """A :meth:`headline` frame as printed: without the images column when every model
        covers every image, cut to the first :data:`MAX_SHOWN` models (a note says so)."""
        if (frame["images"] == self.n_images).all():
            frame = frame.drop(columns="images")
        if len(frame) <= MAX_SHOWN:
            return frame, []
        return frame.iloc[:MAX_SHOWN], [f"first {MAX_SHOWN} of {len(frame)} models shown"]

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        frame = self.headline()
        title = (f"ImageNet-X: {len(self.models)} model(s) on {self.n_images:,} images "
                 f"({self.which} factors, error type {self.error_type}); error ratio = "
                 "(1 − factor accuracy) / (1 − accuracy)")
        frame, notes = self.shown(frame)
        notes.append(".table(metric), .summary(), .meta_table(model), .headline() and "
                     ".to_dict() hold every number")
        return title, frame, notes




    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: model → ``average``, ``worst_factor`` (the lowest factor accuracy, as in
        :meth:`summary`), ``worst_factor_name``, ``factors`` (factor → numbers)."""
        acc, ratio, shift = self.accuracy, self.error_ratio, self.prevalence_shift
        worst, names = self.worst_factor, self.worst_factor_name

        out: dict[str, Any] = {}
        for m, model in enumerate(self.models):
            out[model] = {
                "average": num(self.average[m]),
                "worst_factor": num(worst[m]),
                "worst_factor_name": names[m],
                "n_images": int(self.evaluated[m]),
                "factors": {
                    factor: {
                        "accuracy": num(acc[m, k]),
                        "error_ratio": num(ratio[m, k]),
                        "prevalence_shift": num(shift[m, k]),
                        "count": int(self.count[m, k]),
                    }
                    for k, factor in enumerate(FACTORS)
                },
            }
        return out


def evaluate(
    predictions: Predictions,
    annotations: Annotations,
    error_type: ErrorType = "class",
    ignore_empty_real: bool = False,
    chunk_size: int = CHUNK,
    min_coverage: float = 0.0,
) -> EvaluationResult:
    """Evaluate every model of ``predictions`` on the annotated images, vectorised over models.

    Images a model has no prediction for are left out of that model's counts (as the
    imagenet-x package's inner join does); predictions for unannotated images are ignored.
    A model predicting less than ``min_coverage`` of the annotated images is refused.
    """
    if not 0 <= min_coverage <= 1:
        raise ImagenetXError(f"min_coverage must be in [0, 1], got {min_coverage}")
    images, real = evaluation_images(annotations, error_type, ignore_empty_real)
    if len(images) == 0:
        raise ImagenetXError("no annotated images left to evaluate")
    counter = signatures(images)
    order = counter.order
    images = images.take(order)  # sorted by design row: each group sum is a segmented sum
    real = None if real is None else real[order]
    index = predictions.column_index(images.file_names)
    m_total = predictions.num_models
    correct = np.empty((m_total, _NCOLS), dtype=np.float64)
    count = np.empty((m_total, _NCOLS), dtype=np.float64)
    class_correct = np.empty((m_total, NUM_CLASSES), dtype=np.float64)
    class_count = np.empty((m_total, NUM_CLASSES), dtype=np.float64)
    by_class = _class_indicator(images.labels)
    full = counter.counts(np.ones((1, len(images)), dtype=bool))[0]
    step = max(1, chunk_size)
    for start in range(0, m_total, step):
        rows = slice(start, start + step)
        chunk = predictions.classes[rows] if index is None else predictions.align(
            images.file_names, rows, index
        )
        stop = start + len(chunk)
        ok = correct_matrix(chunk, images, error_type, real)
        correct[start:stop] = counter.counts(ok)
        valid = chunk >= 0
        count[start:stop] = full if valid.all() else counter.counts(valid)
        class_correct[start:stop] = (by_class @ ok.T.astype(np.float32)).T
        class_count[start:stop] = (by_class @ valid.T.astype(np.float32)).T
    if (count[:, _AVG] == 0).any():
        empty = [predictions.models[i] for i in np.flatnonzero(count[:, _AVG] == 0)]
        raise ImagenetXError(
            f"models without a prediction for any annotated image: {', '.join(empty[:5])}"
        )
    coverage = count[:, _AVG] / len(images)
    if (coverage < min_coverage).any():
        m = int(np.argmin(coverage))
        raise ImagenetXError(
            f"model {predictions.models[m]!r} predicts {int(count[m, _AVG]):,} of "
            f"{len(images):,} annotated images (coverage {coverage[m]:.1%} < min_coverage "
            f"{min_coverage:.0%}); give predictions for every image or lower --min-coverage")
    shape = (m_total, _NM, _NF)
    return EvaluationResult(
        models=predictions.models,
        error_type=error_type,
        which=annotations.which,
        n_images=len(images),
        average=correct[:, _AVG] / count[:, _AVG],
        correct=correct[:, _FAC],
        count=count[:, _FAC],
        meta_correct=correct[:, _META_FAC].reshape(shape),
        meta_count=count[:, _META_FAC].reshape(shape),
        meta_images_correct=correct[:, _META],
        meta_images=count[:, _META],
        evaluated=count[:, _AVG].astype(np.int64),
        options={"ignore_empty_real": ignore_empty_real, "partition": annotations.partition},
        class_correct=class_correct,
        class_count=class_count,
    )


def _class_indicator(labels: np.ndarray) -> sp.csr_matrix:
    """Sparse classes × images 0/1 matrix of the images' labels."""
    n = len(labels)
    data = np.ones(n, dtype=np.float32)
    return sp.csr_matrix((data, (labels.astype(np.int64), np.arange(n))), shape=(NUM_CLASSES, n))


@dataclass(frozen=True)
class BootstrapCI:
    """Percentile bootstrap intervals (over images) for each model's accuracies and ratios."""

    models: tuple[str, ...]
    level: float
    n_boot: int
    average: np.ndarray  # (models, 2): lower, upper
    accuracy: np.ndarray  # (models, factors, 2)
    error_ratio: np.ndarray  # (models, factors, 2)

    def table(self, model: str, metric: str = "error_ratio") -> pd.DataFrame:
        """Factors × (lower, upper) for one model."""
        choices = ("accuracy", "error_ratio")
        if metric not in choices:
            raise ImagenetXError(unknown_choice("metric", metric, choices))
        if model not in self.models:
            raise ImagenetXError(unknown_choice("model", model, self.models))
        values = getattr(self, metric)[self.models.index(model)]
        return pd.DataFrame(values, index=list(FACTORS), columns=["lower", "upper"])


def bootstrap_weights(n_images: int, replicates: range, seed: int) -> np.ndarray:
    """(replicates × images) resampling counts; replicate b depends only on (seed, b)."""
    return engine.bootstrap_weights(n_images, replicates, seed, BOOTSTRAP_STREAM)


def bootstrap_ci(
    predictions: Predictions,
    annotations: Annotations,
    error_type: ErrorType = "class",
    ignore_empty_real: bool = False,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    boot_chunk: int = 100,
) -> BootstrapCI:
    """Percentile CIs of average accuracy, factor accuracy and error ratio by resampling images.

    Costs about ``n_boot`` evaluations per model; meant for the handful of models shown in a
    figure, not for thousands.
    """
    if not 0 < level < 1:
        raise ImagenetXError(f"confidence level must be in (0, 1), got {level}")
    if n_boot < 2:
        raise ImagenetXError(f"n_boot must be at least 2, got {n_boot}")
    images, real = evaluation_images(annotations, error_type, ignore_empty_real)
    classes = predictions.align(images.file_names)
    design = design_matrix(images)[:, : 1 + _NF]  # images × (all, factors)
    average, accuracy, ratios = engine.bootstrap_intervals(
        correct_matrix(classes, images, error_type, real), classes >= 0, design, n_boot, level,
        seed, BOOTSTRAP_STREAM, boot_chunk,
    )
    return BootstrapCI(
        models=predictions.models,
        level=level,
        n_boot=n_boot,
        average=average,
        accuracy=accuracy,
        error_ratio=ratios,
    )


def get_factor_accuracies(
    predictions: PredictionSource,
    which_factor: Which = "top",
    partition: Partition = "val",
    filter_prototypes: bool = True,
    error_type: ErrorType = "class",
    *,
    model: str = "model",
    file_col: str | None = None,
    pred_col: str | None = None,
) -> pd.DataFrame:
    """One call, as imagenet-x's function of the same name: models × (factor accuracies,
    ``worst_factor``, ``average``) for predictions in any form :func:`as_predictions` reads
    (files or folders of CSVs, timm's CSV, a DataFrame, a mapping file name -> class id)."""
    preds = as_predictions(predictions, model, partition, file_col=file_col, pred_col=pred_col)
    annotations = load_annotations(which_factor, partition, filter_prototypes)
    return evaluate(preds, annotations, error_type).summary(worst_classes=None)


def error_ratio(accuracies: pd.DataFrame) -> pd.DataFrame:
    """Error ratio ``(1 − acc(factor)) / (1 − average)`` of a :func:`get_factor_accuracies`
    table (as imagenet-x's ``error_ratio``): above 1, the factor is over-represented among
    the model's mistakes; NaN for a model without mistakes."""
    present = [f for f in FACTORS if f in accuracies.columns]
    values = engine.error_ratio(accuracies[present].to_numpy(dtype=float),
                                accuracies["average"].to_numpy(dtype=float))
    return pd.DataFrame(values, index=accuracies.index, columns=present)
