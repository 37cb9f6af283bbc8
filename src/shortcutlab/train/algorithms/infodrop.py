"""Informative Dropout (Shi et al., 2020): drop activations of low-information input patches.

A convolution's output at one position sees one input patch. InfoDrop estimates how *unsurprising*
that patch is by a kernel density estimate over patches at random offsets within ``radius``
(homogeneous or repetitive regions, i.e. texture, look like their neighbours; edges and corners,
i.e. shape, do not), and zeroes output activations with probability growing with that density,
sharpened by the ``temperature``. ``int(drop_rate * H * W)`` positions per (sample, channel) are
drawn with replacement from the normalised density, as in the paper; we zero each position with
its exact marginal probability ``1 - (1 - q)^k`` instead of drawing the k indices, which is the
same per-position rate without a (B*C, k) index tensor. Evaluation is the identity.

Everything runs on the input's device (CPU or CUDA). As in the authors' code, patch distances
are normalised by their mean over the whole batch (``distance_norm="batch"``), so an image's mask
depends on the rest of its batch, and the input is zero-padded (``patch_padding="zeros"``): the
conv's own padding frame and shifts past the border compare with zeros. ``distance_norm=
"sample"`` (each image by its own mean, its mask independent of the batch) and
``patch_padding="reflect"`` (shifted patches reflected at the border, the distance map
zero-padded as the conv pads) keep the earlier behaviour.

Placement follows the authors' code (``placement="block"``, the default): the densities are
estimated with the stem convolution's geometry on the network input, and the mask is applied
to the output of the whole stem block (conv → BN → ReLU → max-pool); when the block ends in a
max-pool, the unnormalised drop probabilities are min-pooled with the same window before they
are normalised, as the reference does. Dropped positions are therefore exactly zero after the
block. The remaining difference to the reference, kept on purpose: each position is dropped
with its exact marginal probability instead of drawing the indices. The dropout stays active
at test time (``eval_drop=True``) as in the reference.
``placement="conv"`` keeps the earlier variant (:class:`InfoDropConv2d`: zero the first
``layers`` convolutions' outputs, before their batch norm; identity in evaluation).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import AlgorithmContext, structure_found
from shortcutlab.train.algorithms.erm import ERM
from shortcutlab.train.algorithms.padain import SeededLayer
from shortcutlab.train.config import TrainConfig

__all__ = ["InfoDrop", "InfoDropBlock", "InfoDropConv2d", "patch_density", "wrap_convs"]

INFODROP_PLACEMENTS = ("block", "conv")
#: What patch distances are normalised over (``batch``: the authors' code; ``sample``).
INFODROP_NORMS = ("batch", "sample")
#: How the input is padded for the shifted patches (``zeros``: the authors' code; ``reflect``).
INFODROP_PADDINGS = ("zeros", "reflect")


def patch_density(
    x: torch.Tensor,
    conv: nn.Conv2d,
    *,
    radius: int = 3,
    n_offsets: int = 9,
    bandwidth: float = 1.0,
    generator: torch.Generator | None = None,
    distance_norm: str = "batch",
    patch_padding: str = "zeros",
) -> torch.Tensor:
    """Kernel-density estimate of each receptive-field patch of ``conv`` on ``x``: (B, H', W').

    For ``n_offsets`` random offsets (di, dj) in [-radius, radius]^2, the squared distance between
    a patch and the patch shifted by (di, dj) is summed over channels and the receptive field;
    the density is the mean of ``exp(-d / (2 h^2 mean(d)))``, the mean taken over the whole
    batch (``distance_norm="batch"``) or per sample (``"sample"``). High density = low
    self-information. ``patch_padding="zeros"``: the input is zero-padded by the conv's padding
    plus ``radius`` and distances are taken over the conv-padded frame (border patches compare
    with zeros); ``"reflect"``: shifted patches are reflected at the border and the distance map
    is zero-padded as the conv pads.
    """
    if distance_norm not in INFODROP_NORMS:
        raise TrainError(unknown_choice("InfoDrop distance_norm", distance_norm, INFODROP_NORMS))
    if patch_padding not in INFODROP_PADDINGS:
        raise TrainError(unknown_choice("InfoDrop patch_padding", patch_padding,
                                        INFODROP_PADDINGS))
    b, c, h, w = x.shape
    offsets = torch.randint(-radius, radius + 1, (n_offsets, 2), generator=generator)
    if patch_padding == "zeros":
        ph, pw = _numeric_padding(conv)
        frame = F.pad(x, (pw + radius, pw + radius, ph + radius, ph + radius))
        rows, cols = h + 2 * ph, w + 2 * pw
        centre = frame[:, :, radius : radius + rows, radius : radius + cols]
        pad, window_padding = radius, (0, 0)
    else:
        pad = min(radius, h - 1, w - 1)
        frame = F.pad(x, (pad, pad, pad, pad), mode="reflect") if pad > 0 else x
        rows, cols, centre = h, w, x
        window_padding = conv.padding  # type: ignore[assignment]
    dists = []
    for di, dj in offsets.tolist():
        di, dj = max(-pad, min(pad, di)), max(-pad, min(pad, dj))
        shifted = frame[:, :, pad + di : pad + di + rows, pad + dj : pad + dj + cols]
        dists.append(((centre - shifted) ** 2).sum(dim=1))
    dist = torch.stack(dists, dim=1)  # (B, n, rows, cols)
    window = torch.ones(n_offsets, 1, *conv.kernel_size, device=x.device, dtype=x.dtype)
    patch = F.conv2d(
        dist,
        window,
        stride=conv.stride,
        padding=window_padding,
        dilation=conv.dilation,
        groups=n_offsets,
    )  # (B, n, H', W')
    dims = (0, 1, 2, 3) if distance_norm == "batch" else (1, 2, 3)
    scale = patch.mean(dim=dims, keepdim=True).clamp_min(1e-12)
    return torch.exp(-patch / scale / (2.0 * bandwidth**2)).mean(dim=1)


class InfoDropConv2d(SeededLayer):
    """A Conv2d followed by informative dropout on its output (paper defaults)."""

    purpose = "infodrop"

    def __init__(
        self,
        conv: nn.Conv2d,
        drop_rate: float = 1.5,
        temperature: float = 0.03,
        bandwidth: float = 1.0,
        radius: int = 3,
        n_offsets: int = 9,
        distance_norm: str = "batch",
        patch_padding: str = "zeros",
    ) -> None:
        super().__init__()
        _check_settings(conv, drop_rate, temperature, bandwidth, radius, n_offsets,
                        distance_norm, patch_padding)
        self.conv = conv
        self.drop_rate = float(drop_rate)
        self.temperature = float(temperature)
        self.bandwidth = float(bandwidth)
        self.radius = int(radius)
        self.n_offsets = int(n_offsets)
        self.distance_norm, self.patch_padding = distance_norm, patch_padding

    @torch.no_grad()
    def drop_probability(self, x: torch.Tensor) -> torch.Tensor:
        """Probability that each output position is zeroed, (B, 1, H', W')."""
        density = patch_density(
            x.float(),
            self.conv,
            radius=self.radius,
            n_offsets=self.n_offsets,
            bandwidth=self.bandwidth,
            generator=self.generator(torch.device("cpu")),
            distance_norm=self.distance_norm,
            patch_padding=self.patch_padding,
        )
        # density ** (1 / T), computed in log space and normalised per sample (a softmax)
        return drop_probability(density, self.drop_rate, self.temperature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv(x)
        if not self.training or self.drop_rate == 0.0:
            return out
        drop = self.drop_probability(x).to(out.dtype)
        gen = self.generator(out.device)
        u = torch.rand(out.shape, generator=gen, device=out.device, dtype=out.dtype)
        return out * (u >= drop)

    def extra_repr(self) -> str:
        return (
            f"drop_rate={self.drop_rate}, temperature={self.temperature}, "
            f"bandwidth={self.bandwidth}, radius={self.radius}, n_offsets={self.n_offsets}, "
            f"distance_norm={self.distance_norm}, patch_padding={self.patch_padding}"
        )


def drop_probability(
    density: torch.Tensor,
    drop_rate: float,
    temperature: float,
    pool: nn.MaxPool2d | None = None,
) -> torch.Tensor:
    """Per-position drop probability (B, 1, H, W) from densities (B, H, W): ``int(drop_rate*H*W)``
    draws with replacement from ``density ** (1/T)`` normalised per sample. With ``pool`` (the
    max-pool ending the block) ``density ** (1/T)`` is min-pooled with its window first, giving
    probabilities on the pooled map (the reference's ``-pool(-prob)``)."""
    logits = torch.log(density.clamp_min(1e-30)) / temperature
    if pool is not None:  # min-pooling in log space: the same order, no underflow
        logits = -F.max_pool2d(
            -logits.unsqueeze(1), pool.kernel_size, pool.stride, pool.padding, pool.dilation,
            ceil_mode=pool.ceil_mode,
        ).squeeze(1)
    q = torch.softmax(logits.flatten(1), dim=1).view_as(logits)
    k = int(drop_rate * logits.shape[1] * logits.shape[2])  # the reference's whole draws
    return (1.0 - (1.0 - q).pow(k)).unsqueeze(1)


class InfoDropBlock(SeededLayer):
    """Informative dropout on the output of a network's stem block (the reference placement).

    :meth:`attach` hooks it onto a model: the network input is kept by a forward pre-hook, the
    densities use ``conv``'s geometry (and ``pool``'s window when the block ends in a max-pool),
    and the block output ``after`` is multiplied by the 0/1 mask. ``eval_drop``: keep dropping
    in evaluation (reference: True).
    """

    purpose = "infodrop-block"

    def __init__(
        self,
        conv: nn.Conv2d,
        pool: nn.MaxPool2d | None = None,
        drop_rate: float = 1.5,
        temperature: float = 0.03,
        bandwidth: float = 1.0,
        radius: int = 3,
        n_offsets: int = 9,
        eval_drop: bool = True,
        distance_norm: str = "batch",
        patch_padding: str = "zeros",
    ) -> None:
        super().__init__()
        _check_settings(conv, drop_rate, temperature, bandwidth, radius, n_offsets,
                        distance_norm, patch_padding)
        self.distance_norm, self.patch_padding = distance_norm, patch_padding
        self.geometry = [conv]  # a plain list: the conv stays owned by the network
        self.pool = pool
        self.drop_rate, self.temperature = float(drop_rate), float(temperature)
        self.bandwidth, self.radius, self.n_offsets = float(bandwidth), int(radius), int(n_offsets)
        self.eval_drop = bool(eval_drop)
        self._input: torch.Tensor | None = None

    def attach(self, model: nn.Module, after: nn.Module) -> None:
        """Hook onto ``model`` (keeps its input) and ``after`` (masks its output)."""

        def keep(_m: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
            self._input = inputs[0]

        def apply(_m: nn.Module, _i: object, output: torch.Tensor) -> torch.Tensor:
            return self(output)

        model.register_forward_pre_hook(keep)
        after.register_forward_hook(apply)

    @torch.no_grad()
    def drop_probability(self, x: torch.Tensor) -> torch.Tensor:
        """Probability that each position of the block output is zeroed, (B, 1, H', W')."""
        density = patch_density(
            x.float(), self.geometry[0], radius=self.radius, n_offsets=self.n_offsets,
            bandwidth=self.bandwidth, generator=self.generator(torch.device("cpu")),
            distance_norm=self.distance_norm, patch_padding=self.patch_padding,
        )
        return drop_probability(density, self.drop_rate, self.temperature, self.pool)

    def forward(self, out: torch.Tensor) -> torch.Tensor:
        active = self.training or self.eval_drop
        if not active or self.drop_rate == 0.0 or self._input is None:
            return out
        drop = self.drop_probability(self._input).to(out.dtype)
        if drop.shape[-2:] != out.shape[-2:]:
            raise TrainError(
                f"InfoDrop mask {tuple(drop.shape[-2:])} does not fit the block output "
                f"{tuple(out.shape[-2:])}; name the module that ends the stem (hparam 'after')"
            )
        gen = self.generator(out.device)
        u = torch.rand(out.shape, generator=gen, device=out.device, dtype=out.dtype)
        return out * (u >= drop)


def stem_block(model: nn.Module, after: str = "") -> tuple[nn.Conv2d, str]:
    """(stem convolution, name of the module ending the stem block) of ``model``: a torchvision
    ResNet's conv1 … maxpool, small_cnn's first conv … ReLU, or ``after`` for other models."""
    import torchvision.models as tvm

    from shortcutlab.train.models import SmallCNN

    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    if not convs:
        raise TrainError(f"InfoDrop needs a Conv2d in {type(model).__name__}")
    if after:
        return convs[0], after
    if isinstance(model, tvm.ResNet):
        return model.conv1, "maxpool"
    if isinstance(model, SmallCNN):
        return convs[0], "features.2"
    raise TrainError(
        f"InfoDrop does not know where the stem block of {type(model).__name__} ends; give the "
        "module name as hparam 'after' (e.g. the max-pool after the first conv/BN/ReLU)"
    )


def _numeric_padding(conv: nn.Conv2d) -> tuple[int, int]:
    if isinstance(conv.padding, str):
        raise TrainError(f"InfoDrop needs numeric conv padding, got padding={conv.padding!r}")
    return int(conv.padding[0]), int(conv.padding[1])


def _check_settings(
    conv: nn.Conv2d, drop_rate: float, temperature: float, bandwidth: float, radius: int,
    n_offsets: int, distance_norm: str = "batch", patch_padding: str = "zeros",
) -> None:
    if distance_norm not in INFODROP_NORMS:
        raise TrainError(unknown_choice("InfoDrop distance_norm", distance_norm, INFODROP_NORMS))
    if patch_padding not in INFODROP_PADDINGS:
        raise TrainError(unknown_choice("InfoDrop patch_padding", patch_padding,
                                        INFODROP_PADDINGS))
    if isinstance(conv.padding, str):
        raise TrainError(f"InfoDrop needs numeric conv padding, got padding={conv.padding!r}")
    if drop_rate < 0 or temperature <= 0 or bandwidth <= 0 or radius < 1 or n_offsets < 1:
        raise TrainError(
            "InfoDrop needs drop_rate >= 0, temperature > 0, bandwidth > 0, radius >= 1 and "
            f"n_offsets >= 1; got {drop_rate}, {temperature}, {bandwidth}, {radius}, "
            f"{n_offsets}"
        )


def wrap_convs(model: nn.Module, n_layers: int, **kwargs: Any) -> list[InfoDropConv2d]:
    """Replace the first ``n_layers`` Conv2d modules of ``model`` (in definition order) in place.

    The paper applies InfoDrop to the early layers, where activations still correspond to small,
    local patches of the image.
    """
    convs = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    if n_layers < 1 or n_layers > len(convs):
        raise TrainError(
            f"InfoDrop n_layers must be in 1..{len(convs)} (the model's Conv2d count), "
            f"got {n_layers}"
        )
    wrapped = []
    for i, (name, conv) in enumerate(convs[:n_layers]):
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        layer = InfoDropConv2d(conv, **kwargs)
        layer.layer_index = i
        setattr(parent, attr, layer)
        wrapped.append(layer)
    return wrapped


@register_algorithm
class InfoDrop(ERM):
    """ERM with informative dropout on the stem block (reference) or on the first convolutions.

    Hyper-parameters (paper defaults): ``drop_rate`` 1.5, ``temperature`` 0.03, ``bandwidth``
    1.0, ``radius`` 3, ``n_offsets`` 9; ``placement`` (``block``: :class:`InfoDropBlock` after
    conv → BN → ReLU → max-pool, reference; ``conv``: :class:`InfoDropConv2d` on the first
    ``layers`` convolutions), ``eval_drop`` (block placement: also drop at test time, True as in
    the reference), ``after`` (module ending the stem block for models other than ResNets and
    small_cnn), ``distance_norm`` (:data:`INFODROP_NORMS`: ``batch`` as the reference, or
    ``sample``) and ``patch_padding`` (:data:`INFODROP_PADDINGS`: ``zeros`` as the reference, or
    ``reflect``).
    """

    name = "infodrop"
    #: 2 (2026-11-28): int(drop_rate * H * W) positions drawn, as the reference; 1 drew a
    #: fractional count (other numbers wherever drop_rate * H * W is not whole)
    version = "2"
    hparams_defaults = {
        "drop_rate": 1.5,
        "temperature": 0.03,
        "bandwidth": 1.0,
        "radius": 3,
        "n_offsets": 9,
        "layers": 1,
        "placement": "block",
        "eval_drop": True,
        "after": "",
        "distance_norm": "batch",
        "patch_padding": "zeros",
    }

    @classmethod
    def supports(cls, model: nn.Module) -> bool:
        return structure_found(stem_block, model)

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        """A known ``placement``; ``layers`` only with ``conv``, ``after`` only with ``block``."""
        placement = hparams["placement"]
        if placement not in INFODROP_PLACEMENTS:
            raise TrainError(unknown_choice("InfoDrop placement", placement, INFODROP_PLACEMENTS))
        unread = ("layers",) if placement == "block" else ("after",)
        cls.check_unread(hparams, unread, f"placement is {placement!r}")

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)  # ERM: network and optimizer
        h = self.hparams
        keys = ("drop_rate", "temperature", "bandwidth", "radius", "n_offsets", "distance_norm",
                "patch_padding")
        settings = {k: h[k] for k in keys}
        if h["placement"] == "block":
            conv, after_name = stem_block(self.network, h["after"])
            modules = dict(self.network.named_modules())
            if after_name not in modules:
                names = [n for n in modules if n]
                raise TrainError(unknown_choice("InfoDrop 'after' module", after_name, names))
            after = modules[after_name]
            pool = after if isinstance(after, nn.MaxPool2d) else None
            block = InfoDropBlock(conv, pool, eval_drop=h["eval_drop"], **settings)
            block.attach(self.network, after)
            self.drop_layers: list[SeededLayer] = [block]
            self.drop_modules = nn.ModuleList(self.drop_layers)
        else:  # conv (check_hparam_values refused any other placement)
            self.drop_layers = list(wrap_convs(self.network, h["layers"], **settings))
        self.optimizer = self.make_optimizer(self.network.parameters())

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        for layer in self.drop_layers:
            layer.reseed(self.config.seed, self.step)
        return super().update(batch)

