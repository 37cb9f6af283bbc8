"""What reading a run folder needs to know of a model, without importing torch.

The model registry (:mod:`shortcutlab.train.models`) holds factories, so asking it anything
imports torch and torchvision (seconds and hundreds of MB). A job table and its metrics need
only two facts of a model: the algorithm it must be trained with (a VAE's ``vae``) and whether
its backbone is frozen (RN50-IN). :data:`MODEL_INFO` declares those facts apart from the
factories: the built-in models here, an area's models in the entry-point group
``shortcutlab.model_info`` (each entry point a :class:`ModelInfo`, registered under its name; the
DiagViB-6 baselines declare theirs in pyproject.toml). :func:`model_info` answers from the model
registry itself when it is already imported (it is the authority: a model registered in this
process, or one overridden), else from these declarations, else (a model declared nowhere, e.g. a
user's entry-point model) by importing the registry. A test checks that both agree on every
registered model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from shortcutlab.errors import TrainError
from shortcutlab.train.model_zoo import is_zoo_name
from shortcutlab.utils.registry import Registry

ENTRY_POINT_GROUP = "shortcutlab.model_info"


@dataclass(frozen=True)
class ModelInfo:
    """``algorithm``: the one algorithm that trains the model (None: any);
    ``freeze_backbone``: the model is registered with a frozen backbone."""

    algorithm: str | None = None
    freeze_backbone: bool = False


def _builtins() -> None:
    for name in ("small_cnn", "alexnet", "resnet18", "resnet50", "wide_resnet50_2",
                 "densenet161"):
        MODEL_INFO.register(name, ModelInfo())
    MODEL_INFO.register("rn50_in", ModelInfo(freeze_backbone=True))


#: The declared facts of the built-in and the areas' models (tests: ``MODEL_INFO.scratch()``).
MODEL_INFO: Registry[ModelInfo] = Registry(
    "model info", error=TrainError, group=ENTRY_POINT_GROUP,
    accepts=lambda obj: isinstance(obj, ModelInfo), builtins=_builtins,
)

_MODELS = "shortcutlab.train.models"


def model_info(name: str) -> ModelInfo | None:
    """The facts of model ``name`` (None for a model registered nowhere); imports torch only
    for a model whose facts are declared nowhere."""
    if _MODELS not in sys.modules:
        declared = MODEL_INFO.find(name)
        if declared is not None:
            return declared
        if is_zoo_name(name):  # timm:/torchvision: imply no algorithm and freeze nothing
            return ModelInfo()
    from shortcutlab.train import models

    try:
        models.check_model_name(name)  # also registers a ``module:factory`` name
    except TrainError:
        return None
    return ModelInfo(models.implied_algorithm(name), models.freezes_backbone(name))


def implied_algorithm(name: str) -> str | None:
    """The algorithm model ``name`` must be trained with (None: any, or an unknown model)."""
    info = model_info(name)
    return info.algorithm if info is not None else None


def freezes_backbone(name: str) -> bool:
    """Whether model ``name`` is registered with a frozen backbone (False if unknown)."""
    info = model_info(name)
    return info is not None and info.freeze_backbone
