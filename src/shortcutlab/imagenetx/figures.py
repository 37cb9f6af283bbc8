"""Figures of the ImageNet-X analysis (matplotlib, returned as Figure objects, never shown).

* :func:`error_ratio_bars` — error ratio per factor for a few models with bootstrap intervals.
* :func:`group_comparison` — mean error ratio per model group (paper figure 1b); factors where
  the Alexander-Govern test finds no difference between groups are drawn transparent.
* :func:`meta_label_heatmap` — error ratio per meta-label and factor for one model (figures
  5/13), small cells framed with their count in a colour that reads on the cell.
* :func:`factor_vs_overall` — factor accuracy against overall accuracy by family (figure 4).
* :func:`factor_shares_bars` — share of images with each factor selected, train and val, all
  factors and top factor (figure 2).
* :func:`active_factors_bars` — images and accuracy by number of active factors (figure 7).
* :func:`augmentation_comparison` — tailored against universal augmentation (figure 17).
* :func:`correlation_heatmap` — Spearman correlations, blank where not significant (figures 8
  and 9: validation and training images).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import FACTORS
from shortcutlab.imagenetx.evaluate import BootstrapCI, EvaluationResult

_PRETTY = {f: f.replace("_", " ") for f in FACTORS}
MAX_LINES = 12


def _pretty(names: Sequence[str]) -> list[str]:
    return [_PRETTY.get(n, n.replace("_", " ")) for n in names]


def error_ratio_bars(
    result: EvaluationResult,
    models: Sequence[str] | None = None,
    ci: BootstrapCI | None = None,
    title: str | None = None,
) -> Figure:
    """Grouped bars: error ratio of each factor for each model, whiskers from ``ci``."""
    chosen = list(models) if models is not None else list(result.models)
    for m in chosen:
        if m not in result.models:
            raise ImagenetXError(f"model {m!r} not in the result; choices: {result.models}")
    ratios = result.table("error_ratio").loc[chosen]
    order = ratios.mean(axis=0).sort_values(ascending=False).index.tolist()
    fig = Figure(figsize=(max(7.0, 0.55 * len(order) * max(1, len(chosen)) ** 0.5), 4.2))
    ax = fig.add_subplot()
    width = 0.8 / len(chosen)
    x = np.arange(len(order))
    for i, model in enumerate(chosen):
        values = ratios.loc[model, order].to_numpy(dtype=float)
        yerr = None
        if ci is not None and model in ci.models:
            bounds = ci.table(model).loc[order].to_numpy()
            yerr = np.abs(np.stack([values - bounds[:, 0], bounds[:, 1] - values]))
            yerr = np.nan_to_num(yerr)
        ax.bar(x + (i - (len(chosen) - 1) / 2) * width, values, width, label=model, yerr=yerr,
               capsize=2, error_kw={"elinewidth": 0.8})
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(x, _pretty(order), rotation=45, ha="right")
    ax.set_ylabel("error ratio  (1 − acc(factor)) / (1 − acc)")
    level = f", {ci.level:.0%} bootstrap CI" if ci is not None else ""
    ax.set_title(title or f"Error ratio per factor ({result.which} factor, {result.error_type}"
                 f"{level})")
    if len(chosen) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def group_comparison(
    table: pd.DataFrame,
    groups: Mapping[str, str] | pd.Series,
    tests: pd.DataFrame | None = None,
    alpha: float = 0.05,
    title: str = "Error ratio by model group",
) -> Figure:
    """Mean error ratio of each group of models per factor (paper figure 1b).

    ``tests`` is the output of :func:`~shortcutlab.imagenetx.statistics.alexander_govern_by_factor`;
    factors with p > ``alpha`` are drawn transparent.
    """
    group_of = pd.Series(groups, dtype=object).reindex(table.index)
    if group_of.isna().any():
        raise ImagenetXError(f"no group for models {list(group_of.index[group_of.isna()])[:5]}")
    means = table.groupby(group_of).mean()
    sems = table.groupby(group_of).sem()
    order = means.mean(axis=0).sort_values(ascending=False).index.tolist()
    names = means.index.tolist()
    fig = Figure(figsize=(max(7.0, 0.6 * len(order)), 4.2))
    ax = fig.add_subplot()
    width = 0.8 / len(names)
    x = np.arange(len(order))
    colors = [f"C{i}" for i in range(len(names))]
    for i, name in enumerate(names):
        for j, factor in enumerate(order):
            faint = tests is not None and not bool(tests.loc[factor, "pvalue"] <= alpha)
            ax.bar(x[j] + (i - (len(names) - 1) / 2) * width, means.loc[name, factor], width,
                   color=colors[i], alpha=0.3 if faint else 1.0,
                   yerr=np.nan_to_num(sems.loc[name, factor]), capsize=1.5,
                   error_kw={"elinewidth": 0.6}, label=name if j == 0 else None)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(x, _pretty(order), rotation=45, ha="right")
    ax.set_ylabel("mean error ratio (± s.e.m.)")
    note = ""
    if tests is not None:
        note = f"; transparent: no group difference (Alexander-Govern p > {alpha})"
    ax.set_title(title + note, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def meta_label_heatmap(
    result: EvaluationResult, model: str, metric: str = "error_ratio", min_count: int = 10
) -> Figure:
    """Meta-labels × factors heatmap of ``metric`` for one model (figures 5 and 13): every cell
    drawn; cells with fewer than ``min_count`` images framed and labelled with their count (in
    black or white, whichever reads on the cell's colour)."""
    values = result.meta_table(model, metric).drop(columns="average")
    counts = result.meta_table(model, "count").drop(columns="average").to_numpy()
    data = np.array(values.to_numpy(dtype=float))
    fig = Figure(figsize=(9.5, 6.0))
    ax = fig.add_subplot()
    if metric == "error_ratio":
        import matplotlib.colors as mcolors

        top = float(np.clip(np.nanmax(data) if np.isfinite(data).any() else 2.0, 2.0, 4.0))
        norm = mcolors.TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=top)
        image = ax.imshow(data, cmap="RdBu_r", norm=norm, aspect="auto")
    else:
        image = ax.imshow(data, cmap="viridis", aspect="auto")
    small = (counts < min_count) & (counts > 0)
    for g, f in zip(*np.nonzero(small), strict=True):
        ax.add_patch(Rectangle((f - 0.5, g - 0.5), 1, 1, fill=False, edgecolor="0.15",
                               linestyle=(0, (1.5, 1.5)), linewidth=1.0))
        ax.text(f, g, f"{int(counts[g, f])}", ha="center", va="center", fontsize=7,
                color=text_colour(image.cmap(image.norm(data[g, f])))
                if np.isfinite(data[g, f]) else "black")  # undefined: a blank cell
    ax.set_xticks(range(len(values.columns)), _pretty(values.columns), rotation=60, ha="right")
    ax.set_yticks(range(len(values.index)), _pretty(values.index))
    fig.colorbar(image, ax=ax, label=metric.replace("_", " "))
    ax.set_title(f"{model}: {metric.replace('_', ' ')} by meta-label and factor "
                 f"(dotted frame: fewer than {min_count} images, count shown; blank: none)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def factor_vs_overall(
    summary: pd.DataFrame, families: pd.Series, title: str = ""
) -> Figure:
    """Figure 4: accuracy on each factor's images (and on the worst factor and the worst 100
    classes) against overall accuracy, one panel per factor, one colour per model family."""
    panels = [f for f in FACTORS if f in summary.columns]
    panels += [c for c in ("worst_factor", "worst_100_classes") if c in summary.columns]
    ncols = 6
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(2.3 * ncols, 2.2 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).ravel()
    family = families.reindex(summary.index).fillna("other")
    names = list(dict.fromkeys(family))
    x = summary["average"].to_numpy(dtype=float)
    size = marker_size(len(summary))
    for ax, panel in zip(axes, panels, strict=False):
        y = summary[panel].to_numpy(dtype=float)
        for i, name in enumerate(names):
            sel = (family == name).to_numpy()
            ax.scatter(x[sel], y[sel], s=size, alpha=0.75, color=f"C{i}",
                       label=_pretty([name])[0], edgecolors="white", linewidths=0.4)
        ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--")
        ax.set_title(_pretty([panel])[0], fontsize=9)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    axes[0].set_xlim(0, 1)
    axes[0].set_ylim(0, 1)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(5, len(names)), fontsize=8,
               markerscale=max(1.0, 36 / size) ** 0.5)
    fig.supxlabel("overall accuracy", fontsize=9)
    fig.supylabel("accuracy on the factor's images", fontsize=9)
    if title:
        fig.suptitle(title, y=0.01, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


#: Figure 2's colours (the authors' palette), one per annotation set in legend order.
SET_COLOURS = ("#264653", "#2a9d8f", "#e9c46a", "#f4a261", "#e76f51")
_SELECTION = {"multi": "all factors", "top": "top factor"}


def factor_shares_bars(shares: pd.DataFrame, per_panel: int = 4) -> Figure:
    """Figure 2: share of images with each factor selected, one bar per annotation set
    (``train, all factors`` ... in the order of :func:`~shortcutlab.imagenetx.analyses.
    factor_shares` output), factors ordered by their mean share and drawn ``per_panel`` to a
    panel, each panel on its own scale (shares run from 90 % to 0.1 %), as the authors."""
    from matplotlib.ticker import PercentFormatter

    sets = list(dict.fromkeys(zip(shares["partition"], shares["which"], strict=True)))
    table = shares.pivot_table(index="factor", columns=["partition", "which"], values="share",
                               sort=False)
    order = table.mean(axis=1).sort_values(ascending=False, kind="stable").index.tolist()
    panels = [order[i : i + per_panel] for i in range(0, len(order), per_panel)]
    fig = Figure(figsize=(2.6 * len(panels) + 0.4, 3.4))
    axes = fig.subplots(1, len(panels), squeeze=False).ravel()
    width = 0.8 / len(sets)
    for ax, factors in zip(axes, panels, strict=True):
        x = np.arange(len(factors))
        for i, (partition, which) in enumerate(sets):
            ax.bar(x + (i - (len(sets) - 1) / 2) * width,
                   table.loc[factors, (partition, which)].to_numpy(dtype=float), width,
                   color=SET_COLOURS[i % len(SET_COLOURS)],
                   label=f"{partition}, {_SELECTION.get(which, which)}")
        ax.set_xticks(x, _pretty(factors), rotation=30, ha="right")
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1))
        ax.grid(axis="y", linewidth=0.6, alpha=0.4, linestyle="--")
        ax.set_axisbelow(True)
    axes[0].set_ylabel("images with the factor selected")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(sets), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig


