"""Any timm or torchvision classification architecture by name: ``timm:convnext_tiny``,
``torchvision:resnet50`` (``--model`` and ``TrainConfig(model=...)``).

A prefixed name resolves, like ``module:factory`` (:mod:`shortcutlab.train.model_paths`), to a
factory ``factory(num_classes, **kw) -> nn.Module`` registered under the name on first use.
The network is built with random weights (``pretrained=False`` / ``weights=None``: nothing is
ever downloaded; ``--pretrained PATH`` loads a local state dict afterwards) and a
``num_classes``-way head. Input size: timm models that need a fixed size (ViTs) are built with
``dynamic_img_size=True`` so that they take the task's images (DiagViB-6's 128 px) as they
come; ``img_size`` (timm and torchvision ViTs) and ``in_chans`` (timm) in ``model_kwargs``
fix them instead. timm is the optional extra ``shortcutlab[timm]``.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from shortcutlab.errors import TrainError

if TYPE_CHECKING:  # torch loads when a network is built, not when a name is read
    from torch import nn

#: the prefixes and the library each names
PREFIXES = ("timm", "torchvision")
#: torchvision architectures whose auxiliary heads would change what ``forward`` returns
_AUX_LOGITS = {"googlenet", "inception_v3"}


def is_zoo_name(name: str) -> bool:
    """``timm:<arch>`` or ``torchvision:<arch>`` rather than a registered name or a path."""
    prefix, sep, _ = name.partition(":")
    return bool(sep) and prefix.strip() in PREFIXES


def _timm(name: str) -> ModuleType:
    try:
        import timm
    except ImportError:
        raise TrainError(
            f"model {name!r} needs timm, the optional extra: pip install 'shortcutlab[timm]'"
        ) from None
    return timm


def _architectures(prefix: str, name: str = "") -> list[str]:
    """Every classification architecture the library ``prefix`` can build (sorted)."""
    if prefix == "timm":
        return sorted(_timm(name or "timm:*").list_models())
    import torchvision.models as tvm

    return sorted(tvm.list_models(module=tvm))


def _check_arch(prefix: str, arch: str, name: str) -> None:
    known = _architectures(prefix, name)
    if arch not in known:
        close = difflib.get_close_matches(arch, known, n=5, cutoff=0.6)
        hint = f"close: {', '.join(f'{prefix}:{c}' for c in close)}; " if close else ""
        raise TrainError(f"unknown {prefix} model {arch!r}; {hint}list them with "
                         f"`shortcutlab models --filter '{prefix}:*'`")


def zoo_factory(name: str) -> Callable[..., nn.Module]:
    """The factory ``timm:<arch>`` / ``torchvision:<arch>`` names (TrainError when the library
    is missing or has no such architecture, with the closest names)."""
    prefix, _, arch = (part.strip() for part in name.partition(":"))
    if prefix not in PREFIXES or not arch:
        forms = ", ".join(f"{p}:<arch>" for p in PREFIXES)
        raise TrainError(f"model {name!r}: expected one of {forms}")
    _check_arch(prefix, arch, name)
    return _timm_factory(arch, name) if prefix == "timm" else _torchvision_factory(arch)


def _timm_factory(arch: str, name: str) -> Callable[..., nn.Module]:
    def build(num_classes: int, *, in_chans: int = 3, img_size: int | None = None,
              **kw: Any) -> nn.Module:
        timm = _timm(name)
        args: dict[str, Any] = {"pretrained": False, "num_classes": num_classes,
                                "in_chans": in_chans, **kw}
        if img_size is not None:
            args["img_size"] = img_size
        elif _fixed_input_size(timm, arch):  # a ViT: take whatever size the task's images are
            args.setdefault("dynamic_img_size", True)
        return timm.create_model(arch, **args)

    build.__name__ = build.__qualname__ = f"timm_{arch}"
    build.__doc__ = f"timm's {arch}, random init (weights only from --pretrained PATH)."
    return build


def _fixed_input_size(timm: ModuleType, arch: str) -> bool:
    cfg = timm.models.get_pretrained_cfg(arch)
    return bool(cfg is not None and cfg.fixed_input_size)


def _torchvision_factory(arch: str) -> Callable[..., nn.Module]:
    def build(num_classes: int, *, img_size: int | None = None, **kw: Any) -> nn.Module:
        import torchvision.models as tvm

        args: dict[str, Any] = {"weights": None, "num_classes": num_classes, **kw}
        if arch in _AUX_LOGITS:
            args.setdefault("aux_logits", False)
            args.setdefault("init_weights", True)
        if img_size is not None:
            args["image_size"] = img_size
        return tvm.get_model(arch, **args)

    build.__name__ = build.__qualname__ = f"torchvision_{arch}"
    build.__doc__ = f"torchvision's {arch}, random init (weights only from --pretrained PATH)."
    return build


def available() -> dict[str, bool]:
    """Which of the libraries can be named here (timm is optional)."""
    try:
        import timm  # noqa: F401
    except ImportError:
        return {"timm": False, "torchvision": True}
    return {"timm": True, "torchvision": True}


def list_zoo(pattern: str = "*") -> dict[str, list[str]]:
    """Prefixed names per installed library matching the shell-style ``pattern``, tried on the
    prefixed name and on the bare architecture (``resnet5*`` finds ``torchvision:resnet50``)."""
    out: dict[str, list[str]] = {}
    for prefix, present in available().items():
        if present:
            out[prefix] = [f"{prefix}:{a}" for a in _architectures(prefix)
                           if fnmatch.fnmatchcase(a, pattern)
                           or fnmatch.fnmatchcase(f"{prefix}:{a}", pattern)]
    return out
