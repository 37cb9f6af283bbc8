"""Per-factor accuracy and error ratio, worst factors, calibration and worst-group accuracy of
predictions joined with a factor-annotated table (pure functions; no dataset named).

Conventions (ImageNet-X's): accuracy on a factor = right / scored items that have the factor;
error ratio = (1 − acc(factor)) / (1 − acc(all)), above 1 the factor is over-represented
among the mistakes. A factor with fewer than ``min_count`` scored items is reported but never
ranked among the worst (its ratio rests on too few items).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats

from shortcutlab.errors import FactorAnalysisError, unknown_choice
from shortcutlab.factor_analysis.counts import (
    bootstrap_intervals,
    calibration_error,
    error_ratio,
    indicator_counts,
    ratio,
)
from shortcutlab.factor_analysis.table import FactorTable, Joined

__all__ = [
    "FactorResult",
    "calibration_by_factor",
    "factor_error_tests",
    "factor_result",
    "worst_factors",
    "worst_factors_by_class",
    "worst_group_accuracy",
]

METRICS = ("accuracy", "error_ratio", "count")


def _design(indicators: np.ndarray) -> sp.csc_matrix:
    """items × (all, indicators...) 0/1 matrix."""
    n = indicators.shape[0]
    item, factor = np.nonzero(indicators)
    rows = np.concatenate([np.arange(n), item])
    cols = np.concatenate([np.zeros(n, dtype=np.int64), factor + 1])
    return sp.csc_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                         shape=(n, 1 + indicators.shape[1]))


@dataclass(frozen=True)
class FactorResult:
    """Per-model, per-factor counts and their ratios; ``lower``/``upper`` are the bootstrap
    bounds of the error ratio (None without a bootstrap)."""

    models: tuple[str, ...]
    names: tuple[str, ...]
    correct: np.ndarray  # (models, factors) right predictions on the factor's items
    count: np.ndarray  # (models, factors) scored items with the factor
    average: np.ndarray  # (models,) accuracy over all scored items
    n_scored: np.ndarray  # (models,)
    error_ratio_ci: np.ndarray | None = None  # (models, factors, 2)
    accuracy_ci: np.ndarray | None = None  # (models, factors, 2)

    @property
    def accuracy(self) -> np.ndarray:
        return ratio(self.correct, self.count)

    @property
    def error_ratio(self) -> np.ndarray:
        return error_ratio(self.accuracy, self.average)

    def table(self, metric: str = "error_ratio") -> pd.DataFrame:
        """Models × factors of ``accuracy``, ``error_ratio`` or ``count``."""
        if metric not in METRICS:
            raise FactorAnalysisError(unknown_choice("metric", metric, METRICS))
        frame = pd.DataFrame(getattr(self, metric), index=list(self.models),
                             columns=list(self.names))
        frame.index.name = "model"
        return frame

    def long(self) -> pd.DataFrame:
        """Tidy: model, factor, count, accuracy, error_ratio (and the bootstrap bounds)."""
        m, f = np.meshgrid(np.arange(len(self.models)), np.arange(len(self.names)),
                           indexing="ij")
        out = pd.DataFrame({
            "model": np.asarray(self.models, dtype=object)[m.ravel()],
            "factor": np.asarray(self.names, dtype=object)[f.ravel()],
            "count": self.count.ravel().astype(np.int64),
            "accuracy": self.accuracy.ravel(),
            "error_ratio": self.error_ratio.ravel(),
        })
        if self.error_ratio_ci is not None:
            out["error_ratio_lower"] = self.error_ratio_ci[..., 0].ravel()
            out["error_ratio_upper"] = self.error_ratio_ci[..., 1].ravel()
        return out


def factor_result(
    table: FactorTable, joined: Joined, n_boot: int = 0, level: float = 0.95, seed: int = 0
) -> FactorResult:
    """Per-factor accuracy and error ratio of every model (bootstrap intervals over items
    with ``n_boot`` ≥ 2 resamples)."""
    right = indicator_counts(joined.correct, table.indicators)[..., 0]
    total = indicator_counts(joined.valid, table.indicators)[..., 0]
    right_all = joined.correct.sum(axis=1).astype(float)
    total_all = joined.valid.sum(axis=1).astype(float)
    acc_ci = ratio_ci = None
    if n_boot:
        _, acc_ci, ratio_ci = bootstrap_intervals(joined.correct, joined.valid,
                                                  _design(table.indicators), n_boot, level, seed)
    return FactorResult(joined.models, table.names, right, total, ratio(right_all, total_all),
                        total_all.astype(np.int64), ratio_ci, acc_ci)


def worst_factors(result: FactorResult, k: int = 5, min_count: int = 30) -> pd.DataFrame:
    """Per model, the ``k`` factors with the highest error ratio among those with at least
    ``min_count`` scored items: model, rank, factor, error_ratio, accuracy, count."""
    if k < 1 or min_count < 1:
        raise FactorAnalysisError(f"k and min_count must be at least 1, got {k} and {min_count}")
    long = result.long()
    long = long[(long["count"] >= min_count) & np.isfinite(long["error_ratio"])]
    long = long.sort_values(["model", "error_ratio"], ascending=[True, False], kind="stable")
    top = long.groupby("model", sort=False).head(k).copy()
    top.insert(1, "rank", top.groupby("model").cumcount() + 1)
    order = {m: i for i, m in enumerate(result.models)}
    return top.sort_values(["model", "rank"], key=lambda s: s.map(order) if s.name == "model"
                           else s).reset_index(drop=True)


def worst_factors_by_class(
    table: FactorTable,
    joined: Joined,
    k: int = 3,
    min_count: int = 10,
    class_groups: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Per model and class (or group of classes, with ``class_groups`` mapping each label to
    its group), the ``k`` factors with the highest error ratio within it: error ratio =
    (1 − acc(class, factor)) / (1 − acc(class)). Factors with fewer than ``min_count`` scored
    items in the class are left out."""
    if class_groups is not None:
        mapping = {str(a): str(b) for a, b in class_groups.items()}
        missing = sorted(set(table.label_set) - set(mapping))
        if missing:
            raise FactorAnalysisError(
                f"class_groups gives no group for labels {missing[:5]}; every label needs one")
        group_codes, groups = pd.factorize(
            np.asarray([mapping[label] for label in table.label_set], dtype=object), sort=True)
        code = group_codes[table.label_codes]
    else:
        code, groups = table.label_codes, np.asarray(table.label_set, dtype=object)
    g = len(groups)
    code = np.asarray(code, dtype=np.int64)
    m_total = len(joined.models)
    right_g = np.stack([np.bincount(code, weights=joined.correct[m], minlength=g)
                        for m in range(m_total)])
    total_g = np.stack([np.bincount(code, weights=joined.valid[m], minlength=g)
                        for m in range(m_total)])
    acc_group = ratio(right_g, total_g)
    count_pair = indicator_counts(joined.valid, table.indicators, code, g)  # m × factor × class
    acc_pair = ratio(indicator_counts(joined.correct, table.indicators, code, g), count_pair)
    ratios = error_ratio(np.swapaxes(acc_pair, 1, 2), acc_group)  # models × groups × factors
    rows = []
    for m, model in enumerate(joined.models):
        for gi, group in enumerate(groups):
            values = ratios[m, gi]
            counts = count_pair[m, :, gi]
            usable = np.flatnonzero(np.isfinite(values) & (counts >= min_count))
            picked = usable[np.argsort(-values[usable], kind="stable")][:k]
            for rank, f in enumerate(picked, start=1):
                rows.append({"model": model, "class": group, "rank": rank,
                             "factor": table.names[f], "error_ratio": float(values[f]),
                             "accuracy": float(acc_pair[m, f, gi]), "count": int(counts[f]),
                             "class_accuracy": float(acc_group[m, gi])})
    return pd.DataFrame(rows, columns=["model", "class", "rank", "factor", "error_ratio",
                                       "accuracy", "count", "class_accuracy"])