def active_factors_bars(counts: pd.DataFrame, accuracy: pd.DataFrame | None = None) -> Figure:
    """Figure 7: images per number of active factors (log scale) per partition, and beside it
    each model's accuracy by number of active factors."""
    fig = Figure(figsize=(10.0 if accuracy is not None else 5.5, 3.2))
    axes = fig.subplots(1, 2 if accuracy is not None else 1, squeeze=False).ravel()
    x = np.arange(len(counts))
    width = 0.8 / max(1, counts.shape[1])
    for i, column in enumerate(counts.columns):
        axes[0].bar(x + (i - (counts.shape[1] - 1) / 2) * width, counts[column], width,
                    label=str(column))
    axes[0].set_yscale("log")
    axes[0].set_xticks(x, [str(i) for i in counts.index])
    axes[0].set_xlabel("number of active factors")
    axes[0].set_ylabel("images")
    axes[0].legend(fontsize=8)
    if accuracy is not None:
        for model in accuracy.index[:MAX_LINES]:
            axes[1].plot(accuracy.columns, accuracy.loc[model], marker="o", ms=3, label=model)
        axes[1].set_xlabel("number of active factors")
        axes[1].set_ylabel("accuracy")
        axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def augmentation_comparison(ratios: pd.DataFrame, tests: pd.DataFrame, alpha: float = 0.05,
                            title: str = "Tailored against universal color jitter") -> Figure:
    """Figure 17: mean error ratio per factor for each augmentation recipe; factors where the
    Alexander-Govern test finds no difference drawn transparent."""
    return group_comparison(ratios.drop(columns="augmentation"), ratios["augmentation"], tests,
                            alpha, title)


