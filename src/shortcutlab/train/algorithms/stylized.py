"""Stylized and Debiased training: input stylisation, in factor space or by AdaIN.

Geirhos et al. (Stylized ImageNet) replace each training image's texture by a random painting's
through AdaIN style transfer; Li et al. (shape-texture debiased training) stylise an image with
another batch image's texture and train on the convex combination ``gamma * onehot(y_content) +
(1 - gamma) * onehot(y_style)`` (``gamma = 0.8``). A training set that can re-render its items
with their style redrawn (:class:`shortcutlab.train.capabilities.Restylable`; DiagViB-6 datasets
can, from their factor classes) needs no style-transfer network: the same item is rendered again
with another style, everything else kept.

- ``stylized``: each item's style is drawn at random from the set's style pool (``style_pool``:
  ``selected``, the values the training set uses, or ``all``). The label is unchanged.
- ``debiased``: each item takes the style of a donor item of the same batch (a random
  permutation), and its target is ``gamma * onehot(y) + (1 - gamma) * onehot(y_donor)``: the
  donor's label is the class that the style says under the training correlation.

``style`` (both) names which style to redraw, in the training set's own terms ("" = its
default; DiagViB-6: ``+``-joined factors, e.g. ``texture+hue``); the set refuses a style that
would change the labels. The algorithms do not know what the style is.

For ``stylized``, stylised images replace the originals with probability ``p`` (default 1.0;
Geirhos et al. train on Stylized ImageNet only; BiasBed's "Stylized ERM" competitor is ERM on a
Stylized-ImageNet training folder). ``debiased`` follows Li et al.'s reference code by default
(``mix="pair"``): every batch holds the clean images and their stylised versions (AdaIN strength
``alpha = 0.5``), the clean half with its hard labels and the stylised half with the soft
targets, and the stylised half passes through auxiliary batch norms (``aux_bn``:
:class:`DualBatchNorm2d`; prediction uses the main ones). ``mix="replace"`` keeps the earlier
variant (stylised images replace the originals with probability ``p``).

On training sets that cannot re-render (image folders) they stylise in image space instead, as
the papers do: each image takes the style of another image of the batch through an AdaIN
style-transfer network (:class:`AdaINStyleTransfer`, strength ``alpha``), which must be given as
local pretrained weights: either the standard pair of Huang & Belongie's AdaIN, used by
Stylized-ImageNet and BiasBed (hparams ``vgg_weights`` = ``vgg_normalised.pth`` and
``decoder_weights`` = ``decoder.pth``), or one state dict of :class:`AdaINStyleTransfer` (hparam
``style_weights``); read with ``torch.load(weights_only=True)``, never downloaded; without them
they raise a clear error. Batches arrive normalised; stylised images are normalised the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import DataNotFoundError, TrainError, unknown_choice
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
from shortcutlab.train.algorithms.padain import adain
from shortcutlab.train.capabilities import STYLE_POOLS, ItemRestyler, Restylable
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.normalization import IMAGENET_MEAN, IMAGENET_STD
from shortcutlab.utils.rng import rng

__all__ = [
    "AdaINStyleTransfer",
    "Debiased",
    "DualBatchNorm2d",
    "Stylized",
    "debiased_targets",
    "load_local_weights",
]

DEBIASED_MIXES = ("pair", "replace")
#: Debiased's targets: ``reference`` (BiasBed's code: its mean-reduced cross entropy puts every
#: row, clean ones too, on the batch-mean label weight, 0.9/0.1 for pairs) or ``paper`` (Li et
#: al.: clean rows hard labels, stylised rows gamma/1-gamma).
DEBIASED_LABELS = ("reference", "paper")
#: What Debiased's AdaIN network sees: ``normalised`` (BiasBed's code: the normalised batch, the
#: output fed to the model as is) or ``pixels`` ([0, 1] images, re-normalised afterwards).
DEBIASED_ADAIN_INPUTS = ("normalised", "pixels")


def debiased_targets(
    y: torch.Tensor, y_donor: torch.Tensor, num_classes: int, gamma: float = 0.8
) -> torch.Tensor:
    """Li et al.'s soft targets ``gamma * onehot(y) + (1 - gamma) * onehot(y_donor)``."""
    if not 0.0 <= gamma <= 1.0:
        raise TrainError(f"debiased gamma must be in [0, 1], got {gamma}")
    eye = torch.eye(num_classes, dtype=torch.float32, device=y.device)
    return gamma * eye[y] + (1.0 - gamma) * eye[y_donor.to(y.device)]