def calibration_by_factor(table: FactorTable, joined: Joined, n_bins: int = 15) -> pd.DataFrame:
    """Expected calibration error of each model on the items of each factor, ``worst_factor``
    (max) and ``average`` (all items); needs the predictions' probabilities."""
    if joined.probabilities is None:
        raise FactorAnalysisError(
            "calibration needs the predicted label's probability: give a probability column "
            "(--prob-col / prob_col=)")
    ece = calibration_error(joined.probabilities, joined.correct, joined.valid,
                            _design(table.indicators), n_bins)
    frame = pd.DataFrame(ece[:, 1:], index=list(joined.models), columns=list(table.names))
    frame["worst_factor"] = frame.max(axis=1)
    frame["average"] = ece[:, 0]
    frame.index.name = "model"
    return frame


def worst_group_accuracy(
    table: FactorTable,
    joined: Joined,
    factors: Sequence[str] | None = None,
    with_label: bool = True,
    min_count: int = 1,
) -> dict[str, Any]:
    """WILDS' ``acc_wg``: the lowest accuracy over the groups formed by the combinations of
    ``factors`` (annotation columns; default all) and, with ``with_label``, the true label.

    Rules: groups are the combinations that occur (an empty combination is no group); items
    with a missing value in a grouping column belong to no group; a group with fewer than
    ``min_count`` items is excluded from the minimum and listed in ``excluded``. Returns
    model → acc_wg, the worst group, and ``groups`` (one row per group and model).
    """
    columns = list(factors) if factors is not None else list(table.values.columns)
    unknown = [c for c in columns if c not in table.values.columns]
    if unknown:
        raise FactorAnalysisError(unknown_choice("factor column", unknown[0],
                                                 table.values.columns))
    repeated = sorted({str(c) for c in columns if columns.count(c) > 1})
    if repeated:
        raise FactorAnalysisError(f"grouping columns repeated: {', '.join(repeated)}; name each "
                                  "once")
    if not columns and not with_label:
        raise FactorAnalysisError("worst-group accuracy needs at least one grouping column")
    names = (["label"] if with_label else []) + columns
    parts = [(table.label_codes.astype(np.int64), np.asarray(table.label_set, dtype=object))
             ] if with_label else []
    for column in columns:
        col_codes, uniques = pd.factorize(table.values[column], sort=True)
        parts.append((col_codes.astype(np.int64), np.asarray(uniques, dtype=object)))
    codes, groups = _combination_codes(parts, names, len(table))
    use = codes >= 0
    every = bool(use.all())
    used = codes if every else codes[use]

    def per_group(indicator: np.ndarray) -> np.ndarray:
        return np.stack([np.bincount(used, weights=row if every else row[use],
                                     minlength=len(groups)) for row in indicator])

    right, total = per_group(joined.correct), per_group(joined.valid)
    acc = ratio(right, total)
    out: dict[str, Any] = {"columns": names, "min_count": min_count}
    rows = []
    for m, model in enumerate(joined.models):
        small = total[m] < min_count
        eligible = np.flatnonzero(~small & (total[m] > 0))
        if not len(eligible):
            raise FactorAnalysisError(
                f"model {model!r}: no group of {', '.join(names)} has {min_count}+ "
                f"scored items (largest: {int(total[m].max()) if total.size else 0})")
        worst = eligible[int(np.argmin(acc[m, eligible]))]
        out[model] = {"acc_wg": float(acc[m, worst]), "worst_group": str(groups[worst]),
                      "n_groups": len(eligible),
                      "excluded": [str(groups[i]) for i in np.flatnonzero(small)]}
        rows += [{"model": model, "group": str(groups[i]), "count": int(total[m, i]),
                  "accuracy": float(acc[m, i]), "excluded": bool(small[i])}
                 for i in range(len(groups))]
    out["groups"] = pd.DataFrame(rows, columns=["model", "group", "count", "accuracy",
                                                "excluded"])
    return out


