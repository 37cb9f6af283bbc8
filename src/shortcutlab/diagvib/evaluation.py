"""Score your own predictions on DiagViB-6, the way the benchmark scores trained runs.

* :func:`mean_per_class_accuracy` (the trainer's own, :mod:`shortcutlab.train.metrics`,
  re-exported) — the accuracy every DiagViB-6 number is made of: recall
  averaged over the classes present in the targets (sklearn's ``balanced_accuracy_score``;
  torchmetrics' ``multiclass_accuracy(average="macro")`` when every class occurs). Functional,
  for numpy arrays and torch tensors. It differs from plain accuracy on test sets that are not
  class-balanced, e.g. CHGO's.
* :func:`evaluate_predictions` — WILDS-style flat dict: ``acc_avg``, ``acc_<tag>`` and
  ``count_<tag>`` per test cell, ``acc_id``/``acc_ood`` over in/out-of-distribution cells and
  ``acc_wg`` (worst cell), plus a readable string. :meth:`DiagvibDataset.eval` calls it.
* :func:`job_row` — one row of a job table (``test_acc`` and the ``test_acc@<tag>`` columns), so
  ``compute_metrics(pd.DataFrame(rows))`` gives P_ij, FAAvg, FAMin and CHGO over ZGO from the
  same code as for runs trained by ``shortcutlab diagvib run``.

Nothing here imports torch: tensors are recognised when torch is already loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from shortcutlab.diagvib.metrics import TAG_PREFIX
from shortcutlab.diagvib.spec import N_SELECTED, ExperimentSpec
from shortcutlab.errors import DiagvibError
from shortcutlab.train.metrics import as_labels, is_tensor, mean_per_class_accuracy


class LabelledSplit(Protocol):
    """What scoring reads of a split (a :class:`~shortcutlab.diagvib.dataset.DiagvibDataset`):
    its experiment and split name, one label and one cell tag per image."""

    @property
    def spec(self) -> ExperimentSpec: ...
    @property
    def split(self) -> str: ...
    @property
    def labels(self) -> np.ndarray: ...
    @property
    def tags(self) -> np.ndarray: ...
    @property
    def num_classes(self) -> int: ...
    def __len__(self) -> int: ...


def predicted_labels(preds: np.ndarray, n: int, what: str = "predictions") -> np.ndarray:
    return as_labels(preds, n, what, error=DiagvibError)


def _to_numpy(values: Any) -> np.ndarray:
    if is_tensor(values):
        return values.detach().cpu().numpy()
    return np.asarray(values)


def _group_lines(results: dict[str, float], groups: Sequence[str]) -> list[str]:
    return [f"  {g:<8} acc {results[f'acc_{g}']:.3f}  (n = {int(results[f'count_{g}'])})"
            for g in groups]


def evaluate_predictions(
    y_pred: Any,
    y_true: Any,
    tags: Any,
    *,
    num_classes: int = N_SELECTED,
) -> tuple[dict[str, float], str]:
    """WILDS-style evaluation: mean-per-class accuracy overall, per tag, ID/OOD, worst tag.

    ``tags``: one group name per image (DiagViB-6 cell tags such as ``"01-ood"``). Returns a
    flat dict — ``acc_avg``, ``count_all``, ``acc_plain`` (plain fraction correct, for
    comparison only), ``acc_<tag>``/``count_<tag>`` per tag, ``acc_id``/``acc_ood`` with counts
    over tags ending in ``-id``/``-ood`` (when present) and ``acc_wg`` (the worst tag's
    accuracy) — and a readable summary. All accuracies are fractions in [0, 1].
    """
    target = _to_numpy(y_true).reshape(-1).astype(np.int64)
    preds = predicted_labels(_to_numpy(y_pred), target.shape[0])
    tags = _to_numpy(tags).reshape(-1).astype(str)
    if tags.shape[0] != target.shape[0]:
        raise DiagvibError(f"{tags.shape[0]} tags for {target.shape[0]} targets")
    if target.size == 0:
        raise DiagvibError("no predictions to evaluate")
    bad = (preds < 0) | (preds >= num_classes)
    if bad.any():
        raise DiagvibError(
            f"predicted class ids must be in 0..{num_classes - 1}; {int(bad.sum())} are not "
            f"(first: {int(preds[bad][0])})"
        )
    results: dict[str, float] = {
        "acc_avg": mean_per_class_accuracy(preds, target, num_classes, error=DiagvibError),
        "count_all": float(target.size),
        "acc_plain": float((preds == target).mean()),
    }
    names = sorted(set(tags.tolist()))
    for name in names:
        mask = tags == name
        results[f"acc_{name}"] = mean_per_class_accuracy(preds[mask], target[mask], num_classes,
                                                           error=DiagvibError)
        results[f"count_{name}"] = float(mask.sum())
    kinds = [k for k in ("id", "ood") if any(t.endswith(f"-{k}") for t in names)]
    for kind in kinds:
        mask = np.char.endswith(tags, f"-{kind}")
        results[f"acc_{kind}"] = mean_per_class_accuracy(preds[mask], target[mask], num_classes,
                                                           error=DiagvibError)
        results[f"count_{kind}"] = float(mask.sum())
    worst = min(names, key=lambda g: results[f"acc_{g}"])
    results["acc_wg"] = results[f"acc_{worst}"]
    lines = [
        f"Mean per-class accuracy: {results['acc_avg']:.3f} over {target.size} images "
        f"(plain accuracy {results['acc_plain']:.3f})",
        *_group_lines(results, kinds),
        "Per cell:",
        *_group_lines(results, names),
        f"Worst cell: {worst} acc {results['acc_wg']:.3f}",
    ]
    return results, "\n".join(lines) + "\n"


def split_predictions(dataset: LabelledSplit, y_pred: Any,
                      indices: Any | None) -> tuple[np.ndarray, np.ndarray]:
    """(predictions, dataset indices) after checking they cover the split or the given indices."""
    preds = _to_numpy(y_pred)
    if indices is None:
        if preds.shape[:1] != (len(dataset),):
            raise DiagvibError(
                f"{preds.shape[0] if preds.ndim else 0} predictions for the {len(dataset)} "
                f"images of the {dataset.split} split of {dataset.spec.name}; give one per "
                "image in dataset order, or pass indices= (the items' 'index')"
            )
        return preds, np.arange(len(dataset))
    idx = _to_numpy(indices).reshape(-1).astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= len(dataset)):
        raise DiagvibError(f"indices must be in 0..{len(dataset) - 1}")
    if np.unique(idx).size != idx.size:
        raise DiagvibError("indices repeat an image; give one prediction per image")
    if preds.shape[:1] != idx.shape:
        raise DiagvibError(f"{preds.shape[0] if preds.ndim else 0} predictions for "
                           f"{idx.size} indices")
    return preds, idx


def evaluate_dataset(
    dataset: LabelledSplit, y_pred: Any, indices: Any | None = None
) -> tuple[dict[str, float], str]:
    """:func:`evaluate_predictions` of ``y_pred`` on ``dataset``'s labels and cell tags.

    ``y_pred``: one class id (or score row) per image in dataset order, or per entry of
    ``indices`` (the items' ``index``, e.g. after a shuffled loader or on a subset).
    """
    preds, idx = split_predictions(dataset, y_pred, indices)
    results, text = evaluate_predictions(preds, dataset.labels[idx], dataset.tags[idx],
                                         num_classes=dataset.num_classes)
    return results, f"{dataset.spec.name} ({dataset.split}):\n{text}"


def job_row(
    dataset: LabelledSplit,
    y_pred: Any,
    *,
    model: str,
    seed: int = 0,
    algorithm: str = "erm",
    indices: Any | None = None,
) -> dict[str, Any]:
    """One finished job of a job table for predictions on an experiment's ``test`` split.

    Columns: job_id, model, algorithm, study, predicted, correlated ('' for ZSO), sample, seed,
    experiment, status (``done``), test_acc (mean-per-class accuracy) and ``test_acc@<tag>`` per
    test cell — what :func:`shortcutlab.diagvib.metrics.compute_metrics` reads. Rows of several
    experiments (and seeds) of one model form the table: ``pd.DataFrame(rows)``.
    """
    if dataset.split != "test":
        raise DiagvibError(
            f"job rows hold test-split accuracies; got the {dataset.split!r} split of "
            f"{dataset.spec.name} (use DiagvibDataset(spec, 'test'))"
        )
    results, _ = evaluate_dataset(dataset, y_pred, indices)
    spec = dataset.spec
    row: dict[str, Any] = {
        "job_id": f"{model}/{algorithm}/{spec.name}/seed={seed}",
        "model": model,
        "algorithm": algorithm,
        "study": spec.study,
        "predicted": spec.predicted,
        "correlated": spec.correlated or "",
        "sample": spec.sample,
        "seed": int(seed),
        "experiment": spec.name,
        "status": "done",
        "test_acc": results["acc_avg"],
    }
    for tag in sorted(set(dataset.tags.tolist())):
        if f"acc_{tag}" in results:
            row[f"{TAG_PREFIX}{tag}"] = results[f"acc_{tag}"]
    return row


__all__ = ["evaluate_dataset", "evaluate_predictions", "job_row", "mean_per_class_accuracy"]
