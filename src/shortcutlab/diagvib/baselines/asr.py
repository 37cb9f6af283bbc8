"""Automatic Shortcut Removal (Minderer et al., ICML 2020) as the DiagViB-6 paper adapts it.

Appendix A.2: a U-Net lens in front of a ResNet-18 feature extractor; instead of an auxiliary
task both are trained on the classification task directly. The feature extractor minimises the
cross entropy of its prediction on the lens output; the lens minimises, with equal weights, a
*least-likely* adversarial loss (the cross entropy towards the class the feature extractor finds
least likely, i.e. it pushes the prediction away from the truth by the easiest-to-remove cue) and
a reconstruction loss (mean squared pixel error between lens output and input, in [0, 1]). The
lens output, normalised with the run's input statistics, is the feature extractor's input, at
training and at test time.

With model ``asr_rn18`` the lens and the ResNet-18 come from the model; with any other
registered classifier (e.g. ``small_cnn`` for fast CPU runs) the algorithm puts a fresh lens
(``lens_width``) in front of it.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from shortcutlab.diagvib.baselines.networks import ASRNet, UNetLens
from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
from shortcutlab.train.config import TrainConfig


class ASR(Algorithm):
    """Lens (adversarial + reconstruction) and feature extractor (cross entropy), one step each
    per batch from one shared forward pass."""

    name = "asr"
    hparams_defaults = {"adv_weight": 1.0, "recon_weight": 1.0, "lens_width": 16}

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        cls.check_ranges(hparams, non_negative=("adv_weight", "recon_weight"))

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)  # checks the hyper-parameters
        net = self.build_network()
        if not isinstance(net, ASRNet):
            net = ASRNet(UNetLens(int(self.hparams["lens_width"])), net)
        elif "lens_width" in config.hparams and isinstance(net.lens, UNetLens) and (
                net.lens.inc[0].out_channels != config.hparams["lens_width"]):
            raise TrainError(
                f"hyper-parameter lens_width of algorithm asr applies only to models without a "
                f"lens; model {config.model!r} has its own (set it with model_kwargs lens_width)")
        self.network = net
        self.opt_features = self.make_optimizer(net.classifier.parameters())
        self.opt_lens = self.make_optimizer(net.lens.parameters())

    def pixels(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised inputs back to pixels in [0, 1]."""
        return self.input_norm.inverse(x).clamp(0.0, 1.0)

    def lens_output(self, x: torch.Tensor) -> torch.Tensor:
        """The lens output in pixel space ([0, 1], the input's shape) for normalised ``x``."""
        return self.network.lens(self.pixels(x))

    def losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The feature extractor's cross entropy ``ce`` and the lens's terms ``adv``, ``recon``
        and ``lens`` (their weighted sum) on one batch, with their graphs."""
        x01 = self.pixels(batch["x"])
        out = self.network.lens(x01)
        logits = self.network.classifier(self.input_norm(out))
        least_likely = logits.detach().argmin(dim=1)
        ce = F.cross_entropy(logits, batch["y"])
        adv = F.cross_entropy(logits, least_likely)
        recon = F.mse_loss(out, x01)
        lens = self.hparams["adv_weight"] * adv + self.hparams["recon_weight"] * recon
        return {"ce": ce, "adv": adv, "recon": recon, "lens": lens}

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        terms = self.losses(batch)
        feat_params = [p for p in self.network.classifier.parameters() if p.requires_grad]
        lens_params = [p for p in self.network.lens.parameters() if p.requires_grad]
        feat_grads = torch.autograd.grad(self.scale_loss(terms["ce"]), feat_params,
                                         retain_graph=True)
        lens_grads = torch.autograd.grad(self.scale_loss(terms["lens"]), lens_params)
        for params, grads in ((feat_params, feat_grads), (lens_params, lens_grads)):
            for p, g in zip(params, grads, strict=True):
                p.grad = g
        self.step_optimizers(self.opt_features, self.opt_lens)
        out = {k: float(v.detach()) for k, v in terms.items()}
        out["loss"] = out["ce"]
        return out

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network.classifier(self.input_norm(self.lens_output(x)))