def _combination_codes(parts: list[tuple[np.ndarray, np.ndarray]], names: list[str], n: int
                       ) -> tuple[np.ndarray, list[str]]:
    """Group code of each item (−1: a missing value) and the groups' names, for the
    combinations of several coded columns ``(codes, classes)``; groups in sorted order."""
    key = np.zeros(n, dtype=np.int64)
    missing = np.zeros(n, dtype=bool)
    renumbered = False
    for col_codes, uniques in parts:  # mixed radix: one integer per combination
        key = key * len(uniques) + np.maximum(col_codes, 0)
        missing |= col_codes < 0
        if key.max(initial=0) > 2**40:  # renumber before the product could overflow
            key = np.unique(key, return_inverse=True)[1].ravel().astype(np.int64)
            renumbered = True
    size = int(key.max(initial=0)) + 1
    if not renumbered and size <= 4 * n + 1024:  # few combinations: count, no sort
        present = np.flatnonzero(np.bincount(key[~missing], minlength=size))
        lookup = np.full(size, -1, dtype=np.int64)
        lookup[present] = np.arange(len(present))
        codes = np.where(missing, -1, lookup[key])
        groups = []
        for combo in present:
            digits, rest = [], int(combo)
            for _, uniques in reversed(parts):
                rest, digit = divmod(rest, len(uniques))
                digits.append(uniques[digit])
            groups.append(", ".join(f"{c}={v}" for c, v in zip(names, digits[::-1],
                                                                strict=True)))
        return codes, groups
    _, first, inverse = np.unique(np.where(missing, -1, key), return_index=True,
                                  return_inverse=True)
    codes = inverse.ravel().astype(np.int64) - (1 if missing.any() else 0)
    first = first[1:] if missing.any() else first
    return codes, [", ".join(f"{c}={uniques[col_codes[i]]}"
                             for c, (col_codes, uniques) in zip(names, parts, strict=True))
                   for i in first]


