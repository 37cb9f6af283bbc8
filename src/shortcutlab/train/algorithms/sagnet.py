"""SagNet (Nam et al., 2021): style-agnostic networks by style and content randomisation.

A shared featurizer ``f`` feeds two heads. The *content* head ``c`` learns the label from features
whose style (per-channel mean and variance) is randomly interpolated with another image's:
``mu = a*mu_i + (1-a)*mu_j``, ``var = a*var_i + (1-a)*var_j``, ``a ~ U(0, 1)``. The *style* head
``s`` learns the label from features that keep their own style but carry another image's
normalised content, so it can only use style. The featurizer is then updated adversarially to
make the style head's prediction uniform (weight ``w_adv``), removing label information from
style. Prediction uses ``c(f(x))`` without randomisation.

The split point is the middle of the model's feature stages (for a ResNet: after layer2 of
four, i.e. the randomisation sits before layer3, as in the reference code); heads are the
remaining stages plus the classifier, and the style head is a freshly initialised copy, built
by the model's own constructor so that it gets the model's initialisation (with
``config.pretrained``, as in the reference, a copy of the pretrained stages with a fresh
classifier). The
adversarial step updates only the featurizer's batch-norm affine parameters (the reference's
``adv_params``), with their gradient norm clipped to ``clip_adv``; ``adv_params="all"`` keeps
the earlier variant that updates every featurizer parameter. An ImageNet-pretrained start is
``config.pretrained`` (``biasbed run --pretrained``); as in the reference, the content
classifier then starts fresh too (``fresh_classifier``).

Two choices follow BiasBed's code by default, with Nam et al.'s behaviour as named options:

- ``step="joint"`` (BiasBed): one forward pass; the style and adversarial losses are
  back-propagated (the adversary's gradient clipped on ``adv_params``), then the content loss,
  and three SGD optimisers step: the style head's, the adversary's and a main one over *all*
  parameters, so the featurizer also receives the style loss's (cooperative) gradient and the
  style-head and batch-norm parameters step twice. ``step="sequential"`` (Nam et al.'s
  original code and paper): content step, then style step on detached features, then the
  adversarial step, each with its own forward pass (Nam et al.'s code takes the three gradients
  from one forward pass, so there the batch-norm running statistics move once per step).
- ``content="identity"`` (BiasBed: its content randomisation is ``Randomizer(alpha=False)``,
  which re-applies each sample's own statistics, i.e. does nothing, so the style head sees the
  featurizer's own features); ``content="swap"`` (the SagNet paper): the style head sees another
  sample's normalised content with the sample's own statistics.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext, structure_found
from shortcutlab.train.algorithms.padain import instance_moments
from shortcutlab.train.config import TrainConfig
from shortcutlab.utils.rng import torch_seed

__all__ = ["SagNet", "content_randomize", "split_for_sagnet", "style_randomize"]


def style_randomize(
    x: torch.Tensor,
    perm: torch.Tensor,
    alpha: torch.Tensor,
    eps: float = 1e-5,
) -> torch.Tensor:
    """Interpolate each sample's channel statistics with those of sample ``perm[i]``.

    ``alpha`` (B,) in [0, 1] is the weight of the sample's own statistics; variances (not
    standard deviations) are interpolated, as in the paper.
    """
    mean, std = instance_moments(x, eps)
    var = std**2
    a = alpha.view(-1, 1, 1, 1).to(x.dtype)
    new_mean = a * mean + (1 - a) * mean[perm]
    new_var = a * var + (1 - a) * var[perm]
    return (x - mean) / std * new_var.sqrt() + new_mean


def content_randomize(x: torch.Tensor, perm: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Give each sample the normalised content of sample ``perm[i]`` with its own statistics.

    The donor's content is detached: the style loss must not teach the featurizer content.
    """
    mean, std = instance_moments(x, eps)
    normalised = ((x - mean) / std)[perm].detach()
    return normalised * std + mean


