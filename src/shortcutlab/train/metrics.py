"""Mean per-class and top-1 accuracy, the one implementation of each: the trainer scores runs
with them and :mod:`shortcutlab.diagvib.evaluation` re-exports the first for scoring one's own
predictions.

Nothing here imports torch: tensors are recognised when torch is already loaded.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from shortcutlab.errors import TrainError


def is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def as_labels(preds: np.ndarray, n: int, what: str = "predictions", *,
              error: type[Exception] = TrainError) -> np.ndarray:
    """Class ids from ids (N,) or scores/logits (N, C); ``error`` naming the shape otherwise."""
    if preds.ndim == 2:
        preds = preds.argmax(axis=1)
    if preds.ndim != 1 or preds.shape[0] != n:
        raise error(
            f"{what} have shape {tuple(preds.shape)}; expected ({n},) class ids or ({n}, C) "
            "scores, one per target"
        )
    if preds.size and not np.issubdtype(preds.dtype, np.integer):
        as_int = preds.astype(np.int64)
        if not np.array_equal(as_int, preds):
            raise error(f"{what} must be integer class ids, got {preds.dtype} values")
        preds = as_int
    return preds.astype(np.int64, copy=False)


def _macro_recall_numpy(preds: Any, target: Any, num_classes: int | None,
                        error: type[Exception]) -> float:
    target = np.asarray(target).reshape(-1).astype(np.int64)
    labels = as_labels(np.asarray(preds), target.shape[0], error=error)
    if target.size == 0:
        return math.nan
    if target.min() < 0:
        raise error(f"targets must be class ids >= 0, got {int(target.min())}")
    k = int(max(target.max(), labels.max(initial=0)) + 1) if num_classes is None else num_classes
    support = np.bincount(target, minlength=k)
    hits = np.bincount(target, weights=(labels == target).astype(np.float64),
                       minlength=k)
    seen = support > 0
    return float((hits[seen] / support[seen]).mean())


def _macro_recall_torch(preds: Any, target: Any, num_classes: int | None,
                        error: type[Exception]) -> Any:
    import torch

    target = torch.as_tensor(target).reshape(-1).long()
    preds = torch.as_tensor(preds, device=target.device)
    if preds.ndim == 2:
        preds = preds.argmax(dim=1)
    if preds.ndim != 1 or preds.shape[0] != target.shape[0]:
        raise error(
            f"predictions have shape {tuple(preds.shape)}; expected ({target.shape[0]},) class "
            f"ids or ({target.shape[0]}, C) scores, one per target"
        )
    if target.numel() == 0:
        return torch.tensor(math.nan, device=target.device)
    preds = preds.long()
    k = int(max(target.max(), preds.max()) + 1) if num_classes is None else num_classes
    support = torch.bincount(target, minlength=k)
    hits = torch.bincount(target, weights=(preds == target).double(), minlength=k)
    seen = (support > 0).double()  # a masked mean: no boolean indexing, so no host sync
    return ((hits / support.clamp(min=1)) * seen).sum().div(seen.sum()).float()


def mean_per_class_accuracy(preds: Any, target: Any, num_classes: int | None = None, *,
                            error: type[Exception] = TrainError) -> Any:
    """Recall averaged over the classes present in ``target`` (NaN for no targets).

    ``preds``: class ids (N,) or scores/logits (N, C) (arg-max taken); ``target``: class ids (N,).
    numpy arrays or lists give a Python float; torch tensors give a 0-dim float tensor on the
    targets' device (with ``num_classes`` given, no host sync inside a training loop). Classes
    that only occur in ``preds`` do not count (as in sklearn's ``balanced_accuracy_score``;
    torchmetrics' macro accuracy would count them as 0). On a class-balanced set it equals plain
    accuracy. Bad shapes or ids raise ``error``.
    """
    if is_tensor(preds) or is_tensor(target):
        return _macro_recall_torch(preds, target, num_classes, error)
    return _macro_recall_numpy(preds, target, num_classes, error)


def top1_accuracy(preds: Any, target: Any, num_classes: int | None = None, *,
                  error: type[Exception] = TrainError) -> Any:
    """The share of ``preds`` equal to ``target`` (NaN for no targets); arguments and return
    types as :func:`mean_per_class_accuracy` (``num_classes`` is accepted for the same call
    and not needed)."""
    if is_tensor(preds) or is_tensor(target):
        import torch

        target_t = torch.as_tensor(target).reshape(-1).long()
        preds_t = torch.as_tensor(preds, device=target_t.device)
        if preds_t.ndim == 2:
            preds_t = preds_t.argmax(dim=1)
        if preds_t.ndim != 1 or preds_t.shape[0] != target_t.shape[0]:
            raise error(f"predictions have shape {tuple(preds_t.shape)}; expected "
                        f"({target_t.shape[0]},) class ids or ({target_t.shape[0]}, C) scores")
        if target_t.numel() == 0:
            return torch.tensor(math.nan, device=target_t.device)
        return (preds_t.long() == target_t).float().mean()
    target_np = np.asarray(target).reshape(-1).astype(np.int64)
    labels = as_labels(np.asarray(preds), target_np.shape[0], error=error)
    return float(np.mean(labels == target_np)) if target_np.size else math.nan
