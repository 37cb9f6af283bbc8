"""Figures of the ImageNet-X analysis (matplotlib, returned as Figure objects, never shown).

* :func:`error_ratio_bars` — error ratio per factor for a few models with bootstrap intervals.
* :func:`group_comparison` — mean error ratio per model group (paper figure 1b); factors where
  the Alexander-Govern test finds no difference between groups are drawn transparent.
* :func:`meta_label_heatmap` — error ratio per meta-label and factor for one model.
* :func:`correlation_heatmap` — Spearman correlations, blank where not significant (figure 8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import FACTORS
from shortcutlab.imagenetx.evaluate import BootstrapCI, EvaluationResult

_PRETTY = {f: f.replace("_", " ") for f in FACTORS}


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
    """Meta-labels × factors heatmap of ``metric`` for one model; blank where < ``min_count``."""
    values = result.meta_table(model, metric).drop(columns="average")
    counts = result.meta_table(model, "count").drop(columns="average")
    data = np.array(values.to_numpy(dtype=float))
    data[counts.to_numpy() < min_count] = np.nan
    fig = Figure(figsize=(9.5, 6.0))
    ax = fig.add_subplot()
    if metric == "error_ratio":
        import matplotlib.colors as mcolors

        top = float(np.clip(np.nanmax(data) if np.isfinite(data).any() else 2.0, 2.0, 4.0))
        norm = mcolors.TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=top)
        image = ax.imshow(data, cmap="RdBu_r", norm=norm, aspect="auto")
    else:
        image = ax.imshow(data, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(values.columns)), _pretty(values.columns), rotation=60, ha="right")
    ax.set_yticks(range(len(values.index)), _pretty(values.index))
    fig.colorbar(image, ax=ax, label=metric.replace("_", " "))
    ax.set_title(f"{model}: {metric.replace('_', ' ')} by meta-label and factor "
                 f"(blank: fewer than {min_count} images)", fontsize=10)
    fig.tight_layout()
    return fig


def correlation_heatmap(
    corr: pd.DataFrame, pvalues: pd.DataFrame, alpha: float = 0.05, title: str = ""
) -> Figure:
    """Correlation heatmap showing only entries with p ≤ ``alpha`` (diagonal hidden)."""
    data = corr.to_numpy(dtype=float).copy()
    data[~(pvalues.to_numpy() <= alpha)] = np.nan
    np.fill_diagonal(data, np.nan)
    fig = Figure(figsize=(9.0, 8.0))
    ax = fig.add_subplot()
    image = ax.imshow(data, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(len(corr.columns)), _pretty(corr.columns), rotation=90)
    ax.set_yticks(range(len(corr.index)), _pretty(corr.index))
    fig.colorbar(image, ax=ax, label="Spearman correlation")
    ax.set_title(title or f"Spearman correlations (shown where p ≤ {alpha})", fontsize=10)
    fig.tight_layout()
    return fig
