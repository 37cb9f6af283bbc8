"""Stylized and Debiased training for DiagViB-6: input stylisation in factor space.

Geirhos et al. (Stylized ImageNet) replace each training image's texture by a random painting's
through AdaIN style transfer; Li et al. (shape-texture debiased training) stylise an image with
another batch image's texture and train on the convex combination ``gamma * onehot(y_content) +
(1 - gamma) * onehot(y_style)`` (``gamma = 0.8``). DiagViB-6 images are rendered from their factor
classes, so the factor-space counterpart needs no style-transfer network: we re-render the same
image (same seed, split and index, so shape, position, scale, lightness and every sampled detail
stay) with another texture class, and optionally another hue class.

- ``stylized``: the texture class is drawn uniformly from the experiment's selected texture
  classes (``texture_pool="selected"``) or from all of them (``"all"``); with ``hue=True`` the hue
  class too. The label is unchanged.
- ``debiased``: each image takes the texture (and with ``hue=True`` the hue) class of a donor
  image of the same batch (a random permutation), and its target is ``gamma * onehot(y) +
  (1 - gamma) * onehot(y_donor)``: the donor's label is the class that the texture says under the
  training correlation.

For ``stylized``, stylised images replace the originals with probability ``p`` (default 1.0;
Geirhos et al. train on Stylized ImageNet only; BiasBed's "Stylized ERM" competitor is ERM on a
Stylized-ImageNet training folder). ``debiased`` follows Li et al.'s reference code by default
(``mix="pair"``): every batch holds the clean images and their stylised versions (AdaIN strength
``alpha = 0.5``), the clean half with its hard labels and the stylised half with the soft
targets, and the stylised half passes through auxiliary batch norms (``aux_bn``:
:class:`DualBatchNorm2d`; prediction uses the main ones). ``mix="replace"`` keeps the earlier
variant (stylised images replace the originals with probability ``p``).

When the predicted factor is **texture** (or hue with ``hue=True``) the stylisation would replace
the label itself, so both algorithms refuse the experiment with a TrainError. When the predicted
factor is **shape**, this is exactly the intended setting (shape is kept, texture randomised).
Other predicted factors work the same way: texture (and hue) are randomised, the rest is kept.

Both algorithms need, from the AlgorithmContext, the DiagViB-6 generator, the training split's
render seed and the factor layout of the class table (``factor_classes``; the training set may
provide it as an attribute of the same name), and the batch's ``classes`` and ``index``. Nothing
here imports the DiagViB-6 package: the generator and the layout are handed in. On image-folder
datasets they stylise in image space instead, as the papers do: each image takes the style of
another image of the batch through an AdaIN style-transfer network (:class:`AdaINStyleTransfer`,
strength ``alpha``), which must be given as local pretrained weights: either the standard pair of
Huang & Belongie's AdaIN, used by Stylized-ImageNet and BiasBed (hparams ``vgg_weights`` =
``vgg_normalised.pth`` and ``decoder_weights`` = ``decoder.pth``), or one state dict of
:class:`AdaINStyleTransfer` (hparam ``style_weights``); read with
``torch.load(weights_only=True)``, never downloaded; without them they raise a clear error.
Batches arrive normalised; stylised images are normalised the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import DataNotFoundError, TrainError, unknown_choice
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
from shortcutlab.train.algorithms.padain import adain
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.normalization import IMAGENET_MEAN, IMAGENET_STD
from shortcutlab.utils.rng import rng

__all__ = [
    "AdaINStyleTransfer",
    "Debiased",
    "DualBatchNorm2d",
    "Restyler",
    "Stylized",
    "debiased_targets",
    "donor_style_classes",
    "load_local_weights",
    "random_style_classes",
]

TEXTURE_POOLS = ("selected", "all")
DEBIASED_MIXES = ("pair", "replace")
#: Debiased's targets: ``reference`` (BiasBed's code: its mean-reduced cross entropy puts every
#: row, clean ones too, on the batch-mean label weight, 0.9/0.1 for pairs) or ``paper`` (Li et
#: al.: clean rows hard labels, stylised rows gamma/1-gamma).
DEBIASED_LABELS = ("reference", "paper")
#: What Debiased's AdaIN network sees: ``normalised`` (BiasBed's code: the normalised batch, the
#: output fed to the model as is) or ``pixels`` ([0, 1] images, re-normalised afterwards).
DEBIASED_ADAIN_INPUTS = ("normalised", "pixels")


def style_factors(hue: bool) -> tuple[str, ...]:
    """The factors stylisation changes."""
    return ("texture", "hue") if hue else ("texture",)


def random_style_classes(
    classes: np.ndarray,
    pools: dict[int, np.ndarray],
    rng: np.random.Generator,
) -> np.ndarray:
    """A copy of the (B, 6) class table with each column in ``pools`` redrawn from its pool."""
    out = np.array(classes, dtype=np.int64, copy=True)
    for col, pool in pools.items():
        out[:, col] = rng.choice(np.asarray(pool, dtype=np.int64), size=out.shape[0])
    return out


def donor_style_classes(
    classes: np.ndarray, perm: np.ndarray, columns: tuple[int, ...]
) -> np.ndarray:
    """A copy of the class table where row i takes ``columns`` from row ``perm[i]``."""
    out = np.array(classes, dtype=np.int64, copy=True)
    cols = list(columns)
    out[:, cols] = np.asarray(classes)[np.asarray(perm)][:, cols]
    return out


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
        if self.layout == "torchvision":
            content, style = (content - self.mean) / self.std, (style - self.mean) / self.std
        f_c = self.encoder(content)
        f_s = self.encoder(style)
        target = adain(f_c, f_s)
        target = alpha * target + (1.0 - alpha) * f_c
        out = self.decoder(target)
        if out.shape[-2:] != content.shape[-2:]:
            out = F.interpolate(out, size=content.shape[-2:], mode="bilinear", align_corners=False)
        return out.clamp(0.0, 1.0)


@dataclass
class Restyler:
    """Re-renders training images of a DiagViB-6 split with changed factor classes.

    ``factor_classes``: the class table's factors in column order, each with all its class
    names in class-index order.
    """

    spec: Any
    generator: Any
    render_seed: int
    factor_classes: Mapping[str, Sequence[str]]
    split: str = "train"
    backend: str = "numpy"

    @classmethod
    def from_context(cls, context: AlgorithmContext, algorithm: str) -> Restyler:
        """From ``context.train_dataset``, a set that can re-render its items (``spec``,
        ``generator`` and ``render_seed``: a DiagvibDataset); the factor layout from
        ``context.factor_classes``, else the dataset's ``factor_classes``."""
        ds = context.train_dataset
        layout = context.factor_classes or getattr(ds, "factor_classes", None)
        if layout is None:
            raise TrainError(
                f"algorithm {algorithm!r} re-renders DiagViB-6 training images and needs the "
                "factor layout of the class table: AlgorithmContext(factor_classes={factor: "
                "class names}) in class-table column order"
            )
        if ds is not None and all(hasattr(ds, a) for a in ("spec", "render_seed", "generator")):
            return cls(
                ds.spec,
                ds.generator,
                int(ds.render_seed),
                layout,
                getattr(ds, "split", "train"),
                getattr(ds, "backend", "numpy"),
            )
        raise TrainError(
            f"algorithm {algorithm!r} re-renders DiagViB-6 training images and needs a DiagViB-6 "
            "training set (AlgorithmContext.train_dataset); on image-folder "
            "datasets use erm, padain, sagnet or infodrop"
        )

    def column(self, factor: str) -> int:
        """Column of ``factor`` in the (B, K) class table."""
        return list(self.factor_classes).index(factor)

    def columns(self, factors: Sequence[str]) -> tuple[int, ...]:
        """Columns of several factors."""
        return tuple(self.column(f) for f in factors)

    def pool(self, factor: str, pool: str) -> np.ndarray:
        """Global class indices of ``factor`` to draw from: the experiment's selected classes
        (``selected``) or every class of the factor (``all``)."""
        if pool not in TEXTURE_POOLS:
            raise TrainError(unknown_choice("texture pool", pool, TEXTURE_POOLS))
        names = list(self.factor_classes[factor])
        selected = getattr(self.spec, "selected", None)
        if pool == "all" or selected is None:
            return np.arange(len(names), dtype=np.int64)
        return np.array([names.index(c) for c in selected[factor]], dtype=np.int64)

    def render(self, classes: np.ndarray, indices: np.ndarray) -> torch.Tensor:
        """float32 images (B, 3, 128, 128) in [0, 1] for these class rows and split indices."""
        images = self.generator.render(
            np.asarray(classes, dtype=np.int64),
            seed=self.render_seed,
            split=self.split,
            indices=np.asarray(indices, dtype=np.int64),
            backend=self.backend,
        )
        return torch.as_tensor(np.asarray(images)).to(torch.float32).div_(255.0)


