"""Training loop of paper appendix A.2, with per-epoch records for later model selection.

Cross entropy and Adam (inside the algorithm), at most ``config.epochs`` epochs, early stopping
once the validation loss has not improved for ``config.patience`` epochs (the ``paper`` protocol
never stops early). Inputs are normalised on the device by the algorithm's ``input_norm``
(training-split statistics, computed once per run by streaming, or ImageNet's; see
:mod:`shortcutlab.train.normalization`). Every epoch records the train loss, validation loss and
accuracy, and the accuracy on every test set, overall and per cell tag. The reported numbers are
those of the epoch with the lowest validation loss. Accuracy is the MEAN PER-CLASS accuracy
(recall averaged over the classes present).

Determinism: given (config, datasets) the result is the same in every process and for any
number of DataLoader workers: shuffling comes from ``rng(seed, "shuffle", epoch)``, weight
initialisation and other torch draws from a torch RNG forked and seeded from ``config.seed``.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import expects_imagenet_inputs
from shortcutlab.train.normalization import (
    STATS_BATCH_SIZE,
    ChannelStats,
    Source,
    channel_stats,
    to_unit_float,
)
from shortcutlab.utils.rng import rng, torch_seed

EPOCH_COLUMNS = ("epoch", "train_loss", "val_loss", "val_acc", "test_set", "tag", "acc", "n")


def mean_per_class_accuracy(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> float:
    """Recall averaged over the classes present in ``y_true`` (NaN for no samples)."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if y_true.size == 0:
        return math.nan
    total = np.bincount(y_true, minlength=num_classes)
    correct = np.bincount(y_true[y_true == y_pred], minlength=num_classes)
    present = total > 0
    return float(np.mean(correct[present] / total[present]))


class EpochBatches(Sampler[list[int]]):
    """Shuffled batches of indices, a pure function of (seed, epoch).

    A last batch of a single sample is dropped (BatchNorm cannot train on it); with
    ``drop_last`` any incomplete last batch is (as the DiagViB-6 authors' loader does), unless it
    is the only batch.
    """

    def __init__(self, n: int, batch_size: int, seed: int, drop_last: bool = False) -> None:
        self.n, self.batch_size, self.seed, self.epoch = n, batch_size, seed, 0
        self.drop_last = drop_last

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list[np.ndarray]:
        order = rng(self.seed, "shuffle", self.epoch).permutation(self.n)
        chunks = [order[i : i + self.batch_size] for i in range(0, self.n, self.batch_size)]
        short = len(chunks[-1]) < self.batch_size if self.drop_last else len(chunks[-1]) == 1
        if len(chunks) > 1 and short:
            chunks.pop()
        return chunks

    def __iter__(self) -> Iterator[list[int]]:
        for chunk in self._batches():
            yield chunk.tolist()

    def __len__(self) -> int:
        return len(self._batches())


@dataclass
class EvalResult:
    """Loss and mean per-class accuracy on one dataset, plus accuracy and count per cell tag."""

    loss: float
    acc: float
    n: int
    tags: dict[str, tuple[float, int]] = field(default_factory=dict)


@dataclass
class TrainResult:
    """Outcome of :func:`train`; numbers are those of the best (lowest val loss) epoch."""

    best_epoch: int
    epochs_run: int
    val_loss: float
    val_acc: float
    test_acc: dict[str, float]
    test_acc_tags: dict[str, dict[str, float]]
    epochs: pd.DataFrame
    train_seconds: float
    stopped_early: bool
    input_stats: ChannelStats
    best_state: dict[str, torch.Tensor] | None = None

    def summary(self) -> dict[str, Any]:
        """A JSON-ready flat dict (WILDS habit): test_acc = the first test set's accuracy."""
        first = next(iter(self.test_acc), None)
        out: dict[str, Any] = {
            "best_epoch": self.best_epoch,
            "epochs_run": self.epochs_run,
            "val_loss": self.val_loss,
            "val_acc": self.val_acc,
            "test_acc": self.test_acc[first] if first is not None else math.nan,
            "train_seconds": self.train_seconds,
            "stopped_early": self.stopped_early,
            "normalization": self.input_stats.source,
        }
        for name, acc in self.test_acc.items():
            out[f"test_acc[{name}]"] = acc
        if first is not None:
            for tag, acc in self.test_acc_tags[first].items():
                out[f"test_acc@{tag}"] = acc
        return out


def _to_device(batch: Mapping[str, Any], device: torch.device) -> dict[str, Any]:
    return {
        k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v
        for k, v in batch.items()
    }


