"""Figures of the VQA-VS construction: head-split Jaccard, OOD coincidence, imbalance degree,
and the answer distributions of groups (the paper's Figs. 4, 8 and 10)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from shortcutlab.utils.html import literal_text

if TYPE_CHECKING:
    from shortcutlab.vqa.distributions import GroupDistribution

__all__ = [
    "accuracy_bars",
    "answer_distributions",
    "figure_png",
    "heatmap",
    "imbalance_bars",
    "imbalance_vs_accuracy",
    "split_distributions",
]

_TRAIN, _OOD, _VAL, _TEST, _HEAD = "#7a4d9c", "#e0557f", "#3c8dbc", "#2e9d5b", "#a9a9a9"


def heatmap(matrix: pd.DataFrame, title: str, label: str) -> Figure:
    """An annotated square heatmap (values in [0, 1]) like the paper's Fig. 5."""
    fig = Figure(figsize=(6.4, 5.4), dpi=100)
    ax = fig.add_subplot()
    values = matrix.to_numpy(dtype=np.float64)
    im = ax.imshow(np.nan_to_num(values, nan=0.0), vmin=0.0, vmax=1.0, cmap="RdPu")
    ax.set_xticks(range(len(matrix.columns)), matrix.columns, rotation=45, ha="right")
    ax.set_yticks(range(len(matrix.index)), matrix.index)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            text = "–" if np.isnan(values[i, j]) else f"{values[i, j]:.2f}"
            color = "white" if values[i, j] > 0.6 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label=label)
    fig.tight_layout()
    return fig


def imbalance_bars(imbalance: pd.DataFrame) -> Figure:
    """Bar chart of the imbalance degree E per shortcut (train split)."""
    fig = Figure(figsize=(6.4, 3.6), dpi=100)
    ax = fig.add_subplot()
    ax.bar(imbalance["shortcut"], imbalance["E_train"], color="#7a4d9c")
    ax.set_ylabel("imbalance degree E (train)")
    ax.set_ylim(0, 1)
    ax.tick_params(axis="x", rotation=45)
    ax.set_title("Lower E: more imbalanced training data for the shortcut")
    fig.tight_layout()
    return fig


def accuracy_bars(scores: dict[str, dict[str, float]]) -> Figure:
    """Grouped bars: per model, IID accuracy and accuracy on each OOD test set."""
    models = list(scores)
    keys = list(next(iter(scores.values()))) if scores else []
    fig = Figure(figsize=(8.0, 3.8), dpi=100)
    ax = fig.add_subplot()
    width = 0.8 / max(len(models), 1)
    x = np.arange(len(keys))
    for k, model in enumerate(models):
        vals = [scores[model].get(key, np.nan) for key in keys]
        ax.bar(x + k * width, vals, width, label=model)
    ax.set_xticks(x + width * (len(models) - 1) / 2, keys, rotation=45, ha="right")
    ax.set_ylabel("VQA accuracy (%)")
    # beside the axes, never over the bars (the KO bars reach the top)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return fig


def figure_png(fig: Figure) -> bytes:
    """Render a figure to PNG bytes (deterministic metadata)."""
    buf = io.BytesIO()
    with literal_text(fig):
        fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def imbalance_vs_accuracy(frame: pd.DataFrame) -> Figure:
    """The paper's Fig. 6: per shortcut, the imbalance degree E of the training data (x) against
    the accuracy (%) on its OOD test set (y); ``frame`` has ``shortcut``, ``E_train``, ``ood``."""
    fig = Figure(figsize=(6.0, 4.2), dpi=100)
    ax = fig.add_subplot()
    ax.scatter(frame["E_train"], frame["ood"], color="#b03a74")
    for row in frame.itertuples(index=False):
        ax.annotate(row.shortcut, (row.E_train, row.ood), textcoords="offset points",
                    xytext=(4, 3), fontsize=8)  # fmt: skip
    ax.set_xlabel("imbalance degree E of the training data (lower: more imbalanced)")
    ax.set_ylabel("accuracy on the OOD test set (%)")
    ax.set_title("Imbalance against OOD accuracy (cf. paper Fig. 6)")
    fig.tight_layout()
    return fig