def load_local_weights(path: str | os.PathLike[str] | None, what: str) -> dict[str, torch.Tensor]:
    """Load a pretrained network's state dict from a local file only (``weights_only=True``).

    Style-transfer networks are never downloaded: a missing path is a clear error saying how to
    provide the file.
    """
    if path is None or not Path(path).is_file():
        raise DataNotFoundError(
            f"{what} needs a local pretrained weights file (a state dict saved by torch.save; "
            f"hparam style_weights=PATH); got {None if path is None else str(path)!r}. "
            "Nothing is downloaded at run time."
        )
    try:
        state = torch.load(Path(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # any unpickling failure is a bad weights file
        raise TrainError(f"cannot load {what} weights from {str(path)!r}: {exc}") from None
    if not isinstance(state, dict):
        raise TrainError(f"{what} weights in {str(path)!r} are not a state dict")
    return state


# ------------------------------------------------------------------ image-space style transfer
def _vgg19_to_relu4_1() -> nn.Sequential:
    """VGG-19 conv1_1 .. relu4_1 in torchvision's ``features`` layout (indices 0..20)."""
    from torchvision.models.vgg import make_layers

    return make_layers([64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512])


def _adain_vgg_to_relu4_1() -> nn.Sequential:
    """The encoder of Huang & Belongie's AdaIN code (``vgg_normalised.pth``): a 1x1 colour conv,
    then VGG-19 with reflection padding up to relu4_1 (module indices 0..30 of their ``vgg``);
    it takes RGB images in [0, 1] without further normalisation."""
    layers: list[nn.Module] = [nn.Conv2d(3, 3, 1)]
    channels = 3
    plan: list[int | str] = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512]
    for item in plan:
        if item == "M":
            layers.append(nn.MaxPool2d(2, 2, 0, ceil_mode=True))
            continue
        layers += [nn.ReflectionPad2d(1), nn.Conv2d(channels, int(item), 3), nn.ReLU()]
        channels = int(item)
    return nn.Sequential(*layers)


def _mirror_decoder() -> nn.Sequential:
    """The AdaIN decoder (Huang & Belongie, 2017): the encoder mirrored, pooling replaced by
    nearest-neighbour upsampling, reflection padding before every 3x3 convolution."""
    plan: list[int | str] = [256, "up", 256, 256, 256, 128, "up", 128, 64, "up", 64, 3]
    layers: list[nn.Module] = []
    channels = 512
    for i, item in enumerate(plan):
        if item == "up":
            layers.append(nn.Upsample(scale_factor=2, mode="nearest"))
            continue
        layers += [nn.ReflectionPad2d(1), nn.Conv2d(channels, int(item), 3)]
        if i < len(plan) - 1:
            layers.append(nn.ReLU())
        channels = int(item)
    return nn.Sequential(*layers)


def _load_into(
    module: nn.Module, state: Mapping[str, torch.Tensor], path: object, what: str
) -> None:
    """``module.load_state_dict(state, strict=True)`` with a one-line error naming the file."""
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise TrainError(f"weights in {str(path)!r} do not fit {what}: {first}") from None


class AdaINStyleTransfer(nn.Module):
    """Arbitrary style transfer by AdaIN: encode content and style with VGG-19 up to relu4_1,
    give the content features the style features' channel statistics (BiasBed eq. 1), blend with
    strength ``alpha`` and decode. Inputs and output are images in [0, 1].

    Pretrained weights are never downloaded: :meth:`from_file` reads a local state dict of this
    module (keys ``encoder.*``: torchvision's ``vgg19().features[:21]``, i.e. an ImageNet VGG-19
    state dict's ``features.0`` .. ``features.19`` renamed; ``decoder.*``: a decoder trained for
    that encoder) with ``torch.load(weights_only=True)``.
    """

    def __init__(self, layout: str = "torchvision") -> None:
        super().__init__()
        if layout not in ("torchvision", "adain"):
            layouts = ("torchvision", "adain")
            raise TrainError(unknown_choice("AdaIN encoder layout", layout, layouts))
        self.layout = layout
        #: Whether :meth:`forward` clamps the stylised images to [0, 1].
        self.clamp = True
        self.encoder = _vgg19_to_relu4_1() if layout == "torchvision" else _adain_vgg_to_relu4_1()
        self.decoder = _mirror_decoder()
        self.mean: torch.Tensor
        self.std: torch.Tensor
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))
        self.requires_grad_(False)
        self.eval()

    @classmethod
    def from_pair(
        cls, vgg_path: str | os.PathLike[str] | None, decoder_path: str | os.PathLike[str] | None
    ) -> AdaINStyleTransfer:
        """The standard AdaIN weight files: ``vgg_normalised.pth`` (the whole normalised VGG-19;
        layers past relu4_1 are ignored) and ``decoder.pth`` (its decoder), local files only."""
        what = "AdaIN style transfer (vgg_weights/decoder_weights)"
        vgg = load_local_weights(vgg_path, what)
        decoder = load_local_weights(decoder_path, what)
        net = cls(layout="adain")
        n_encoder = len(net.encoder)
        head = {k: k.split(".")[0] for k in vgg}
        encoder_state = {
            k: v for k, v in vgg.items() if head[k].isdigit() and int(head[k]) < n_encoder
        }
        layout = "the standard AdaIN vgg_normalised/decoder layout"
        _load_into(net.encoder, encoder_state, vgg_path, layout)
        _load_into(net.decoder, decoder, decoder_path, layout)
        return net

    @classmethod
    def from_file(cls, path: str | os.PathLike[str] | None) -> AdaINStyleTransfer:
        """The network with the weights of a local state-dict file (clear error without one)."""
        state = load_local_weights(path, "AdaIN style transfer (image-folder Stylized/Debiased)")
        net = cls()
        state = {k.removeprefix("module."): v for k, v in state.items()}
        state.setdefault("mean", net.mean)
        state.setdefault("std", net.std)
        _load_into(net, state, path, "the AdaIN network (keys encoder.*, decoder.*)")
        return net

    def train(self, mode: bool = True) -> AdaINStyleTransfer:
        """Always in evaluation mode: the network is pretrained and frozen."""
        return super().train(False)

    @torch.no_grad()
    def forward(
        self, content: torch.Tensor, style: torch.Tensor, alpha: float = 1.0
    ) -> torch.Tensor:
        """The stylised images, clamped to [0, 1] unless :attr:`clamp` is False (the decoder's
        output as it is, as Li et al.'s and BiasBed's Debiased feed it to the model)."""
        if self.layout == "torchvision":
            content, style = (content - self.mean) / self.std, (style - self.mean) / self.std
        f_c = self.encoder(content)
        f_s = self.encoder(style)
        target = adain(f_c, f_s)
        target = alpha * target + (1.0 - alpha) * f_c
        out = self.decoder(target)
        if out.shape[-2:] != content.shape[-2:]:
            out = F.interpolate(out, size=content.shape[-2:], mode="bilinear", align_corners=False)
        return out.clamp(0.0, 1.0) if self.clamp else out