def _loader(
    ds: Dataset, batch_sampler: Sampler | None, batch_size: int, num_workers: int, pin: bool
) -> DataLoader:
    if batch_sampler is not None:
        return DataLoader(
            ds, batch_sampler=batch_sampler, num_workers=num_workers, pin_memory=pin,
            persistent_workers=num_workers > 0,
        )
    return DataLoader(ds, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                      pin_memory=pin, persistent_workers=num_workers > 0)


@torch.no_grad()
def evaluate(
    algorithm: Algorithm,
    dataset: Dataset,
    *,
    device: torch.device,
    batch_size: int = 256,
    num_workers: int = 0,
    loader: DataLoader | None = None,
) -> EvalResult:
    """Cross-entropy loss, mean per-class accuracy, and per-tag accuracy (if the dataset has
    ``tags``, one string per index) of ``algorithm`` on ``dataset``; images are normalised by
    ``algorithm.input_norm`` first."""
    was_training = algorithm.training
    algorithm.eval()
    loader = loader or _loader(dataset, None, batch_size, num_workers, device.type == "cuda")
    labels, preds, indices, losses = [], [], [], []
    position = 0
    for batch in loader:
        batch = _to_device(batch, device)
        logits = algorithm.predict(algorithm.input_norm(to_unit_float(batch["x"])))
        head = getattr(dataset, "reduce_logits", None)  # a test set's head, e.g. 1000 -> 16
        if head is not None:
            logits = head(logits)
        y = batch["y"]
        losses.append(F.cross_entropy(logits.double(), y, reduction="none").cpu().numpy())
        labels.append(y.cpu().numpy())
        preds.append(logits.argmax(1).cpu().numpy())
        idx = batch.get("index")
        n = len(y)
        if isinstance(idx, torch.Tensor):
            indices.append(idx.cpu().numpy())
        else:
            indices.append(np.arange(position, position + n))
        position += n
    algorithm.train(was_training)
    y_true = np.concatenate(labels) if labels else np.zeros(0, np.int64)
    y_pred = np.concatenate(preds) if preds else np.zeros(0, np.int64)
    index = np.concatenate(indices) if indices else np.zeros(0, np.int64)
    k = algorithm.num_classes
    result = EvalResult(
        loss=float(np.concatenate(losses).mean()) if losses else math.nan,
        acc=mean_per_class_accuracy(y_true, y_pred, k),
        n=len(y_true),
    )
    tags = getattr(dataset, "tags", None)
    if tags is not None and len(y_true):
        tag_of = np.asarray(tags)[index]
        for tag in sorted(set(tag_of.tolist())):
            mask = tag_of == tag
            result.tags[str(tag)] = (
                mean_per_class_accuracy(y_true[mask], y_pred[mask], k),
                int(mask.sum()),
            )
    return result


def _num_classes(ds: Dataset) -> int:
    n = getattr(ds, "num_classes", None)
    if n is None:
        raise TrainError(f"{type(ds).__name__} has no num_classes attribute; add one")
    return int(n)


def resolve_normalization(config: TrainConfig) -> Source:
    """The normalisation a config asks for; ``auto`` is ``imagenet`` for models registered as
    ImageNet-pretrained (rn50_in) and ``train`` (training-split statistics) otherwise."""
    if config.normalization != "auto":
        return config.normalization
    return "imagenet" if expects_imagenet_inputs(config.model) else "train"


def input_stats(config: TrainConfig, train_ds: Dataset, num_workers: int = 0) -> ChannelStats:
    """The channel statistics ``config`` normalises inputs with (streams ``train_ds`` once for
    ``train``; :data:`STATS_BATCH_SIZE` items at a time, whatever the runtime options)."""
    source = resolve_normalization(config)
    if source == "train":
        return channel_stats(train_ds, batch_size=STATS_BATCH_SIZE, num_workers=num_workers)
    if source == "imagenet":
        return ChannelStats.imagenet()
    return ChannelStats.identity()