def _short(label: str, width: int = 16) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def _group_title(dist: GroupDistribution) -> str:
    return f"{dist.shortcut} group {_short(dist.concept, 40)!r}"


def _shown(dist: GroupDistribution, max_answers: int) -> pd.DataFrame:
    """At most ``max_answers`` answers in training order: every OOD answer (the most frequent
    ones if they are more), then the most frequent training answers."""
    c = dist.counts
    ood = c.loc[c["ood"] > 0].sort_values("ood", ascending=False, kind="stable").index
    keep = set(ood[:max_answers])
    for answer in c.index:
        if len(keep) >= max_answers:
            break
        keep.add(answer)
    return c.loc[[a for a in c.index if a in keep]]


def _hidden_note(ax: Axes, hidden: int, what: str = "answers") -> None:
    if hidden:
        ax.text(0.99, 0.97, f"+{hidden:,} {what} not shown", transform=ax.transAxes,
                ha="right", va="top", fontsize=7, color="#555")  # fmt: skip


def _rows(fig: Figure, rows: int, cols: int, title: str, legend: bool = False) -> np.ndarray:
    """``rows`` x ``cols`` axes for panels of answers (ticks rotated, at most 16 characters),
    placed at fixed distances in inches: tight_layout would measure every label first, which
    costs more than drawing the figure."""
    width, height = fig.get_figwidth(), fig.get_figheight()
    axes_h, gap, left, right, col_gap = 1.8, 1.15, 0.75, 0.2, 0.85
    top = 0.35 + (0.3 if title else 0.0) + (0.25 if legend else 0.0)
    axes_w = (width - left - right - (cols - 1) * col_gap) / cols
    fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height,
                        bottom=1 - (top + rows * axes_h + (rows - 1) * gap) / height,
                        hspace=gap / axes_h, wspace=col_gap / axes_w)  # fmt: skip
    if title:
        fig.suptitle(title, y=1 - 0.12 / height, va="top")
    return fig.subplots(rows, cols, squeeze=False)


def _height(rows: int, title: str, legend: bool = False) -> float:
    """The figure height :func:`_rows` needs, in inches."""
    top = 0.35 + (0.3 if title else 0.0) + (0.25 if legend else 0.0)
    return top + rows * 1.8 + (rows - 1) * 1.15 + 0.8


def _title(ax: Axes, text: str) -> None:
    # at a fixed height: placing it automatically measures the tick labels of every axes
    ax.set_title(text, fontsize=9, y=1.0, pad=4)