def _check_style_target(spec: Any, hue: bool, algorithm: str) -> None:
    changed = ("texture", "hue") if hue else ("texture",)
    predicted = getattr(spec, "predicted", None)
    if predicted in changed:
        raise TrainError(
            f"algorithm {algorithm!r} randomises {' and '.join(changed)}, but the experiment "
            f"predicts {predicted!r}: the labels would be destroyed. Use it on experiments "
            "predicting another factor (e.g. shape)"
            + (", or set hue=False" if predicted == "hue" else "")
        )


def _can_rerender(context: AlgorithmContext) -> bool:
    """Whether the training set offers the re-rendering capability (``spec``, ``generator``,
    ``render_seed``; DiagViB-6 datasets do)."""
    ds = context.train_dataset
    return ds is not None and all(hasattr(ds, a) for a in ("spec", "render_seed", "generator"))


class _StylisingAlgorithm(Algorithm):
    """Shared set-up of Stylized and Debiased: network, optimiser, restyler, mixing mask."""

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        if not 0.0 <= self.hparams["p"] <= 1.0:
            raise TrainError(f"hyper-parameter p must be in [0, 1], got {self.hparams['p']}")
        self.restyler: Restyler | None = None
        self.transfer: AdaINStyleTransfer | None = None
        if _can_rerender(self.context):
            self.restyler = Restyler.from_context(self.context, self.name)
            _check_style_target(self.restyler.spec, self.hparams["hue"], self.name)
        elif self.hparams["vgg_weights"] or self.hparams["decoder_weights"]:
            self.transfer = AdaINStyleTransfer.from_pair(
                self.hparams["vgg_weights"] or None, self.hparams["decoder_weights"] or None
            )
        elif self.hparams["style_weights"]:
            self.transfer = AdaINStyleTransfer.from_file(self.hparams["style_weights"])
        else:
            raise TrainError(
                f"algorithm {self.name!r} needs a DiagViB-6 training set (re-rendered in factor "
                "space) or, for image folders, a pretrained AdaIN style-transfer network: "
                "hparams vgg_weights=<vgg_normalised.pth> decoder_weights=<decoder.pth>, or "
                "style_weights=<local state-dict file> (nothing is downloaded)"
            )
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

    def _batch_arrays(self, batch: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
        for key in ("classes", "index"):
            if key not in batch:
                raise TrainError(
                    f"algorithm {self.name!r} needs the batch key {key!r} (DiagViB-6 items); "
                    f"got keys {sorted(batch)}"
                )
        return (
            batch["classes"].detach().cpu().numpy(),
            np.asarray(torch.as_tensor(batch["index"]).cpu().numpy(), dtype=np.int64),
        )

    def _mix(
        self, original: torch.Tensor, styled: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Use the stylised image with probability p per sample; returns (x, used mask)."""
        gen = self.generator(f"{self.name}-mix")
        used = torch.rand(original.shape[0], generator=gen) < self.hparams["p"]
        used = used.to(original.device)
        x = torch.where(used.view(-1, 1, 1, 1), styled.to(original.device), original)
        return x, used

    def _restyled(self, classes: np.ndarray, index: np.ndarray, like: torch.Tensor) -> torch.Tensor:
        """Re-rendered images of these class rows, normalised like the batch ``like``."""
        assert self.restyler is not None
        return self.input_norm(self.restyler.render(classes, index).to(like.device))

    def _step(self, loss: torch.Tensor) -> dict[str, float]:
        self.backward_and_step(loss, self.optimizer)
        return {"loss": float(loss.detach())}

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


@register_algorithm
class Stylized(_StylisingAlgorithm):
    """ERM on images re-rendered with a random texture class (and with ``hue`` a random hue).

    Hyper-parameters: ``p`` (share of stylised images, 1.0), ``hue`` (False), ``texture_pool``
    (``selected``: the experiment's three texture classes; ``all``: every texture class).
    """

    name = "stylized"
    hparams_defaults = {
        "p": 1.0,
        "hue": False,
        "texture_pool": "selected",
        "style_weights": "",
        "vgg_weights": "",
        "decoder_weights": "",
        "alpha": 1.0,
    }

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        if self.restyler is None:
            return
        r, pool = self.restyler, self.hparams["texture_pool"]
        self.pools = {r.column(f): r.pool(f, pool) for f in style_factors(self.hparams["hue"])}

    def stylize(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, np.ndarray | None]:
        """(images to train on, their class table; None for image folders) for one batch."""
        if self.restyler is None:
            return self._transfer_styles(batch)[0], None
        classes, index = self._batch_arrays(batch)
        new = random_style_classes(classes, self.pools, rng(self.config.seed, self.name, self.step))
        x, used = self._mix(batch["x"], self._restyled(new, index, batch["x"]))
        used_np = used.cpu().numpy()
        return x, np.where(used_np[:, None], new, classes)

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
    """Li et al.'s shape-texture debiased training (image space by AdaIN, or factor space).

    Each stylised image takes the style (texture; with ``hue`` also hue) of a donor from the
    batch; its target is ``gamma * onehot(y) + (1 - gamma) * onehot(y_donor)``.
    Hyper-parameters: ``gamma`` (0.8, the paper's), ``mix`` (``pair``: train on the clean and the
    stylised images together, reference; ``replace``: stylised images replace the originals with
    probability ``p``), ``aux_bn`` (pair mix: auxiliary batch norms for the stylised half, True),
    ``alpha`` (AdaIN strength, 0.5 as in the reference), ``p`` (replace mix only), ``hue``,
    ``labels`` (:data:`DEBIASED_LABELS`: ``reference`` by default) and ``adain_input``
    (:data:`DEBIASED_ADAIN_INPUTS`: ``normalised`` by default, BiasBed's code).
    """

    name = "debiased"
    hparams_defaults = {
        "gamma": 0.8,
        "mix": "pair",
        "aux_bn": True,
        "p": 1.0,
        "hue": False,
        "style_weights": "",
        "vgg_weights": "",
        "decoder_weights": "",
        "alpha": 0.5,
        "labels": "reference",
        "adain_input": "normalised",
    }

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        for key, choices in (("mix", DEBIASED_MIXES), ("labels", DEBIASED_LABELS),
                             ("adain_input", DEBIASED_ADAIN_INPUTS)):
            if self.hparams[key] not in choices:
                raise TrainError(unknown_choice(f"debiased {key}", self.hparams[key], choices))
        self.dual_bns: list[DualBatchNorm2d] = []
        if self.hparams["mix"] == "pair" and self.hparams["aux_bn"]:
            self.dual_bns = add_auxiliary_batchnorms(self.network)
            self.optimizer = self.make_optimizer(self.network.parameters())  # with the aux BNs

    def stylize(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, np.ndarray | None]:
        """(images, soft targets (rows, K), class table; None for image folders) for one batch.

        ``mix="pair"``: 2B rows, the clean batch followed by its stylised version."""
        pair = self.hparams["mix"] == "pair"
        table: np.ndarray | None = None
        if self.restyler is None:
            x, perm, used = self._transfer_styles(batch, mix=not pair)
        else:
            classes, index = self._batch_arrays(batch)
            perm = torch.randperm(classes.shape[0], generator=self.generator("debiased-donor"))
            columns = self.restyler.columns(style_factors(self.hparams["hue"]))
            new = donor_style_classes(classes, perm.numpy(), columns)
            x = self._restyled(new, index, batch["x"])
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
