"""The training configuration: everything that changes a trained model's numbers.

Runtime-only choices that do not change results (device, DataLoader workers, evaluation batch
size) are arguments of :func:`shortcutlab.train.trainer.train` instead, so they never change a
job's hash. Values of the wrong type or unknown fields raise :class:`TrainError` naming them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shortcutlab.errors import TrainError


def format_validation_error(exc: ValidationError, what: str = "training config") -> str:
    """One line per bad field: its dotted location, the problem and the value given."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        given = err.get("input")
        lines.append(f"{loc}: {err['msg']} (got {given!r})")
    return f"invalid {what}: " + "; ".join(lines)


class TrainConfig(BaseModel):
    """Model, algorithm and optimisation settings of one training run (paper appendix A.2).

    Cross entropy and Adam with ``lr``; at most ``epochs`` epochs with early stopping once the
    validation loss has not improved for ``patience`` epochs; ``seed`` is the training seed
    (weight initialisation, shuffling, dropout, algorithm randomness).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "small_cnn"
    algorithm: str = "erm"
    lr: float = Field(1e-3, gt=0)
    batch_size: int = Field(64, ge=1)
    epochs: int = Field(20, ge=1)
    patience: int | None = Field(5, ge=1)
    weight_decay: float = Field(0.0, ge=0)
    seed: int = Field(0, ge=0)
    pretrained: str | None = None
    freeze_backbone: bool = False
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    hparams: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise TrainError(format_validation_error(exc)) from None

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        from shortcutlab.train.models import check_model_name

        return check_model_name(value)

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str) -> str:
        from shortcutlab.train.algorithms import check_algorithm_name

        return check_algorithm_name(value)

    @field_validator("pretrained", mode="before")
    @classmethod
    def _path_to_str(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with some fields changed, validated like a new config."""
        return TrainConfig(**{**self.model_dump(), **changes})

    @classmethod
    def from_mapping(cls, data: Any) -> TrainConfig:
        """Validate a plain mapping (e.g. parsed YAML/JSON)."""
        if not isinstance(data, dict):
            raise TrainError(f"a training config must be a mapping, got {type(data).__name__}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """Load a YAML or JSON file (``yaml.safe_load``; JSON is YAML)."""
        path = Path(path)
        if not path.is_file():
            raise TrainError(f"training config file not found: {path}")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise TrainError(f"cannot parse training config {path}: {exc}") from None
        return cls.from_mapping(data)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): equal configs give equal bytes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
