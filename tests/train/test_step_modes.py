"""How the training step runs: as one CUDA graph where that is safe (the decision and the eager
fallback with its reason, tested on any machine; the capture itself only on CUDA), and with
torch.compile as a runtime option."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.train import step_modes
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.algorithms.base import Algorithm, optimizers_of
from shortcutlab.train.algorithms.erm import ERM
from shortcutlab.train.algorithms.infodrop import InfoDrop
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.runtime import CUDA_GRAPHS_ENV, runtime_options
from shortcutlab.train.step_modes import cuda_graph_plan
from shortcutlab.train.trainer import train
from tests.train.fake_data import FakeDiagvib

CUDA = torch.device("cuda")  # a device object only: nothing below touches CUDA without one
CFG = TrainConfig(model="small_cnn", model_kwargs={"width": 8}, epochs=2, batch_size=16,
                  lr=3e-3, drop_last=True)
DATA = dict(
    train_ds=FakeDiagvib(96), val_ds=FakeDiagvib(24, split="val"),
    test_sets={"test": FakeDiagvib(30, split="test", ood=True)},
)


def _plan(cfg: TrainConfig = CFG, n: int = 96, device: torch.device = CUDA, mode: str = "auto",
          **kwargs: bool) -> str | None:
    algo = create_algorithm(cfg.algorithm, 3, cfg)
    return cuda_graph_plan(mode, device, cfg, algo, n, **kwargs)


def test_erm_on_cuda_with_static_batches_is_graphed() -> None:
    assert _plan() is None
    assert _plan(CFG.replace(precision="bf16", channels_last=True)) is None
    # without drop_last the batches are static when the training set divides evenly
    assert _plan(CFG.replace(drop_last=False), n=96) is None


@pytest.mark.parametrize(("change", "n", "device", "mode", "reason"), [
    ({}, 96, torch.device("cpu"), "auto", "device cpu"),
    ({}, 96, CUDA, "off", "cuda_graphs is off"),
    ({"drop_last": False}, 100, CUDA, "auto", "training batches of 4 and 16 images"),
    ({"algorithm": "infodrop"}, 96, CUDA, "auto", "'infodrop' does not declare a static update"),
    ({"precision": "fp16"}, 96, CUDA, "auto", "precision fp16"),
    ({"lr_milestones": [1]}, 96, CUDA, "auto", "learning-rate schedule"),
    ({"optimizer": "sgd"}, 96, CUDA, "auto", "optimiser SGD"),
])
def test_steps_that_cannot_be_graphed_say_why(change, n, device, mode, reason) -> None:
    why = _plan(CFG.replace(**change), n=n, device=device, mode=mode)
    assert why is not None and reason in why


def test_a_compiled_network_is_not_graphed_and_bad_modes_are_refused() -> None:
    assert "torch.compiled" in (_plan(compiled=True) or "")
    with pytest.raises(TrainError, match="unknown cuda_graphs mode 'on'; valid choices: auto, off"):
        _plan(mode="on")


def test_graph_safety_is_declared_by_the_class_defining_update() -> None:
    class Wider(ERM):  # inherits ERM's update: stays graph-safe
        pass

    class Reseeding(ERM):  # a new update must declare itself
        def update(self, batch):  # type: ignore[no-untyped-def]
            return super().update(batch)

    assert ERM.update_is_graph_safe() and Wider.update_is_graph_safe()
    assert not Reseeding.update_is_graph_safe()
    assert not InfoDrop.update_is_graph_safe()  # reseeds its dropout from the host each step
    assert not Algorithm.update_is_graph_safe()


def test_train_records_the_eager_fallback_and_its_reason() -> None:
    res = train(CFG, **DATA)
    assert res.step_mode == "eager: device cpu (CUDA graphs need a CUDA device)"
    assert res.summary()["step_mode"] == res.step_mode and res.summary()["compiled"] is False
    with pytest.raises(TrainError, match="valid choices: auto, off"):
        train(CFG, **DATA, cuda_graphs="always")


def test_runtime_options_reach_train_through_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(CUDA_GRAPHS_ENV, raising=False)
    with runtime_options(cuda_graphs="off"):
        assert os.environ[CUDA_GRAPHS_ENV] == "off"
        res = train(CFG.replace(epochs=1), **DATA)
    assert res.step_mode == "eager: cuda_graphs is off"
    assert CUDA_GRAPHS_ENV not in os.environ  # restored
    with pytest.raises(TrainError, match="valid choices: auto, off"), runtime_options(
            cuda_graphs="sometimes"):
        pass


def test_compile_option_compiles_in_place_and_changes_no_number(monkeypatch) -> None:
    """torch.compile with the ``eager`` backend (Dynamo's tracing without code generation: the
    default inductor needs a minute of C++ compilation on a small CPU): parameter names stay,
    numbers equal eager training's."""
    monkeypatch.setattr(step_modes, "COMPILE_BACKEND", "eager")
    algo = create_algorithm("erm", 3, CFG)
    names = list(algo.state_dict())
    assert step_modes.compile_networks(algo) == ["network"]
    assert algo.network._compiled_call_impl is not None and list(algo.state_dict()) == names
    cfg = CFG.replace(epochs=1)
    plain, compiled = train(cfg, **DATA), train(cfg, **DATA, compile=True)
    assert compiled.compiled and not plain.compiled
    assert "torch.compiled" not in plain.step_mode
    np.testing.assert_allclose(compiled.epochs["train_loss"], plain.epochs["train_loss"],
                               rtol=1e-6)
    assert compiled.test_acc == plain.test_acc


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_graph_step_matches_eager_on_cuda(precision: str) -> None:
    """On a GPU: ERM's step captured and replayed gives eager's numbers up to floating-point
    order (more steps than the warm-up, so most of them are replays)."""
    cfg = CFG.replace(epochs=3, precision=precision)
    graphed = train(cfg, **DATA, device="cuda", cuda_graphs="auto", device_batches=False)
    eager = train(cfg, **DATA, device="cuda", cuda_graphs="off", device_batches=False)
    assert graphed.step_mode == "graph" and eager.step_mode == "eager: cuda_graphs is off"
    tol = {"rtol": 1e-3, "atol": 1e-4} if precision == "fp32" else {"rtol": 3e-2, "atol": 3e-2}
    torch.testing.assert_close(graphed.epochs["train_loss"].to_numpy(),
                               eager.epochs["train_loss"].to_numpy(), **tol)
    torch.testing.assert_close(graphed.epochs["val_loss"].to_numpy(),
                               eager.epochs["val_loss"].to_numpy(), **tol)


