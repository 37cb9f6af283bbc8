"""The facts of the DiagViB-6 baselines' models that reading a run folder needs, torch-free.

Declared in the ``shortcutlab.model_info`` entry-point group (pyproject.toml, see
:mod:`shortcutlab.train.model_info`): each model is trained by its own algorithm (as
:mod:`shortcutlab.diagvib.baselines` registers it), so a job table names ``vae`` jobs ``vae``,
not ``vae+vae``, without importing the networks.
"""

from __future__ import annotations

from shortcutlab.train.model_info import ModelInfo

ASR_RN18 = ModelInfo(algorithm="asr")
VAE = ModelInfo(algorithm="vae")
FACTOR_VAE = ModelInfo(algorithm="factor_vae")
