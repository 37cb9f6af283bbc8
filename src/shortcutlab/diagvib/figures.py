"""The DiagViB-6 figures of the paper, :class:`~shortcutlab.diagvib.metrics.DiagvibMetrics`.

* :func:`plot_accuracy_matrices` — Fig. 4a / 5a: the ZSO vector and one 6×6 ``P_ij`` matrix per
  study (rows predicted, columns correlated), coloured around chance;
* :func:`plot_factor_aggregates` — Fig. 4b / 5b: FAAvg and FAMin per predicted factor across
  the generalisation-opportunity sequence, one line per model;
* :func:`plot_chgo_improvement` — Table 2 as bars: CHGO − ZGO per factor and model;
* :func:`plot_pair_symmetry` — the section-5 check ``P_ij`` against ``1 − P_ji``.

Matrix cells that include a run which did not fit its training data are marked with a "!".

Figures are built without pyplot, so they are safe in worker processes and leave no global state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.metrics import CHANCE, STUDIES, DiagvibMetrics
from shortcutlab.errors import DiagvibError, unknown_choice

# The paper's x-axes: generalisation opportunities decrease from left (ZSO) to right (ZGO).
CGO_SEQUENCE: tuple[str, ...] = ("ZSO", "CGO-3", "CGO-2", "CGO-1", "ZGO")
FGO_SEQUENCE: tuple[str, ...] = ("ZSO", "FGO-20", "FGO-10", "FGO-5", "ZGO")
SEQUENCES = {"CGO": CGO_SEQUENCE, "FGO": FGO_SEQUENCE}
MATRIX_STUDIES: tuple[str, ...] = ("ZGO", "CGO-1", "CGO-2", "CGO-3", "FGO-5", "FGO-10", "FGO-20",
                                   "CHGO")
_CMAP = "RdBu"
_NORM = TwoSlopeNorm(vmin=0.0, vcenter=CHANCE, vmax=1.0)


def unfit_cells(metrics: DiagvibMetrics, label: str, study: str) -> set[tuple[str, str]]:
    """(predicted, correlated) cells of one model and study with a run that did not fit
    (correlated is "" for ZSO)."""
    u = metrics.unfit[(metrics.unfit["label"] == label) & (metrics.unfit["study"] == study)]
    return {(str(p), str(c) if isinstance(c, str) else "") for p, c in
            zip(u["predicted"], u["correlated"], strict=True)}


def _check_label(metrics: DiagvibMetrics, label: str) -> None:
    if label not in metrics.labels:
        raise DiagvibError(unknown_choice("model", label, metrics.labels))


def plot_accuracy_matrices(
    metrics: DiagvibMetrics, label: str, studies: Sequence[str] | None = None
) -> Figure:
    """Fig. 4a for one model: the ZSO column ``P_i`` and one annotated 6×6 matrix per study.

    Cells below chance (red) mean the model predicted the row factor from the column factor.
    The diagonal and pairs without results are grey.
    """
    _check_label(metrics, label)
    available = metrics.studies(label)
    wanted = [s for s in (studies or MATRIX_STUDIES) if s in available and s != "ZSO"]
    has_zso = "ZSO" in available
    panels = (["ZSO"] if has_zso else []) + wanted
    if not panels:
        raise DiagvibError(f"model {label!r} has no finished jobs to draw")
    ncols = min(len(panels), 5)
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(ncols * 3.1 + 1.0, nrows * 3.3 + 0.4), layout="constrained")
    grid = fig.subplots(nrows, ncols, squeeze=False)
    for ax in grid.flat[len(panels):]:
        ax.set_visible(False)
    axes = list(grid.flat[: len(panels)])
    image = None
    for ax, panel in zip(axes, panels, strict=True):
        flagged = unfit_cells(metrics, label, panel)
        if panel == "ZSO":
            zso = metrics.zso[metrics.zso["label"] == label].set_index("factor")["mean"]
            values = zso.reindex(FACTORS).to_numpy(dtype=float)[:, None]
            columns: list[str] = ["P_i"]
            cell_keys = [[(f, "")] for f in FACTORS]
        else:
            values = metrics.matrix(label, panel).reindex(index=FACTORS, columns=FACTORS)
            values = values.to_numpy(dtype=float)
            columns = list(FACTORS)
            cell_keys = [[(f, g) for g in FACTORS] for f in FACTORS]
        masked = np.ma.masked_invalid(values)
        image = ax.imshow(masked, cmap=_CMAP, norm=_NORM, aspect="equal")
        ax.set_facecolor("#d9d9d9")
        for (r, c), v in np.ndenumerate(values):
            if np.isfinite(v):
                mark = "!" if cell_keys[r][c] in flagged else ""
                ax.text(c, r, f"{v:.2f}{mark}", ha="center", va="center", fontsize=7,
                        color="white" if abs(v - CHANCE) > 0.4 else "black",
                        fontweight="bold" if mark else "normal")
        ax.set_title(panel, fontsize=10)
        ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=8)
        ax.set_yticks(range(len(FACTORS)), FACTORS, fontsize=8)
        if panel != "ZSO":
            ax.set_xlabel("correlated factor", fontsize=8)
        ax.set_ylabel("predicted factor", fontsize=8)
    if image is not None:
        bar = fig.colorbar(image, ax=list(grid.flat), shrink=0.6, pad=0.01)
        bar.set_label("test accuracy (chance 1/3)", fontsize=8)
    title = f"{label}: accuracy per predicted and correlated factor"
    if len(metrics.unfit[metrics.unfit["label"] == label]):
        title += "  (!: includes a run that did not fit its training data)"
    fig.suptitle(title, fontsize=11)
    return fig


def plot_factor_aggregates(
    metrics: DiagvibMetrics, sequence: str = "CGO", error_bars: bool = False
) -> Figure:
    """Fig. 4b (``sequence="CGO"``) or 5b (``"FGO"``): FAAvg (top) and FAMin (bottom) per
    predicted factor across the studies, one line per model; dashed line at chance."""
    if sequence not in SEQUENCES:
        raise DiagvibError(unknown_choice("sequence", sequence, sorted(SEQUENCES)))
    order = SEQUENCES[sequence]
    agg = metrics.aggregates[metrics.aggregates["study"].isin(order)]
    if agg.empty:
        raise DiagvibError(f"no finished jobs in any of the studies {', '.join(order)}")
    present = [s for s in order if s in set(agg["study"])]
    x = {s: i for i, s in enumerate(present)}
    fig = Figure(figsize=(2.2 * len(FACTORS) + 1.0, 5.0), layout="constrained")
    axes = fig.subplots(2, len(FACTORS), sharex=True, sharey=True)
    colours = [f"C{i}" for i in range(10)]
    for row, metric in enumerate(("FAAvg", "FAMin")):
        for col, factor in enumerate(FACTORS):
            ax = axes[row, col]
            ax.axhline(CHANCE, color="grey", linestyle="--", linewidth=0.8)
            for k, label in enumerate(metrics.labels):
                sel = agg[(agg["label"] == label) & (agg["metric"] == metric)
                          & (agg["factor"] == factor)].copy()
                if sel.empty:
                    continue
                sel["x"] = sel["study"].map(x)
                sel = sel.sort_values("x")
                err = sel["sem"].fillna(0.0).to_numpy() if error_bars else None
                ax.errorbar(sel["x"], sel["mean"], yerr=err, marker="o", markersize=3,
                            linewidth=1.2, capsize=2, color=colours[k % len(colours)],
                            label=label)
            ax.set_ylim(-0.02, 1.02)
            ax.set_xticks(range(len(present)), present, rotation=60, fontsize=10)
            ax.tick_params(axis="y", labelsize=10)
            if row == 0:
                ax.set_title(factor, fontsize=12)
            if col == 0:
                ax.set_ylabel(metric, fontsize=12)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6),
                   fontsize=11)
    fig.suptitle(f"FAAvg and FAMin as generalisation opportunities decrease ({sequence})",
                 fontsize=13)
    return fig


def plot_chgo_improvement(metrics: DiagvibMetrics) -> Figure:
    """Table 2 as bars: CHGO over ZGO per predicted factor and model, in percentage points,
    error bars the standard deviation over dataset samples."""
    chgo = metrics.chgo
    if chgo.empty:
        raise DiagvibError("no CHGO-over-ZGO numbers: run both CHGO and ZGO for the same pairs")
    labels = sorted(set(chgo["label"]))
    width = 0.8 / len(labels)
    fig = Figure(figsize=(7.5, 3.4), layout="constrained")
    ax = fig.subplots()
    ax.axhline(0.0, color="black", linewidth=0.8)
    positions = np.arange(len(FACTORS))
    for k, label in enumerate(labels):
        sel = chgo[chgo["label"] == label].set_index("factor").reindex(FACTORS)
        ax.bar(positions + (k - (len(labels) - 1) / 2) * width, 100 * sel["mean"], width,
               yerr=100 * sel["std"].fillna(0.0), capsize=2, label=label, color=f"C{k % 10}")
    ax.set_xticks(positions, FACTORS)
    ax.set_ylabel("CHGO − ZGO (percentage points)")
    ax.set_title("Transfer of generalisation opportunities to the shortcut-only class",
                 fontsize=10)
    ax.legend(fontsize=8)
    return fig


__all__ = [
    "CGO_SEQUENCE", "FGO_SEQUENCE", "MATRIX_STUDIES", "STUDIES", "plot_accuracy_matrices",
    "plot_chgo_improvement", "plot_factor_aggregates",
]


def plot_pair_symmetry(metrics: DiagvibMetrics, study: str = "ZGO") -> Figure:
    """``P_ij`` against ``1 − P_ji`` for every unordered pair of ``study``, one marker colour
    per model: points on the diagonal follow the paper's observation that one factor of a pair
    dominates; points below it mean answers that follow neither factor."""
    sym = metrics.symmetry[metrics.symmetry["study"] == study]
    if not len(sym):
        raise DiagvibError(f"no pair of {study} has results in both directions")
    fig = Figure(figsize=(4.6, 4.2), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    for label, group in sym.groupby("label", sort=True):
        ax.scatter(1.0 - group["P_ji"], group["P_ij"], s=22, label=label)
        for r in group.itertuples():
            if abs(r.deviation) > 0.25:
                ax.annotate(f"{r.factor_i}/{r.factor_j}", (1.0 - r.P_ji, r.P_ij), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("1 − P_ji")
    ax.set_ylabel("P_ij")
    ax.set_title(f"{study}: P_ij vs 1 − P_ji (paper section 5)", fontsize=10)
    ax.legend(fontsize=7)
    return fig
