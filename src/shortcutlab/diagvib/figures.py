"""The DiagViB-6 figures of the paper, :class:`~shortcutlab.diagvib.metrics.DiagvibMetrics`.

* :func:`plot_accuracy_matrices` — Fig. 4a / 5a: the ZSO vector and one 6×6 ``P_ij`` matrix per
  study (rows predicted, columns correlated), coloured around chance;
* :func:`plot_factor_aggregates` — Fig. 4b / 5b: FAAvg and FAMin per predicted factor across
  the generalisation-opportunity sequence, one line per model;

Which studies a figure draws, and in which order, is part of each study's description
(:class:`~shortcutlab.diagvib.spec.Study`: ``panel`` for the matrices, ``sequences`` for the
FAAvg/FAMin lines), so a registered study is drawn like the paper's.
* :func:`plot_chgo_improvement` — Table 2 as bars: CHGO − ZGO per factor and model;
* :func:`plot_pair_symmetry` — the section-5 check ``P_ij`` against ``1 − P_ji``.

Matrix cells that include a run which did not fit its training data are marked with a "!".
Each figure's panels can be drawn one by one on a matplotlib ``ax`` of your own:
:func:`plot_panel` (one matrix), :func:`plot_factor_aggregate` (one factor's line), and the
``ax=`` of :func:`plot_chgo_improvement` and :func:`plot_pair_symmetry`.

Figures are built without pyplot, so they are safe in worker processes and leave no global state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colorbar import Colorbar
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.metrics import (
    CHANCE,
    STUDIES,
    DiagvibMetrics,
    complete_cells,
    incomplete_marks,
)
from shortcutlab.diagvib.spec import (
    get_study,
    panel_studies,
    sequence_names,
    studies_in_sequence,
)
from shortcutlab.errors import DiagvibError, unknown_choice

# The paper's x-axes (from the studies' descriptions, as registered by the package):
# generalisation opportunities decrease from left (ZSO) to right (ZGO).
CGO_SEQUENCE: tuple[str, ...] = studies_in_sequence("CGO")
FGO_SEQUENCE: tuple[str, ...] = studies_in_sequence("FGO")
MATRIX_STUDIES: tuple[str, ...] = tuple(s for s in panel_studies() if get_study(s).correlated)
_CMAP = "RdBu"
_NORM = TwoSlopeNorm(vmin=0.0, vcenter=CHANCE, vmax=1.0)


def unfit_cells(metrics: DiagvibMetrics, label: str, study: str) -> set[tuple[str, str]]:
    """(predicted, correlated) cells of one model and study with a run that did not fit
    (correlated is "" for a single-factor study such as ZSO)."""
    u = metrics.unfit[(metrics.unfit["label"] == label) & (metrics.unfit["study"] == study)]
    return {(str(p), str(c) if isinstance(c, str) else "") for p, c in
            zip(u["predicted"], u["correlated"], strict=True)}


def _check_label(metrics: DiagvibMetrics, label: str) -> None:
    if label not in metrics.labels:
        raise DiagvibError(unknown_choice("model", label, metrics.labels))


def matrix_panels(metrics: DiagvibMetrics, label: str,
                  studies: Sequence[str] | None = None) -> list[str]:
    """The panels :func:`plot_accuracy_matrices` draws for ``label``, only those with results:
    the single-factor studies (``P_i`` columns, :attr:`~shortcutlab.diagvib.spec.Study.panel`
    order), then the matrices of ``studies`` (in that order; default: every drawn study in panel
    order)."""
    available = set(metrics.studies(label))
    drawn = [s for s in panel_studies() if s in available]
    wanted = drawn if studies is None else [s for s in studies if s in available]
    return ([s for s in drawn if not get_study(s).correlated]
            + [s for s in wanted if get_study(s).correlated])


def panel_values(metrics: DiagvibMetrics, label: str, study: str) -> pd.DataFrame:
    """The numbers of one panel: ``P_i`` as one column ``P_i`` (single-factor study) or the
    6×6 ``P_ij`` matrix, rows the predicted factor in FACTORS order; NaN where no result."""
    if not get_study(study).correlated:
        single = metrics.singles[(metrics.singles["label"] == label)
                                 & (metrics.singles["study"] == study)]
        values = single.set_index("factor")["mean"].reindex(FACTORS).astype(float)
        return values.to_frame("P_i")
    return metrics.matrix(label, study).reindex(index=FACTORS, columns=FACTORS)


def text_colour(value: float) -> str:
    """White or black, whichever reads on the cell colour of accuracy ``value`` (by the
    colour's luminance: white on dark red and dark blue, black in between)."""
    r, g, b, _ = colormaps[_CMAP](float(_NORM(value)))
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


def plot_panel(metrics: DiagvibMetrics, label: str, study: str, ax: Axes) -> AxesImage:
    """One panel of :func:`plot_accuracy_matrices` on ``ax``: the ``P_i`` column of a
    single-factor study or the annotated 6×6 ``P_ij`` matrix; returns the image (for a
    colour bar, see :func:`add_colour_bar`)."""
    _check_label(metrics, label)
    if study not in metrics.studies(label):
        raise DiagvibError(unknown_choice(f"study with results for {label!r}", study,
                                          metrics.studies(label)))
    flagged = unfit_cells(metrics, label, study)
    correlated = get_study(study).correlated
    frame = panel_values(metrics, label, study)
    values = frame.to_numpy(dtype=float)
    columns = [str(c) for c in frame.columns]
    cell_keys = [[(f, g if correlated else "") for g in columns] for f in FACTORS]
    image = ax.imshow(np.ma.masked_invalid(values), cmap=_CMAP, norm=_NORM, aspect="equal")
    ax.set_facecolor("#d9d9d9")
    for (r, c), v in np.ndenumerate(values):
        if np.isfinite(v):
            mark = "!" if cell_keys[r][c] in flagged else ""
            ax.text(c, r, f"{v:.2f}{mark}", ha="center", va="center", fontsize=7,
                    color=text_colour(v), fontweight="bold" if mark else "normal")
    ax.set_title(study, fontsize=10)
    ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize=8)
    ax.set_yticks(range(len(FACTORS)), FACTORS, fontsize=8)
    if correlated:
        ax.set_xlabel("correlated factor", fontsize=8)
    ax.set_ylabel("predicted factor", fontsize=8)
    return image