def _nothing(ax: Axes, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center")


def _answer_ticks(ax: Axes, labels: Sequence[str]) -> None:
    ax.set_xticks(range(len(labels)), [_short(str(a)) for a in labels], rotation=90, fontsize=6)
    ax.set_xlim(-0.7, len(labels) - 0.3)


def _train_vs_ood(ax: Axes, dist: GroupDistribution, max_answers: int) -> None:
    """Left panel of Figs. 4 / 10: shares of the group's training and OOD test answers."""
    shown = _shown(dist, max_answers)
    share = dist.proportions().loc[shown.index]
    x = np.arange(len(shown))
    n_train, n_ood = int(dist.counts["train"].sum()), int(dist.counts["ood"].sum())
    ax.bar(x - 0.2, share["train"], 0.4, color=_TRAIN)
    ax.bar(x + 0.2, share["ood"], 0.4, color=_OOD)
    _answer_ticks(ax, list(shown.index))
    ax.set_ylabel("share of the group", fontsize=8)
    _title(ax, f"{_group_title(dist)}: train ({n_train:,}) vs OOD test ({n_ood:,})")
    _hidden_note(ax, len(dist.counts) - len(shown))


def _selection(ax: Axes, dist: GroupDistribution, max_answers: int) -> None:
    """Right panel of Figs. 4 / 10: the group's IID test answers by count, the tail (OOD)
    coloured, and the threshold the rule compares the counts with."""
    sel = dist.selection()
    shown = sel.iloc[:max_answers]
    x = np.arange(len(shown))
    ax.bar(x, shown["test"], 0.8, color=[_OOD if t else _HEAD for t in shown["tail"]])
    if np.isfinite(dist.threshold):
        rule = "<" if dist.tail_rule == "<" else "≤"
        ax.axhline(dist.threshold, color="black", linestyle="--", linewidth=1)
        ax.text(len(shown) - 0.4, dist.threshold, f"tail: count {rule} {dist.tail_factor:g} × "
                f"mean = {dist.threshold:.3g}", ha="right", va="bottom", fontsize=7)  # fmt: skip
    _answer_ticks(ax, list(shown.index))
    ax.set_ylabel("IID test questions", fontsize=8)
    head, tail = (int(sel.loc[sel["tail"] == flag, "test"].sum()) for flag in (False, True))
    state = (f"imbalanced, ê = {dist.entropy:.2f} < {dist.entropy_threshold:g}"
             if dist.imbalanced else
             f"balanced, ê = {dist.entropy:.2f}: no tail" if np.isfinite(dist.entropy) else
             "no IID test questions")  # fmt: skip
    _title(ax, f"selection: head {head:,}, tail {tail:,} ({state})")
    hidden = len(sel) - len(shown)
    if hidden:
        tail_hidden = int(sel.iloc[max_answers:]["tail"].sum())
        _hidden_note(ax, hidden, f"answers ({tail_hidden:,} tail)")


def answer_distributions(
    dists: Sequence[GroupDistribution], max_answers: int = 30, title: str = ""
) -> Figure:
    """The paper's Figs. 4 and 10: a row per group, on the left the shares of its training and
    OOD test answers (answers sorted by training count), on the right its IID test answers by
    count with the tail that the selection rule picks and the threshold it compares with."""
    rows = max(len(dists), 1)
    fig = Figure(figsize=(12.0, _height(rows, title, legend=True)), dpi=100)
    axes = _rows(fig, rows, 2, title, legend=True)
    for (left, right), dist in zip(axes, dists, strict=False):
        _train_vs_ood(left, dist, max_answers)
        _selection(right, dist, max_answers)
    if not dists:
        _nothing(axes[0, 0], "no groups in this build")
        axes[0, 1].set_axis_off()
    handles = [Patch(color=_TRAIN, label="train"), Patch(color=_OOD, label="OOD test = tail"),
               Patch(color=_HEAD, label="head (IID test)"),
               Line2D([], [], color="black", linestyle="--", label="tail threshold")]
    fig.legend(handles=handles, loc="upper center", ncol=4, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - (0.42 if title else 0.08) / fig.get_figheight()))
    return fig


def split_distributions(dists: Sequence[GroupDistribution], max_answers: int = 30) -> Figure:
    """The paper's Fig. 8: per group, the shares of its train, val and IID test answers on one
    abscissa, the answers sorted by training count."""
    rows = max(len(dists), 1)
    title = "Answers of train, val and IID test in one group (cf. paper Fig. 8)"
    fig = Figure(figsize=(9.0, _height(rows, title)), dpi=100)
    axes = _rows(fig, rows, 1, title)[:, 0]
    styles = (("train", _TRAIN, "o-"), ("val", _VAL, "s--"), ("test", _TEST, "^:"))
    for ax, dist in zip(axes, dists, strict=False):
        shown = dist.counts.iloc[:max_answers]
        share = dist.proportions().loc[shown.index]
        x = np.arange(len(shown))
        for col, color, style in styles:
            n = int(dist.counts[col].sum())
            name = "IID test" if col == "test" else col
            ax.plot(x, share[col], style, color=color, markersize=3, linewidth=1,
                    label=f"{name} ({n:,})")  # fmt: skip
        _answer_ticks(ax, list(shown.index))
        ax.set_ylabel("share of the group", fontsize=8)
        _title(ax, f"{_group_title(dist)} (answers by training count)")
        ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.0, 0.9))
        _hidden_note(ax, len(dist.counts) - len(shown))
    if not dists:
        _nothing(axes[0], "no QT or KW groups in this build")
    return fig
