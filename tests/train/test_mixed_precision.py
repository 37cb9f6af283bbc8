"""fp16 mixed precision: float16 autocast with torch's GradScaler on every optimiser step of
every algorithm (the BiasBed authors' setting), the option in the config and job id, and the
refusal on devices that cannot run it. Checked on CPU, where torch autocasts to float16 too."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.runner.jobs import Job
from shortcutlab.train import precision as precision_module
from shortcutlab.train import trainer
from shortcutlab.train.algorithms import create_algorithm, list_algorithms
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext, optimizers_of
from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import implied_algorithm, list_models
from shortcutlab.train.precision import check_precision, make_grad_scaler, precision_available
from shortcutlab.train.trainer import train
from tests.train.fake_data import FakeDiagvib

CPU = torch.device("cpu")
# Algorithms registered as a model's own train that model; asr also trains small_cnn (faster).
MODEL_OF = {a: m for m in list_models() if (a := implied_algorithm(m)) and a != "asr"}


@pytest.fixture(scope="module")
def style_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("adain") / "adain.pth"
    torch.manual_seed(0)
    torch.save(AdaINStyleTransfer().state_dict(), path)
    return path


def _algorithm(name: str, style_weights: Path, **hparams: Any) -> Algorithm:
    if name in ("stylized", "debiased"):
        hparams["style_weights"] = str(style_weights)
    cfg = TrainConfig(model=MODEL_OF.get(name, "small_cnn"), algorithm=name, hparams=hparams,
                      batch_size=4, precision="fp16")
    torch.manual_seed(0)
    algo = create_algorithm(name, 3, cfg, AlgorithmContext())
    algo.train()
    return algo


def _batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return {"x": torch.rand(4, 3, 64, 64, generator=g), "y": torch.tensor([0, 1, 2, 0])}


def _params(algo: Algorithm) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in algo.named_parameters()}


CASES = [pytest.param(a, {}, id=a) for a in list_algorithms()] + [
    pytest.param("sagnet", {"step": "sequential"}, id="sagnet-sequential"),
    pytest.param("infodrop", {"placement": "conv"}, id="infodrop-conv"),
]


@pytest.mark.parametrize(("name", "hparams"), CASES)
def test_every_step_goes_through_the_scaler_and_unscales_exactly(
    name: str, hparams: dict, style_weights: Path
) -> None:
    """With a GradScaler each optimiser steps only inside the scaler's step (so it is unscaled
    and inf-checked). Loss scaling by 2**16 and unscaling is exact in fp32 arithmetic, so the
    update must move every parameter as the plain update does; optimisers sharing parameters
    (SagNet's main optimiser holds all of them) must not unscale a gradient twice."""
    plain = _algorithm(name, style_weights, **hparams)
    algo = _algorithm(name, style_weights, **hparams)
    algo.grad_scaler = scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    inside, stepped = [False], {}
    real_step = scaler.step

    def scaler_step(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        inside[0] = True
        try:
            return real_step(optimizer, *args, **kwargs)
        finally:
            inside[0] = False

    scaler.step = scaler_step  # type: ignore[method-assign]
    for i, opt in enumerate(optimizers_of(algo)):
        def opt_step(*args: Any, _real: Any = opt.step, _i: int = i, **kwargs: Any) -> Any:
            assert inside[0], f"optimiser {_i} of {name} stepped outside the gradient scaler"
            stepped[_i] = stepped.get(_i, 0) + 1
            return _real(*args, **kwargs)

        opt.step = opt_step  # type: ignore[method-assign]
    for each in (plain, algo):
        torch.manual_seed(2)  # the same global draws (VAE sampling) for both
        out = each.update(_batch())
        assert torch.isfinite(torch.as_tensor(out["loss"])).all()
    assert sorted(stepped) == list(range(len(optimizers_of(algo)))), "not every optimiser stepped"
    assert scaler.get_scale() == 2.0**16  # no step was skipped
    a, b = _params(plain), _params(algo)
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6, msg=key)


def test_one_fp16_autocast_step_per_kind_of_update(style_weights: Path) -> None:
    """Under float16 autocast the scaled steps of a one-, a three- (SagNet, shared
    parameters) and a two-optimiser (ASR, autograd.grad) update stay finite and move."""
    for name in ("erm", "sagnet", "asr"):
        algo = _algorithm(name, style_weights)
        algo.grad_scaler = torch.amp.GradScaler("cpu", init_scale=16.0)
        before = _params(algo)
        with torch.autocast("cpu", dtype=torch.float16):
            out = algo.update(_batch())
        assert torch.isfinite(torch.as_tensor(out["loss"])).all()
        after = _params(algo)
        assert any(not torch.equal(before[k], after[k]) for k in before), name
        assert all(torch.isfinite(v).all() for v in after.values()), name


def test_non_finite_gradients_skip_the_step_and_lower_the_scale(style_weights: Path) -> None:
    algo = _algorithm("erm", style_weights)
    algo.grad_scaler = scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    before = _params(algo)
    loss = algo.predict(_batch()["x"]).sum() * torch.tensor(float("inf"))
    assert algo.backward_and_step(loss, algo.optimizer) is False
    assert all(torch.equal(before[k], v) for k, v in _params(algo).items())
    assert scaler.get_scale() == 512.0
    loss = torch.nn.functional.cross_entropy(algo.predict(_batch()["x"]), _batch()["y"])
    assert algo.backward_and_step(loss, algo.optimizer) is True


def _data() -> dict:
    return dict(train_ds=FakeDiagvib(96), val_ds=FakeDiagvib(24, split="val"),
                test_sets={"test": FakeDiagvib(30, split="test", ood=True)})


CFG = TrainConfig(model="small_cnn", model_kwargs={"width": 8}, epochs=2, batch_size=16, lr=3e-3)


def test_fp16_training_uses_a_scaler_and_changes_the_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[torch.amp.GradScaler] = []
    real = make_grad_scaler

    def spy(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
        scaler = real(precision, device)
        if scaler is not None:
            made.append(scaler)
        return scaler

    monkeypatch.setattr(trainer, "make_grad_scaler", spy)  # where train() looks it up
    base = train(CFG, **_data())
    assert made == []
    half = train(CFG.replace(precision="fp16"), **_data())
    (scaler,) = made
    assert scaler.is_enabled() and scaler._growth_tracker is not None  # it stepped
    losses = half.epochs["train_loss"].to_numpy()
    assert np.isfinite(losses).all() and half.val_acc > 0.5
    assert not np.array_equal(losses, base.epochs["train_loss"].to_numpy())


def test_fp16_is_in_the_config_and_the_job_id() -> None:
    half = CFG.replace(precision="fp16")
    assert json.loads(half.to_json())["precision"] == "fp16"
    assert TrainConfig.from_mapping(json.loads(half.to_json())) == half
    ids = {p: Job(kind="diagvib", experiment="ZGO/hue-shape/0",
                  train=CFG.replace(precision=p)).job_id for p in ("fp32", "bf16", "fp16")}
    assert len(set(ids.values())) == 3


def test_a_device_without_fp16_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TrainError) as err:
        check_precision("fp16", torch.device("meta"))  # no autocast there
    assert "precision 'fp16' is not available on device meta" in str(err.value)
    assert str(err.value).endswith("valid choices there: fp32") and "\n" not in str(err.value)
    check_precision("fp16", CPU)  # torch autocasts to float16 on CPU
    monkeypatch.setattr("shortcutlab.train.precision.precision_available",
                        lambda precision, device: precision != "fp16")
    with pytest.raises(TrainError, match="valid choices there: fp32, bf16$"):
        train(CFG.replace(precision="fp16"), **_data())


def test_a_precision_torch_disables_or_cannot_scale_is_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch does not raise for an autocast dtype a device cannot run: it warns and runs the
    block in float32, so a "bf16" run would report fp32 numbers. Such a warning, and for fp16
    a gradient scaler torch made disabled (the loss would go unscaled), make the precision
    unavailable; the other precisions stay available."""
    assert precision_available("fp16", CPU)
    real_autocast = torch.autocast

    def warning_autocast(*args: Any, **kwargs: Any) -> Any:
        warnings.warn("In CPU autocast, but the target dtype is not supported. "
                      "Disabling autocast.", UserWarning, stacklevel=2)
        return real_autocast(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(torch, "autocast", warning_autocast)
        assert not precision_available("fp16", CPU)
        assert not precision_available("bf16", CPU)
        assert precision_available("fp32", CPU)
    monkeypatch.setattr(precision_module, "_grad_scaler",
                        lambda device: torch.amp.GradScaler(device.type, enabled=False))
    assert not precision_available("fp16", CPU)
    assert precision_available("fp32", CPU)
