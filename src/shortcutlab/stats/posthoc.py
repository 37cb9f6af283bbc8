"""Post-hoc analysis after a Friedman test: mean ranks, Nemenyi p-values, critical difference
and the critical-difference (CD) diagram of Demšar (2006).

Nemenyi: two algorithms differ when their mean ranks differ by at least
CD = q_α/√2 · √(k(k+1)/(6N)), with q_α the upper-α quantile of the studentized range with k groups
and infinite degrees of freedom. Pairwise p-values come from the same distribution
(``scipy.stats.studentized_range``, the computation scikit-posthocs' ``posthoc_nemenyi_friedman``
performs); they are reported as computed by default (``method="exact"``). ``method="table"``
is what BiasBed's Tables 4 and 5 were computed with: the scikit-posthocs of 2022 read the
p-values from statsmodels' studentized-range table (``psturng``), which interpolates the
tabulated quantiles (interior values differ from the exact ones by up to ~0.03) and bounds them
to [0.001, 0.9]. ``clip=True`` only applies those bounds to the exact values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from shortcutlab.errors import StatsError, unknown_choice
from shortcutlab.stats.friedman import check_score_matrix


def mean_ranks(scores: np.ndarray, lower_is_better: bool = False) -> np.ndarray:
    """Mean rank of each algorithm (column) over blocks (rows); 1 = best, ties averaged."""
    arr = check_score_matrix(scores)
    ranks = stats.rankdata(arr if lower_is_better else -arr, axis=1, method="average")
    return ranks.mean(axis=0)


def _rank_scale(n_algorithms: int, n_blocks: int) -> float:
    """Standard error of a mean-rank difference: √(k(k+1)/(6N))."""
    return float(np.sqrt(n_algorithms * (n_algorithms + 1) / (6.0 * n_blocks)))


#: Range of the p-values of old scikit-posthocs (statsmodels ``psturng``): ``clip=True``.
PSTURNG_RANGE = (0.001, 0.9)

#: How Nemenyi p-values are computed: the exact studentized-range tail (scipy) or the
#: interpolated studentized-range table (statsmodels ``psturng``) that BiasBed's tables used.
NEMENYI_METHODS = ("exact", "table")


def nemenyi_p_values(
    ranks: Sequence[float] | np.ndarray, n_blocks: int, clip: bool = False, method: str = "exact"
) -> np.ndarray:
    """Symmetric (k, k) matrix of Nemenyi p-values from mean ranks over ``n_blocks`` blocks.

    p_ij = P(Q > √2·|R_i − R_j| / √(k(k+1)/(6N))) with Q studentized-range(k, ∞); diagonal is 1.
    ``method``: ``exact`` (scipy) or ``table`` (statsmodels' ``psturng``, bounded to
    :data:`PSTURNG_RANGE`, as the scikit-posthocs BiasBed used). ``clip``: bound exact
    off-diagonal values to :data:`PSTURNG_RANGE`.
    """
    if method not in NEMENYI_METHODS:
        raise StatsError(unknown_choice("Nemenyi method", method, NEMENYI_METHODS))
    r = np.asarray(ranks, dtype=float)
    k = r.size
    if k < 2 or n_blocks < 1:
        raise StatsError(f"Nemenyi needs ≥2 algorithms and ≥1 block, got k={k}, N={n_blocks}")
    q = np.abs(r[:, None] - r[None, :]) / _rank_scale(k, n_blocks) * np.sqrt(2.0)
    if method == "table":
        from statsmodels.stats.libqsturng import psturng

        p = np.reshape(np.asarray(psturng(q.ravel(), k, np.inf), dtype=float), q.shape)
    else:
        p = stats.studentized_range.sf(q, k, np.inf)
    if clip:
        p = np.clip(p, *PSTURNG_RANGE)
    np.fill_diagonal(p, 1.0)
    return np.asarray(p, dtype=float)


def critical_difference(n_algorithms: int, n_blocks: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference q_α/√2 · √(k(k+1)/(6N)) for k algorithms over N blocks."""
    if not 0.0 < alpha < 1.0:
        raise StatsError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if n_algorithms < 2 or n_blocks < 1:
        raise StatsError(
            f"critical difference needs ≥2 algorithms and ≥1 block, got k={n_algorithms}, "
            f"N={n_blocks}"
        )
    q = stats.studentized_range.ppf(1.0 - alpha, n_algorithms, np.inf) / np.sqrt(2.0)
    return float(q * _rank_scale(n_algorithms, n_blocks))


