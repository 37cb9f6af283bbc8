"""The training configuration: everything that changes a trained model's numbers.

A config starts from a named **protocol** preset (``paper``: the DiagViB-6 authors' ResNet-18
recipe; ``demo``: fast settings for CPU demos) and records that name; any field given explicitly
overrides the preset. Runtime-only choices that do not change results (device, DataLoader
workers, evaluation batch size) are arguments of :func:`shortcutlab.train.trainer.train` instead,
so they never change a job's hash. Values of the wrong type or unknown fields raise
:class:`TrainError` naming them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from shortcutlab.errors import TrainError
from shortcutlab.utils.io import load_yaml

Protocol = Literal["paper", "demo", "biasbed"]
Normalization = Literal["auto", "train", "imagenet", "none"]
Optimizer = Literal["adam", "sgd"]
Precision = Literal["fp32", "bf16", "fp16"]
Head = Literal["full", "selected"]
BatchNormMode = Literal["eval", "train"]

#: Per-protocol values of the optimisation fields. ``paper`` follows the authors' ResNet-18
#: config (trainer/resnet18config.yml, trainer/base_trainer.py): Adam lr 2e-4, betas (0.9,
#: 0.999), mini-batches of 64 with the last incomplete one dropped, 30 epochs without early
#: stopping, the checkpoint of lowest validation loss, inputs z-scored with the training split's
#: statistics for every model (RN50-IN included), one output per class of the predicted factor
#: (``head="full"``) and a frozen backbone's BatchNorm left in training mode (their
#: ``fixed=True`` only stops gradients). ``demo`` keeps the fast CPU settings of ``make demo``
#: (``normalization="auto"``, the 3-output head). docs/diagvib-fidelity.md lists these choices.
PROTOCOLS: dict[str, dict[str, Any]] = {
    "paper": {
        "lr": 2e-4,
        "adam_betas": (0.9, 0.999),
        "batch_size": 64,
        "epochs": 30,
        "patience": None,
        "weight_decay": 0.0,
        "drop_last": True,
        "normalization": "train",
        "head": "full",
        "frozen_batchnorm": "train",
    },
    "demo": {
        "lr": 3e-3,
        "adam_betas": (0.9, 0.999),
        "batch_size": 32,
        "epochs": 10,
        "patience": 4,
        "weight_decay": 0.0,
        "drop_last": False,
        "normalization": "auto",
        "head": "selected",
        "frozen_batchnorm": "eval",
    },
    # BiasBed (Kalischek et al.): the authors' ImageNet recipe. SGD momentum 0.9, weight decay
    # 1e-4, batch 128, 100 epochs with the learning rate divided by 10 at epochs 30, 60 and 90,
    # lr 0.2 (their ERM and SagNet configs use 1e-4: the BiasBed protocol sets that per
    # algorithm), ImageNet normalisation; the folder datasets add RandomResizedCrop for training.
    "biasbed": {
        "lr": 0.2,
        "adam_betas": (0.9, 0.999),
        "batch_size": 128,
        "epochs": 100,
        "patience": None,
        "weight_decay": 1e-4,
        "drop_last": False,
        "normalization": "imagenet",
        "optimizer": "sgd",
        "momentum": 0.9,
        "lr_milestones": (30, 60, 90),
        "lr_gamma": 0.1,
        "head": "selected",
        "frozen_batchnorm": "eval",
    },
}
assert set(PROTOCOLS) == set(get_args(Protocol))
#: Fields added after job ids were in use: left out of the serialised config (hence of job ids)
#: while they hold these defaults, so existing run folders keep their ids.
_HASH_NEUTRAL: dict[str, Any] = {
    "optimizer": "adam",
    "momentum": 0.9,
    "lr_milestones": [],
    "lr_gamma": 0.1,
    "precision": "fp32",
    "channels_last": False,
    "head": "selected",
    "frozen_batchnorm": "eval",
}
_PAPER = PROTOCOLS["paper"]


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

    ``protocol`` names the preset the optimisation fields start from (see :data:`PROTOCOLS`);
    fields given explicitly override it, and :meth:`overrides` lists those that differ.
    Cross entropy and Adam with ``lr`` and ``adam_betas`` (``optimizer="sgd"``: SGD with
    ``momentum``; ``lr_milestones``/``lr_gamma``: a step schedule over epochs, see
    :meth:`learning_rate`); at most ``epochs`` epochs, early
    stopping once the validation loss has not improved for ``patience`` epochs (None: never);
    ``drop_last`` drops an incomplete last training batch; ``normalization`` z-scores inputs per
    channel with the training split's statistics (``train``), ImageNet's (``imagenet``), or not at
    all (``none``; inputs stay in [0, 1]); ``auto`` picks ``imagenet`` for models registered as
    ImageNet-pretrained (rn50_in) and ``train`` otherwise. ``seed`` is the training seed (weight
    initialisation, shuffling, dropout, algorithm randomness).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: Protocol = "paper"
    model: str = "small_cnn"
    algorithm: str = "erm"
    lr: float = Field(_PAPER["lr"], gt=0)
    adam_betas: tuple[float, float] = _PAPER["adam_betas"]
    batch_size: int = Field(_PAPER["batch_size"], ge=1)
    epochs: int = Field(_PAPER["epochs"], ge=1)
    patience: int | None = Field(_PAPER["patience"], ge=1)
    weight_decay: float = Field(_PAPER["weight_decay"], ge=0)
    drop_last: bool = _PAPER["drop_last"]
    normalization: Normalization = _PAPER["normalization"]
    optimizer: Optimizer = "adam"
    momentum: float = Field(0.9, ge=0, lt=1)
    lr_milestones: tuple[int, ...] = ()
    lr_gamma: float = Field(0.1, gt=0, le=1)
    #: ``bf16``/``fp16``: forward passes under bfloat16/float16 autocast (CUDA, or CPU where
    #: torch can), fp16 with a gradient scaler on every optimiser step (the BiasBed authors'
    #: setting); ``channels_last``: NHWC weights and inputs. Off by default: they change the
    #: numbers (docs/training.md).
    precision: Precision = "fp32"
    channels_last: bool = False
    #: DiagViB-6 jobs: ``full`` gives the classifier one output per class of the predicted
    #: factor (the authors' networks; labels are the factor's class indices), ``selected`` 3
    #: outputs, the experiment's selected classes. The job kind builds its datasets with it.
    head: Head = _PAPER["head"]
    #: BatchNorm layers whose parameters are all frozen (RN50-IN's backbone): ``train`` keeps
    #: updating their running statistics and normalises with batch statistics while training
    #: (the authors' ``fixed=True``), ``eval`` freezes them too.
    frozen_batchnorm: BatchNormMode = _PAPER["frozen_batchnorm"]
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

    @model_validator(mode="before")
    @classmethod
    def _fill_from_protocol(cls, data: Any) -> Any:
        """Fields not given take the protocol's value (an unknown protocol fails on its field)."""
        if isinstance(data, dict):
            preset = PROTOCOLS.get(data.get("protocol", "paper"))
            if preset is not None:
                return {**preset, **data}
        return data

    @model_serializer(mode="wrap")
    def _drop_neutral_defaults(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        preset = PROTOCOLS.get(self.protocol, {})
        for key, default in _HASH_NEUTRAL.items():
            value = data.get(key)
            # kept where the protocol's preset differs (paper: head "full"), so that the
            # stored config reads back as it was
            if (key in data and (list(value) if isinstance(value, tuple) else value) == default
                    and preset.get(key, default) == default):
                del data[key]
        return data

    def learning_rate(self, epoch: int, base: float | None = None) -> float:
        """The step schedule: ``base`` (default ``lr``) times ``lr_gamma`` per milestone
        reached by ``epoch`` (0-based; milestone 30 changes the rate from the 31st epoch)."""
        drops = sum(1 for m in self.lr_milestones if epoch >= m)
        return (self.lr if base is None else base) * self.lr_gamma**drops

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

    @field_validator("adam_betas")
    @classmethod
    def _betas_in_range(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not all(0.0 <= b < 1.0 for b in value):
            raise ValueError("both Adam betas must be in [0, 1)")
        return value

    @field_validator("pretrained", mode="before")
    @classmethod
    def _path_to_str(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    def overrides(self) -> dict[str, Any]:
        """Optimisation fields whose value differs from the protocol's preset."""
        preset = PROTOCOLS[self.protocol]
        return {k: getattr(self, k) for k, v in preset.items() if getattr(self, k) != v}

    def describe_protocol(self) -> str:
        """``"paper"``, or ``"paper (lr=0.001, epochs=6)"`` when fields override the preset."""
        return describe_protocol(self.model_dump(mode="json"))


    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with some fields changed, validated like a new config.

        Changing ``protocol`` moves the copy onto the new preset but keeps this config's
        overrides (fields that differed from the old preset) unless ``changes`` sets them.
        """
        data = self.model_dump()
        if changes.get("protocol", self.protocol) != self.protocol:
            kept = self.overrides()
            data = {k: v for k, v in data.items() if k not in PROTOCOLS[self.protocol]}
            data.update(kept)
        return TrainConfig(**{**data, **changes})

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
            data = load_yaml(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise TrainError(f"cannot parse training config {path}: {exc}") from None
        return cls.from_mapping(data)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): equal configs give equal bytes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def describe_protocol(config: dict[str, Any]) -> str:
    """:meth:`TrainConfig.describe_protocol` of a config stored as JSON (e.g. a job file's
    ``train``); a config without a known protocol is described by its ``protocol`` field."""
    name = str(config.get("protocol", ""))
    preset = PROTOCOLS.get(name)
    if preset is None:
        return name

    def plain(value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value

    changed = ", ".join(f"{k}={plain(config[k])!r}" for k, v in preset.items()
                        if k in config and plain(config[k]) != plain(v))
    return f"{name} ({changed})" if changed else name