#: colour-bar ticks evenly spaced on the bar: the norm gives [0, 1/3] and [1/3, 1] equal halves
COLOUR_BAR_TICKS: tuple[float, ...] = (0.0, CHANCE / 2, CHANCE, (1 + CHANCE) / 2, 1.0)


def add_colour_bar(image: AxesImage, ax: Axes | Sequence[Axes]) -> Colorbar:
    """The accuracy colour bar beside ``ax``, ticks at :data:`COLOUR_BAR_TICKS` (chance 1/3
    in the middle, where the colours turn)."""
    bar = image.figure.colorbar(image, ax=ax, shrink=0.6, pad=0.01)
    bar.set_ticks(list(COLOUR_BAR_TICKS), labels=["0", "1/6", "1/3", "2/3", "1"])
    bar.ax.tick_params(labelsize=8)
    bar.set_label("test accuracy (chance 1/3)", fontsize=8)
    return bar


def plot_accuracy_matrices(
    metrics: DiagvibMetrics, label: str, studies: Sequence[str] | None = None
) -> Figure:
    """Fig. 4a for one model: the ZSO column ``P_i`` and one annotated 6×6 matrix per study
    (:func:`matrix_panels`; each drawn by :func:`plot_panel`, numbers from
    :func:`panel_values`).

    Cells below chance (red) mean the model predicted the row factor from the column factor.
    The diagonal and pairs without results are grey.
    """
    _check_label(metrics, label)
    panels = matrix_panels(metrics, label, studies)
    if not panels:
        raise DiagvibError(f"model {label!r} has no finished jobs to draw")
    ncols = min(len(panels), 5)
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(ncols * 3.1 + 1.0, nrows * 3.3 + 0.4), layout="constrained")
    grid = fig.subplots(nrows, ncols, squeeze=False)
    for ax in grid.flat[len(panels):]:
        ax.set_visible(False)
    images = [plot_panel(metrics, label, panel, ax)
              for ax, panel in zip(grid.flat[: len(panels)], panels, strict=True)]
    add_colour_bar(images[-1], list(grid.flat))
    title = f"{label}: accuracy per predicted and correlated factor"
    if len(metrics.unfit[metrics.unfit["label"] == label]):
        title += "  (!: includes a run that did not fit its training data)"
    fig.suptitle(title, fontsize=11)
    return fig


