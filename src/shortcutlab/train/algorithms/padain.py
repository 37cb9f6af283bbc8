"""Permuted AdaIN (Nuriel et al., 2021): swap feature statistics between images of a batch.

With probability ``p`` per forward pass in training, the per-channel mean and standard deviation
of every feature map are replaced by those of another image of the batch (a random permutation),
so the classifier cannot rely on global feature statistics (texture, colour, contrast) alone.
The layer is the identity in evaluation.

Placement follows the authors' code: after **every convolution, before its batch norm** (49
places in a ResNet-50: the stem and the three convolutions of each of the 16 bottlenecks; the
shortcut projections are left alone), and the donor's statistics are detached, so gradients reach
each sample only through its own normalised content. ``placement="stages"`` keeps the earlier
variant (after named feature stages, ``feature_modules``) as an option.

The style-statistics helpers and the seeded-layer machinery here are shared with SagNet and
InfoDrop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import nn

from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext, structure_found
from shortcutlab.train.config import TrainConfig
from shortcutlab.utils.rng import torch_seed

__all__ = [
    "PAdaIN",
    "PermutedAdaIN",
    "SeededLayer",
    "adain",
    "instance_moments",
    "feature_modules",
    "hook_after",
    "hook_before_batchnorms",
    "pre_batchnorm_modules",
]


def instance_moments(x: torch.Tensor, eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """AdaIN's instance statistics: per-sample, per-channel mean and standard deviation over the
    spatial axes of (B, C, H, W) (not the dataset's statistics of
    :func:`shortcutlab.train.normalization.channel_stats`)."""
    mean = x.mean(dim=(2, 3), keepdim=True)
    std = (x.var(dim=(2, 3), keepdim=True, unbiased=False) + eps).sqrt()
    return mean, std


def adain(
    content: torch.Tensor, style: torch.Tensor, eps: float = 1e-5, detach_style: bool = False
) -> torch.Tensor:
    """Adaptive instance normalisation (BiasBed eq. 1): ``content`` with ``style``'s statistics
    (with ``detach_style`` no gradient flows into the style statistics)."""
    c_mean, c_std = instance_moments(content, eps)
    s_mean, s_std = instance_moments(style, eps)
    if detach_style:
        s_mean, s_std = s_mean.detach(), s_std.detach()
    return (content - c_mean) / c_std * s_std + s_mean


class SeededLayer(nn.Module):
    """A layer whose random draws come from a generator seeded by :meth:`reseed`.

    The owning algorithm calls ``reseed(seed, step)`` before each update, so every draw is a pure
    function of (seed, layer purpose, layer index, step) and runs are reproducible. The generator
    lives on the device of the data, so the same code works on CPU and CUDA; without a seed the
    layer falls back to torch's default generator (plain library use).
    """

    purpose = "layer"

    def __init__(self) -> None:
        super().__init__()
        self._seed: int | None = None
        self._calls = 0
        self.layer_index = 0

    def reseed(self, seed: int, step: int) -> None:
        """Derive this layer's random stream for one optimisation step."""
        self._seed = torch_seed(seed, self.purpose, self.layer_index, step)
        self._calls = 0

    def generator(self, device: torch.device) -> torch.Generator | None:
        """A fresh generator for the next random draw (None: torch's global generator)."""
        if self._seed is None:
            return None
        gen = torch.Generator(device=device)
        gen.manual_seed((self._seed + 1_000_003 * self._calls) % (2**63 - 1))
        self._calls += 1
        return gen


class PermutedAdaIN(SeededLayer):
    """pAdaIN: with probability ``p``, give each sample the channel statistics of another sample.

    ``p = 0.01`` is the paper's default for ImageNet-scale training. The donor's statistics are
    detached (``detach=True``, the reference code); ``swaps`` counts the swaps made.
    """

    purpose = "padain"

    def __init__(self, p: float = 0.01, eps: float = 1e-5, detach: bool = True) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise TrainError(f"pAdaIN probability p must be in [0, 1], got {p}")
        self.p = float(p)
        self.eps = float(eps)
        self.detach = bool(detach)
        self.swaps = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0 or x.dim() != 4 or x.shape[0] < 2:
            return x
        if x.shape[2] * x.shape[3] < 2:  # a 1x1 map has no spatial statistics to swap
            return x
        gen = self.generator(torch.device("cpu"))
        if torch.rand((), generator=gen).item() >= self.p:
            return x
        perm = torch.randperm(x.shape[0], generator=gen).to(x.device)
        self.swaps += 1
        return adain(x, x[perm], self.eps, detach_style=self.detach)

    def extra_repr(self) -> str:
        return f"p={self.p}, eps={self.eps}, detach={self.detach}"


def pre_batchnorm_modules(model: nn.Module) -> list[str]:
    """Names of the BatchNorm2d modules that directly follow a Conv2d (in definition order),
    shortcut projections (``downsample``) excluded: where the reference pAdaIN sits."""
    names, previous = [], None
    for name, module in model.named_modules():
        if isinstance(module, nn.BatchNorm2d) and isinstance(previous, nn.Conv2d):
            if "downsample" not in name.split("."):
                names.append(name)
        if isinstance(module, nn.Conv2d | nn.BatchNorm2d | nn.Linear):
            previous = module
    if not names:
        raise TrainError(
            f"{type(model).__name__} has no Conv2d followed by BatchNorm2d; use "
            "placement=stages (after feature stages) or give 'layers'"
        )
    return names


