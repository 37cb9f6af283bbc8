"""Omnibus tests for k algorithms measured on N blocks: Friedman χ² and Iman-Davenport F.

The score matrix has one row per block (data set, test set, factor pair) and one column per
algorithm. Both statistics only depend on within-block ranks, so the direction of "better" does
not change them. The Friedman statistic is tie-corrected (scipy's ``friedmanchisquare``); the
Iman-Davenport F uses the textbook degrees of freedom (k−1, (k−1)(N−1)) (Demšar 2006, eq. 3-4)
by default. ``df="pingouin"`` reproduces pingouin's ``friedman(method="f")``, with which
BiasBed's published p-values were computed: the same F, but degrees of freedom
(k − 1 − 2/N, (N − 1)(k − 1 − 2/N)), which give slightly larger p-values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from shortcutlab.errors import StatsError, unknown_choice

#: Degrees-of-freedom conventions of the Iman-Davenport F test.
DF_CONVENTIONS = ("textbook", "pingouin")


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman χ² (tie-corrected) and the Iman-Davenport F derived from it, with p-values."""

    chi2: float
    chi2_p_value: float
    F: float
    p_value: float
    df_num: int | float
    df_den: int | float
    n_blocks: int
    n_algorithms: int
    df_convention: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_score_matrix(scores: np.ndarray) -> np.ndarray:
    """Return ``scores`` as a float (N, k) array; StatsError unless N ≥ 2, k ≥ 2 and all finite."""
    arr = np.asarray(scores, dtype=float)
    if arr.ndim != 2:
        raise StatsError(f"score matrix must be 2-D (blocks × algorithms), got shape {arr.shape}")
    n, k = arr.shape
    if k < 2:
        raise StatsError(f"need at least 2 algorithms to compare, got {k}")
    if n < 2:
        raise StatsError(f"need at least 2 blocks (data sets) to compare, got {n}")
    bad = np.argwhere(~np.isfinite(arr))
    if len(bad):
        where = ", ".join(f"(block {i}, algorithm {j})" for i, j in bad[:5])
        raise StatsError(f"score matrix has {len(bad)} NaN/inf value(s), e.g. at {where}")
    return arr


def friedman_chi2(scores: np.ndarray, tie_correction: bool = True) -> tuple[float, float]:
    """Tie-corrected Friedman χ² and its p-value (χ² with k−1 df) for an (N, k) score matrix.

    Uses scipy for k ≥ 3; scipy refuses k = 2, where the same tie-corrected formula is evaluated
    directly (it then reduces to a two-sided sign test statistic with ties counted as halves).
    ``tie_correction=False``: the plain formula on average ranks (BiasBed's eq. 4, and what its
    printed F = 7.46 needs).
    """
    arr = check_score_matrix(scores)
    n, k = arr.shape
    ranks = stats.rankdata(arr, axis=1)
    # Sum over blocks of (t³ − t) over tie groups; zero when no ties.
    counts = (np.unique(r, return_counts=True)[1] for r in ranks)
    ties = sum(float(np.sum(c**3 - c)) for c in counts)
    if ties >= n * (k**3 - k):  # every block completely tied: no evidence of any difference
        return 0.0, 1.0
    if not tie_correction:
        ties = 0.0
    elif k >= 3:
        res = stats.friedmanchisquare(*arr.T)
        return float(res.statistic), float(res.pvalue)
    mean_ranks = ranks.mean(axis=0)
    raw = 12.0 * n / (k * (k + 1)) * (np.sum(mean_ranks**2) - k * (k + 1) ** 2 / 4.0)
    chi2 = float(raw / (1.0 - ties / (n * (k**3 - k))))
    return chi2, float(stats.chi2.sf(chi2, k - 1))


def degrees_of_freedom(
    n_blocks: int, n_algorithms: int, df: str = "textbook"
) -> tuple[int | float, int | float]:
    """(numerator, denominator) degrees of freedom of the Iman-Davenport F.

    ``textbook``: (k−1, (k−1)(N−1)); ``pingouin``: (k−1−2/N, (N−1)(k−1−2/N)), pingouin's
    ``friedman(method="f")`` (the convention of BiasBed's published p-values).
    """
    n, k = n_blocks, n_algorithms
    if df == "textbook":
        return k - 1, (k - 1) * (n - 1)
    if df == "pingouin":
        num = k - 1 - 2.0 / n
        return num, (n - 1) * num
    raise StatsError(unknown_choice("degrees-of-freedom convention", df, DF_CONVENTIONS))


def iman_davenport(
    chi2: float, n_blocks: int, n_algorithms: int, df: str = "textbook"
) -> tuple[float, float]:
    """Iman-Davenport F = (N−1)χ² / (N(k−1) − χ²) and its p-value under F(k−1, (k−1)(N−1))
    (or pingouin's degrees of freedom with ``df="pingouin"``, see :func:`degrees_of_freedom`).

    F is infinite (p = 0) when every block ranks the algorithms identically (χ² = N(k−1)).
    """
    n, k = n_blocks, n_algorithms
    df_num, df_den = degrees_of_freedom(n, k, df)
    denom = n * (k - 1) - chi2
    if denom <= 1e-12 * max(1.0, n * (k - 1)):
        return float("inf"), 0.0
    f = (n - 1) * chi2 / denom
    return float(f), float(stats.f.sf(f, df_num, df_den))


def friedman_test(
    scores: np.ndarray, df: str = "textbook", tie_correction: bool = True
) -> FriedmanResult:
    """Friedman χ² (tie-corrected unless ``tie_correction=False``) and Iman-Davenport F for an
    (N blocks, k algorithms) matrix; ``df``: the degrees-of-freedom convention of the F test
    (``textbook`` or ``pingouin``)."""
    arr = check_score_matrix(scores)
    n, k = arr.shape
    df_num, df_den = degrees_of_freedom(n, k, df)
    chi2, chi2_p = friedman_chi2(arr, tie_correction)
    f, p = iman_davenport(chi2, n, k, df)
    return FriedmanResult(
        chi2=chi2,
        chi2_p_value=chi2_p,
        F=f,
        p_value=p,
        df_num=df_num,
        df_den=df_den,
        n_blocks=n,
        n_algorithms=k,
        df_convention=df,
    )