def sequence_aggregates(metrics: DiagvibMetrics, sequence: str) -> pd.DataFrame:
    """The FAAvg/FAMin rows :func:`plot_factor_aggregates` draws for ``sequence``, studies in
    their x order (:attr:`~shortcutlab.diagvib.spec.Study.sequences`), with an ``x`` column."""
    names = sequence_names()
    if sequence not in names:
        raise DiagvibError(unknown_choice("sequence", sequence, sorted(names)))
    order = studies_in_sequence(sequence)
    agg = metrics.aggregates[metrics.aggregates["study"].isin(order)]
    if agg.empty:
        raise DiagvibError(f"no finished jobs in any of the studies {', '.join(order)}")
    present = [s for s in order if s in set(agg["study"])]
    x = {s: i for i, s in enumerate(present)}
    return agg.assign(x=agg["study"].map(x)).sort_values(["x", "label", "metric", "factor"],
                                                         kind="stable")


#: the y-limits of accuracy axes: room for a marker at 0 or 1 (not cut in half by the axis)
ACCURACY_LIMITS = (-0.06, 1.06)


def sequence_title(metrics: DiagvibMetrics, sequence: str) -> str:
    """``sequence`` when any of its own steps has results, else the studies drawn
    ("ZSO → ZGO" when only the endpoints it shares with other sequences ran)."""
    present = list(dict.fromkeys(sequence_aggregates(metrics, sequence)["study"]))
    shared = {s for q in sequence_names() if q != sequence for s in studies_in_sequence(q)}
    return sequence if set(present) - shared else " → ".join(present)


#: the legend entry of a hollow FAAvg/FAMin point (:func:`plot_factor_aggregate`)
INCOMPLETE_POINT = ("hollow, k/5 pairs, k/m samples: over only k of the 5 correlated factors in "
                    "some sample, or k of the model's m dataset samples")


