"""Figures of the VQA-VS construction: head-split Jaccard, OOD coincidence, imbalance degree."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from shortcutlab.utils.html import literal_text

__all__ = ["accuracy_bars", "figure_png", "heatmap", "imbalance_bars", "imbalance_vs_accuracy"]


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
