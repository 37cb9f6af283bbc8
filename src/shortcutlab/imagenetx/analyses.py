"""The ImageNet-X paper's analyses beyond the per-factor tables, as pure functions.

* :func:`model_families` — model → family (supervised on ImageNet-1k, more data,
  self-supervised, robustness intervention, ...) from the shipped ``data/model_families.csv``
  (figures 1b and 4).
* :func:`read_result_tables` — the authors' ``accuracies_per_factor.csv`` tables of a results
  folder, one row per (group, model).
* :func:`figure4_models` — the models of figure 4 (ImageNet testbed plus self-supervised ones).
* :func:`factor_shares` — figure 2: share of images with each factor selected, train and val,
  all factors and top factor.
* :func:`active_factor_counts`, :func:`accuracy_by_active_factors` — figure 7.
* :func:`calibration_by_factor` — expected calibration error per factor (15 bins, as the
  package's ``compute_factor_calibration_errors``).
* :func:`meta_label_listing` — table 3: the ≤ 4 most robust and most susceptible factors per
  model and meta-label, with image counts and Wilson intervals.
* :func:`tailored_augmentation` — figure 17: tailored against universal colour jitter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats

from shortcutlab.errors import DataNotFoundError, ImagenetXError, unknown_choice
from shortcutlab.factor_analysis import counts as engine
from shortcutlab.imagenetx.annotations import (
    FACTORS,
    META_LABELS,
    Annotations,
    Partition,
    Which,
    load_annotations,
)
from shortcutlab.imagenetx.evaluate import (
    CHUNK,
    ErrorType,
    EvaluationResult,
    correct_matrix,
    error_ratio,
    evaluation_images,
)
from shortcutlab.imagenetx.predictions import Predictions

#: Family names of the shipped map, in the legend order of the paper's figures.
FAMILIES: tuple[str, ...] = (
    "more_data", "supervised_1k", "self_supervised", "robustness_intervention",
    "lp_adversarial", "low_accuracy_cnn", "random_features", "linear_pixels",
    "random_forests", "nearest_neighbors",
)
#: The four families figures 1b and 4 show.
MAIN_FAMILIES: tuple[str, ...] = FAMILIES[:4]
ORIGINAL_LABELS = "original_labels"
OTHER = "other"
#: Group folders of the authors' results.
RESULT_GROUPS: tuple[str, ...] = (
    "base", "imagenet_testbed", "modelvshuman", "crop", "colorjitter", "gaussian_blur",
    "colorjitter_crop", "adaptive_colorjitter",
)


@lru_cache(maxsize=1)
def load_model_families() -> pd.Series:
    """Model name → family for the ~400 models of the authors' result tables."""
    path = resources.files("shortcutlab.imagenetx") / "data" / "model_families.csv"
    with path.open(encoding="utf-8") as handle:
        frame = pd.read_csv(handle, dtype=str)
    return pd.Series(frame["family"].to_numpy(), index=frame["model"].to_numpy(), name="family")


def model_families(
    models: Iterable[str], extra: Mapping[str, str] | None = None
) -> pd.Series:
    """Family of each model: ``extra`` first, then the shipped map; the original labels
    (``human`` / ``original_labels``) get ``original_labels``, unknown models ``other``."""
    known = load_model_families()
    extra = dict(extra or {})
    out = {}
    for model in models:
        if model in extra:
            out[model] = extra[model]
        elif model in known.index:
            out[model] = known[model]
        elif model in ("human", ORIGINAL_LABELS):
            out[model] = ORIGINAL_LABELS
        else:
            out[model] = OTHER
    return pd.Series(out, dtype=object, name="family")


