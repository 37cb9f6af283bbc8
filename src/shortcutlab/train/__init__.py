"""Models, algorithms, training presets and the trainer, for any labelled image dataset (an
engine: the areas add their papers' recipes as presets, e.g. DiagViB-6's appendix A.2 as ``paper``).

Public names load on first use, so ``shortcutlab.train.config`` (and the runner, which carries a
:class:`TrainConfig` per job) does not import torch. Extend with :func:`register_model` /
:func:`register_algorithm` / :func:`register_preset` or the ``shortcutlab.models`` /
``shortcutlab.algorithms`` / ``shortcutlab.presets`` entry-point groups.
"""

from __future__ import annotations

from shortcutlab.utils.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "TrainConfig": "config",
    "Preset": "presets", "get_preset": "presets", "list_presets": "presets",
    "register_preset": "presets",
    "create_model": "models", "list_models": "models", "register_model": "models",
    "Algorithm": "algorithms.base", "AlgorithmContext": "algorithms.base",
    "create_algorithm": "algorithms", "list_algorithms": "algorithms",
    "register_algorithm": "algorithms",
    "TrainResult": "trainer", "train": "trainer",
    "Restylable": "capabilities", "ItemRestyler": "capabilities",  # dataset capabilities
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