def correlation_heatmap(
    corr: pd.DataFrame, pvalues: pd.DataFrame, alpha: float = 0.05, title: str = ""
) -> Figure:
    """Correlation heatmap showing only entries with p ≤ ``alpha`` (diagonal hidden), coloured
    on a symmetric scale up to the largest |r| shown (correlations of ±0.3 on a ±1 scale would
    all look pale); the colour bar says so."""
    data = corr.to_numpy(dtype=float).copy()
    data[~(pvalues.to_numpy() <= alpha)] = np.nan
    np.fill_diagonal(data, np.nan)
    top = correlation_scale(data)
    fig = Figure(figsize=(9.0, 8.0))
    ax = fig.add_subplot()
    image = ax.imshow(data, cmap="RdBu_r", vmin=-top, vmax=top)
    ax.set_xticks(range(len(corr.columns)), _pretty(corr.columns), rotation=90)
    ax.set_yticks(range(len(corr.index)), _pretty(corr.index))
    fig.colorbar(image, ax=ax, label=f"Spearman correlation (scale ±{top:.2f}: the largest |r| "
                 "shown)")
    ax.set_title(title or f"Spearman correlations (shown where p ≤ {alpha})", fontsize=10)
    fig.tight_layout()
    return fig


def correlation_scale(values: np.ndarray) -> float:
    """The colour limit of a correlation map: the largest finite |r|, rounded up to 0.05
    (1.0 when there is none)."""
    finite = np.abs(values[np.isfinite(values)])
    if finite.size == 0 or finite.max() == 0:
        return 1.0
    return float(min(1.0, np.ceil(finite.max() / 0.05 - 1e-9) * 0.05))


def marker_size(n_points: int) -> float:
    """Scatter marker area (points²) readable for any number of points per panel: 64 for a
    few, shrinking with more, never under 16 (a 4-pt dot)."""
    return float(np.clip(2000.0 / max(n_points, 1), 16.0, 64.0))


def text_colour(rgba: Sequence[float] | np.ndarray) -> str:
    """Black or white, whichever contrasts more with a cell colour (WCAG relative
    luminance)."""
    channels = np.asarray(rgba[:3], dtype=float)
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    luminance = float(linear @ np.array([0.2126, 0.7152, 0.0722]))
    return "black" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "white"
