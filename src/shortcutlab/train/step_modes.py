"""How the training step runs (a run's ``step_mode``): as one CUDA graph, captured once and
replayed every step, where that is safe, else eagerly; and ``torch.compile`` of the networks.

:func:`cuda_graph_plan` decides whether a run's step can be a graph (or says why not),
:class:`GraphedStep` warms the step up, captures and replays it (falling back to eager steps if
the capture fails), :func:`step_mode_of` words the outcome for the result, and
:func:`compile_networks` compiles an algorithm's networks in place. Both are runtime options
(:mod:`shortcutlab.train.runtime`) that never change a job's id; a graphed step gives eager's
numbers up to floating-point order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from shortcutlab.train.algorithms.base import Algorithm, optimizers_of
from shortcutlab.train.batches import EpochBatches
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.runtime import check_cuda_graphs

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
    sizes = sorted({len(chunk) for chunk in sampler.batches()})
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


def step_mode_of(run_step: Any, why_eager: str | None) -> str:
    """The ``step_mode`` of a run whose step is ``run_step`` (``why_eager``: what
    :func:`cuda_graph_plan` said): ``graph``, or ``eager: <why>`` (not planned, or the capture
    failed)."""
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
