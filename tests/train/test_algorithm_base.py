"""The Algorithm base class's numbers: the optimiser it builds (every configured setting, checked
step by step against the update rules of torch's documentation written out by hand), ERM's loss
(the mean cross entropy), gradients zeroed between steps, the BatchNorm layers a frozen backbone
freezes, and hyper-parameter types."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import check_hparams, create_algorithm
from shortcutlab.train.algorithms.base import Algorithm
from shortcutlab.train.config import TrainConfig

SMALL = {"model": "small_cnn", "model_kwargs": {"width": 4}, "normalization": "none"}


def _batch(step: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(10 + step)
    return {"x": torch.rand(6, 3, 16, 16, generator=g), "y": torch.tensor([0, 1, 2, 0, 1, 2])}


def _reference_steps(net: nn.Module, cfg: TrainConfig, steps: int) -> list[float]:
    """``steps`` updates of ``net`` by the update rules of torch's SGD / Adam documentation
    (L2 weight decay added to the gradient; SGD's momentum buffer starts at the first gradient;
    Adam bias-corrected, eps 1e-8), each on the mean cross entropy of a fresh batch; returns the
    losses before each step."""
    params = [p for p in net.parameters() if p.requires_grad]
    state = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    losses = []
    for t in range(1, steps + 1):
        batch = _batch(t - 1)
        logits = net(batch["x"])
        loss = -logits.log_softmax(dim=1)[torch.arange(6), batch["y"]].mean()  # by hand
        losses.append(float(loss.detach()))
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for i, (p, g) in enumerate(zip(params, grads, strict=True)):
                g = g + cfg.weight_decay * p
                m, v = state[i]
                if cfg.optimizer == "sgd":
                    m = g.clone() if t == 1 else cfg.momentum * m + g
                    p -= cfg.lr * m
                else:
                    b1, b2 = cfg.adam_betas
                    m = b1 * m + (1 - b1) * g
                    v = b2 * v + (1 - b2) * g * g
                    denom = (v / (1 - b2**t)).sqrt() + 1e-8
                    p -= cfg.lr / (1 - b1**t) * m / denom
                state[i] = (m, v)
    return losses


@pytest.mark.parametrize("cfg", [
    pytest.param(TrainConfig(**SMALL, lr=0.05, weight_decay=0.01), id="adam"),
    pytest.param(TrainConfig(**SMALL, preset="biasbed", lr=0.05), id="sgd-biasbed"),
])
def test_erm_steps_follow_the_optimisers_update_rule_with_every_setting(cfg: TrainConfig
                                                                        ) -> None:
    """Three ERM updates move the weights exactly as the written-out rule with the config's
    learning rate, betas or momentum (BiasBed: 0.9) and weight decay (BiasBed: 1e-4), each
    step on its own batch's gradient (zeroed in between), of the mean cross entropy (which is
    also the loss reported)."""
    torch.manual_seed(0)
    algo = create_algorithm("erm", 3, cfg)
    algo.train()
    reference = copy.deepcopy(algo.network)
    expected = _reference_steps(reference, cfg, 3)
    reported = []
    for step in range(3):
        algo.step = step
        reported.append(float(algo.update(_batch(step))["loss"]))
    assert reported == pytest.approx(expected, rel=1e-5)
    for (name, got), want in zip(algo.network.named_parameters(), reference.parameters(),
                                 strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=name)


def test_the_biasbed_optimiser_carries_the_recipes_momentum_and_weight_decay() -> None:
    # the BiasBed recipe (biasbed/presets.py): SGD, momentum 0.9, weight decay 1e-4
    group = create_algorithm("erm", 3, TrainConfig(**SMALL, preset="biasbed")
                             ).optimizer.param_groups[0]
    assert (group["momentum"], group["weight_decay"]) == (0.9, 1e-4)
    adam = create_algorithm("erm", 3, TrainConfig(**SMALL, weight_decay=0.01)).optimizer
    assert adam.param_groups[0]["weight_decay"] == 0.01


def test_a_frozen_backbone_freezes_only_batchnorm_layers_whose_parameters_are_frozen() -> None:
    """``frozen_batchnorm="eval"`` keeps a BatchNorm in eval mode when its parameters are all
    frozen; one without affine parameters has nothing frozen and keeps learning its running
    statistics in training mode (as it would without the option)."""
    algo = create_algorithm("erm", 3, TrainConfig(**SMALL, frozen_batchnorm="eval"))
    algo.plain_bn = nn.BatchNorm2d(3, affine=False)
    algo.frozen_bn = nn.BatchNorm2d(3).requires_grad_(False)
    algo.trained_bn = nn.BatchNorm2d(3)
    algo.train()
    assert algo.plain_bn.training and algo.trained_bn.training
    assert not algo.frozen_bn.training
    algo.plain_bn(torch.rand(4, 3, 2, 2) + 5.0)
    assert float(algo.plain_bn.running_mean.min()) > 0.4  # learnt from the batch (0.1 * ~5.5)
    algo.eval()
    assert not algo.plain_bn.training


class _Typed(Algorithm):
    name = "typed_for_test"
    hparams_defaults = {"weight": 0.5, "count": 2, "flag": False}


@pytest.mark.parametrize(("key", "value"), [("weight", True), ("weight", "0.5"),
                                            ("count", True), ("count", 2.0), ("flag", 1)])
def test_a_hyperparameter_of_another_type_is_refused(key: str, value: object) -> None:
    """A bool is no number here (``w_adv: true`` in a YAML file must not train with weight
    1.0), a float no integer, an integer no bool."""
    with pytest.raises(TrainError, match=f"hyper-parameter '{key}' of algorithm typed_for_test"):
        _Typed._resolve_hparams({key: value})


def test_an_integer_for_a_float_hyperparameter_becomes_a_float() -> None:
    assert _Typed._resolve_hparams({"weight": 1}) == {"weight": 1.0, "count": 2, "flag": False}
    assert isinstance(_Typed._resolve_hparams({"weight": 1})["weight"], float)
    with pytest.raises(TrainError, match="w_adv"):
        check_hparams(TrainConfig(algorithm="sagnet", model="small_cnn",
                                  hparams={"w_adv": True}))


def test_erm_reports_the_mean_cross_entropy_of_its_batch() -> None:
    torch.manual_seed(0)
    algo = create_algorithm("erm", 3, TrainConfig(**SMALL))
    algo.train()
    batch = _batch(0)
    with torch.no_grad():
        before = F.cross_entropy(copy.deepcopy(algo.network)(batch["x"]), batch["y"],
                                 reduction="none")
    assert before.shape == (6,)
    assert float(algo.update(batch)["loss"]) == pytest.approx(float(before.mean()), rel=1e-6)
