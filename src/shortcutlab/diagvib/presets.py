"""DiagViB-6's training presets and its rule for the classifier head.

``paper`` follows the authors' ResNet-18 config (trainer/resnet18config.yml,
trainer/base_trainer.py): Adam lr 2e-4, betas (0.9, 0.999), mini-batches of 64 with the last
incomplete one dropped, 30 epochs without early stopping, the checkpoint of lowest validation
loss, inputs z-scored with the training split's statistics for every model (RN50-IN included)
and a frozen backbone's BatchNorm left in training mode (their ``fixed=True`` only stops
gradients). ``demo`` keeps the fast CPU settings of ``make demo`` (``normalization="auto"``;
``channels_last``: the small CNN's training step takes about 25 % less CPU time in NHWC).
docs/diagvib-fidelity.md lists these choices. Both are registered on import of this module,
which the ``shortcutlab.presets`` entry points (pyproject.toml) do on the first preset lookup.

The head (one output per class of the predicted factor, or the experiment's 3 selected
classes) is a DiagViB-6 job parameter, not a training field: :func:`default_head` gives it per
preset (:data:`PRESET_HEADS`; any other preset: ``full``, the paper's choice).
"""

from __future__ import annotations

from typing import Literal, get_args

from shortcutlab.train.presets import register_preset

#: ``full``: one output per class of the predicted factor (the authors' networks; labels are the
#: factor's class indices); ``selected``: 3 outputs, the experiment's selected classes.
Head = Literal["selected", "full"]
HEADS: tuple[Head, ...] = get_args(Head)

PAPER = register_preset("paper", {
    "lr": 2e-4,
    "adam_betas": (0.9, 0.999),
    "batch_size": 64,
    "epochs": 30,
    "patience": None,
    "weight_decay": 0.0,
    "drop_last": True,
    "normalization": "train",
    "frozen_batchnorm": "train",
}, "DiagViB-6: the authors' ResNet-18 recipe (Adam 2e-4, batch 64, 30 epochs)")

DEMO = register_preset("demo", {
    "lr": 3e-3,
    "adam_betas": (0.9, 0.999),
    "batch_size": 32,
    "epochs": 10,
    "patience": 4,
    "weight_decay": 0.0,
    "drop_last": False,
    "normalization": "auto",
    "frozen_batchnorm": "eval",
    "channels_last": True,
}, "DiagViB-6: fast CPU settings of the demo (Adam 3e-3, batch 32, 10 epochs, patience 4, "
   "channels_last)")

#: The preset DiagViB-6 jobs start from when none is given (``diagvib run``, ``build_jobs``).
DIAGVIB_PRESET = "paper"
#: The head a DiagViB-6 job uses under a preset when ``--head`` is not given.
PRESET_HEADS: dict[str, Head] = {"paper": "full", "demo": "selected"}


def default_head(preset: str) -> Head:
    """The head of a DiagViB-6 job trained with ``preset`` (``full`` unless listed)."""
    return PRESET_HEADS.get(preset, "full")