def plot_factor_aggregate(
    metrics: DiagvibMetrics, factor: str, metric: str = "FAAvg", sequence: str = "CGO",
    ax: Axes | None = None, error_bars: bool = False,
) -> Axes:
    """One panel of :func:`plot_factor_aggregates` on ``ax`` (a new figure's without one):
    ``metric`` (FAAvg or FAMin) of predicted ``factor`` across the studies of ``sequence``,
    one line per model; dashed line at chance. A point over fewer than the five correlated
    factors in some sample or fewer dataset samples than the model's most
    (:func:`~shortcutlab.diagvib.metrics.incomplete_marks`) is hollow and labelled with its
    mark ("2/5 pairs"); the axes then carry a legend entry (:data:`INCOMPLETE_POINT`) for it."""
    if factor not in FACTORS:
        raise DiagvibError(unknown_choice("factor", factor, FACTORS))
    if metric not in ("FAAvg", "FAMin"):
        raise DiagvibError(unknown_choice("metric", metric, ("FAAvg", "FAMin")))
    agg = sequence_aggregates(metrics, sequence)
    present = list(dict.fromkeys(agg["study"]))
    if ax is None:
        ax = Figure(figsize=(3.2, 3.0), layout="constrained").subplots()
    marks = incomplete_marks(metrics.aggregates).loc[agg.index]
    ax.axhline(CHANCE, color="grey", linestyle="--", linewidth=0.8)
    marked = False
    for k, label in enumerate(metrics.labels):
        sel = agg[(agg["label"] == label) & (agg["metric"] == metric) & (agg["factor"] == factor)]
        if sel.empty:
            continue
        err = sel["sem"].fillna(0.0).to_numpy() if error_bars else None
        ax.errorbar(sel["x"], sel["mean"], yerr=err, marker="o", markersize=3, linewidth=1.2,
                    capsize=2, color=f"C{k % 10}", label=label)
        short = sel[marks.loc[sel.index] != ""]
        if short.empty:
            continue
        marked = True
        ax.plot(short["x"], short["mean"], linestyle="none", marker="o", markersize=5,
                markerfacecolor="white", markeredgecolor=f"C{k % 10}", markeredgewidth=1.2,
                label="_incomplete", zorder=3)
        for x, y, mark in zip(short["x"], short["mean"], marks.loc[short.index], strict=True):
            ax.annotate(mark, (x, y), xytext=(0, 4), textcoords="offset points", ha="center",
                        va="bottom", fontsize=7, color=f"C{k % 10}")
    if marked:
        ax.plot([], [], linestyle="none", marker="o", markersize=5, markerfacecolor="white",
                markeredgecolor="black", label=INCOMPLETE_POINT)
    ax.set_ylim(*ACCURACY_LIMITS)
    ax.set_xticks(range(len(present)), present, rotation=60, fontsize=10)
    ax.tick_params(axis="y", labelsize=10)
    return ax


def plot_factor_aggregates(
    metrics: DiagvibMetrics, sequence: str = "CGO", error_bars: bool = False
) -> Figure:
    """Fig. 4b (``sequence="CGO"``) or 5b (``"FGO"``), or any sequence a registered study is a
    step of: FAAvg (top) and FAMin (bottom) per predicted factor across the studies
    (:func:`sequence_aggregates`; each panel :func:`plot_factor_aggregate`)."""
    sequence_aggregates(metrics, sequence)  # an unknown sequence or no results: one error
    fig = Figure(figsize=(2.2 * len(FACTORS) + 1.0, 5.0), layout="constrained")
    axes = fig.subplots(2, len(FACTORS), sharex=True, sharey=True)
    for row, metric in enumerate(("FAAvg", "FAMin")):
        for col, factor in enumerate(FACTORS):
            ax = plot_factor_aggregate(metrics, factor, metric, sequence, axes[row, col],
                                       error_bars)
            if row == 0:
                ax.set_title(factor, fontsize=12)
            if col == 0:
                ax.set_ylabel(metric, fontsize=12)
    entries: dict[str, Artist] = {}  # every panel's: a mark may be in any of them
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if INCOMPLETE_POINT in entries:  # last, after the models
        entries[INCOMPLETE_POINT] = entries.pop(INCOMPLETE_POINT)
    handles, labels = list(entries.values()), list(entries)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6),
                   fontsize=11)
    fig.suptitle("FAAvg and FAMin as generalisation opportunities decrease "
                 f"({sequence_title(metrics, sequence)})", fontsize=13)
    return fig


def _figure_of(ax: Axes) -> Figure:
    fig = ax.get_figure()
    assert isinstance(fig, Figure)
    return fig


