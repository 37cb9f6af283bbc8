"""Model selection on built VQA-VS splits (paper section 5.3, Table 4).

A model is saved after each epoch; one checkpoint is then chosen by its mean accuracy on
(a) the nine OOD test sets, (b) the nine OOD val sets (built from the val split as the OOD test
sets are from the test split) or (c) the IID val set, and evaluated on the test sets. The paper
argues for (c): (a) and (b) use knowledge of the OOD distribution before evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError
from shortcutlab.vqa.evaluate import score_splits

__all__ = ["STRATEGIES", "select_checkpoints"]

# strategy -> (evaluation split, result key whose maximum picks the checkpoint)
STRATEGIES: dict[str, tuple[str, str]] = {
    "ood-test": ("test", "ood_mean"),
    "ood-val": ("val", "ood_mean"),
    "iid-val": ("val", "iid"),
}


def _key(value: float | None) -> float:
    return -np.inf if value is None else float(value)


def select_checkpoints(
    samples: pd.DataFrame, checkpoints: Sequence[Mapping[str, str]], **score_options: Any
) -> dict[str, Any]:
    """Score every checkpoint's predictions (each covering the val and test questions) on the
    val and test sets and choose one per strategy of :data:`STRATEGIES`.

    Returns ``epochs`` (per checkpoint: its test and val rows, fractions) and ``selected``
    (strategy -> ``{"epoch": k (1-based), "criterion": value, "test": test row}``); ties go to
    the earliest checkpoint. ``score_options`` pass to :func:`score_splits` (metric, ...).
    """
    if not checkpoints:
        raise VQAError("model selection needs at least one checkpoint")
    rows = [
        {on: score_splits(samples, preds, on=on, **score_options) for on in ("test", "val")}
        for preds in checkpoints
    ]
    selected = {}
    for name, (on, key) in STRATEGIES.items():
        values = [_key(r[on][key]) for r in rows]
        best = int(np.argmax(values))  # first maximum: the earliest checkpoint
        selected[name] = {
            "epoch": best + 1,
            "criterion": rows[best][on][key],
            "test": rows[best]["test"],
        }
    return {"epochs": rows, "selected": selected}
