"""The Algorithm interface (DomainBed style): ``update(batch)`` takes one optimisation step,
``predict(x)`` returns logits.

A batch is the collated dict of dataset items, already on the algorithm's device:
``x`` float (B, 3, H, W), normalised by ``algorithm.input_norm`` (the trainer applies it;
``input_norm.inverse(x)`` gives pixels in [0, 1] back), ``y`` int64 (B,), and whatever else
the dataset's items hold (e.g. ``index``). ``update`` must return a dict of floats
containing ``loss`` (the training objective the trainer reports per epoch).

Randomness: the trainer seeds torch from ``config.seed`` before building the algorithm and sets
``algorithm.step`` (0, 1, 2, ...) before every ``update``; algorithms with their own random draws
derive them from ``(config.seed, purpose, step)`` (see :meth:`Algorithm.generator`).

Backward passes and optimiser steps go through :meth:`Algorithm.backward_and_step` (or its two
halves :meth:`Algorithm.backward` and :meth:`Algorithm.step_optimizers`), so that with
``precision="fp16"`` the trainer's gradient scaler scales every loss and unscales, checks and
steps every optimiser; without a scaler they are plain ``backward()`` and ``step()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import create_model
from shortcutlab.train.normalization import InputNormalization
from shortcutlab.utils.checks import range_problem
from shortcutlab.utils.rng import torch_seed


@dataclass
class AlgorithmContext:
    """What some algorithms need besides the batch, all optional.

    ``train_dataset``: the training set itself; algorithms ask it for the capabilities they need
    (:mod:`shortcutlab.train.capabilities`, e.g. factor-space Stylized needs a
    :class:`~shortcutlab.train.capabilities.Restylable` set); ``extra``: anything else.
    """

    train_dataset: Any | None = None
    device: torch.device | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Algorithm(nn.Module):
    """Base class: owns its network(s) and optimiser(s); subclasses implement update/predict.

    ``hparams_defaults`` lists the algorithm's own hyper-parameters; ``config.hparams`` overrides
    them (unknown keys or values of the wrong type raise TrainError). Subclasses read
    ``self.hparams``. ``input_norm`` holds the input normalisation the trainer applies to every
    batch (identity until the trainer loads statistics into it).
    """

    name: ClassVar[str] = ""
    hparams_defaults: ClassVar[dict[str, Any]] = {}
    #: Raised when a change of the algorithm's code changes its numbers: part of the id of every
    #: job it trains (:func:`~shortcutlab.train.algorithms.algorithm_versions`), so results of
    #: the older code are never counted as the new code's. '' (the first version) adds nothing.
    version: ClassVar[str] = ""
    #: Whether this class's ``update`` is static enough to be captured once as a CUDA graph and
    #: replayed: only device work (no ``.item()``, no host-side randomness or use of
    #: ``self.step``, no shapes or branches that depend on the data), its optimisers' steps
    #: through :meth:`backward_and_step`. Read from the class that defines the ``update`` that
    #: runs (:meth:`update_is_graph_safe`), so a subclass overriding ``update`` must declare it
    #: again.
    graph_safe: ClassVar[bool] = False

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.config = config
        self.context = context or AlgorithmContext()
        self.hparams = self._resolve_hparams(config.hparams)
        self.input_norm = InputNormalization()
        self.step = 0
        #: The loss scaler of ``precision="fp16"`` (the trainer sets it); None: no scaling.
        self.grad_scaler: torch.amp.GradScaler | None = None

    @classmethod
    def _resolve_hparams(cls, given: dict[str, Any]) -> dict[str, Any]:
        defaults = cls.hparams_defaults
        out = dict(defaults)
        for key, value in given.items():
            if key not in defaults:
                choices = sorted(defaults) or ["(none)"]
                label = f"hyper-parameter of algorithm {cls.name or cls.__name__}"
                raise TrainError(unknown_choice(label, key, choices))
            default = defaults[key]
            if default is not None and not _compatible(value, default):
                raise TrainError(
                    f"hyper-parameter {key!r} of algorithm {cls.name or cls.__name__} must be "
                    f"{type(default).__name__}, got {value!r}"
                )
            out[key] = float(value) if isinstance(default, float) else value
        cls.check_hparam_values(out)
        return out

    @classmethod
    def check_hparam_values(cls, hparams: dict[str, Any]) -> None:
        """Raise a one-line TrainError for resolved ``hparams`` this algorithm cannot train with
        (a subclass's ranges and choices; none here). Pure: a command checks a run's configs
        with :func:`shortcutlab.train.algorithms.check_hparams` before any job starts."""

    @classmethod
    def check_ranges(cls, hparams: dict[str, Any], positive: tuple[str, ...] = (),
                     non_negative: tuple[str, ...] = ()) -> None:
        """For :meth:`check_hparam_values`: a TrainError naming the first of ``hparams``
        outside its range: learning rates > 0 (a per-group Adam learning rate is not checked
        by torch), loss weights >= 0 (a negative one flips its term's sign), all finite."""
        for keys, low_open in ((positive, True), (non_negative, False)):
            for key in keys:
                problem = range_problem(f"hyper-parameter {key} of algorithm {cls.name}",
                                        hparams[key], 0.0, low_open=low_open)
                if problem is not None:
                    raise TrainError(problem)

    @classmethod
    def check_unread(cls, hparams: dict[str, Any], keys: tuple[str, ...], why: str) -> None:
        """For :meth:`check_hparam_values`: a TrainError naming the first of ``keys`` set away
        from its default although ``why`` (e.g. ``"placement is 'block'"``) leaves it unread:
        it would silently do nothing."""
        for key in keys:
            if hparams[key] != cls.hparams_defaults[key]:
                raise TrainError(f"hyper-parameter {key}={hparams[key]!r} of algorithm "
                                 f"{cls.name} is not used: {why}; leave it at "
                                 f"{cls.hparams_defaults[key]!r}")

    # ---------------------------------------------------------------- helpers for subclasses
    def build_network(self, num_classes: int | None = None) -> nn.Module:
        """The configured model (``config.model``, pretrained, frozen backbone, model_kwargs)."""
        cfg = self.config
        return create_model(
            cfg.model,
            num_classes or self.num_classes,
            pretrained=cfg.pretrained,
            freeze_backbone=cfg.freeze_backbone,
            **cfg.model_kwargs,
        )

    def make_optimizer(
        self, params: Iterable[nn.Parameter], lr: float | None = None
    ) -> torch.optim.Optimizer:
        """The configured optimiser over the trainable parameters: Adam with the configured
        learning rate, betas and weight decay (DiagViB-6, paper appendix A.2), or SGD with
        momentum (``optimizer="sgd"``, the BiasBed recipe); frozen parameters are left out."""
        trainable = [p for p in params if p.requires_grad]
        if not trainable:
            raise TrainError("the model has no trainable parameters")
        cfg = self.config
        if cfg.optimizer == "sgd":  # the BiasBed recipe
            opt: torch.optim.Optimizer = torch.optim.SGD(
                trainable, lr=lr or cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
            )
        else:
            opt = torch.optim.Adam(
                trainable, lr=lr or cfg.lr, betas=cfg.adam_betas, weight_decay=cfg.weight_decay
            )
        for group in opt.param_groups:
            group["base_lr"] = group["lr"]
        return opt

    def start_epoch(self, epoch: int) -> None:
        """Set every optimiser's learning rate for ``epoch`` by the config's step schedule
        (``lr_milestones``/``lr_gamma``); no-op without milestones. The trainer calls it."""
        if not self.config.lr_milestones:
            return
        for opt in optimizers_of(self):
            for group in opt.param_groups:
                base = group.setdefault("base_lr", group["lr"])
                group["lr"] = self.config.learning_rate(epoch, base)

    def generator(self, purpose: str, device: torch.device | str = "cpu") -> torch.Generator:
        """A torch Generator seeded from (config.seed, purpose, current step)."""
        gen = torch.Generator(device=device)
        gen.manual_seed(torch_seed(self.config.seed, purpose, self.step))
        return gen

    def train(self, mode: bool = True) -> Algorithm:
        """Like nn.Module.train, but with ``config.frozen_batchnorm="eval"`` BatchNorm layers
        whose parameters are all frozen stay in eval mode, so a frozen backbone (RN50-IN) really
        does not change (``"train"``: they follow ``mode``, as in the DiagViB-6 authors' code)."""
        super().train(mode)
        if mode and self.config.frozen_batchnorm == "eval":
            for module in self.modules():
                if isinstance(module, nn.modules.batchnorm._BatchNorm):
                    params = list(module.parameters())
                    if params and not any(p.requires_grad for p in params):
                        module.eval()
        return self

    # ---------------------------------------------------------------- backward and steps
    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` times the gradient scaler's current scale (unchanged without a scaler); for
        algorithms that take gradients with ``torch.autograd.grad`` themselves."""
        scaler = self.grad_scaler
        return loss if scaler is None or not scaler.is_enabled() else scaler.scale(loss)

    def backward(self, loss: torch.Tensor, *, retain_graph: bool = False) -> None:
        """Back-propagate ``loss`` (scaled when a gradient scaler is set)."""
        self.scale_loss(loss).backward(retain_graph=retain_graph)

    def clip_scaled_grad_norm(self, params: Iterable[nn.Parameter], max_norm: float) -> None:
        """Clip the gradients of ``params`` to total norm ``max_norm`` where they may still carry
        the loss scale (between two backward passes): the bound is scaled with them."""
        scaler = self.grad_scaler
        scale = scaler.get_scale() if scaler is not None and scaler.is_enabled() else 1.0
        nn.utils.clip_grad_norm_(list(params), max_norm * scale)

    def step_optimizers(
        self,
        *optimizers: torch.optim.Optimizer | None,
        clip: tuple[Sequence[nn.Parameter], float] | None = None,
    ) -> bool:
        """Step ``optimizers`` (None entries are skipped) on the gradients in place; ``clip``:
        (parameters, max norm) clipped first, on unscaled gradients. Returns whether they
        stepped.

        With a gradient scaler the optimisers are unscaled together: each parameter's gradient
        once even where optimisers share parameters (SagNet's main optimiser holds every
        parameter), one inf/NaN check for all (a non-finite gradient skips every step of the
        call), then the scaler's update. Without one: ``clip_grad_norm_`` and ``step()``."""
        opts = [o for o in optimizers if o is not None]
        scaler = self.grad_scaler
        if scaler is None or not scaler.is_enabled():
            if clip is not None and clip[1] > 0:
                nn.utils.clip_grad_norm_(clip[0], clip[1])
            for opt in opts:
                opt.step()
            return True
        together = _Together(opts)
        if clip is not None and clip[1] > 0:
            scaler.unscale_(together)  # type: ignore[arg-type]
            nn.utils.clip_grad_norm_(clip[0], clip[1])
        stepped = scaler.step(together) is not None  # type: ignore[arg-type]
        scaler.update()
        return stepped

    def backward_and_step(
        self,
        loss: torch.Tensor,
        *optimizers: torch.optim.Optimizer | None,
        zero_grad: bool = True,
        clip: tuple[Sequence[nn.Parameter], float] | None = None,
    ) -> bool:
        """One optimisation step on ``loss``: zero the optimisers' gradients (``zero_grad``),
        back-propagate (scaled under fp16) and :meth:`step_optimizers`. Returns whether the
        optimisers stepped (False: the fp16 scaler found inf/NaN gradients and skipped)."""
        if zero_grad:
            for opt in optimizers:
                if opt is not None:
                    opt.zero_grad(set_to_none=True)
        self.backward(loss)
        return self.step_optimizers(*optimizers, clip=clip)

    @classmethod
    def update_is_graph_safe(cls) -> bool:
        """:attr:`graph_safe` as declared by the class defining the ``update`` that runs (a
        subclass inheriting a graph-safe ``update`` keeps it; one overriding it must say so)."""
        owner = next(k for k in cls.__mro__ if "update" in vars(k))
        return bool(vars(owner).get("graph_safe", False))

    @classmethod
    def supports(cls, model: nn.Module) -> bool:
        """Whether the algorithm, with its default hyper-parameters, can train ``model`` (the
        registry smoke test pairs every registered model with every algorithm supporting it).
        Default: any model; algorithms needing a known structure override it with
        :func:`structure_found`."""
        return True

    # ---------------------------------------------------------------- the interface
    def update(self, batch: dict[str, torch.Tensor]) -> Mapping[str, float | torch.Tensor]:
        """One optimisation step on ``batch``; returns losses (must include ``loss``: a float, or
        a 0-d tensor the trainer sums on the device without waiting for it)."""
        raise NotImplementedError

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, num_classes) for images ``x``."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.predict(x)


def structure_found(find: Callable[[nn.Module], object], model: nn.Module) -> bool:
    """False when ``find(model)`` refuses the model with a TrainError (e.g. no stem block, no
    Conv2d followed by BatchNorm2d); for :meth:`Algorithm.supports`."""
    try:
        find(model)
    except TrainError:
        return False
    return True


class _Together:
    """Several optimisers as one for ``GradScaler.unscale_``/``step``: the union of their
    parameters (each once) and a ``step`` that steps each in order."""

    def __init__(self, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        self.optimizers = list(optimizers)
        seen: set[int] = set()
        params: list[torch.Tensor] = []
        for opt in self.optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    if id(p) not in seen:
                        seen.add(id(p))
                        params.append(p)
        self.param_groups = [{"params": params}]

    def step(self) -> bool:
        for opt in self.optimizers:
            opt.step()
        return True


def optimizers_of(module: nn.Module) -> list[torch.optim.Optimizer]:
    """The optimisers held as attributes of ``module`` (``optimizer``, ``opt_f``, ...)."""
    return [v for v in vars(module).values() if isinstance(v, torch.optim.Optimizer)]


def _compatible(value: Any, default: Any) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, type(default))
