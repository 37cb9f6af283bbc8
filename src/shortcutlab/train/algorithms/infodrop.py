"""Informative Dropout (Shi et al., 2020): drop activations of low-information input patches.

A convolution's output at one position sees one input patch. InfoDrop estimates how *unsurprising*
that patch is by a kernel density estimate over patches at random offsets within ``radius``
(homogeneous or repetitive regions, i.e. texture, look like their neighbours; edges and corners,
i.e. shape, do not), and zeroes output activations with probability growing with that density,
sharpened by the ``temperature``. ``drop_rate * H * W`` positions per (sample, channel) are
drawn with replacement from the normalised density, as in the paper; we zero each position with
its exact marginal probability ``1 - (1 - q)^k`` instead of drawing the k indices, which is the
same per-position rate without a (B*C, k) index tensor. Evaluation is the identity.

Everything runs on the input's device (CPU or CUDA); the per-batch normalisation of patch
distances is per sample, so an image's mask does not depend on the rest of the batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import AlgorithmContext
from shortcutlab.train.algorithms.erm import ERM
from shortcutlab.train.algorithms.padain import SeededLayer
from shortcutlab.train.config import TrainConfig

__all__ = ["InfoDrop", "InfoDropConv2d", "patch_density", "wrap_convs"]


def patch_density(
    x: torch.Tensor,
    conv: nn.Conv2d,
    *,
    radius: int = 3,
    n_offsets: int = 9,
    bandwidth: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Kernel-density estimate of each receptive-field patch of ``conv`` on ``x``: (B, H', W').

    For ``n_offsets`` random offsets (di, dj) in [-radius, radius]^2, the squared distance between
    a patch and the patch shifted by (di, dj) (reflection padding at the borders) is summed over
    channels and the receptive field; the density is the mean of ``exp(-d / (2 h^2 mean(d)))``.
    High density = low self-information.
    """
    b, c, h, w = x.shape
    offsets = torch.randint(-radius, radius + 1, (n_offsets, 2), generator=generator)
    pad = min(radius, h - 1, w - 1)
    padded = F.pad(x, (pad, pad, pad, pad), mode="reflect") if pad > 0 else x
    dists = []
    for di, dj in offsets.tolist():
        di, dj = max(-pad, min(pad, di)), max(-pad, min(pad, dj))
        shifted = padded[:, :, pad + di : pad + di + h, pad + dj : pad + dj + w]
        dists.append(((x - shifted) ** 2).sum(dim=1))
    dist = torch.stack(dists, dim=1)  # (B, n, H, W)
    window = torch.ones(n_offsets, 1, *conv.kernel_size, device=x.device, dtype=x.dtype)
    patch = F.conv2d(
        dist,
        window,
        stride=conv.stride,
        padding=conv.padding,
        dilation=conv.dilation,
        groups=n_offsets,
    )  # (B, n, H', W')
    scale = patch.mean(dim=(1, 2, 3), keepdim=True).clamp_min(1e-12)
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
    ) -> None:
        super().__init__()
        if isinstance(conv.padding, str):
            raise TrainError(f"InfoDrop needs numeric conv padding, got padding={conv.padding!r}")
        if drop_rate < 0 or temperature <= 0 or bandwidth <= 0 or radius < 1 or n_offsets < 1:
            raise TrainError(
                "InfoDrop needs drop_rate >= 0, temperature > 0, bandwidth > 0, radius >= 1 and "
                f"n_offsets >= 1; got {drop_rate}, {temperature}, {bandwidth}, {radius}, "
                f"{n_offsets}"
            )
        self.conv = conv
        self.drop_rate = float(drop_rate)
        self.temperature = float(temperature)
        self.bandwidth = float(bandwidth)
        self.radius = int(radius)
        self.n_offsets = int(n_offsets)

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
        )
        # density ** (1 / T), computed in log space and normalised per sample (a softmax)
        logits = torch.log(density.clamp_min(1e-30)) / self.temperature
        q = torch.softmax(logits.flatten(1), dim=1).view_as(density)
        k = self.drop_rate * density.shape[1] * density.shape[2]
        return (1.0 - (1.0 - q).pow(k)).unsqueeze(1)

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
            f"bandwidth={self.bandwidth}, radius={self.radius}, n_offsets={self.n_offsets}"
        )


def wrap_convs(model: nn.Module, n_layers: int, **kwargs: float) -> list[InfoDropConv2d]:
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
    """ERM with :class:`InfoDropConv2d` on the model's first ``layers`` convolutions.

    Hyper-parameters (paper defaults): ``drop_rate`` 1.5, ``temperature`` 0.03, ``bandwidth``
    1.0, ``radius`` 3, ``n_offsets`` 9, ``layers`` 1 (the stem convolution).
    """

    name = "infodrop"
    hparams_defaults = {
        "drop_rate": 1.5,
        "temperature": 0.03,
        "bandwidth": 1.0,
        "radius": 3,
        "n_offsets": 9,
        "layers": 1,
    }

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)  # ERM: network and optimizer
        h = self.hparams
        self.drop_layers = wrap_convs(
            self.network,
            h["layers"],
            drop_rate=h["drop_rate"],
            temperature=h["temperature"],
            bandwidth=h["bandwidth"],
            radius=h["radius"],
            n_offsets=h["n_offsets"],
        )
        self.optimizer = self.make_optimizer(self.network.parameters())

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        for layer in self.drop_layers:
            layer.reseed(self.config.seed, self.step)
        return super().update(batch)