class _FakeCuda:
    """torch.cuda as GraphedStep uses it, on the CPU: streams do nothing, and a capture runs the
    step with ``capturing`` set (a real capture records kernels without running them)."""

    capturing = False

    class Stream:
        def wait_stream(self, other: object) -> None:
            pass

    class CUDAGraph:
        pass

    @staticmethod
    def current_stream() -> _FakeCuda.Stream:
        return _FakeCuda.Stream()

    @staticmethod
    @contextlib.contextmanager
    def stream(_stream: object):
        yield

    @staticmethod
    def synchronize() -> None:
        pass

    @staticmethod
    @contextlib.contextmanager
    def graph(_graph: object):
        _FakeCuda.capturing = True
        try:
            yield
        finally:
            _FakeCuda.capturing = False


def test_a_failed_capture_falls_back_to_eager_steps_and_says_why() -> None:
    """A network that synchronises with the host cannot be captured: the step that tried runs
    eagerly, every later one too, and the training is that of eager steps throughout."""
    batch = {"x": torch.rand(16, 3, 32, 32), "y": torch.arange(16) % 3}

    def make() -> Algorithm:
        torch.manual_seed(0)
        return create_algorithm("erm", 3, CFG)

    graphed_algo, eager_algo = make(), make()

    def step(b):  # type: ignore[no-untyped-def]
        if _FakeCuda.capturing:
            raise RuntimeError("operation not permitted when stream is capturing\nmore")
        return graphed_algo.update(dict(b))

    runner = step_modes.GraphedStep(step, optimizers_of(graphed_algo), cuda=_FakeCuda)
    for opt in optimizers_of(graphed_algo):  # capturable Adam needs CUDA tensors
        for group in opt.param_groups:
            group["capturable"] = False
    losses = [float(runner(batch)["loss"]) for _ in range(6)]
    eager = [float(eager_algo.update(dict(batch))["loss"]) for _ in range(6)]
    assert losses == eager and runner.warmed == step_modes.GRAPH_WARMUP_STEPS
    assert runner.graph is None and runner.failed == (
        "the CUDA graph capture failed (RuntimeError: operation not permitted when stream is "
        "capturing)")
    for a, b in zip(graphed_algo.parameters(), eager_algo.parameters(), strict=True):
        assert torch.equal(a, b)
    assert step_modes.step_mode_of(runner, None) == f"eager: {runner.failed}"
    assert step_modes.step_mode_of(object(), None) == "graph"


