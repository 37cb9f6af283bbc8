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
number of DataLoader workers: shuffling comes from ``rng(seed, "shuffle", epoch)``, weight
initialisation and other torch draws from a torch RNG forked and seeded from ``config.seed``.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
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
from shortcutlab.train.runtime import check_cuda_graphs, compile_default, cuda_graphs_default
from shortcutlab.utils.rng import rng, torch_seed

EPOCH_COLUMNS = ("epoch", "train_loss", "val_loss", "val_acc", "test_set", "tag", "acc", "n")


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
    ds: Dataset, batch_sampler: Sampler | None, batch_size: int, num_workers: int, pin: bool
) -> DataLoader:
    if batch_sampler is not None:
        return DataLoader(
            ds, batch_sampler=batch_sampler, num_workers=num_workers, pin_memory=pin,
            persistent_workers=num_workers > 0,
        )
    return DataLoader(ds, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                      pin_memory=pin, persistent_workers=num_workers > 0)


#: Evaluation batch size when batches are made on the device (``eval_batch_size=None``).
DEVICE_EVAL_BATCH_SIZE = 1024


def makes_device_batches(dataset: Dataset) -> bool:
    """Whether ``dataset`` can make its batches on an accelerator: it has a method
    ``device_batch(indices: Tensor, device) -> dict`` returning at least ``x`` (uint8 or float
    images) and ``y`` on that device (DiagViB-6 datasets render there)."""
    return callable(getattr(dataset, "device_batch", None))


