"""The DiagViB-6 paper's VAE and Factor-VAE baselines (appendix A.2).

Both train the convolutional VAE of :class:`~shortcutlab.diagvib.baselines.networks.ConvVAE`
(latent 12) with Adam at ``lr`` 1e-4 (the paper's VAE learning rate, a hyper-parameter here
because the ``paper`` protocol's ``config.lr`` is the ResNet-18 one) on the negative ELBO: a
Bernoulli pixel reconstruction term (summed over pixels) plus ``beta`` times the KL divergence to
N(0, I). Factor-VAE adds ``gamma`` (20) times the total correlation estimated by a discriminator
(density-ratio trick), trained with Adam at ``disc_lr`` (1e-5) to tell q(z) from the product of
its marginals (:func:`~shortcutlab.diagvib.baselines.networks.permute_dims` of the same batch's
codes).

How a factor is predicted (the paper does not say) is the ``classifier`` hyper-parameter:

- ``probe``: the VAE never sees a label. A classification head (an MLP on the latent
  mean, Adam at ``config.lr``) is trained at the same time on the *detached* means, so it is a
  probe of what the unsupervised representation holds; the checkpoint with the lowest validation
  loss of the probe is reported, like every other baseline.
- ``joint`` (default, :data:`VAE_CLASSIFIER_DEFAULT`): the head's cross entropy (weight
  ``ce_weight``) is added to the VAE objective and flows into the encoder, a semi-supervised VAE,
  as appendix A.2 trains every baseline with cross entropy.

See docs/diagvib-fidelity.md for this choice.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from shortcutlab.diagvib.baselines.networks import ConvVAE, FactorDiscriminator, permute_dims
from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
from shortcutlab.train.config import TrainConfig

CLASSIFIERS = ("probe", "joint")
#: How VAE and Factor-VAE predict a factor when ``hparams`` does not say (``classifier``):
#: ``joint`` trains the head's cross entropy into the encoder (appendix A.2: every baseline is
#: trained with standard cross entropy); ``probe`` is a head on frozen latents.
VAE_CLASSIFIER_DEFAULT = "joint"


class VAE(Algorithm):
    """Negative ELBO for the VAE, cross entropy for its head (probe or joint)."""

    name = "vae"
    hparams_defaults: ClassVar[dict[str, Any]] = {
        "lr": 1e-4, "beta": 1.0, "classifier": VAE_CLASSIFIER_DEFAULT, "ce_weight": 1.0,
    }

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        if hparams["classifier"] not in CLASSIFIERS:
            raise TrainError(unknown_choice(f"classifier of algorithm {cls.name}",
                                            hparams["classifier"], list(CLASSIFIERS)))
        cls.check_ranges(hparams, positive=("lr",), non_negative=("beta", "ce_weight"))
        if hparams["classifier"] == "probe" and hparams["ce_weight"] != 1.0:
            raise TrainError(f"hyper-parameter ce_weight of algorithm {cls.name} weighs the "
                             "head's cross entropy in the encoder's loss: only with classifier "
                             "joint (the probe's reaches the head alone)")

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)  # checks the hyper-parameters
        net = self.build_network()
        if not isinstance(net, ConvVAE):
            raise TrainError(
                f"algorithm {self.name} trains a VAE model; got model {config.model!r} "
                "(valid choices: vae, factor_vae)"
            )
        self.network = net
        vae_params = [p for n, p in net.named_parameters() if not n.startswith("head.")]
        self.optimizer = torch.optim.Adam(
            [{"params": vae_params, "lr": self.hparams["lr"]},
             {"params": list(net.head.parameters()), "lr": config.lr}],
            betas=config.adam_betas, weight_decay=config.weight_decay,
        )

    # ---------------------------------------------------------------- pieces
    def pixels(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised inputs back to pixels in [0, 1] (the reconstruction target)."""
        return self.input_norm.inverse(x).clamp(0.0, 1.0)

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstructions in [0, 1] of normalised images ``x`` from their latent means."""
        return torch.sigmoid(self.network.decode(self.network.encode(x)[0]))

    def losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The terms of one batch with their graphs: ``recon``, ``kl``, ``ce`` (the head's cross
        entropy), ``z`` (the sampled codes) and ``vae`` (the VAE's objective, incl. ``ce`` when
        joint)."""
        x = batch["x"]
        mu, logvar = self.network.encode(x)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        logits_pix = self.network.decode(z)
        n = len(x)
        target = self.network.fit(self.pixels(x))
        recon = F.binary_cross_entropy_with_logits(logits_pix, target, reduction="sum") / n
        kl = 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum() / n
        joint = self.hparams["classifier"] == "joint"
        ce = F.cross_entropy(self.network.head(mu if joint else mu.detach()), batch["y"])
        vae = recon + self.hparams["beta"] * kl
        if joint:
            vae = vae + self.hparams["ce_weight"] * ce
        return {"recon": recon, "kl": kl, "ce": ce, "z": z, "vae": vae}

    def _report(self, terms: dict[str, torch.Tensor]) -> dict[str, float]:
        out = {k: float(v.detach()) for k, v in terms.items() if v.dim() == 0}
        out["elbo"] = -(out["recon"] + out["kl"])
        out["loss"] = out["ce"]
        return out

    # ---------------------------------------------------------------- interface
    def after_step(self, terms: dict[str, torch.Tensor]) -> dict[str, float]:
        """Hook after the VAE's step (Factor-VAE trains its discriminator); extra losses."""
        return {}

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        terms = self.losses(batch)
        total = terms["vae"] if self.hparams["classifier"] == "joint" else (
            terms["vae"] + terms["ce"])  # the head's ce reaches only the head (detached mu)
        # Factor-VAE: the discriminator's gradients from tc are unused
        self.backward_and_step(total, self.optimizer)
        return {**self._report(terms), **self.after_step(terms)}

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network.head(self.network.encode(x)[0])