def split_for_sagnet(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(featurizer, head) split in the middle of the network, where style still lives in maps.

    A model may define ``sagnet_split() -> (featurizer, head)`` itself; built in: torchvision
    ResNets (after layer2, i.e. randomisation before layer3 as in the reference code) and
    small_cnn (after its second block).
    """
    import torchvision.models as tvm

    from shortcutlab.train.models import SmallCNN

    custom = getattr(model, "sagnet_split", None)
    if callable(custom):
        return custom()
    if isinstance(model, tvm.ResNet):
        featurizer = nn.Sequential(
            model.conv1,
            model.bn1,
            model.relu,
            model.maxpool,
            model.layer1,
            model.layer2,
        )
        head = nn.Sequential(model.layer3, model.layer4, model.avgpool, nn.Flatten(1), model.fc)
        return featurizer, head
    if isinstance(model, SmallCNN):
        return model.features[:5], nn.Sequential(model.features[5:], model.head)
    raise TrainError(
        f"SagNet needs a (featurizer, head) split of {type(model).__name__}; supported: "
        "torchvision ResNets and small_cnn, or a model defining sagnet_split()"
    )


SAGNET_ADV_PARAMS = ("bn", "all")
#: How the three losses step (``joint``: BiasBed's code; ``sequential``: Nam et al.'s).
SAGNET_STEPS = ("joint", "sequential")
#: The style head's input (``identity``: BiasBed's code; ``swap``: the SagNet paper).
SAGNET_CONTENT = ("identity", "swap")


def batchnorm_parameters(module: nn.Module) -> list[nn.Parameter]:
    """The trainable affine parameters of every batch-norm layer in ``module``."""
    return [
        p
        for m in module.modules()
        if isinstance(m, nn.modules.batchnorm._BatchNorm)
        for p in m.parameters()
        if p.requires_grad
    ]


def _last_linear(module: nn.Module) -> nn.Module:
    linears = [m for m in module.modules() if isinstance(m, nn.Linear)]
    return linears[-1] if linears else module


def _reinitialise(module: nn.Module) -> None:
    for m in module.modules():
        reset = getattr(m, "reset_parameters", None)
        if callable(reset):
            reset()


def _losses(content: torch.Tensor, style: torch.Tensor, adv: torch.Tensor) -> dict[str, float]:
    return {"loss": float(content.detach()), "loss_style": float(style.detach()),
            "loss_adv": float(adv.detach())}


@register_algorithm
class SagNet(Algorithm):
    """Style-agnostic network: content head on style-randomised features, adversarial style head.

    Hyper-parameters: ``w_adv`` (weight of the adversarial entropy loss, paper 0.1),
    ``clip_adv`` (max gradient norm of the adversarial step, paper 0.1; 0 disables clipping)
    ``adv_params`` (``bn``: the featurizer's batch-norm affine parameters, reference;
    ``all``: every featurizer parameter), ``step`` (:data:`SAGNET_STEPS`), ``content``
    (:data:`SAGNET_CONTENT`), ``fresh_classifier`` (with ``config.pretrained``: a new content
    classifier, as BiasBed's code) and ``adv_eps`` (0: the paper's adversarial loss; 1e-5: the
    authors' ``log(softmax + 1e-5)``). Models are trained from scratch unless ``config.pretrained``
    is set.
    """

    name = "sagnet"
    hparams_defaults = {"w_adv": 0.1, "clip_adv": 0.1, "adv_params": "bn", "step": "joint",
                        "content": "identity", "fresh_classifier": True, "adv_eps": 0.0}

    @classmethod
    def supports(cls, model: nn.Module) -> bool:
        return structure_found(split_for_sagnet, model)

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        """``w_adv``, ``clip_adv`` and ``adv_eps`` >= 0 (a negative weight flips the adversary
        into helping the style head; a negative bound or eps would silently mean 0) and the
        choices of ``step``, ``content`` and ``adv_params`` known."""
        cls.check_ranges(hparams, non_negative=("w_adv", "clip_adv", "adv_eps"))
        for key, choices in (("step", SAGNET_STEPS), ("content", SAGNET_CONTENT),
                             ("adv_params", SAGNET_ADV_PARAMS)):
            if hparams[key] not in choices:
                raise TrainError(unknown_choice(f"SagNet {key}", hparams[key], choices))

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        self.featurizer, self.content_head = split_for_sagnet(self.build_network())
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed(config.seed, "sagnet-style-head"))
            if config.pretrained:  # the reference starts the style stages from the same weights
                self.style_head = copy.deepcopy(self.content_head)
                _reinitialise(_last_linear(self.style_head))
                if self.hparams["fresh_classifier"]:  # the reference drops the pretrained fc
                    _reinitialise(_last_linear(self.content_head))
            else:  # a fresh head initialised as the model initialises itself (ResNet: Kaiming)
                self.style_head = split_for_sagnet(self.build_network())[1]
        trainable_f = any(p.requires_grad for p in self.featurizer.parameters())
        self.opt_f = self.opt_c = self.opt_main = None
        if self.hparams["step"] == "joint":  # BiasBed: a main optimiser over every parameter
            self.opt_main = self.make_optimizer(self.parameters())
        else:
            # a frozen backbone (freeze_backbone / rn50_in) leaves only the heads to train
            self.opt_f = self.make_optimizer(self.featurizer.parameters()) if trainable_f else None
            self.opt_c = self.make_optimizer(self.content_head.parameters())
        self.opt_s = self.make_optimizer(self.style_head.parameters())
        if self.hparams["adv_params"] == "bn":
            self.adv_params = batchnorm_parameters(self.featurizer)
        else:
            self.adv_params = [p for p in self.featurizer.parameters() if p.requires_grad]
        self.opt_adv = self.make_optimizer(self.adv_params) if self.adv_params else None

    def _draws(self, n: int, purpose: str) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.generator(f"sagnet-{purpose}")
        return torch.randperm(n, generator=gen), torch.rand(n, generator=gen)

    def _style_input(self, feats: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
        """What the style head sees: the features themselves (``identity``) or swapped content."""
        return feats if self.hparams["content"] == "identity" else content_randomize(feats, perm)

    def _adversarial_loss(self, style_logits: torch.Tensor) -> torch.Tensor:
        """``w_adv`` × the cross entropy of the style head's prediction with the uniform label
        (the paper's); ``adv_eps`` > 0: of ``log(softmax + adv_eps)``, as the authors' code
        (1e-5)."""
        eps = self.hparams["adv_eps"]
        if eps > 0:
            log_p = torch.log(F.softmax(style_logits, dim=1) + eps)
        else:
            log_p = F.log_softmax(style_logits, dim=1)
        return -log_p.mean(dim=1).mean() * self.hparams["w_adv"]

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        x, y = batch["x"], batch["y"]
        n, device = x.shape[0], x.device
        perm_c, alpha = self._draws(n, "style")
        perm_s, _ = self._draws(n, "content")
        perm_a, _ = self._draws(n, "adversary")
        perm_c, alpha = perm_c.to(device), alpha.to(device)
        perm_s, perm_a = perm_s.to(device), perm_a.to(device)
        if self.opt_main is not None:
            return self._joint_update(x, y, perm_c, alpha, perm_s)

        # content: learn the label from style-randomised features (featurizer + content head)
        feats = self.featurizer(x)
        loss_c = F.cross_entropy(self.content_head(style_randomize(feats, perm_c, alpha)), y)
        self.zero_grad(set_to_none=True)
        self.backward_and_step(loss_c, self.opt_f, self.opt_c, zero_grad=False)

        # style: learn the label from content-randomised features (style head only)
        with torch.no_grad():
            feats = self.featurizer(x)
        loss_s = F.cross_entropy(self.style_head(self._style_input(feats, perm_s)), y)
        self.backward_and_step(loss_s, self.opt_s)

        # adversary: make the style head's prediction uniform (featurizer only)
        logits = self.style_head(self._style_input(self.featurizer(x), perm_a))
        loss_adv = self._adversarial_loss(logits)
        if self.opt_adv is not None:
            self.zero_grad(set_to_none=True)
            self.backward_and_step(loss_adv, self.opt_adv, zero_grad=False,
                                   clip=(self.adv_params, self.hparams["clip_adv"]))
            self.zero_grad(set_to_none=True)
        return _losses(loss_c, loss_s, loss_adv)

    def _joint_update(
        self, x: torch.Tensor, y: torch.Tensor, perm_c: torch.Tensor, alpha: torch.Tensor,
        perm_s: torch.Tensor,
    ) -> dict[str, float]:
        """BiasBed's step: one forward, gradients of all three losses, then three optimisers."""
        feats = self.featurizer(x)
        loss_c = F.cross_entropy(self.content_head(style_randomize(feats, perm_c, alpha)), y)
        style_logits = self.style_head(self._style_input(feats, perm_s))
        loss_s = F.cross_entropy(style_logits, y)
        loss_adv = self._adversarial_loss(style_logits)
        self.zero_grad(set_to_none=True)
        self.backward(loss_s + loss_adv, retain_graph=True)
        if self.adv_params and self.hparams["clip_adv"] > 0:
            self.clip_scaled_grad_norm(self.adv_params, self.hparams["clip_adv"])
        self.backward(loss_c)
        # one unscale and inf check for the three (they share parameters), then each steps
        self.step_optimizers(self.opt_s, self.opt_adv, self.opt_main)
        self.zero_grad(set_to_none=True)
        return _losses(loss_c, loss_s, loss_adv)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.content_head(self.featurizer(x))
