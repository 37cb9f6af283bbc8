"""The DiagViB-6 paper's three non-standard baselines (appendix A.2): ASR (RN18), VAE and
Factor-VAE, see docs/diagvib-baselines.md.

Importing this package registers them with the engine's public registries: the models
``asr_rn18``, ``vae`` and ``factor_vae`` (each with the algorithm that trains it, read back by
:func:`shortcutlab.train.models.implied_algorithm`) and the algorithms ``asr``, ``vae`` and
``factor_vae``. Nobody needs to import it: pyproject.toml declares it in the
``shortcutlab.models`` and ``shortcutlab.algorithms`` entry-point groups, which the registries load
on their first lookup.
"""

from __future__ import annotations

from shortcutlab.diagvib.baselines import networks
from shortcutlab.diagvib.baselines.asr import ASR
from shortcutlab.diagvib.baselines.vae import VAE, VAE_CLASSIFIER_DEFAULT, FactorVAE
from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.models import register_model

for _algorithm in (ASR, VAE, FactorVAE):
    register_algorithm(_algorithm)
register_model(networks.asr_rn18, algorithm=ASR.name)
register_model(networks.vae, algorithm=VAE.name)
register_model(networks.factor_vae, algorithm=FactorVAE.name)

__all__ = ["ASR", "VAE", "VAE_CLASSIFIER_DEFAULT", "FactorVAE", "networks"]