def factor_error_tests(result: FactorResult, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and factor: is the error rate on the factor's items different from the rest?
    χ² test of the 2×2 table (with/without the factor × right/wrong), Holm-adjusted over a
    model's factors. Needs the counts of all scored items (``n_scored``, ``average``)."""
    rows = []
    for m, model in enumerate(result.models):
        n_all = float(result.n_scored[m])
        right_all = result.average[m] * n_all
        pvalues = []
        for f, factor in enumerate(result.names):
            r_in, n_in = result.correct[m, f], result.count[m, f]
            r_out, n_out = right_all - r_in, n_all - n_in
            table = np.array([[r_in, n_in - r_in], [r_out, n_out - r_out]])
            if n_in == 0 or n_out == 0 or (table.sum(axis=0) == 0).any():
                statistic, pvalue = np.nan, np.nan
            else:
                res = stats.chi2_contingency(table)
                statistic, pvalue = float(res.statistic), float(res.pvalue)
            pvalues.append(pvalue)
            rows.append({"model": model, "factor": factor, "statistic": statistic,
                         "pvalue": pvalue})
        adjusted = _holm(np.asarray(pvalues))
        for row, adj in zip(rows[-len(result.names):], adjusted, strict=True):
            row["pvalue_holm"] = adj
            row["significant"] = bool(adj <= alpha)
    return pd.DataFrame(rows, columns=["model", "factor", "statistic", "pvalue", "pvalue_holm",
                                       "significant"])


def _holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment (statsmodels' ``multipletests``); NaN stays NaN and does not
    count as a test."""
    from statsmodels.stats.multitest import multipletests

    out = np.full(len(pvalues), np.nan)
    finite = np.isfinite(pvalues)
    if finite.any():
        out[finite] = multipletests(pvalues[finite], method="holm")[1]
    return out