def test_drop_last_makes_an_uneven_training_set_static_for_a_graph() -> None:
    """100 images in batches of 16 with ``drop_last``: six batches of 16 (the 4 left over are
    dropped), every step the same shape, so the step can be a graph; without drop_last it
    cannot (the parametrised case above)."""
    assert _plan(CFG, n=100) is None
    assert "training batches of 4 and 16" in (_plan(CFG.replace(drop_last=False), n=100) or "")


def test_adam_beside_another_optimiser_is_not_graphed() -> None:
    """Only Adam's step is captured (``capturable``): an algorithm holding Adam and SGD must
    run eagerly, naming both."""
    algo = create_algorithm(CFG.algorithm, 3, CFG)
    algo.opt_extra = torch.optim.SGD(algo.parameters(), lr=0.1)
    assert sorted(type(o).__name__ for o in optimizers_of(algo)) == ["Adam", "SGD"]
    why = cuda_graph_plan("auto", CUDA, CFG, algo, 96)
    assert why is not None and "optimiser Adam, SGD" in why


def test_a_capture_failing_after_backward_leaves_no_gradient_for_the_eager_steps() -> None:
    """A capture that fails after the backward pass (a host sync in an optimiser hook, say)
    must not leave its gradients behind: a step that zeroes its gradients after stepping (not
    before) would add them to the next eager step's. Parameters then equal eager training's."""
    batch = {"x": torch.rand(16, 3, 32, 32), "y": torch.arange(16) % 3}

    def make() -> Algorithm:
        torch.manual_seed(0)
        return create_algorithm("erm", 3, CFG)

    def stepper(algo):  # type: ignore[no-untyped-def]
        def step(b):  # type: ignore[no-untyped-def]
            loss = torch.nn.functional.cross_entropy(algo.network(b["x"]), b["y"])
            loss.backward()
            if _FakeCuda.capturing:
                raise RuntimeError("a host sync after backward")
            algo.optimizer.step()
            algo.optimizer.zero_grad()
            return {"loss": loss.detach()}
        return step

    graphed_algo, eager_algo = make(), make()
    runner = step_modes.GraphedStep(stepper(graphed_algo), optimizers_of(graphed_algo),
                                    cuda=_FakeCuda)
    for group in graphed_algo.optimizer.param_groups:  # capturable Adam needs CUDA tensors
        group["capturable"] = False
    eager = stepper(eager_algo)
    for _ in range(step_modes.GRAPH_WARMUP_STEPS + 2):
        runner(batch)
        eager(batch)
    assert runner.failed is not None and "a host sync after backward" in runner.failed
    for a, b in zip(graphed_algo.parameters(), eager_algo.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