def hook_before_batchnorms(
    model: nn.Module, names: Sequence[str], make: Callable[[int], nn.Module]
) -> tuple[nn.ModuleList, list[torch.utils.hooks.RemovableHandle]]:
    """Apply ``make(i)`` to the *input* of each named module (forward pre-hooks)."""
    available = dict(model.named_modules())
    layers = nn.ModuleList()
    handles = []
    for i, name in enumerate(names):
        if name not in available or name == "":
            raise TrainError(unknown_choice("module name", name, [n for n in available if n]))
        layer = make(i)
        layers.append(layer)
        handles.append(available[name].register_forward_pre_hook(_apply_to_input(layer)))
    return layers, handles


def _apply_to_input(layer: nn.Module) -> Callable[[nn.Module, tuple[torch.Tensor, ...]], tuple]:
    def hook(_module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple:
        return (layer(inputs[0]), *inputs[1:])

    return hook


def feature_modules(model: nn.Module) -> list[str]:
    """Names of the modules after whose output feature statistics are swapped by default.

    A model may list them itself in a ``feature_stages`` attribute. Otherwise: a torchvision
    ResNet's layer1..layer3, small_cnn's first three blocks, and for other models every Conv2d
    but the last. The last stage is left out because global pooling right after it would
    reduce every swapped map to the donor's mean, erasing the sample's own content.
    """
    import torchvision.models as tvm

    from shortcutlab.train.models import SmallCNN

    stages = getattr(model, "feature_stages", None)
    if stages:
        return list(stages)
    if isinstance(model, tvm.ResNet):
        return ["layer1", "layer2", "layer3"]
    if isinstance(model, SmallCNN):
        return ["features.2", "features.3", "features.4"]
    convs = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    if len(convs) < 2:
        raise TrainError(
            f"{type(model).__name__} has fewer than two Conv2d layers; give the module names "
            "to swap statistics after (hyper-parameter 'layers')"
        )
    return convs[:-1]


def hook_after(
    model: nn.Module, names: Sequence[str], make: Callable[[int], nn.Module]
) -> tuple[nn.ModuleList, list[torch.utils.hooks.RemovableHandle]]:
    """Apply a new layer ``make(i)`` to the output of each named submodule via forward hooks.

    Hooks leave the model's own parameters and state-dict keys untouched; the returned
    ModuleList must be registered on the owning module so train/eval mode reaches the layers.
    """
    available = dict(model.named_modules())
    layers = nn.ModuleList()
    handles = []
    for i, name in enumerate(names):
        if name not in available or name == "":
            choices = [n for n in available if n]
            raise TrainError(unknown_choice("module name", name, choices))
        layer = make(i)
        layers.append(layer)
        handles.append(available[name].register_forward_hook(_apply(layer)))
    return layers, handles


def _apply(layer: nn.Module) -> Callable[[nn.Module, object, torch.Tensor], torch.Tensor]:
    def hook(_module: nn.Module, _inputs: object, output: torch.Tensor) -> torch.Tensor:
        return layer(output)

    return hook


def reseed_all(layers: Iterable[nn.Module], seed: int, step: int) -> None:
    """Reseed every :class:`SeededLayer` in ``layers`` for one step."""
    for i, layer in enumerate(layers):
        if isinstance(layer, SeededLayer):
            layer.layer_index = i
            layer.reseed(seed, step)


# ------------------------------------------------------------------------------- algorithm
PADAIN_PLACEMENTS = ("before_bn", "stages")



@register_algorithm
class PAdaIN(Algorithm):
    """ERM with :class:`PermutedAdaIN` before every convolution's batch norm (reference code).

    Hyper-parameters: ``p`` (swap probability per layer and step, paper default 0.01),
    ``placement`` (``before_bn``: every conv → BN pair, :func:`pre_batchnorm_modules`;
    ``stages``: after the feature stages of :func:`feature_modules`), ``layers``
    (comma-separated module names overriding the placement's default list) and ``detach``
    (donor statistics detached, True as in the reference).
    """

    name = "padain"
    hparams_defaults = {"p": 0.01, "placement": "before_bn", "layers": "", "detach": True}

    @classmethod
    def supports(cls, model: nn.Module) -> bool:
        return structure_found(pre_batchnorm_modules, model)

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        self.network = self.build_network()
        names = [n.strip() for n in str(self.hparams["layers"]).split(",") if n.strip()]
        placement = self.hparams["placement"]
        p, detach = self.hparams["p"], self.hparams["detach"]

        def make(_i: int) -> PermutedAdaIN:
            return PermutedAdaIN(p, detach=detach)

        if placement == "before_bn":
            names = names or pre_batchnorm_modules(self.network)
            self.swap_layers, _ = hook_before_batchnorms(self.network, names, make)
        elif placement == "stages":
            names = names or feature_modules(self.network)
            self.swap_layers, _ = hook_after(self.network, names, make)
        else:
            raise TrainError(unknown_choice("pAdaIN placement", placement, PADAIN_PLACEMENTS))
        self.layer_names = names
        self.optimizer = self.make_optimizer(self.network.parameters())

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        reseed_all(self.swap_layers, self.config.seed, self.step)
        loss = torch.nn.functional.cross_entropy(self.network(batch["x"]), batch["y"])
        self.backward_and_step(loss, self.optimizer)
        return {"loss": float(loss.detach())}

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)
