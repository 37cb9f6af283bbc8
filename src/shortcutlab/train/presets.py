"""Training presets: named starting values of a :class:`~shortcutlab.train.config.TrainConfig`.

A preset is a name, a mapping of TrainConfig fields to values and a one-line description. A
config records the name of the preset it starts from (``TrainConfig.preset``); fields given
explicitly override the preset's values.

The engine registers one neutral preset, ``default`` (:data:`DEFAULT_VALUES`), which no
benchmark chose. The areas add their papers' recipes (DiagViB-6: ``paper``, ``demo``; BiasBed:
``biasbed``) through the ``shortcutlab.presets`` entry-point group (pyproject.toml), loaded on
the first lookup, so ``TrainConfig(preset="paper")`` validates in any process without anyone
importing ``shortcutlab.diagvib`` first. A user's package adds its own the same way, or a script
calls :func:`register_preset`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from shortcutlab.errors import TrainError
from shortcutlab.utils.registry import Registry

__all__ = [
    "DEFAULT_PRESET",
    "DEFAULT_VALUES",
    "Preset",
    "get_preset",
    "list_presets",
    "register_preset",
]

DEFAULT_PRESET = "default"
#: The engine's neutral recipe: Adam at its usual 1e-3 with PyTorch's betas, batches of 64
#: keeping the last incomplete one (every sample counts), 30 epochs without early stopping (model
#: selection is the caller's explicit choice, by the validation loss), no weight decay, no
#: schedule, inputs z-scored with the training split's own statistics (assumes no pretraining
#: corpus), and a frozen backbone's BatchNorm frozen too (what "frozen" means in PyTorch).
DEFAULT_VALUES: dict[str, Any] = {
    "lr": 1e-3,
    "adam_betas": (0.9, 0.999),
    "batch_size": 64,
    "epochs": 30,
    "patience": None,
    "weight_decay": 0.0,
    "drop_last": False,
    "normalization": "train",
    "optimizer": "adam",
    "momentum": 0.9,
    "lr_milestones": (),
    "lr_gamma": 0.1,
    "frozen_batchnorm": "eval",
}


@dataclass(frozen=True)
class Preset:
    """A named set of TrainConfig field values (read-only) and what it is for."""

    name: str
    values: Mapping[str, Any]
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Preset) and (self.name, dict(self.values), self.description)
                == (other.name, dict(other.values), other.description))


PRESETS: Registry[Preset] = Registry(
    "training preset", error=TrainError, group="shortcutlab.presets",
    accepts=lambda obj: isinstance(obj, Preset),
)


def register_preset(name: str, values: Mapping[str, Any], description: str = "", *,
                    override: bool = False) -> Preset:
    """Register the preset ``name`` with these field values; returns the :class:`Preset`.

    ``values`` may set any TrainConfig field but ``preset``; they are validated like a config
    (a :class:`TrainError` naming the bad field). A taken name is refused unless ``override``.
    """
    from shortcutlab.train.config import TrainConfig  # config imports this module

    if name == DEFAULT_PRESET:
        raise TrainError(f"the preset name {DEFAULT_PRESET!r} is the engine's own; pick another")

    unknown = sorted(set(values) - set(TrainConfig.model_fields) | ({"preset"} & set(values)))
    if unknown:
        fields = sorted(set(TrainConfig.model_fields) - {"preset"})
        raise TrainError(f"preset {name!r} sets unknown field(s) {', '.join(unknown)}; "
                         f"valid fields: {', '.join(fields)}")
    try:
        TrainConfig(preset=DEFAULT_PRESET, **values)
    except TrainError as exc:
        raise TrainError(f"preset {name!r}: {exc}") from None
    return PRESETS.register(name, Preset(name, values, description), override=override)


def list_presets(pattern: str = "*") -> list[str]:
    """Sorted names of the registered presets matching a shell-style ``pattern``."""
    return PRESETS.names(pattern)


def get_preset(name: str) -> Preset:
    """The preset ``name`` (a one-line :class:`TrainError` listing the registered ones if none)."""
    return PRESETS.get(name)


PRESETS.register(DEFAULT_PRESET, Preset(
    DEFAULT_PRESET, DEFAULT_VALUES,
    "neutral: Adam lr 1e-3, batch 64, 30 epochs, no early stopping, train-split statistics"))
