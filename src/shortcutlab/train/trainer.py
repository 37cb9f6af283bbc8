"""The training loop, with per-epoch records for later model selection (the protocol of the
DiagViB-6 paper's appendix A.2, which every area's runs share).

Cross entropy and the configured optimiser, Adam or SGD (inside the algorithm), at most
``config.epochs`` epochs, early stopping once the validation loss has not improved for
``config.patience`` epochs (the ``default`` and ``paper`` presets never stop early). Inputs
are normalised on the device by the algorithm's ``input_norm``
(training-split statistics, computed once per run by streaming, or ImageNet's; see
:mod:`shortcutlab.train.normalization`). Every epoch records the train loss, validation loss and
accuracy, and the accuracy on every test set, overall and per cell tag. The reported numbers are
those of the epoch with the lowest validation loss. Accuracy is the MEAN PER-CLASS accuracy
(recall averaged over the classes present).

Determinism: given (config, datasets) the result is the same in every process and for any
number of DataLoader workers: shuffling comes from ``rng(seed, "shuffle", epoch)``
(:class:`~shortcutlab.train.batches.EpochBatches`), weight initialisation and other torch draws
from a torch RNG forked and seeded from ``config.seed``.

The loop's parts live beside it: which items make each batch, and batches made on the device
instead of by a DataLoader, in :mod:`shortcutlab.train.batches`; mixed precision in
:mod:`shortcutlab.train.precision`; how the step runs (one CUDA graph or eager, torch.compile)
in :mod:`shortcutlab.train.step_modes`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext, optimizers_of
from shortcutlab.train.batches import (
    DEVICE_EVAL_BATCH_SIZE,
    DeviceBatches,
    DeviceItems,
    EpochBatches,
    makes_device_batches,
)
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.metrics import mean_per_class_accuracy, top1_accuracy
from shortcutlab.train.models import expects_imagenet_inputs
from shortcutlab.train.normalization import (
    STATS_BATCH_SIZE,
    ChannelStats,
    Source,
    channel_stats,
    to_unit_float,
)
from shortcutlab.train.precision import autocast_for, check_precision, make_grad_scaler
from shortcutlab.train.runtime import check_cuda_graphs, compile_default, cuda_graphs_default
from shortcutlab.train.step_modes import (
    GraphedStep,
    compile_networks,
    cuda_graph_plan,
    step_mode_of,
)
from shortcutlab.utils.rng import torch_seed

EPOCH_COLUMNS = ("epoch", "train_loss", "val_loss", "val_acc", "test_set", "tag", "acc", "n")


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
    #: How the training step ran: ``graph`` (captured once as a CUDA graph, then replayed) or
    #: ``eager: <why not a graph>``; with ``compiled``, whether the network was torch.compiled.
    step_mode: str = "eager"
    compiled: bool = False

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
            "step_mode": self.step_mode,
            "compiled": self.compiled,
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
    ds: Dataset, batch_sampler: Sampler | None, batch_size: int, num_workers: int, pin: bool,
    seed: int = 0,
) -> DataLoader:
    """A DataLoader with a generator of its own, seeded by ``seed``: each iterator draws its
    base seed (the workers' random state) from it, never from torch's global RNG, which is
    dropout's and a VAE's noise on the CPU. So neither the number of workers nor the number of
    evaluation sets changes how a model trains."""
    generator = torch.Generator().manual_seed(seed)
    if batch_sampler is not None:
        return DataLoader(ds, batch_sampler=batch_sampler, num_workers=num_workers,
                          pin_memory=pin, persistent_workers=num_workers > 0,
                          generator=generator)
    return DataLoader(ds, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                      pin_memory=pin, persistent_workers=num_workers > 0, generator=generator)


def _prepare_inputs(algorithm: Algorithm, x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """uint8 or [0, 1] images -> normalised float, NHWC in memory with ``channels_last``."""
    x = algorithm.input_norm(to_unit_float(x))
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def training_step(algo: Algorithm, config: TrainConfig, device: torch.device,
                  why_eager: str | None) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    """The training step of ``config`` for ``algo``: inputs made float, normalised and laid out
    (``channels_last``), ``algo.update`` under the config's precision; one CUDA graph when
    ``why_eager`` is None (:func:`~shortcutlab.train.step_modes.cuda_graph_plan` said it is
    safe), eager otherwise."""

    def one_step(batch: dict[str, Any]) -> Mapping[str, Any]:
        batch["x"] = _prepare_inputs(algo, batch["x"], config.channels_last)
        with autocast_for(device, config.precision, cache=why_eager is not None):
            return algo.update(batch)

    return one_step if why_eager is not None else GraphedStep(one_step, optimizers_of(algo))


def train_epoch(algo: Algorithm, batches: Iterable[Mapping[str, Any]],
                run_step: Callable[[dict[str, Any]], Mapping[str, Any]], device: torch.device,
                *, epoch: int, step: int, keys: tuple[str, ...] = ("loss",),
                on_step: Callable[[], None] | None = None) -> tuple[dict[str, float], int]:
    """One training epoch: every batch moved to ``device`` and given to ``run_step`` (see
    :func:`training_step`), ``algo.step`` counting on from ``step``. Returns the per-item means
    of the step outputs named in ``keys`` (each must be there and finite; the trainer names
    ``loss``) and the step count after the epoch. Tensor outputs are summed on the device, with
    no host round trip per step (the GPU never waits for Python), and checked once at the end.
    ``on_step`` is called after every step (a progress bar)."""
    algo.train()
    algo.start_epoch(epoch)  # step learning-rate schedule (BiasBed recipe)
    sums: dict[str, float | torch.Tensor] = dict.fromkeys(keys, 0.0)
    seen, first_step = 0, step
    for batch in batches:
        batch = _to_device(batch, device)
        algo.step = step
        out = run_step(batch)
        n = len(batch["y"])
        for key in keys:
            value = out.get(key)
            if value is None or (not isinstance(value, torch.Tensor)
                                 and not math.isfinite(value)):
                raise TrainError(f"algorithm {algo.config.algorithm!r} returned no finite "
                                 f"{key!r} at step {step}: {out}")
            sums[key] = sums[key] + (value.detach().double() * n
                                     if isinstance(value, torch.Tensor) else value * n)
        seen += n
        step += 1
        if on_step is not None:
            on_step()
    means = {key: float(total) / max(seen, 1) for key, total in sums.items()}
    for key, mean in means.items():
        if not math.isfinite(mean):
            raise TrainError(f"algorithm {algo.config.algorithm!r} returned no finite {key!r} "
                             f"in steps {first_step}-{step - 1} (epoch {epoch})")
    return means, step


@torch.inference_mode()
def evaluate(
    algorithm: Algorithm,
    dataset: Dataset,
    *,
    device: torch.device,
    batch_size: int = 256,
    num_workers: int = 0,
    loader: Iterable[Mapping[str, Any]] | None = None,
    precision: str = "fp32",
    channels_last: bool = False,
) -> EvalResult:
    """Cross-entropy loss, mean per-class accuracy, and per-tag accuracy (if the dataset has
    ``tags``, one string per index) of ``algorithm`` on ``dataset``; images are normalised by
    ``algorithm.input_norm`` first. ``loader``: any iterable of batches (a DataLoader,
    :class:`~shortcutlab.train.batches.DeviceBatches`); ``precision``/``channels_last`` as in
    :class:`TrainConfig`."""
    was_training = algorithm.training
    algorithm.eval()
    loader = loader or _loader(dataset, None, batch_size, num_workers, device.type == "cuda")
    labels, preds, indices, losses = [], [], [], []
    position = 0
    for batch in loader:
        batch = _to_device(batch, device)
        with autocast_for(device, precision):
            logits = algorithm.predict(_prepare_inputs(algorithm, batch["x"], channels_last))
        logits = logits.float()
        head = getattr(dataset, "reduce_logits", None)  # a test set's head, e.g. 1000 -> 16
        if head is not None:
            logits = head(logits)
        y = batch["y"]
        # Kept where they are made and copied to the host once at the end (one device sync
        # per evaluation, not four per batch).
        losses.append(F.cross_entropy(logits.double(), y, reduction="none"))
        labels.append(y)
        preds.append(logits.argmax(1))
        idx = batch.get("index")
        n = len(y)
        if isinstance(idx, torch.Tensor):
            indices.append(idx)
        else:
            indices.append(torch.arange(position, position + n))
        position += n
    algorithm.train(was_training)
    y_true, y_pred, index, loss_all = (
        _host_concat(parts) for parts in (labels, preds, indices, losses))
    k, accuracy = algorithm.num_classes, _accuracy_of(dataset)
    result = EvalResult(
        loss=float(loss_all.mean()) if len(loss_all) else math.nan,
        acc=accuracy(y_pred, y_true, k),
        n=len(y_true),
    )
    tags = getattr(dataset, "tags", None)
    if tags is not None and len(y_true):
        tag_of = np.asarray(tags)[index]
        for tag in sorted(set(tag_of.tolist())):
            mask = tag_of == tag
            result.tags[str(tag)] = (
                accuracy(y_pred[mask], y_true[mask], k),
                int(mask.sum()),
            )
    return result


def _accuracy_of(dataset: Dataset) -> Any:
    """Accuracy as the dataset asks (``metric = "top1"``: top-1), else mean per-class; either
    is called as ``(preds, target, num_classes)``."""
    if getattr(dataset, "metric", "mean_per_class") == "top1":
        return top1_accuracy
    return mean_per_class_accuracy


def _host_concat(parts: list[torch.Tensor]) -> np.ndarray:
    """The concatenation of ``parts`` (on any devices) as one host array (int64 when empty)."""
    if not parts:
        return np.zeros(0, np.int64)
    return torch.cat([p.to(parts[0].device) for p in parts]).cpu().numpy()


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


def input_stats(config: TrainConfig, train_ds: Dataset, num_workers: int = 0,
                device: torch.device | None = None) -> ChannelStats:
    """The channel statistics ``config`` normalises inputs with (streams ``train_ds`` once for
    ``train``; :data:`STATS_BATCH_SIZE` items at a time, whatever the runtime options). With
    ``device``, the dataset's batches are made there (see
    :class:`~shortcutlab.train.batches.DeviceBatches`)."""
    source = resolve_normalization(config)
    if source == "train" and device is not None:
        return channel_stats(DeviceItems(train_ds, device), batch_size=STATS_BATCH_SIZE)
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
    eval_batch_size: int | None = None,
    keep_best_state: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
    device_batches: bool | None = None,
    cuda_graphs: str | None = None,
    compile: bool | None = None,
) -> TrainResult:
    """Train ``config.algorithm`` on ``train_ds``; evaluate ``val_ds`` and every test set each
    epoch; report the epoch with the lowest validation loss.

    ``context`` carries what some algorithms need besides batches (Stylized: the generator).
    ``progress`` is called after every epoch with that epoch's summary. Runtime options (workers,
    eval batch size) do not change results, except the last float32 bits of evaluation outputs,
    which the eval batch size may change; the device changes them through its arithmetic.

    ``device_batches``: make every batch on the device with the datasets' ``device_batch``
    (DiagViB-6 renders there: uint8 images made and normalised on the GPU, never copied through
    the host, no DataLoader); ``None`` (default) does so on CUDA when every dataset can. Its
    images equal the CPU renderer's within ±1 intensity level. ``eval_batch_size``: default 256,
    or :data:`~shortcutlab.train.batches.DEVICE_EVAL_BATCH_SIZE` with device batches.

    ``cuda_graphs``: ``auto`` runs the training step as one CUDA graph where
    :func:`~shortcutlab.train.step_modes.cuda_graph_plan` finds it safe (same numbers as eager
    up to floating-point order), ``off`` never; ``compile``: torch.compile the network(s) first
    (measure before use: the compile time must pay for itself). None: this process's runtime
    options (:mod:`shortcutlab.train.runtime`; ``auto`` and no compile unless set). The
    result's ``step_mode`` says how the step ran and, when eager, why.
    """
    if not isinstance(config, TrainConfig):
        raise TrainError(
            f"train() takes a TrainConfig first (got {type(config).__name__}); the algorithm is "
            "its `algorithm` field"
        )
    device = torch.device(device)
    check_precision(config.precision, device)
    cuda_graphs = check_cuda_graphs(cuda_graphs) if cuda_graphs is not None else (
        cuda_graphs_default())
    compile = compile_default() if compile is None else compile
    if len(train_ds) == 0 or len(val_ds) == 0:  # type: ignore[arg-type]
        raise TrainError("training and validation sets must not be empty")
    num_classes = _num_classes(train_ds)
    datasets = [train_ds, val_ds, *test_sets.values()]
    if device_batches is None:
        device_batches = device.type == "cuda" and all(map(makes_device_batches, datasets))
    elif device_batches and not all(map(makes_device_batches, datasets)):
        lacking = sorted({type(d).__name__ for d in datasets if not makes_device_batches(d)})
        raise TrainError("device_batches=True needs datasets with a device_batch method; "
                         f"{', '.join(lacking)} has none")
    if eval_batch_size is None:
        eval_batch_size = DEVICE_EVAL_BATCH_SIZE if device_batches else 256
    start = time.perf_counter()
    stats = input_stats(config, train_ds, num_workers, device if device_batches else None)
    fork_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(torch_seed(config.seed, "torch"))
        algo = create_algorithm(config.algorithm, num_classes, config, context)
        algo.input_norm.set_stats(stats)
        algo.to(device)
        algo.grad_scaler = make_grad_scaler(config.precision, device)
        if config.channels_last:
            algo.to(memory_format=torch.channels_last)
        if compile:
            compile_networks(algo)
        why_eager = cuda_graph_plan(cuda_graphs, device, config, algo,
                                    len(train_ds), compiled=compile)  # type: ignore[arg-type]
        return _fit(
            algo, train_ds, val_ds, test_sets, config, device, num_workers, eval_batch_size,
            keep_best_state, progress, start, stats, device_batches=device_batches,
            why_eager=why_eager, compiled=compile,
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
    *,
    device_batches: bool = False,
    why_eager: str | None = "cuda_graphs is off",
    compiled: bool = False,
) -> TrainResult:
    pin = device.type == "cuda"
    sampler = EpochBatches(
        len(train_ds), config.batch_size, config.seed, config.drop_last  # type: ignore[arg-type]
    )
    train_loader: Iterable[Mapping[str, Any]]
    eval_loaders: dict[str, Iterable[Mapping[str, Any]]]
    if device_batches:
        train_loader = DeviceBatches(train_ds, device, sampler=sampler)
        eval_loaders = {name: DeviceBatches(ds, device, batch_size=eval_batch_size)
                        for name, ds in {"__val__": val_ds, **test_sets}.items()}
    else:
        train_loader = _loader(train_ds, sampler, config.batch_size, num_workers, pin,
                               seed=torch_seed(config.seed, "loader"))
        eval_loaders = {
            name: _loader(ds, None, eval_batch_size, num_workers, pin)
            for name, ds in {"__val__": val_ds, **test_sets}.items()
        }
    forward: dict[str, Any] = {"precision": config.precision, "channels_last": config.channels_last}
    run_step = training_step(algo, config, device, why_eager)
    rows: list[dict[str, Any]] = []
    best: tuple[float, int] = (math.inf, -1)
    best_evals: dict[str, EvalResult] = {}
    best_state: dict[str, torch.Tensor] | None = None
    since_best, step, epoch = 0, 0, -1
    stopped_early = False
    for epoch in range(config.epochs):
        sampler.set_epoch(epoch)
        means, step = train_epoch(algo, train_loader, run_step, device, epoch=epoch, step=step)
        val = evaluate(algo, val_ds, device=device, loader=eval_loaders["__val__"], **forward)
        tests = {
            name: evaluate(algo, ds, device=device, loader=eval_loaders[name], **forward)
            for name, ds in test_sets.items()
        }
        train_loss = means["loss"]
        base = {"epoch": epoch, "train_loss": train_loss, "val_loss": val.loss, "val_acc": val.acc}
        for name, res in tests.items():
            rows.append({**base, "test_set": name, "tag": "all", "acc": res.acc, "n": res.n})
            for tag, (acc, n) in res.tags.items():
                rows.append({**base, "test_set": name, "tag": tag, "acc": acc, "n": n})
        if not tests:
            rows.append({**base, "test_set": "", "tag": "all", "acc": math.nan, "n": 0})
        val_loss = math.inf if math.isnan(val.loss) else val.loss  # NaN: never the lowest
        if best[1] < 0 or val_loss < best[0]:
            best = (val_loss, epoch)
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
        step_mode=step_mode_of(run_step, why_eager),
        compiled=compiled,
    )