def read_result_tables(
    results_dir: str | Path,
    which: str = "top",
    error_type: ErrorType = "class",
    groups: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The authors' ``accuracies_per_factor.csv`` of each group, stacked with a ``group`` column.

    ``results_dir`` is their ``results`` folder (or its ``val`` sub-folder). Duplicate rows of
    a model within a group (the authors' tables repeat a few) keep the first.
    """
    root = Path(results_dir)
    if (root / "val").is_dir():
        root = root / "val"
    if not root.is_dir():
        raise DataNotFoundError(f"results folder {str(results_dir)!r} does not exist")
    wanted = list(groups) if groups is not None else [
        g for g in RESULT_GROUPS if (root / f"{which}_factor" / g).is_dir()
    ]
    frames = []
    for group in wanted:
        path = root / f"{which}_factor" / group / error_type / "accuracies_per_factor.csv"
        if not path.is_file():
            raise DataNotFoundError(
                f"{path} not found: expected <results>/val/{{top,multi}}_factor/<group>/"
                "<error_type>/accuracies_per_factor.csv"
            )
        table = pd.read_csv(path, index_col=0)
        table = table[~table.index.duplicated()]
        table.insert(0, "group", group)
        frames.append(table)
    if not frames:
        raise DataNotFoundError(f"no result groups under {root / f'{which}_factor'}")
    out = pd.concat(frames)
    out.index.name = "model"
    return out


def figure4_models(tables: pd.DataFrame, error_type: ErrorType = "class") -> pd.DataFrame:
    """The authors' model set of figures 1b and 4 from :func:`read_result_tables` output:
    the ImageNet testbed, the self-supervised models of modelvshuman and base, restricted to
    the four main families (plus the original labels under ``real_class``), with ``family``."""
    ssl = load_model_families()
    ssl = set(ssl.index[ssl == "self_supervised"])
    parts = [tables[tables["group"] == "imagenet_testbed"]]
    for group in ("modelvshuman", "base"):
        part = tables[tables["group"] == group]
        parts.append(part[part.index.isin(ssl)])
    frame = pd.concat(parts)
    frame = frame[~frame.index.duplicated()]
    frame = frame.assign(family=model_families(frame.index).to_numpy())
    keep = set(MAIN_FAMILIES) | ({ORIGINAL_LABELS} if error_type == "real_class" else set())
    return frame[frame["family"].isin(keep)]


#: Figure 2's four annotation sets (partition, factor selection), in the paper's legend order.
FIGURE2_SETS: tuple[tuple[Partition, Which], ...] = (
    ("train", "multi"), ("val", "multi"), ("train", "top"), ("val", "top"),
)


def factor_shares(*annotations: Annotations) -> pd.DataFrame:
    """Figure 2: for each annotation set and factor, the images with the factor selected
    (``count``), the set's images (``images``) and ``share`` = count / images, as the authors'
    ``factor_distribution_comparison`` (images with no factor selected count in ``images``).

    With no argument, the four sets the paper draws (:data:`FIGURE2_SETS`: train and val, all
    factors ``multi`` and the top factor ``top``, prototypes filtered). One row per set and
    factor (sets in the order given, factors in :data:`FACTORS` order), columns partition,
    which, factor, count, images, share. Over a ``multi`` set the shares add up to the mean
    number of factors per image; over a ``top`` set to the share of images with a factor.
    """
    sets = annotations or tuple(load_annotations(w, p) for p, w in FIGURE2_SETS)
    keys = [(a.partition, a.which) for a in sets]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ImagenetXError(f"each (partition, factor selection) once; repeated: {repeated}")
    parts = []
    for ann in sets:
        count = ann.factors.sum(axis=0).astype(np.int64)
        share = count / len(ann) if len(ann) else np.full(len(FACTORS), np.nan)
        parts.append(pd.DataFrame({
            "partition": ann.partition, "which": ann.which, "factor": list(FACTORS),
            "count": count, "images": len(ann), "share": share,
        }))
    return pd.concat(parts, ignore_index=True)


def active_factor_counts(*annotations: Annotations) -> pd.DataFrame:
    """Images per number of active factors (figure 7), one column per partition given."""
    columns = {}
    for ann in annotations:
        n_active = ann.factors.sum(axis=1)
        columns[ann.partition] = np.bincount(n_active, minlength=len(FACTORS) + 1)
    frame = pd.DataFrame(columns)
    frame.index.name = "active_factors"
    last = int(np.flatnonzero(frame.to_numpy().sum(axis=1))[-1]) if frame.to_numpy().any() else 0
    return frame.iloc[: last + 1]


def _group_counts(
    predictions: Predictions,
    images: Annotations,
    design: sp.csr_matrix,
    error_type: ErrorType,
    real: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(models × groups) right and predicted counts for an images × groups 0/1 ``design``."""
    index = predictions.column_index(images.file_names)
    right = np.empty((predictions.num_models, design.shape[1]))
    total = np.empty_like(right)
    for start in range(0, predictions.num_models, CHUNK):
        rows = slice(start, start + CHUNK)
        chunk = predictions.align(images.file_names, rows, index)
        ok = correct_matrix(chunk, images, error_type, real)
        stop = start + len(chunk)
        right[start:stop] = engine.group_counts(ok, design)
        total[start:stop] = engine.group_counts(chunk >= 0, design)
    return right, total


def accuracy_by_active_factors(
    predictions: Predictions,
    annotations: Annotations,
    error_type: ErrorType = "class",
    ignore_empty_real: bool = False,
) -> pd.DataFrame:
    """Models × number of active factors: accuracy on the images with that many factors
    (use the ``multi`` annotations; with ``top`` every image has one). Columns with no image
    are dropped; ``n_images`` gives the image count per column. ``ignore_empty_real`` as
    :func:`~shortcutlab.imagenetx.evaluate.evaluate`'s."""
    images, real = evaluation_images(annotations, error_type, ignore_empty_real)
    n_active = images.factors.sum(axis=1).astype(np.int64)
    width = int(n_active.max()) + 1
    design = sp.csr_matrix(
        (np.ones(len(images), dtype=np.float32), (np.arange(len(images)), n_active)),
        shape=(len(images), width),
    )
    right, total = _group_counts(predictions, images, design, error_type, real)
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(total > 0, right / total, np.nan)
    frame = pd.DataFrame(acc, index=list(predictions.models), columns=range(width))
    frame.index.name = "model"
    frame.columns.name = "active_factors"
    images_per = pd.Series(np.bincount(n_active, minlength=width), name="n_images")
    used = images_per.to_numpy() > 0
    frame = frame.loc[:, used]
    frame.attrs["n_images"] = images_per[used].to_dict()
    return frame


def calibration_by_factor(
    predictions: Predictions,
    annotations: Annotations,
    error_type: ErrorType = "class",
    n_bins: int = 15,
    ignore_empty_real: bool = False,
) -> pd.DataFrame:
    """Expected calibration error (ECE, equal-width confidence bins) of each model on the images
    of each factor, ``worst_factor`` (max) and ``average`` (all images), as the package's
    ``compute_factor_calibration_errors``. Needs the predicted probabilities.
    ``ignore_empty_real`` as :func:`~shortcutlab.imagenetx.evaluate.evaluate`'s."""
    if predictions.probabilities is None:
        raise ImagenetXError(
            "calibration needs predicted probabilities: give prediction CSVs with a "
            "predicted_probability column (or .npz files with a probabilities array)"
        )
    if n_bins < 1:
        raise ImagenetXError(f"n_bins must be at least 1, got {n_bins}")
    images, real = evaluation_images(annotations, error_type, ignore_empty_real)
    n, m_total = len(images), predictions.num_models
    design = sp.hstack(
        [sp.csr_matrix(np.ones((n, 1), dtype=np.float32)),
         sp.csr_matrix(images.factors.astype(np.float32))]
    ).tocsr()
    index = predictions.column_index(images.file_names)
    ece = np.zeros((m_total, design.shape[1]))
    for start in range(0, m_total, CHUNK):
        rows = slice(start, start + CHUNK)
        chunk = predictions.align(images.file_names, rows, index)
        cols = np.arange(len(images.file_names)) if index is None else index
        probs = _aligned_probabilities(predictions, rows, cols)
        ok = correct_matrix(chunk, images, error_type, real)
        ece[start : start + len(chunk)] = engine.calibration_error(
            probs, ok, chunk >= 0, design, n_bins)
    frame = pd.DataFrame(ece[:, 1:], index=list(predictions.models), columns=list(FACTORS))
    frame["worst_factor"] = frame.max(axis=1)
    frame["average"] = ece[:, 0]
    frame.index.name = "model"
    return frame


def _aligned_probabilities(predictions: Predictions, rows: slice, cols: np.ndarray) -> np.ndarray:
    assert predictions.probabilities is not None
    # Probabilities are kept as float32; rounding to 7 decimals gives back the float64 of the
    # decimal written in the CSV (float32 resolves no finer), so bin edges fall as in float64.
    block = np.round(predictions.probabilities[rows].astype(np.float64), 7)
    out = np.full((block.shape[0], len(cols)), np.nan)
    have = cols >= 0
    out[:, have] = block[:, cols[have]]
    return out


def wilson_interval(successes: np.ndarray, n: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Wilson score interval of a binomial proportion, (..., 2); NaN where n = 0."""
    z = stats.norm.ppf((1 + level) / 2)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.asarray(successes, dtype=float) / n
        centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return np.stack([centre - half, centre + half], axis=-1)


def meta_label_listing(
    result: EvaluationResult,
    models: Sequence[str] | None = None,
    k: int = 4,
    level: float = 0.95,
) -> pd.DataFrame:
    """Table 3: per model and meta-label, the ≤ ``k`` lowest error ratios ≤ 1 (robust) and the
    ≤ ``k`` highest above 1 (susceptible), one row per listed factor.

    Columns: model, meta_label, kind, rank, factor, error_ratio, n_images (images of the
    meta-label with the factor), lower/upper (Wilson interval of the factor's accuracy mapped
    through the meta-label's error rate, which is held fixed).
    """
    chosen = list(models) if models is not None else list(result.models)
    for model in chosen:
        if model not in result.models:
            raise ImagenetXError(unknown_choice("model", model, result.models))
    idx = [result.models.index(m) for m in chosen]
    ratio = result.meta_error_ratio[idx]
    count = result.meta_count[idx]
    bounds = wilson_interval(result.meta_correct[idx], count, level)
    base = (1.0 - result.meta_average[idx])[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_bounds = (1.0 - bounds[..., ::-1]) / base
    rows = []
    for i, model in enumerate(chosen):
        for g, meta in enumerate(META_LABELS):
            values = ratio[i, g]
            finite = np.flatnonzero(np.isfinite(values))
            order = finite[np.argsort(values[finite], kind="stable")]
            robust = [f for f in order if values[f] <= 1][:k]
            susceptible = [f for f in order if values[f] > 1][-k:][::-1]
            for kind, picked in (("robust", robust), ("susceptible", susceptible)):
                for rank, f in enumerate(picked, start=1):
                    rows.append({
                        "model": model, "meta_label": meta, "kind": kind, "rank": rank,
                        "factor": FACTORS[f], "error_ratio": float(values[f]),
                        "n_images": int(count[i, g, f]),
                        "lower": float(ratio_bounds[i, g, f, 0]),
                        "upper": float(ratio_bounds[i, g, f, 1]),
                    })
    return pd.DataFrame(rows, columns=["model", "meta_label", "kind", "rank", "factor",
                                       "error_ratio", "n_images", "lower", "upper"])


def listing_text(listing: pd.DataFrame, min_count: int = 10) -> pd.DataFrame:
    """Table 3 as text, one row per (model, meta_label): ``factor (ratio)`` lists, the robust
    ones lowest first and the susceptible ones highest last as in the paper; ``†n`` marks a
    value resting on fewer than ``min_count`` images."""
    def fmt(part: pd.DataFrame, ascending: bool) -> str:
        part = part.sort_values("error_ratio", ascending=ascending, kind="stable")
        items = []
        for row in part.itertuples():
            mark = f" †{row.n_images}" if row.n_images < min_count else ""
            items.append(f"{row.factor.replace('_', ' ')} ({row.error_ratio:.1f}{mark})")
        return ", ".join(items)

    out = []
    for (model, meta), part in listing.groupby(["model", "meta_label"], sort=False):
        out.append({
            "model": model, "meta_label": meta.replace("_", " "),
            "robust": fmt(part[part["kind"] == "robust"], True),
            "susceptible": fmt(part[part["kind"] == "susceptible"], True),
        })
    return pd.DataFrame(out, columns=["model", "meta_label", "robust", "susceptible"])


#: Figure 17's comparison: label → (result group, take only the strongest strength of).
TAILORED_GROUPS: dict[str, tuple[str, str | None]] = {
    "crop": ("crop", "crop"),
    "color jitter": ("colorjitter", "color"),
    "color jitter + crop": ("colorjitter_crop", None),
    "per-class color jitter + crop": ("adaptive_colorjitter", None),
}


def tailored_augmentation(tables: pd.DataFrame, alpha: float = 0.05) -> dict[str, pd.DataFrame]:
    """Figure 17 from the authors' result tables: error ratios of models trained with crop only
    (strongest with 5+ models, as the authors), colour jitter only (strongest), both, and
    colour jitter tailored to the meta-labels that benefit from it; Alexander-Govern test
    per factor across the four.

    Returns ``ratios`` (models × factors with ``augmentation``) and ``tests``.
    """
    from shortcutlab.imagenetx.spillover import MIN_MODELS, augmentation_strength
    from shortcutlab.imagenetx.statistics import alexander_govern_by_factor

    parts = []
    for label, (group, parameter) in TAILORED_GROUPS.items():
        part = tables[(tables["group"] == group) & (tables.index != "human")]
        if part.empty:
            raise DataNotFoundError(f"figure 17 needs the result group {group!r}")
        if parameter is not None:
            strength = augmentation_strength(part.index, group)
            sizes = strength.value_counts()
            part = part[strength == sizes.index[sizes >= MIN_MODELS].max()]
        ratios = error_ratio(part)
        ratios.index = [f"{group}/{m}" for m in ratios.index]
        parts.append(ratios.assign(augmentation=label))
    ratios = pd.concat(parts)
    tests = alexander_govern_by_factor(
        ratios[list(FACTORS)], ratios["augmentation"], alpha=alpha
    )
    return {"ratios": ratios, "tests": tests}