class DeviceBatches:
    """Batches made on ``device`` by ``dataset.device_batch``: images never pass through the host
    and no DataLoader runs. Indices come from ``sampler`` (lists of indices, e.g.
    :class:`EpochBatches`; the epoch's whole order is copied to the device once) or, without
    one, in order, ``batch_size`` at a time."""

    def __init__(self, dataset: Dataset, device: torch.device, *, sampler: Sampler | None = None,
                 batch_size: int = DEVICE_EVAL_BATCH_SIZE) -> None:
        self.dataset, self.device, self.sampler, self.batch_size = (
            dataset, device, sampler, batch_size)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        n = len(self.dataset)  # type: ignore[arg-type]
        chunks = ([np.asarray(c, dtype=np.int64) for c in self.sampler] if self.sampler is not None
                  else [np.arange(a, min(n, a + self.batch_size)) for a in
                        range(0, n, self.batch_size)])
        if not chunks:
            return
        order = torch.from_numpy(np.concatenate(chunks)).to(self.device)
        position = 0
        for chunk in chunks:
            yield self.dataset.device_batch(  # type: ignore[attr-defined]
                order[position:position + len(chunk)], self.device)
            position += len(chunk)

    def __len__(self) -> int:
        if self.sampler is not None:
            return len(self.sampler)  # type: ignore[arg-type]
        return -(-len(self.dataset) // self.batch_size)  # type: ignore[arg-type]


class _DeviceItems(Dataset):
    """A view of a device-batch dataset as items (``x`` only) for :func:`channel_stats`: each
    DataLoader batch is rendered on the device in one call."""

    def __init__(self, dataset: Dataset, device: torch.device) -> None:
        self.dataset, self.device = dataset, device

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitems__(self, indices: list[int]) -> list[dict[str, torch.Tensor]]:
        idx = torch.as_tensor(indices, dtype=torch.int64).to(self.device)
        x = self.dataset.device_batch(idx, self.device)["x"]  # type: ignore[attr-defined]
        return [{"x": image} for image in x]


#: The autocast dtype of each mixed precision (``fp32``: no autocast).
AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def precision_available(precision: str, device: torch.device) -> bool:
    """Whether torch can autocast to ``precision`` on ``device`` (and, for fp16, scale the
    loss there); fp32 always."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return precision == "fp32"
    available = getattr(torch.amp, "is_autocast_available", None)  # torch >= 2.4
    if available is not None and not available(device.type):
        return False
    if device.type == "cuda" and dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        return False
    with warnings.catch_warnings(record=True) as caught:  # torch warns and disables itself
        warnings.simplefilter("always")
        try:
            torch.autocast(device.type, dtype=dtype)
            if dtype == torch.float16 and not _grad_scaler(device).is_enabled():
                return False
        except (RuntimeError, AttributeError):  # an older torch without it on this device
            return False
    return not caught


def _grad_scaler(device: torch.device) -> Any:
    """torch's GradScaler for ``device`` (``torch.amp`` from torch 2.3, CUDA's before)."""
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type)
    if device.type != "cuda":
        raise AttributeError("no GradScaler for this device in this torch")
    return torch.cuda.amp.GradScaler()


def check_precision(precision: str, device: torch.device) -> None:
    """TrainError naming the precisions ``device`` can run, unless it can run ``precision``."""
    if not precision_available(precision, device):
        valid = [p for p in ("fp32", *AUTOCAST_DTYPES) if precision_available(p, device)]
        raise TrainError(f"precision {precision!r} is not available on device {device} with "
                         f"torch {torch.__version__}; valid choices there: {', '.join(valid)}")


def make_grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
    """The loss scaler of ``precision="fp16"`` (torch's GradScaler on ``device``), else None."""
    return _grad_scaler(device) if precision == "fp16" else None


def _autocast(device: torch.device, precision: str, cache: bool = True) -> Any:
    """Autocast to bfloat16 (``bf16``) or float16 (``fp16``) on ``device``, else nothing;
    :func:`check_precision` has refused devices that cannot. ``cache=False`` for CUDA graphs
    (autocast's weight cache must not outlive a capture)."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype, cache_enabled=cache)


def _prepare_inputs(algorithm: Algorithm, x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """uint8 or [0, 1] images -> normalised float, NHWC in memory with ``channels_last``."""
    x = algorithm.input_norm(to_unit_float(x))
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


#: Eager steps (on a side stream) before the training step is captured as a CUDA graph: they
#: let cuDNN pick its kernels and the optimiser make its state, as torch's guide asks.
GRAPH_WARMUP_STEPS = 3


def cuda_graph_plan(mode: str, device: torch.device, config: TrainConfig, algorithm: Algorithm,
                    n_train: int, *, compiled: bool = False) -> str | None:
    """None when the training step of ``algorithm`` can run as one CUDA graph (captured once,
    replayed every step), else why not, in a few words (recorded as the job's ``step_mode``).

    A graph replays fixed kernels on fixed memory, so every step must look the same: a CUDA
    device; the algorithm's ``update`` declared static (:attr:`Algorithm.graph_safe`); every
    training batch of one size (``drop_last``, or a training set divisible by the batch size);
    no fp16 (its gradient scaler decides on the host whether to step); Adam as the only kind of
    optimiser (its ``capturable`` step); no learning-rate schedule (the rate is baked into the
    captured step); no torch.compile (it has graphs of its own)."""
    check_cuda_graphs(mode)
    if mode == "off":
        return "cuda_graphs is off"
    if device.type != "cuda":
        return f"device {device.type} (CUDA graphs need a CUDA device)"
    if not type(algorithm).update_is_graph_safe():
        return f"algorithm {config.algorithm!r} does not declare a static update (graph_safe)"
    if config.precision == "fp16":
        return "precision fp16 (the gradient scaler decides on the host whether to step)"
    if config.lr_milestones:
        return "a learning-rate schedule (lr_milestones) changes the captured step"
    kinds = sorted({type(opt).__name__ for opt in optimizers_of(algorithm)})
    if kinds != ["Adam"]:
        return f"optimiser {', '.join(kinds) or '(none)'} (only Adam's step is captured)"
    if compiled:
        return "the network is torch.compiled"
    sampler = EpochBatches(n_train, config.batch_size, config.seed, config.drop_last)
    sizes = sorted({len(chunk) for chunk in sampler._batches()})
    if len(sizes) > 1:
        return (f"training batches of {sizes[0]} and {sizes[-1]} images (the last one is kept: "
                "drop_last is off)")
    return None


class GraphedStep:
    """A training step function replayed as one CUDA graph: :data:`GRAPH_WARMUP_STEPS` eager
    steps on a side stream, then the step is captured on the next batch's static copy and every
    later call copies its batch into that memory and replays the graph. The returned dict is
    the same static output each time (read it before the next call). Only for steps that
    :func:`cuda_graph_plan` accepts. If the capture itself fails (a network that synchronises
    with the host, e.g. a user's model calling ``.item()``), the step runs eagerly from then on
    and :attr:`failed` says why."""

    def __init__(self, step: Callable[[dict[str, Any]], Mapping[str, Any]],
                 optimizers: list[torch.optim.Optimizer], cuda: Any = None) -> None:
        self.step, self.optimizers = step, optimizers
        self.cuda = cuda if cuda is not None else torch.cuda  # tests pass a stand-in
        self.graph: Any = None
        self.inputs: dict[str, torch.Tensor] = {}
        self.output: Mapping[str, Any] = {}
        self.warmed = 0
        self.stream: Any = None
        #: Why the capture failed (the step then runs eagerly), or None.
        self.failed: str | None = None
        for opt in optimizers:  # Adam keeps its step count on the device, so it can be captured
            for group in opt.param_groups:
                group["capturable"] = True

    def __call__(self, batch: dict[str, Any]) -> Mapping[str, Any]:
        if self.failed is not None:
            return self.step(batch)
        if self.graph is None and self.warmed < GRAPH_WARMUP_STEPS:
            self.warmed += 1
            if self.stream is None:
                self.stream = self.cuda.Stream()
            self.stream.wait_stream(self.cuda.current_stream())
            with self.cuda.stream(self.stream):
                out = self.step(batch)
            self.cuda.current_stream().wait_stream(self.stream)
            return out
        if self.graph is None and not self._capture(batch):
            return self.step(batch)
        for key, static in self.inputs.items():
            static.copy_(batch[key], non_blocking=True)
        self.graph.replay()
        return self.output

    def _capture(self, batch: dict[str, Any]) -> bool:
        """Capture the step on a static copy of ``batch``; False (and :attr:`failed` set, the
        gradients cleared) when the capture fails."""
        self.inputs = {k: v.clone() for k, v in batch.items() if isinstance(v, torch.Tensor)}
        for opt in self.optimizers:  # backward then makes .grad in the graph's own memory
            opt.zero_grad(set_to_none=True)
        self.cuda.synchronize()
        graph = self.cuda.CUDAGraph()
        try:
            with self.cuda.graph(graph):
                self.output = self.step({**batch, **self.inputs})
        except Exception as exc:  # nothing captured ran: parameters and optimiser unchanged
            first = (str(exc).strip().splitlines() or [""])[0][:160]
            self.failed = f"the CUDA graph capture failed ({type(exc).__name__}: {first})"
            self.inputs, self.output = {}, {}
            for opt in self.optimizers:
                opt.zero_grad(set_to_none=True)
            self.cuda.synchronize()
            return False
        self.graph = graph
        return True


def _step_mode(run_step: Any, why_eager: str | None) -> str:
    """``graph``, or ``eager: <why>`` (not planned, or the capture failed)."""
    if why_eager is not None:
        return f"eager: {why_eager}"
    failed = getattr(run_step, "failed", None)
    return "graph" if failed is None else f"eager: {failed}"


#: torch.compile's backend for ``compile=True`` (tests use ``eager``: tracing without codegen).
COMPILE_BACKEND = "inductor"


def compile_networks(algorithm: Algorithm) -> list[str]:
    """torch.compile, in place, the algorithm's network(s) (its direct sub-modules that hold
    parameters, except the input normalisation); their names. In place, so parameter names
    and checkpoints stay those of eager training."""
    names = []
    for name, module in algorithm.named_children():
        if module is algorithm.input_norm or not any(True for _ in module.parameters()):
            continue
        module.compile(backend=COMPILE_BACKEND)
        names.append(name)
    return names


def training_step(algo: Algorithm, config: TrainConfig, device: torch.device,
                  why_eager: str | None) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    """The training step of ``config`` for ``algo``: inputs made float, normalised and laid out
    (``channels_last``), ``algo.update`` under the config's precision; one CUDA graph when
    ``why_eager`` is None (:func:`cuda_graph_plan` said it is safe), eager otherwise."""

    def one_step(batch: dict[str, Any]) -> Mapping[str, Any]:
        batch["x"] = _prepare_inputs(algo, batch["x"], config.channels_last)
        with _autocast(device, config.precision, cache=why_eager is not None):
            return algo.update(batch)

    return one_step if why_eager is not None else GraphedStep(one_step, optimizers_of(algo))


def train_epoch(algo: Algorithm, batches: Iterable[Mapping[str, Any]],
                run_step: Callable[[dict[str, Any]], Mapping[str, Any]], device: torch.device,
                *, epoch: int, step: int, keys: tuple[str, ...] = ("loss",),
                on_step: Callable[[], None] | None = None) -> tuple[dict[str, float], int]:
    """One training epoch: every batch moved to ``device`` and given to ``run_step`` (see
    :func:`training_step`), ``algo.step`` counting on from ``step``. Returns the per-item means
    of the step outputs named in ``keys`` (``loss`` first: it must be there and finite) and the
    step count after the epoch. Tensor outputs are summed on the device, with no host round trip
    per step (the GPU never waits for Python), and checked once at the end. ``on_step`` is
    called after every step (a progress bar)."""
    algo.train()
    algo.start_epoch(epoch)  # step learning-rate schedule (BiasBed recipe)
    sums: dict[str, float | torch.Tensor] = dict.fromkeys(keys, 0.0)
    seen, first_step = 0, step
    for batch in batches:
        batch = _to_device(batch, device)
        algo.step = step
        out = run_step(batch)
        for key in keys:
            value = out.get(key)
            if value is None or (not isinstance(value, torch.Tensor)
                                 and not math.isfinite(value)):
                raise TrainError(f"algorithm {algo.config.algorithm!r} returned no finite "
                                 f"{key!r} at step {step}: {out}")
            n = len(batch["y"])
            sums[key] = sums[key] + (value.detach().double() * n
                                     if isinstance(value, torch.Tensor) else value * n)
        seen += len(batch["y"])
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
    :class:`DeviceBatches`); ``precision``/``channels_last`` as in :class:`TrainConfig`."""
    was_training = algorithm.training
    algorithm.eval()
    loader = loader or _loader(dataset, None, batch_size, num_workers, device.type == "cuda")
    labels, preds, indices, losses = [], [], [], []
    position = 0
    for batch in loader:
        batch = _to_device(batch, device)
        with _autocast(device, precision):
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
    ``device``, the dataset's batches are made there (see :class:`DeviceBatches`)."""
    source = resolve_normalization(config)
    if source == "train" and device is not None:
        return channel_stats(_DeviceItems(train_ds, device), batch_size=STATS_BATCH_SIZE)
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
    ``progress`` is called after every epoch with that epoch's summary. Runtime options (device,
    workers, eval batch size) do not change results.

    ``device_batches``: make every batch on the device with the datasets' ``device_batch``
    (DiagViB-6 renders there: uint8 images made and normalised on the GPU, never copied through
    the host, no DataLoader); ``None`` (default) does so on CUDA when every dataset can. Its
    images equal the CPU renderer's within ±1 intensity level. ``eval_batch_size``: default 256,
    or :data:`DEVICE_EVAL_BATCH_SIZE` with device batches.

    ``cuda_graphs``: ``auto`` runs the training step as one CUDA graph where
    :func:`cuda_graph_plan` finds it safe (same numbers as eager up to floating-point order),
    ``off`` never; ``compile``: torch.compile the network(s) first (measure before use: the
    compile time must pay for itself). None: this process's runtime options
    (:mod:`shortcutlab.train.runtime`; ``auto`` and no compile unless set). The result's
    ``step_mode`` says how the step ran and, when eager, why.
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
        train_loader = _loader(train_ds, sampler, config.batch_size, num_workers, pin)
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
        step_mode=_step_mode(run_step, why_eager),
        compiled=compiled,
    )