def cd_cliques(ranks: Mapping[str, float], cd: float) -> list[list[str]]:
    """Maximal groups of algorithms whose mean ranks all lie within less than ``cd`` of each other.

    These are the bars of a CD diagram: members of one group are not significantly different.
    Groups of one algorithm are omitted; order follows the ranks (best first).
    """
    names = sorted(ranks, key=lambda a: (ranks[a], a))
    values = [ranks[a] for a in names]
    cliques: list[list[str]] = []
    last_end = -1
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and values[j + 1] - values[i] < cd:
            j += 1
        if j > i and j > last_end:
            cliques.append(names[i : j + 1])
            last_end = j
    return cliques


def cd_diagram(
    ranks: Mapping[str, float], cd: float, title: str | None = None, width: float = 7.0
) -> Figure:
    """Demšar-style critical-difference diagram as a matplotlib Figure.

    A rank axis (1 = best, on the left), the better half of the algorithms labelled on the left
    and the rest on the right, a bar of length CD, and thick bars joining groups of algorithms that
    are not significantly different (Nemenyi at the α used for ``cd``).
    """
    if len(ranks) < 2:
        raise StatsError(f"a CD diagram needs ≥2 algorithms, got {len(ranks)}")
    names = sorted(ranks, key=lambda a: (ranks[a], a))
    k = len(names)
    lo, hi = 1, max(k, int(np.ceil(max(ranks.values()))))
    n_left = (k + 1) // 2
    cliques = cd_cliques(ranks, cd)
    row = 0.28  # vertical spacing between label rows (inches)
    clique_h = 0.1 * (len(cliques) + 1)
    axis_y = 0.55
    base = axis_y + clique_h + 0.15  # first label row
    height = base + row * (n_left - 1) + 0.2
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(height, 0.0)  # y grows downwards, in inches
    ax.axis("off")
    text_w = 0.24  # fraction of the width kept for labels on each side

    def x_of(rank: float) -> float:
        return text_w + (rank - lo) / (hi - lo) * (1.0 - 2 * text_w)

    ax.plot([x_of(lo), x_of(hi)], [axis_y, axis_y], color="black", lw=1.2)
    for t in range(lo, hi + 1):
        ax.plot([x_of(t)] * 2, [axis_y - 0.08, axis_y], color="black", lw=1)
        ax.text(x_of(t), axis_y - 0.11, str(t), ha="center", va="bottom", fontsize=9)
    for half in np.arange(lo + 0.5, hi, 1.0):
        ax.plot([x_of(half)] * 2, [axis_y - 0.04, axis_y], color="black", lw=0.7)
    # CD bar, top left.
    cd_y = 0.15
    ax.plot([x_of(lo), x_of(lo + cd)], [cd_y, cd_y], color="black", lw=1.5)
    for end in (lo, lo + cd):
        ax.plot([x_of(end)] * 2, [cd_y - 0.04, cd_y + 0.04], color="black", lw=1.5)
    ax.text(x_of(lo + cd / 2), cd_y - 0.05, f"CD = {cd:.3f}", ha="center", va="bottom", fontsize=9)
    # Cliques just below the axis.
    for c, members in enumerate(cliques):
        y = axis_y + 0.1 * (c + 1)
        x0, x1 = x_of(ranks[members[0]]) - 0.006, x_of(ranks[members[-1]]) + 0.006
        ax.plot([x0, x1], [y, y], color="black", lw=3.5, solid_capstyle="butt")
    # Labels with elbow lines.
    for i, name in enumerate(names):
        left = i < n_left
        level = i if left else k - 1 - i
        y = base + row * level
        x = x_of(ranks[name])
        x_end = 0.02 + text_w * 0.9 if left else 1.0 - 0.02 - text_w * 0.9
        ax.plot([x, x], [axis_y, y], color="black", lw=0.8)
        ax.plot([x, x_end], [y, y], color="black", lw=0.8)
        label = f"{name} ({ranks[name]:.2f})"
        ax.text(
            x_end + (-0.01 if left else 0.01),
            y,
            label,
            ha="right" if left else "left",
            va="center",
            fontsize=9,
        )
    if title:
        fig.suptitle(title, fontsize=10, y=1.02)
    return fig
