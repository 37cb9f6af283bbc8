"""A timm-style model registry: ``create_model(name, num_classes)`` and ``list_models(pattern)``.

Registered: the paper's torchvision architectures (alexnet, resnet18, resnet50, wide_resnet50_2,
densenet161; randomly initialised, output layer sized to ``num_classes``), ``small_cnn`` (fast on
CPU at 128x128) and ``rn50_in`` (the paper's RN50-IN: resnet50 with local ImageNet weights, frozen
backbone, new head). Users add models with :func:`register_model` or a Python entry point in the
group ``shortcutlab.models`` (the entry point may be a model factory, registered under the entry
point's name, or a module whose import registers models).

Pretrained weights are read only from a local file with ``torch.load(weights_only=True)``; nothing
is ever downloaded. The classifier head is the model's last ``nn.Linear``; it is re-initialised
(sized to ``num_classes``) when the weights file holds a head of another size.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, overload

import torch
import torchvision.models as tvm
from torch import nn

from shortcutlab.errors import DataNotFoundError, TrainError
from shortcutlab.utils.registry import Registry

ENTRY_POINT_GROUP = "shortcutlab.models"

ModelFn = Callable[..., nn.Module]
F = TypeVar("F", bound=ModelFn)

#: The model factories; an entry point of the group is a factory (registered under its name)
#: or a module whose import registers models. Tests register fakes in ``REGISTRY.scratch()``.
REGISTRY: Registry[ModelFn] = Registry(
    "model", error=TrainError, group=ENTRY_POINT_GROUP,
    accepts=lambda obj: callable(obj) and not isinstance(obj, type(torch)),
)
_DEFAULTS: dict[str, dict[str, Any]] = {}  # per-model metadata, beside the factories
#: model name -> the algorithm it must be trained with (``register_model(..., algorithm=)``)
_ALGORITHMS: dict[str, str] = {}


@overload
def register_model(fn: F, *, name: str | None = None, override: bool = False,
                   algorithm: str | None = None) -> F: ...
@overload
def register_model(
    fn: None = None, *, name: str | None = None, override: bool = False,
    algorithm: str | None = None,
) -> Callable[[F], F]: ...


def register_model(
    fn: F | None = None, *, name: str | None = None, override: bool = False,
    algorithm: str | None = None,
) -> F | Callable[[F], F]:
    """Register ``fn(num_classes, **kw) -> nn.Module`` under ``name`` (default: its __name__).

    Usable bare (``@register_model``) or with a name (``@register_model(name="my_net")``).
    A taken name is refused (TrainError) unless ``override=True``. ``algorithm``: the one
    algorithm that can train this model (a network with its own training method, e.g. a VAE),
    read back by :func:`implied_algorithm`.
    """

    def decorate(f: F) -> F:
        factory: ModelFn = f
        key = name or f.__name__
        REGISTRY.register(key, factory, override=override)
        if algorithm is not None:
            _ALGORITHMS[key] = algorithm
        else:
            _ALGORITHMS.pop(key, None)  # an override drops the replaced model's algorithm
        return f

    return decorate(fn) if fn is not None else decorate


def list_models(pattern: str = "*") -> list[str]:
    """Sorted names of registered models matching a shell-style ``pattern``."""
    return REGISTRY.names(pattern)


def implied_algorithm(model: str) -> str | None:
    """The algorithm registered model ``model`` must be trained with (None: any algorithm, or
    an unknown model)."""
    REGISTRY.load()
    return _ALGORITHMS.get(model)


def check_model_name(name: str) -> str:
    """``name`` if registered, else a TrainError listing the valid choices."""
    if name not in REGISTRY and ":" in name:  # module:factory, see model_paths
        from shortcutlab.train.model_paths import factory_for

        register_model(factory_for(name), name=name)
        return name
    return REGISTRY.check(name)


def head_name(model: nn.Module) -> str:
    """Dotted name of the classifier head: the model's last ``nn.Linear``."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not names:
        raise TrainError(f"{type(model).__name__} has no nn.Linear layer to use as classifier head")
    return names[-1]


def get_head(model: nn.Module) -> nn.Linear:
    """The classifier head (last ``nn.Linear``)."""
    head = model.get_submodule(head_name(model))
    assert isinstance(head, nn.Linear)
    return head