def train(
    config: TrainConfig,
    train_ds: Dataset,
    val_ds: Dataset,
    test_sets: Mapping[str, Dataset],
    *,
    context: AlgorithmContext | None = None,
    device: torch.device | str = "cpu",
    num_workers: int = 0,
    eval_batch_size: int = 256,
    keep_best_state: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Train ``config.algorithm`` on ``train_ds``; evaluate ``val_ds`` and every test set each
    epoch; report the epoch with the lowest validation loss.

    ``context`` carries what some algorithms need besides batches (Stylized: the generator).
    ``progress`` is called after every epoch with that epoch's summary. Runtime options (device,
    workers, eval batch size) do not change results.
    """
    if not isinstance(config, TrainConfig):
        raise TrainError(
            f"train() takes a TrainConfig first (got {type(config).__name__}); the algorithm is "
            "its `algorithm` field"
        )
    device = torch.device(device)
    if len(train_ds) == 0 or len(val_ds) == 0:  # type: ignore[arg-type]
        raise TrainError("training and validation sets must not be empty")
    num_classes = _num_classes(train_ds)
    start = time.perf_counter()
    stats = input_stats(config, train_ds, num_workers)
    fork_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(torch_seed(config.seed, "torch"))
        algo = create_algorithm(config.algorithm, num_classes, config, context)
        algo.input_norm.set_stats(stats)
        algo.to(device)
        return _fit(
            algo, train_ds, val_ds, test_sets, config, device, num_workers, eval_batch_size,
            keep_best_state, progress, start, stats,
        )


def _fit(
    algo: Algorithm,
    train_ds: Dataset,
    val_ds: Dataset,
    test_sets: Mapping[str, Dataset],
    config: TrainConfig,
    device: torch.device,
    num_workers: int,
    eval_batch_size: int,
    keep_best_state: bool,
    progress: Callable[[dict[str, Any]], None] | None,
    start: float,
    stats: ChannelStats,
) -> TrainResult:
    pin = device.type == "cuda"
    sampler = EpochBatches(
        len(train_ds), config.batch_size, config.seed, config.drop_last  # type: ignore[arg-type]
    )
    train_loader = _loader(train_ds, sampler, config.batch_size, num_workers, pin)
    eval_loaders = {
        name: _loader(ds, None, eval_batch_size, num_workers, pin)
        for name, ds in {"__val__": val_ds, **test_sets}.items()
    }
    rows: list[dict[str, Any]] = []
    best: tuple[float, int] = (math.inf, -1)
    best_evals: dict[str, EvalResult] = {}
    best_state: dict[str, torch.Tensor] | None = None
    since_best, step, epoch = 0, 0, -1
    stopped_early = False
    for epoch in range(config.epochs):
        algo.train()
        sampler.set_epoch(epoch)
        algo.start_epoch(epoch)  # step learning-rate schedule (BiasBed recipe)
        loss_sum, seen = 0.0, 0
        for batch in train_loader:
            batch = _to_device(batch, device)
            batch["x"] = algo.input_norm(to_unit_float(batch["x"]))
            algo.step = step
            out = algo.update(batch)
            if "loss" not in out or not math.isfinite(out["loss"]):
                raise TrainError(
                    f"algorithm {config.algorithm!r} returned no finite 'loss' at step "
                    f"{step}: {out}"
                )
            loss_sum += out["loss"] * len(batch["y"])
            seen += len(batch["y"])
            step += 1
        val = evaluate(algo, val_ds, device=device, loader=eval_loaders["__val__"])
        tests = {
            name: evaluate(algo, ds, device=device, loader=eval_loaders[name])
            for name, ds in test_sets.items()
        }
        train_loss = loss_sum / max(seen, 1)
        base = {"epoch": epoch, "train_loss": train_loss, "val_loss": val.loss, "val_acc": val.acc}
        for name, res in tests.items():
            rows.append({**base, "test_set": name, "tag": "all", "acc": res.acc, "n": res.n})
            for tag, (acc, n) in res.tags.items():
                rows.append({**base, "test_set": name, "tag": tag, "acc": acc, "n": n})
        if not tests:
            rows.append({**base, "test_set": "", "tag": "all", "acc": math.nan, "n": 0})
        if best[1] < 0 or val.loss < best[0]:
            best = (val.loss, epoch)
            best_evals = {"__val__": val, **tests}
            since_best = 0
            if keep_best_state:
                best_state = copy.deepcopy({k: v.cpu() for k, v in algo.state_dict().items()})
        else:
            since_best += 1
        if progress is not None:
            progress({**base, **{f"test_acc[{k}]": v.acc for k, v in tests.items()}})
        if config.patience is not None and since_best >= config.patience:
            stopped_early = epoch + 1 < config.epochs
            break
    frame = pd.DataFrame(rows, columns=list(EPOCH_COLUMNS))
    frame["epoch"] = frame["epoch"].astype("int64")
    frame["n"] = frame["n"].astype("int64")
    val_best = best_evals["__val__"]
    return TrainResult(
        best_epoch=best[1],
        epochs_run=epoch + 1,
        val_loss=val_best.loss,
        val_acc=val_best.acc,
        test_acc={name: best_evals[name].acc for name in test_sets},
        test_acc_tags={
            name: {tag: acc for tag, (acc, _) in best_evals[name].tags.items()}
            for name in test_sets
        },
        epochs=frame,
        train_seconds=time.perf_counter() - start,
        stopped_early=stopped_early,
        input_stats=stats,
        best_state=best_state,
    )