def plot_chgo_improvement(metrics: DiagvibMetrics, ax: Axes | None = None) -> Figure:
    """Table 2 as bars: CHGO over ZGO per predicted factor and model, in percentage points,
    error bars the standard deviation over dataset samples; on ``ax`` when given (returns its
    figure). A bar over fewer (pair, sample) cells than the complete study
    (:func:`~shortcutlab.diagvib.metrics.complete_cells`) is hatched and labelled "k/m"."""
    chgo = metrics.chgo
    if chgo.empty:
        raise DiagvibError("no CHGO-over-ZGO numbers: run both CHGO and ZGO for the same pairs")
    chgo = chgo.assign(complete_cells=complete_cells(chgo))
    labels = sorted(set(chgo["label"]))
    width = 0.8 / len(labels)
    if ax is None:
        ax = Figure(figsize=(7.5, 3.4), layout="constrained").subplots()
    ax.axhline(0.0, color="black", linewidth=0.8)
    positions = np.arange(len(FACTORS))
    handles: list[Patch] = []
    for k, label in enumerate(labels):
        handles.append(Patch(facecolor=f"C{k % 10}", label=label))  # unhatched, whichever bar
        sel = chgo[chgo["label"] == label].set_index("factor").reindex(FACTORS)
        bars = ax.bar(positions + (k - (len(labels) - 1) / 2) * width, 100 * sel["mean"], width,
                      yerr=100 * sel["std"].fillna(0.0), capsize=2, label=label,
                      color=f"C{k % 10}")
        for bar, row in zip(bars, sel.itertuples(), strict=True):
            if pd.isna(row.n_cells) or not row.n_cells < row.complete_cells:
                continue
            bar.set_hatch("//")
            height = bar.get_height()
            ax.annotate(f"{int(row.n_cells)}/{int(row.complete_cells)}",
                        (bar.get_x() + bar.get_width() / 2, height),
                        xytext=(0, 2 if height >= 0 else -2), textcoords="offset points",
                        ha="center", va="bottom" if height >= 0 else "top", fontsize=7)
    ax.set_xticks(positions, FACTORS)
    ax.set_ylabel("CHGO − ZGO (percentage points)")
    ax.set_title("Transfer of generalisation opportunities to the shortcut-only class",
                 fontsize=10)
    if (chgo["n_cells"] < chgo["complete_cells"]).any():
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//",
                             label="k/m: over k of the complete study's m (pair, sample) cells"))
    ax.legend(handles=handles, fontsize=8)
    return _figure_of(ax)


__all__ = [
    "ACCURACY_LIMITS", "CGO_SEQUENCE", "COLOUR_BAR_TICKS", "FGO_SEQUENCE", "INCOMPLETE_POINT",
    "MATRIX_STUDIES", "STUDIES", "add_colour_bar", "matrix_panels", "panel_values",
    "plot_accuracy_matrices", "plot_chgo_improvement", "plot_factor_aggregate",
    "plot_factor_aggregates", "plot_panel", "plot_pair_symmetry", "sequence_aggregates",
    "sequence_title", "text_colour",
]


def plot_pair_symmetry(metrics: DiagvibMetrics, study: str = "ZGO",
                       ax: Axes | None = None) -> Figure:
    """``P_ij`` against ``1 − P_ji`` for every unordered pair of ``study``, one marker colour
    per model: points on the diagonal follow the paper's observation that one factor of a pair
    dominates; points below it mean answers that follow neither factor. On ``ax`` when given
    (returns its figure)."""
    sym = metrics.symmetry[metrics.symmetry["study"] == study]
    if not len(sym):
        raise DiagvibError(f"no pair of {study} has results in both directions")
    if ax is None:
        ax = Figure(figsize=(4.6, 4.2), layout="constrained").subplots()
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    for label, group in sym.groupby("label", sort=True):
        ax.scatter(1.0 - group["P_ji"], group["P_ij"], s=22, label=label)
        for r in group.itertuples():
            if abs(r.deviation) > 0.25:
                ax.annotate(f"{r.factor_i}/{r.factor_j}", (1.0 - r.P_ji, r.P_ij), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(*ACCURACY_LIMITS)
    ax.set_ylim(*ACCURACY_LIMITS)
    ax.set_xlabel("1 − P_ji")
    ax.set_ylabel("P_ij")
    ax.set_title(f"{study}: P_ij vs 1 − P_ji (paper section 5)", fontsize=10)
    ax.legend(fontsize=7)
    return _figure_of(ax)
