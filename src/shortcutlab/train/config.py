"""The training configuration: everything that changes a trained model's numbers.

A config starts from a named **preset** (:mod:`shortcutlab.train.presets`; the engine's own is
the neutral ``default``, the areas register their papers' recipes) and records that name; any
field given explicitly overrides the preset. :meth:`TrainConfig.from_sources` builds one from a
file, a preset and command-line overrides, in that order. Runtime-only choices that do not
change results (device, DataLoader workers, evaluation batch size) are arguments of
:func:`shortcutlab.train.trainer.train` instead, so they never change a job's hash. Values of
the wrong type or unknown fields raise :class:`TrainError` naming them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from shortcutlab.errors import TrainError
from shortcutlab.train.presets import DEFAULT_PRESET, DEFAULT_VALUES, PRESETS, get_preset
from shortcutlab.utils.io import load_yaml

Normalization = Literal["auto", "train", "imagenet", "none"]
Optimizer = Literal["adam", "sgd"]
Precision = Literal["fp32", "bf16", "fp16"]
BatchNormMode = Literal["eval", "train"]

_D = DEFAULT_VALUES


#: True while this tool reads back configs it wrote itself (a job's ``job.json``, see
#: :func:`stored_configs`): their model and algorithm names were checked when the job was
#: planned (the job's id proves the file unedited), so reading them neither checks the names
#: again nor loads the torch-backed registries to do so.
_STORED: ContextVar[bool] = ContextVar("shortcutlab_stored_configs", default=False)


@contextmanager
def stored_configs() -> Iterator[None]:
    """Within the block, configs are built as stored ones: model and algorithm names are taken
    as they are (every other field is validated as usual). A context variable rather than
    pydantic's validation context, which a model's own ``__init__`` (the error translation
    here and in the runner's ``Job``) does not pass on."""
    token = _STORED.set(True)
    try:
        yield
    finally:
        _STORED.reset(token)


def format_validation_error(exc: ValidationError, what: str = "training config") -> str:
    """One line per bad field: its dotted location, the problem and the value given."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        given = err.get("input")
        lines.append(f"{loc}: {err['msg']} (got {given!r})")
    return f"invalid {what}: " + "; ".join(lines)


class TrainConfig(BaseModel):
    """Model, algorithm and optimisation settings of one training run.

    ``preset`` names the preset the fields start from (:mod:`shortcutlab.train.presets`;
    default ``default``); fields given explicitly override it, and :meth:`overrides` lists those
    of the preset's fields that differ. Cross entropy and Adam with ``lr`` and ``adam_betas``
    (``optimizer="sgd"``: SGD with ``momentum``; ``lr_milestones``/``lr_gamma``: a step schedule
    over epochs, see :meth:`learning_rate`); at most ``epochs`` epochs, early stopping once the
    validation loss has not improved for ``patience`` epochs (None: never); ``drop_last`` drops
    an incomplete last training batch; ``normalization`` z-scores inputs per channel with the
    training split's statistics (``train``), ImageNet's (``imagenet``), or not at all (``none``;
    inputs stay in [0, 1]); ``auto`` picks ``imagenet`` for models registered as
    ImageNet-pretrained (rn50_in) and ``train`` otherwise. ``seed`` is the training seed (weight
    initialisation, shuffling, dropout, algorithm randomness).
    """

    # allow_inf_nan=False: an inf or nan rate would pass gt=0 and be written as null
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    preset: str = DEFAULT_PRESET
    model: str = "small_cnn"
    algorithm: str = "erm"
    lr: float = Field(_D["lr"], gt=0)
    adam_betas: tuple[float, float] = _D["adam_betas"]
    batch_size: int = Field(_D["batch_size"], ge=1)
    epochs: int = Field(_D["epochs"], ge=1)
    patience: int | None = Field(_D["patience"], ge=1)
    weight_decay: float = Field(_D["weight_decay"], ge=0)
    drop_last: bool = _D["drop_last"]
    normalization: Normalization = _D["normalization"]
    optimizer: Optimizer = _D["optimizer"]
    momentum: float = Field(_D["momentum"], ge=0, lt=1)
    lr_milestones: tuple[int, ...] = _D["lr_milestones"]
    lr_gamma: float = Field(_D["lr_gamma"], gt=0, le=1)
    #: ``bf16``/``fp16``: forward passes under bfloat16/float16 autocast (CUDA, or CPU where
    #: torch can), fp16 with a gradient scaler on every optimiser step (the BiasBed authors'
    #: setting); ``channels_last``: NHWC weights and inputs. Off by default: they change the
    #: numbers (docs/training.md).
    precision: Precision = "fp32"
    channels_last: bool = False
    #: BatchNorm layers whose parameters are all frozen (RN50-IN's backbone): ``train`` keeps
    #: updating their running statistics and normalises with batch statistics while training
    #: (the DiagViB-6 authors' ``fixed=True``), ``eval`` freezes them too.
    frozen_batchnorm: BatchNormMode = _D["frozen_batchnorm"]
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
    def _fill_from_preset(cls, data: Any) -> Any:
        """Fields not given take the preset's value; an unknown preset is a TrainError listing
        the registered ones (a preset of the wrong type fails on its field)."""
        if isinstance(data, dict):
            name = data.get("preset", DEFAULT_PRESET)
            if name == DEFAULT_PRESET:  # no registry lookup: areas validate theirs with it
                return {**DEFAULT_VALUES, **data}
            if isinstance(name, str):
                return {**get_preset(name).values, **data}
        return data

    @model_validator(mode="after")
    def _nothing_ignored(self) -> TrainConfig:
        """A setting the optimiser or schedule does not read (Adam: ``momentum``; SGD:
        ``adam_betas``; no ``lr_milestones``: ``lr_gamma``), set away from the preset's value,
        is refused: it would silently do nothing. Stored configs are read as they are."""
        if _STORED.get():
            return self
        base = {**DEFAULT_VALUES, **(get_preset(self.preset).values  # areas validate theirs
                                     if self.preset != DEFAULT_PRESET else {})}  # with default
        optimizer = f"its optimizer is {self.optimizer!r}"
        users = {  # field: (what reads it, whether this config leaves it unread, what it has)
            "momentum": ("by optimizer 'sgd'", self.optimizer != "sgd", optimizer),
            "adam_betas": ("by optimizer 'adam'", self.optimizer != "adam", optimizer),
            "lr_gamma": ("with lr_milestones", not self.lr_milestones, "it has none"),
        }
        for name, (user, unused, now) in users.items():
            value = getattr(self, name)
            if unused and _plain(value) != _plain(base[name]):
                fix = user.split(" ", 1)[1].replace(" ", "=")
                raise TrainError(
                    f"invalid training config: {name}={value!r} is used {user} only and {now}; "
                    f"set {fix} or leave {name} at the preset's {base[name]!r}")
        return self

    def learning_rate(self, epoch: int, base: float | None = None) -> float:
        """The step schedule: ``base`` (default ``lr``) times ``lr_gamma`` per milestone
        reached by ``epoch`` (0-based; milestone 30 changes the rate from the 31st epoch)."""
        drops = sum(1 for m in self.lr_milestones if epoch >= m)
        return (self.lr if base is None else base) * self.lr_gamma**drops

    @classmethod
    def from_stored(cls, data: Any) -> TrainConfig:
        """A config as this tool stored it (a job's ``train``), every field validated but the
        model and algorithm names taken as they are (see :func:`stored_configs`): reading a
        run folder imports no torch. Configs a user gives are built with the constructor,
        which refuses unknown names."""
        with stored_configs():
            return cls(**data)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if _STORED.get():
            return value
        from shortcutlab.train.models import check_model_name

        return check_model_name(value)

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str) -> str:
        if _STORED.get():
            return value
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
        """The preset's fields whose value here differs from the preset's."""
        values = _baseline(self.preset)
        preset = get_preset(self.preset).values
        return {k: getattr(self, k) for k in preset if getattr(self, k) != values[k]}

    def explicit(self) -> dict[str, Any]:
        """Every field (``preset`` aside) whose value differs from what the preset alone gives:
        what a user set on top of the preset."""
        values = _baseline(self.preset)
        return {k: getattr(self, k) for k in values if getattr(self, k) != values[k]}

    def describe_preset(self) -> str:
        """``"default"``, or ``"default (lr=0.01, epochs=6)"`` when fields override the preset."""
        return describe_preset(self.model_dump(mode="json"))

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with some fields changed, validated like a new config.

        Changing ``preset`` moves the copy onto the new preset but keeps what was set on top
        of the old one (:meth:`explicit`) unless ``changes`` sets it.
        """
        if changes.get("preset", self.preset) != self.preset:
            return TrainConfig(**{**self.explicit(), **changes})
        return TrainConfig(**{**self.model_dump(), **changes})

    @classmethod
    def from_sources(cls, file: str | Path | None = None, preset: str | None = None, *,
                     base_preset: str = DEFAULT_PRESET, **overrides: Any) -> TrainConfig:
        """One config from, in order of precedence, ``overrides`` (None: not given), the
        ``preset`` (moving onto it keeps the file's explicit settings, as :meth:`replace`) and
        the YAML/JSON ``file``; what none sets takes the values of the file's preset, else of
        ``base_preset`` (an area's own default, e.g. DiagViB-6's ``paper``)."""
        data = _read_config_file(file) if file is not None else {}
        config = cls.from_mapping({"preset": base_preset, **_legacy_names(data)})
        if preset is not None:
            config = config.replace(preset=preset)
        given = {k: v for k, v in overrides.items() if v is not None}
        return config.replace(**given) if given else config

    @classmethod
    def from_mapping(cls, data: Any) -> TrainConfig:
        """Validate a plain mapping (e.g. parsed YAML/JSON); the former name ``protocol`` of
        ``preset`` is accepted."""
        return cls(**_legacy_names(data))

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """Load a YAML or JSON file (``yaml.safe_load``; JSON is YAML)."""
        return cls.from_mapping(_read_config_file(path))

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces): equal configs give equal bytes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def _read_config_file(path: str | Path) -> Any:
    """The parsed YAML/JSON content of a training config file (a TrainError if unreadable)."""
    path = Path(path)
    if not path.is_file():
        raise TrainError(f"training config file not found: {path}")
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TrainError(f"cannot parse training config {path}: {exc}") from None


def _legacy_names(data: Any) -> dict[str, Any]:
    """``data`` checked to be a mapping, with the former field name ``protocol`` (before
    presets were a registry) read as ``preset``."""
    if not isinstance(data, dict):
        raise TrainError(f"a training config must be a mapping, got {type(data).__name__}")
    if "protocol" not in data:
        return data
    if "preset" in data:
        raise TrainError("a training config gives both 'preset' and its former name "
                         "'protocol'; keep 'preset'")
    return {("preset" if k == "protocol" else k): v for k, v in data.items()}


def _baseline(preset: str) -> dict[str, Any]:
    """Every field's value in ``TrainConfig(preset=preset)`` (``preset`` itself left out)."""
    values = TrainConfig(preset=preset).model_dump()
    del values["preset"]
    return values


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def describe_preset(config: dict[str, Any]) -> str:
    """:meth:`TrainConfig.describe_preset` of a config stored as JSON (e.g. a job file's
    ``train``); a config naming no registered preset is described by its ``preset`` field."""
    name = str(config.get("preset", ""))
    preset = PRESETS.find(name)
    if preset is None:
        return name
    changed = ", ".join(f"{k}={_plain(config[k])!r}" for k, v in preset.values.items()
                        if k in config and _plain(config[k]) != _plain(v))
    return f"{name} ({changed})" if changed else name