class FactorVAE(VAE):
    """VAE + ``gamma`` x total correlation (discriminator estimate); the discriminator is trained
    on the same batch's codes against their per-dimension permutation."""

    name = "factor_vae"
    hparams_defaults: ClassVar[dict[str, Any]] = {
        **VAE.hparams_defaults, "gamma": 20.0, "disc_lr": 1e-5,
    }

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        super().check_hparam_values(hparams)
        cls.check_ranges(hparams, positive=("disc_lr",), non_negative=("gamma",))

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        self.discriminator = FactorDiscriminator(self.network.latent)
        # Kim & Mnih's discriminator betas; the paper gives only the learning rate
        self.disc_optimizer = torch.optim.Adam(
            self.discriminator.parameters(), lr=self.hparams["disc_lr"], betas=(0.5, 0.9)
        )

    def losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        terms = super().losses(batch)
        d_logits = self.discriminator(terms["z"])
        terms["tc"] = (d_logits[:, 0] - d_logits[:, 1]).mean()
        terms["vae"] = terms["vae"] + self.hparams["gamma"] * terms["tc"]
        return terms

    def discriminator_loss(self, z: torch.Tensor) -> torch.Tensor:
        """Cross entropy of telling codes ``z`` (class 0) from their permutation (class 1)."""
        z = z.detach()
        perm = permute_dims(z, self.generator("permute"))
        zeros = torch.zeros(len(z), dtype=torch.long, device=z.device)
        return 0.5 * (F.cross_entropy(self.discriminator(z), zeros)
                      + F.cross_entropy(self.discriminator(perm), zeros + 1))

    def after_step(self, terms: dict[str, torch.Tensor]) -> dict[str, float]:
        d_loss = self.discriminator_loss(terms["z"])
        self.backward_and_step(d_loss, self.disc_optimizer)  # zeroing drops those from tc
        return {"disc": float(d_loss.detach())}
