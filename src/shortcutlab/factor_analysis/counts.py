"""The numeric core: right and scored counts per group of items, ratios, bootstrap intervals and
calibration error, for many models at once.

Everything takes a models × items boolean matrix of correct predictions (``correct``), the
matching matrix of scored items (``valid``: the model has a prediction) and an items × groups
0/1 *design* matrix whose columns are the groups to count over (all items, each factor, each
(class, factor) pair, ...). Every statistic is a ratio of the resulting counts.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shortcutlab.errors import FactorAnalysisError
from shortcutlab.utils.rng import rng

__all__ = [
    "SegmentCounter",
    "bootstrap_intervals",
    "bootstrap_weights",
    "calibration_error",
    "error_ratio",
    "group_counts",
    "indicator_counts",
    "ratio",
]


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` elementwise, NaN where ``den`` is 0 (a group without items)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(num, dtype=float) / den
    return np.where(np.asarray(den) > 0, out, np.nan)


def error_ratio(accuracy: np.ndarray, average: np.ndarray) -> np.ndarray:
    """Error ratio ``(1 − acc(group)) / (1 − acc(all))``: above 1 the group is over-represented
    among the mistakes. ``average`` broadcasts over the last axis of ``accuracy``; NaN where the
    model makes no mistake at all (0/0)."""
    accuracy = np.asarray(accuracy, dtype=float)
    base = (1.0 - np.asarray(average, dtype=float))[..., None] + 0.0 * accuracy
    return ratio(1.0 - accuracy, base)


def group_counts(indicator: np.ndarray, design: sp.spmatrix) -> np.ndarray:
    """(models × groups) counts of true entries of a models × items ``indicator``."""
    design_t = sp.csc_matrix(design).T  # a CSR view of a CSC design: no copy
    return np.asarray(design_t @ np.atleast_2d(indicator).T.astype(np.float32)).T.astype(float)


def indicator_counts(
    indicator: np.ndarray, indicators: np.ndarray, codes: np.ndarray | None = None,
    n_codes: int = 1, chunk: int = 1 << 18,
) -> np.ndarray:
    """(models × factors × codes) counts of true entries of a models × items ``indicator`` on
    the items of each factor (an items × factors 0/1 matrix) and each code (e.g. the class;
    None: one code). Dense products over chunks of items: memory stays at one chunk, and
    10 million items × 20 factors take seconds."""
    indicator = np.atleast_2d(indicator)
    n, k = indicators.shape
    out = np.zeros((indicator.shape[0], k, n_codes))
    eye = np.eye(n_codes, dtype=np.float32)
    for start in range(0, n, chunk):
        part = slice(start, start + chunk)
        block = indicators[part].astype(np.float32)
        onehot = eye[codes[part]] if codes is not None else np.ones((block.shape[0], 1),
                                                                   dtype=np.float32)
        for m in range(indicator.shape[0]):
            weighted = block * indicator[m, part].astype(np.float32)[:, None]
            out[m] += weighted.T @ onehot  # integer counts below 2**24 per chunk: exact
    return out


@dataclass(frozen=True)
class SegmentCounter:
    """Items sorted by design row, so that counting over thousands of models is one segmented
    sum plus a small product: ``order`` sorts the items, segment ``k`` starts at ``starts[k]``
    and has design row ``design[k]`` (signatures × groups). Fast when many items share a row
    (ImageNet-X: 46,110 images, 253 distinct rows)."""

    order: np.ndarray
    starts: np.ndarray
    design: np.ndarray

    @classmethod
    def of(cls, design: sp.spmatrix, key: np.ndarray | None = None) -> SegmentCounter:
        """From an items × groups 0/1 design matrix; ``key`` (one integer per item, equal for
        items with equal design rows) saves hashing the rows."""
        design = sp.csr_matrix(design)
        if key is None:
            _, key = np.unique(design.toarray(), axis=0, return_inverse=True)
        _, inverse = np.unique(np.asarray(key).ravel(), return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0])
        rows = design[order[starts]].toarray().astype(np.float64)
        return cls(order, starts, rows)

    def counts(self, sorted_indicator: np.ndarray) -> np.ndarray:
        """(models × groups) counts of a models × items indicator already in ``order``."""
        sums = np.add.reduceat(
            np.ascontiguousarray(sorted_indicator).view(np.uint8), self.starts, axis=1,
            dtype=np.int32,
        )
        return sums.astype(np.float64) @ self.design


def bootstrap_weights(
    n_items: int, replicates: range, seed: int, stream: str = "factor-bootstrap"
) -> np.ndarray:
    """(replicates × items) resampling counts; replicate ``b`` depends only on (seed, stream, b),
    so intervals do not change with chunking or the models evaluated beside."""
    weights = np.empty((len(replicates), n_items), dtype=np.float32)
    for row, b in enumerate(replicates):
        draw = rng(seed, stream, b).integers(0, n_items, n_items)
        weights[row] = np.bincount(draw, minlength=n_items)
    return weights


def bootstrap_intervals(
    correct: np.ndarray,
    valid: np.ndarray,
    design: sp.spmatrix,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    stream: str = "factor-bootstrap",
    boot_chunk: int = 100,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile bootstrap (resampling items) of accuracy per group and of the error ratio of
    each group against the design's first column (all items).

    Returns (all-items accuracy (models, 2), group accuracy (models, groups − 1, 2), error
    ratio (models, groups − 1, 2)); NaN bounds where a group is empty in every replicate.
    """
    if not 0 < level < 1:
        raise FactorAnalysisError(f"confidence level must be in (0, 1), got {level}")
    if n_boot < 2:
        raise FactorAnalysisError(f"n_boot must be at least 2, got {n_boot}")
    correct, valid = np.atleast_2d(correct), np.atleast_2d(valid)
    design_t = sp.csr_matrix(design).T.tocsr()
    m_total, n = correct.shape
    groups = design_t.shape[0]
    stats_avg = np.empty((m_total, n_boot))
    stats_acc = np.empty((m_total, n_boot, groups - 1))
    for b0 in range(0, n_boot, boot_chunk):
        b1 = min(n_boot, b0 + boot_chunk)
        # items × replicates, so each product is one sparse pass (single-threaded, no BLAS).
        weights_t = np.ascontiguousarray(bootstrap_weights(n, range(b0, b1), seed, stream).T)
        for m in range(m_total):
            right = np.asarray(design_t @ (weights_t * correct[m][:, None])).T
            total = np.asarray(design_t @ (weights_t * valid[m][:, None])).T
            acc = ratio(right, total)
            stats_avg[m, b0:b1] = acc[:, 0]
            stats_acc[m, b0:b1] = acc[:, 1:]
    ratios = error_ratio(stats_acc, stats_avg)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]

    def interval(x: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices give NaN bounds
            return np.moveaxis(np.nanpercentile(x, q, axis=1), 0, -1)

    return interval(stats_avg), interval(stats_acc), interval(ratios)


def calibration_error(
    probabilities: np.ndarray,
    correct: np.ndarray,
    valid: np.ndarray,
    design: sp.spmatrix,
    n_bins: int = 15,
) -> np.ndarray:
    """Expected calibration error (equal-width confidence bins) of each model on each group:
    Σ_bins |right − Σ confidence| / items of the group; (models × groups), NaN where a group
    has no scored item. ``probabilities`` is the confidence of the predicted label (NaN:
    none)."""
    if n_bins < 1:
        raise FactorAnalysisError(f"n_bins must be at least 1, got {n_bins}")
    probs = np.atleast_2d(probabilities).astype(np.float64)
    valid = np.atleast_2d(valid) & np.isfinite(probs)
    ok = np.atleast_2d(correct) & valid
    design_t = sp.csr_matrix(design).T.tocsr()
    edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    bins = np.searchsorted(edges, np.where(valid, probs, 0.0), side="left")
    shape = (probs.shape[0], design_t.shape[0], n_bins)
    count, conf, right = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for b in range(n_bins):
        inside = (bins == b) & valid
        count[..., b] = (design_t @ inside.T.astype(np.float32)).T
        conf[..., b] = (design_t @ np.where(inside, probs, 0.0).T.astype(np.float64)).T
        right[..., b] = (design_t @ (inside & ok).T.astype(np.float32)).T
    totals = count.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.abs(right - conf) / totals[..., None]
        return np.where(totals > 0, gap.sum(axis=2), np.nan)
