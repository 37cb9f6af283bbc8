"""SagNet and Debiased as BiasBed's code runs them (defaults), the papers' variants as options."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.algorithms import sagnet as sagnet_module
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import create_model


def _batch(n: int = 8, size: int = 32, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {"x": torch.rand(n, 3, size, size, generator=gen),
            "y": torch.randint(0, 3, (n,), generator=gen)}


def _sagnet(**hparams: object):
    cfg = TrainConfig(algorithm="sagnet", model="small_cnn", seed=1, hparams=hparams)
    torch.manual_seed(0)
    return create_algorithm("sagnet", 3, cfg).train()


def _conv_weights(algo) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in algo.featurizer.named_parameters() if p.dim() == 4}


def test_sagnet_defaults_are_biasbeds() -> None:
    algo = _sagnet()
    assert (algo.hparams["step"], algo.hparams["content"]) == ("joint", "identity")
    assert algo.hparams["fresh_classifier"] is True
    every = {id(p) for p in algo.parameters() if p.requires_grad}
    main = {id(p) for g in algo.opt_main.param_groups for p in g["params"]}
    style = {id(p) for g in algo.opt_s.param_groups for p in g["params"]}
    assert main == every and style <= main  # the style head steps twice, as in the reference
    with pytest.raises(TrainError, match="valid choices: joint, sequential"):
        _sagnet(step="alternate")


def test_sagnet_joint_step_gives_the_featurizer_the_style_gradient(monkeypatch) -> None:
    # Cut the content loss off the featurizer: only the style loss can move its convolutions.
    monkeypatch.setattr(sagnet_module, "style_randomize", lambda f, perm, a: f.detach())
    for step, moves in (("joint", True), ("sequential", False)):
        algo = _sagnet(step=step, w_adv=0.0)
        before = _conv_weights(algo)
        algo.update(_batch())
        after = _conv_weights(algo)
        moved = any(not torch.equal(before[k], after[k]) for k in before)
        assert moved is moves, step


def test_sagnet_content_randomisation_is_the_identity_by_default(monkeypatch) -> None:
    calls: list[int] = []
    real = sagnet_module.content_randomize

    def spy(x, perm, eps=1e-5):
        calls.append(len(x))
        return real(x, perm, eps)

    monkeypatch.setattr(sagnet_module, "content_randomize", spy)
    _sagnet().update(_batch())
    assert calls == []  # BiasBed: Randomizer(alpha=False) changes nothing
    _sagnet(content="swap").update(_batch())
    assert calls == [8]
    calls.clear()
    _sagnet(content="swap", step="sequential").update(_batch())
    assert calls == [8, 8]  # the style step and the adversarial step


def test_sagnet_pretrained_start_has_a_fresh_classifier(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    pretrained = create_model("small_cnn", 3)
    torch.save(pretrained.state_dict(), weights)
    fc = pretrained.head[-1] if isinstance(pretrained.head, nn.Sequential) else pretrained.head
    for fresh in (True, False):
        cfg = TrainConfig(algorithm="sagnet", pretrained=str(weights),
                          hparams={"fresh_classifier": fresh})
        algo = create_algorithm("sagnet", 3, cfg)
        linear = [m for m in algo.content_head.modules() if isinstance(m, nn.Linear)][-1]
        assert torch.equal(linear.weight, fc.weight) is not fresh
        first_conv = next(m for m in algo.featurizer.modules() if isinstance(m, nn.Conv2d))
        pre_conv = next(m for m in pretrained.modules() if isinstance(m, nn.Conv2d))
        torch.testing.assert_close(first_conv.weight, pre_conv.weight)  # the backbone is kept


# ---------------------------------------------------------------------------------- Debiased
@pytest.fixture(scope="module")
def adain_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("adain") / "adain.pth"
    torch.save(AdaINStyleTransfer().state_dict(), path)
    return path


def _debiased(adain_file: Path, **hparams: object):
    cfg = TrainConfig(algorithm="debiased", normalization="imagenet", seed=2,
                      hparams={"style_weights": str(adain_file), **hparams})
    algo = create_algorithm("debiased", 3, cfg).train()
    algo.step = 1
    return algo


def test_debiased_reference_targets_are_biasbeds_loss(adain_file: Path) -> None:
    batch = _batch(n=6)
    algo = _debiased(adain_file)
    assert (algo.hparams["labels"], algo.hparams["adain_input"]) == ("reference", "normalised")
    x, targets, _ = algo.stylize(batch)
    n, y = 6, batch["y"]
    perm = torch.randperm(n, generator=algo.generator("debiased-donor"))
    donor = y[perm]
    eye = torch.eye(3)
    # every row, the clean half too, on 0.9 / 0.1
    expected = 0.9 * eye[torch.cat([y, y])] + 0.1 * eye[torch.cat([donor, donor])]
    torch.testing.assert_close(targets, expected)
    # ... which is BiasBed's mean-reduced loss with weights 0 (clean) / 0.2 (stylised)
    logits = torch.randn(2 * n, 3, generator=torch.Generator().manual_seed(1))
    w = torch.cat([torch.zeros(n), torch.full((n,), 0.2)])
    theirs = ((1 - w) * F.cross_entropy(logits, torch.cat([y, y]))
              + w * F.cross_entropy(logits, torch.cat([donor, donor]))).mean()
    torch.testing.assert_close(F.cross_entropy(logits, targets), theirs)
    paper = _debiased(adain_file, labels="paper").stylize(batch)[1]
    torch.testing.assert_close(paper[:n], eye[y])  # clean rows: hard labels
    torch.testing.assert_close(paper[n:], 0.8 * eye[y] + 0.2 * eye[donor])


def test_debiased_adain_input(adain_file: Path, monkeypatch) -> None:
    batch = _batch(n=4)
    for mode in ("normalised", "pixels"):
        algo = _debiased(adain_file, adain_input=mode)
        seen: list[torch.Tensor] = []
        real = algo.transfer.forward

        def spy(content, style, alpha=1.0, _real=real, seen=seen):
            seen.append(content)
            return _real(content, style, alpha)

        monkeypatch.setattr(algo.transfer, "forward", spy)
        x, _, _ = algo.stylize(batch)
        expected = batch["x"] if mode == "normalised" else algo.input_norm.inverse(batch["x"])
        torch.testing.assert_close(seen[0], expected)
        styled = x[4:]
        if mode == "normalised":  # the decoder's output goes to the model as it is
            raw = real(batch["x"], batch["x"][torch.randperm(
                4, generator=algo.generator("debiased-donor"))], 0.5)
            torch.testing.assert_close(styled, raw)
    with pytest.raises(TrainError, match="valid choices: normalised, pixels"):
        _debiased(adain_file, adain_input="raw")


def test_sagnet_joint_step_gradients_are_the_hand_computation(monkeypatch) -> None:
    """BiasBed's joint step, by hand: the style head steps on the gradient of loss_s + loss_adv
    (the adversarial term back-propagated, not only reported); the featurizer's batch-norm
    parameters on that gradient clipped to total norm ``clip_adv`` (torch's clip_grad_norm_) plus
    the content loss's. Style randomisation is switched off so the forward is deterministic."""
    monkeypatch.setattr(sagnet_module, "style_randomize", lambda f, perm, a: f)
    hp = {"w_adv": 1.0, "clip_adv": 0.05}
    algo, ref = _sagnet(**hp), _sagnet(**hp)  # the same initialisation
    batch = _batch()
    x, y = batch["x"], batch["y"]
    feats = ref.featurizer(x)
    style_logits = ref.style_head(feats)
    loss_sa = F.cross_entropy(style_logits, y) - F.log_softmax(style_logits, 1).mean() * 1.0
    loss_c = F.cross_entropy(ref.content_head(feats), y)
    style_params = list(ref.style_head.parameters())
    g_style = torch.autograd.grad(loss_sa, style_params, retain_graph=True)
    bn = sagnet_module.batchnorm_parameters(ref.featurizer)
    g_adv = [g.clone() for g in torch.autograd.grad(loss_sa, bn, retain_graph=True)]
    assert float(torch.cat([g.flatten() for g in g_adv]).norm()) > 0.1  # the clip bites
    for p, g in zip(bn, g_adv, strict=True):
        p.grad = g
    torch.nn.utils.clip_grad_norm_(bn, 0.05)
    g_bn = [p.grad + g for p, g in zip(bn, torch.autograd.grad(loss_c, bn), strict=True)]

    seen: dict[str, list[torch.Tensor]] = {}
    real = algo.step_optimizers

    def spy(*opts, **kwargs):
        seen["style"] = [p.grad.clone() for p in algo.style_head.parameters()]
        seen["bn"] = [p.grad.clone() for p in sagnet_module.batchnorm_parameters(algo.featurizer)]
        return real(*opts, **kwargs)

    monkeypatch.setattr(algo, "step_optimizers", spy)
    algo.update(batch)
    for got, want in zip(seen["style"], g_style, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    for got, want in zip(seen["bn"], g_bn, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