def replace_head(model: nn.Module, new: nn.Module) -> nn.Module:
    """Put ``new`` where the classifier head was; returns the old head.

    ``replace_head(model, nn.Identity())`` turns a classifier into a feature extractor, which is
    how algorithms that need features (SagNet, ...) split a registered model.
    """
    name = head_name(model)
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    old = getattr(parent, attr)
    setattr(parent, attr, new)
    return old


def split_model(model: nn.Module) -> tuple[nn.Module, nn.Linear]:
    """(featurizer, head): the model with its head replaced by Identity, and the head."""
    head = replace_head(model, nn.Identity())
    assert isinstance(head, nn.Linear)
    return model, head


# --------------------------------------------------------------------------- architectures


class SmallCNN(nn.Module):
    """Four strided conv blocks and a linear head over a 4x4 map (keeps where things are).

    Designed for 128x128 DiagViB-6 images on CPU: the first layers downsample quickly, and the
    head sees a coarse spatial map rather than a global average, so position stays learnable.
    """

    def __init__(self, num_classes: int, width: int = 32, in_channels: int = 3) -> None:
        super().__init__()
        w = width

        def block(cin: int, cout: int, stride: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            )

        self.features = nn.Sequential(
            nn.Conv2d(in_channels, w // 2, 5, stride=2, padding=2, bias=False),
            nn.BatchNorm2d(w // 2),
            nn.ReLU(inplace=True),
            block(w // 2, w, 2),
            block(w, w, 2),
            block(w, 2 * w, 2),
            nn.AdaptiveAvgPool2d(4),
            nn.Flatten(),
        )
        self.head = nn.Linear(2 * w * 16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


@register_model
def small_cnn(num_classes: int, width: int = 32) -> nn.Module:
    """A small CNN for CPU training at 128x128 (about 0.1 M parameters at width 32)."""
    return SmallCNN(num_classes, width=width)


@register_model
def alexnet(num_classes: int) -> nn.Module:
    """torchvision AlexNet, random init."""
    return tvm.alexnet(weights=None, num_classes=num_classes)


@register_model
def resnet18(num_classes: int) -> nn.Module:
    """torchvision ResNet-18, random init."""
    return tvm.resnet18(weights=None, num_classes=num_classes)


@register_model
def resnet50(num_classes: int) -> nn.Module:
    """torchvision ResNet-50, random init."""
    return tvm.resnet50(weights=None, num_classes=num_classes)


@register_model
def wide_resnet50_2(num_classes: int) -> nn.Module:
    """torchvision Wide ResNet-50-2, random init."""
    return tvm.wide_resnet50_2(weights=None, num_classes=num_classes)


@register_model
def densenet161(num_classes: int) -> nn.Module:
    """torchvision DenseNet-161, random init."""
    return tvm.densenet161(weights=None, num_classes=num_classes)


@register_model
def rn50_in(num_classes: int) -> nn.Module:
    """The paper's RN50-IN: resnet50 that needs ``pretrained=<local ImageNet weights file>``;
    the backbone is frozen and the head is new (see :func:`create_model`)."""
    return tvm.resnet50(weights=None, num_classes=num_classes)


_DEFAULTS["rn50_in"] = {
    "requires_pretrained": True,
    "freeze_backbone": True,
    "imagenet_inputs": True,
}

def expects_imagenet_inputs(name: str) -> bool:
    """True for models registered as ImageNet-pretrained (rn50_in): ``normalization="auto"``
    gives them ImageNet's channel statistics instead of the training split's."""
    return bool(_DEFAULTS.get(check_model_name(name), {}).get("imagenet_inputs"))


def freezes_backbone(name: str) -> bool:
    """True for models registered with a frozen backbone (rn50_in): their BatchNorm mode while
    training is ``TrainConfig.frozen_batchnorm``."""
    return bool(_DEFAULTS.get(check_model_name(name), {}).get("freeze_backbone"))


# --------------------------------------------------------------------------- creation


def _state_dict_from(obj: Any, path: Path) -> dict[str, torch.Tensor]:
    if isinstance(obj, dict):
        for key in ("state_dict", "model", "model_state_dict", "network"):
            if key in obj and isinstance(obj[key], dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise TrainError(f"{path} does not hold a state dict (a mapping of names to tensors)")
    return {k.removeprefix("module."): v for k, v in obj.items()}


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """A local state dict, read with ``torch.load(weights_only=True)``; a dict nested under
    ``state_dict``/``model``/... and ``module.`` prefixes are accepted. Nothing is downloaded."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(
            f"pretrained weights file not found: {path} (give a local state-dict file saved with "
            "torch.save; nothing is downloaded)"
        )
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        if isinstance(exc, pickle.UnpicklingError):  # torch's message runs over six lines
            why = ("it holds pickled objects, not only tensors (a whole model saved with "
                   "torch.save(model)?); save model.state_dict() instead")
        else:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else (
                "the file is empty" if path.stat().st_size == 0 else type(exc).__name__)
        raise TrainError(
            f"cannot read weights {path} with torch.load(weights_only=True): {why}"
        ) from None
    return _state_dict_from(obj, path)


def _shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def _fits(expected: dict[str, tuple[int, ...]], given: dict[str, torch.Tensor], head: str) -> bool:
    body = {k: s for k, s in expected.items() if not k.startswith(head + ".")}
    got = {k: tuple(v.shape) for k, v in given.items() if not k.startswith(head + ".")}
    return body == got


def _architectures_matching(state: dict[str, torch.Tensor]) -> list[str]:
    """Registered models whose body (all but the head) has exactly these keys and shapes."""
    found = []
    for name in list_models():
        try:
            with torch.device("meta"):
                candidate = REGISTRY.get(name)(num_classes=3)
            if _fits(_shapes(candidate), state, head_name(candidate)):
                found.append(name)
        except Exception:  # a user model that cannot be built on meta simply does not match
            continue
    return found


def load_pretrained(model: nn.Module, path: str | Path, *, name: str = "model") -> nn.Module:
    """Load local weights into ``model``; a head of another size is left freshly initialised.

    Weights of another architecture raise TrainError naming the architectures they fit.
    """
    path = Path(path)
    state = read_state_dict(path)
    head = head_name(model)
    expected = _shapes(model)
    if not _fits(expected, state, head):
        others = [m for m in _architectures_matching(state) if m != name]
        hint = f"they fit {', '.join(others)}" if others else "they fit no registered model"
        missing = sorted(set(expected) - set(state))[:3]
        raise TrainError(
            f"weights in {path} are not for architecture {name!r} ({hint}); "
            f"e.g. missing keys: {', '.join(missing) or '-'}"
        )
    head_keys = {k for k in state if k.startswith(head + ".")}
    head_fits = all(k in expected and tuple(state[k].shape) == expected[k] for k in head_keys)
    body = {k: v for k, v in state.items() if head_fits or k not in head_keys}
    model.load_state_dict(body, strict=head_fits and bool(head_keys))
    return model


def freeze_backbone(model: nn.Module) -> nn.Module:
    """Freeze every parameter except the classifier head's (BatchNorm layers of a frozen
    backbone are kept in eval mode by :class:`shortcutlab.train.algorithms.base.Algorithm`)."""
    head = head_name(model)
    for pname, param in model.named_parameters():
        param.requires_grad = pname.startswith(head + ".")
    return model


def create_model(
    name: str,
    num_classes: int,
    *,
    pretrained: str | Path | None = None,
    freeze_backbone: bool = False,
    **kw: Any,
) -> nn.Module:
    """Build model ``name`` with a ``num_classes``-way output layer.

    ``pretrained``: a local weights file (state dict); ``freeze_backbone``: train only the head.
    """
    check_model_name(name)
    if not isinstance(num_classes, int) or num_classes < 1:
        raise TrainError(f"num_classes must be a positive integer, got {num_classes!r}")
    defaults = _DEFAULTS.get(name, {})
    if defaults.get("requires_pretrained") and pretrained is None:
        raise DataNotFoundError(
            f"model {name!r} needs pretrained=<local weights file> (e.g. torchvision's ImageNet "
            "resnet50 state dict, resnet50-0676ba61.pth, downloaded by you beforehand)"
        )
    try:
        model = REGISTRY.get(name)(num_classes=num_classes, **kw)
    except TypeError as exc:
        raise TrainError(f"bad keyword arguments for model {name!r}: {exc}") from None
    if pretrained is not None:
        load_pretrained(model, pretrained, name=name)
    if freeze_backbone or defaults.get("freeze_backbone"):
        _freeze(model)
    return model


_freeze = freeze_backbone