class _StylisingAlgorithm(Algorithm):
    """Shared set-up of Stylized and Debiased: network, optimiser, restyler, mixing mask."""

    #: Whether AdaIN's stylised images are clamped to [0, 1] (Stylized-ImageNet's are saved as
    #: image files; Debiased's references feed the decoder output unclamped).
    clamp_stylised: ClassVar[bool] = True

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        if not 0.0 <= self.hparams["p"] <= 1.0:
            raise TrainError(f"hyper-parameter p must be in [0, 1], got {self.hparams['p']}")
        self.restyler: ItemRestyler | None = None
        self.transfer: AdaINStyleTransfer | None = None
        dataset = self.context.train_dataset
        if isinstance(dataset, Restylable):
            try:
                pool = self.hparams.get("style_pool", STYLE_POOLS[0])  # stylized draws from it
                self.restyler = dataset.restyler(self.hparams["style"], pool)
            except TrainError as exc:
                raise TrainError(f"algorithm {self.name!r}: {exc}") from None
        elif self.hparams["vgg_weights"] or self.hparams["decoder_weights"]:
            self.transfer = AdaINStyleTransfer.from_pair(
                self.hparams["vgg_weights"] or None, self.hparams["decoder_weights"] or None
            )
        elif self.hparams["style_weights"]:
            self.transfer = AdaINStyleTransfer.from_file(self.hparams["style_weights"])
        else:
            raise TrainError(
                f"algorithm {self.name!r} needs a training set that re-renders its items with "
                "another style (a Restylable one, e.g. DiagViB-6's) or, for image folders, a "
                "pretrained AdaIN style-transfer network: hparams "
                "vgg_weights=<vgg_normalised.pth> decoder_weights=<decoder.pth>, or "
                "style_weights=<local state-dict file> (nothing is downloaded)"
            )
        if self.transfer is not None:
            self.transfer.clamp = self.clamp_stylised
        self.network = self.build_network()
        self.optimizer = self.make_optimizer(self.network.parameters())

    def _transfer_styles(
        self, batch: dict[str, torch.Tensor], mix: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Image-space stylisation: each image gets the style of a batch donor by AdaIN.

        Returns (images, donor permutation, used mask); ``mix=False``: every image stylised."""
        assert self.transfer is not None
        x = batch["x"]
        perm = torch.randperm(x.shape[0], generator=self.generator(f"{self.name}-donor"))
        perm = perm.to(x.device)
        pixels = self._to_transfer(x)  # the transfer network works on [0, 1] images
        styled = self._from_transfer(self.transfer(pixels, pixels[perm], self.hparams["alpha"]))
        if not mix:
            return styled, perm, torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
        mixed, used = self._mix(x, styled)
        return mixed, perm, used

    def _to_transfer(self, x: torch.Tensor) -> torch.Tensor:
        return self.input_norm.inverse(x)

    def _from_transfer(self, images: torch.Tensor) -> torch.Tensor:
        return self.input_norm(images)

    def _mix(
        self, original: torch.Tensor, styled: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Use the stylised image with probability p per sample; returns (x, used mask)."""
        gen = self.generator(f"{self.name}-mix")
        used = torch.rand(original.shape[0], generator=gen) < self.hparams["p"]
        used = used.to(original.device)
        x = torch.where(used.view(-1, 1, 1, 1), styled.to(original.device), original)
        return x, used

    def _restyled(self, rows: np.ndarray, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The batch's items re-rendered as ``rows`` describe them, normalised like the batch."""
        assert self.restyler is not None
        return self.input_norm(self.restyler.render(rows, batch).to(batch["x"].device))

    def _step(self, loss: torch.Tensor) -> dict[str, float]:
        self.backward_and_step(loss, self.optimizer)
        return {"loss": float(loss.detach())}

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


@register_algorithm
class Stylized(_StylisingAlgorithm):
    """ERM on images re-rendered with a random style (image folders: a batch donor's, by AdaIN).

    Hyper-parameters: ``p`` (share of stylised images, 1.0), ``style`` (which style to redraw,
    in the training set's terms; "" = its default), ``style_pool`` (``selected``: the values the
    training set uses; ``all``: every value the set can render).
    """

    name = "stylized"
    hparams_defaults = {
        "p": 1.0,
        "style": "",
        "style_pool": "selected",
        "style_weights": "",
        "vgg_weights": "",
        "decoder_weights": "",
        "alpha": 1.0,
    }

    def stylize(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, np.ndarray | None]:
        """(images to train on, their item rows; None for image folders) for one batch."""
        if self.restyler is None:
            return self._transfer_styles(batch)[0], None
        rows = self.restyler.rows(batch)
        new = self.restyler.redrawn(rows, rng(self.config.seed, self.name, self.step))
        x, used = self._mix(batch["x"], self._restyled(new, batch))
        used_np = used.cpu().numpy()
        return x, np.where(used_np[:, None], new, rows)

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        x, _ = self.stylize(batch)
        return self._step(F.cross_entropy(self.network(x), batch["y"]))


class DualBatchNorm2d(nn.Module):
    """A batch norm with an auxiliary twin (Li et al.'s debiased training, like AdvProp): while
    ``split`` is set in training, the first ``split`` rows go through ``main`` and the rest
    through ``aux``; otherwise (and always in evaluation) only ``main`` is used."""

    def __init__(self, bn: nn.BatchNorm2d) -> None:
        super().__init__()
        import copy

        self.main = bn
        self.aux = copy.deepcopy(bn)
        self.split: int | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.split is None or not self.training:
            return self.main(x)
        return torch.cat([self.main(x[: self.split]), self.aux(x[self.split :])])


def add_auxiliary_batchnorms(model: nn.Module) -> list[DualBatchNorm2d]:
    """Replace every BatchNorm2d of ``model`` in place by a :class:`DualBatchNorm2d`."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.BatchNorm2d)]
    duals = []
    for name in names:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        dual = DualBatchNorm2d(getattr(parent, attr))
        setattr(parent, attr, dual)
        duals.append(dual)
    return duals


@register_algorithm
class Debiased(_StylisingAlgorithm):
    """Li et al.'s shape-texture debiased training (image space by AdaIN, or re-rendered).

    Each stylised image takes the style of a donor from the batch; its target is
    ``gamma * onehot(y) + (1 - gamma) * onehot(y_donor)``.
    Hyper-parameters: ``gamma`` (0.8, the paper's), ``mix`` (``pair``: train on the clean and the
    stylised images together, reference; ``replace``: stylised images replace the originals with
    probability ``p``), ``aux_bn`` (pair mix: auxiliary batch norms for the stylised half, True),
    ``alpha`` (AdaIN strength, 0.5 as in the reference), ``p`` (replace mix only), ``style``,
    ``labels`` (:data:`DEBIASED_LABELS`: ``reference`` by default) and ``adain_input``
    (:data:`DEBIASED_ADAIN_INPUTS`: ``normalised`` by default, BiasBed's code).
    """

    name = "debiased"
    clamp_stylised = False  # Li et al.'s and BiasBed's code: the decoder output as it is
    hparams_defaults = {
        "gamma": 0.8,
        "mix": "pair",
        "aux_bn": True,
        "p": 1.0,
        "style": "",
        "style_weights": "",
        "vgg_weights": "",
        "decoder_weights": "",
        "alpha": 0.5,
        "labels": "reference",
        "adain_input": "normalised",
    }

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        """Known ``mix``, ``labels`` and ``adain_input``; ``p`` only with ``mix="replace"``
        (pair trains on every stylised image; a ``p`` outside [0, 1] is refused as such when
        the algorithm is built), ``aux_bn`` only with ``mix="pair"``."""
        for key, choices in (("mix", DEBIASED_MIXES), ("labels", DEBIASED_LABELS),
                             ("adain_input", DEBIASED_ADAIN_INPUTS)):
            if hparams[key] not in choices:
                raise TrainError(unknown_choice(f"debiased {key}", hparams[key], choices))
        pair = hparams["mix"] == "pair"
        if not (pair and not 0.0 <= hparams["p"] <= 1.0):
            cls.check_unread(hparams, ("p",) if pair else ("aux_bn",), f"mix is {hparams['mix']!r}")

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        self.dual_bns: list[DualBatchNorm2d] = []
        if self.hparams["mix"] == "pair" and self.hparams["aux_bn"]:
            self.dual_bns = add_auxiliary_batchnorms(self.network)
            self.optimizer = self.make_optimizer(self.network.parameters())  # with the aux BNs

    def stylize(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, np.ndarray | None]:
        """(images, soft targets (rows, K), item rows; None for image folders) for one batch.

        ``mix="pair"``: 2B rows, the clean batch followed by its stylised version."""
        pair = self.hparams["mix"] == "pair"
        table: np.ndarray | None = None
        if self.restyler is None:
            x, perm, used = self._transfer_styles(batch, mix=not pair)
        else:
            classes = self.restyler.rows(batch)
            perm = torch.randperm(classes.shape[0], generator=self.generator("debiased-donor"))
            new = self.restyler.donated(classes, perm.numpy())
            x = self._restyled(new, batch)
            if pair:
                used = torch.ones(len(classes), dtype=torch.bool, device=batch["x"].device)
                table = np.concatenate([classes, new])
            else:
                x, used = self._mix(batch["x"], x)
                table = np.where(used.cpu().numpy()[:, None], new, classes)
        targets = self._targets(batch["y"], perm, used)
        if pair:
            x = torch.cat([batch["x"], x])
            targets = torch.cat([self._hard(batch["y"]), targets])
        if self.hparams["labels"] == "reference":
            targets = self._reference_targets(batch["y"], perm, used, pair)
        return x, targets, table

    def _to_transfer(self, x: torch.Tensor) -> torch.Tensor:
        if self.hparams["adain_input"] == "normalised":  # BiasBed's code skips un-normalising
            return x
        return super()._to_transfer(x)

    def _from_transfer(self, images: torch.Tensor) -> torch.Tensor:
        if self.hparams["adain_input"] == "normalised":
            return images
        return super()._from_transfer(images)

    def _reference_targets(
        self, y: torch.Tensor, perm: torch.Tensor, used: torch.Tensor, pair: bool
    ) -> torch.Tensor:
        """BiasBed's loss, (1 − w̄)·CE(y) + w̄·CE(y_donor) with w̄ the batch mean of the per-row
        donor weights (1 − gamma for stylised rows, 0 for clean ones), as soft targets: every
        row, clean ones too, on w̄ (0.1 for clean/stylised pairs at gamma 0.8)."""
        donor = y[perm.to(y.device)]
        weights = used.float() * (1.0 - self.hparams["gamma"])
        if pair:
            y, donor = torch.cat([y, y]), torch.cat([donor, donor])
            weights = torch.cat([torch.zeros_like(weights), weights])
        w = weights.mean()
        return (1.0 - w) * self._hard(y) + w * self._hard(donor)

    def _hard(self, y: torch.Tensor) -> torch.Tensor:
        return torch.eye(self.num_classes, device=y.device)[y]

    def _targets(self, y: torch.Tensor, perm: torch.Tensor, used: torch.Tensor) -> torch.Tensor:
        soft = debiased_targets(y, y[perm.to(y.device)], self.num_classes, self.hparams["gamma"])
        return torch.where(used.view(-1, 1), soft, self._hard(y))

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        x, targets, _ = self.stylize(batch)
        clean = len(batch["y"]) if self.hparams["mix"] == "pair" else None
        for bn in self.dual_bns:
            bn.split = clean
        try:
            logits = self.network(x)
        finally:
            for bn in self.dual_bns:
                bn.split = None
        return self._step(F.cross_entropy(logits, targets))
