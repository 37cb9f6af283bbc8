"""Models that come with their own training method (torch-free, so tables can be labelled
without loading the networks)."""

from __future__ import annotations

#: model name -> the algorithm it must be trained with (the paper's ASR and VAE baselines).
MODEL_ALGORITHMS: dict[str, str] = {"asr_rn18": "asr", "vae": "vae", "factor_vae": "factor_vae"}


def implied_algorithm(model: str) -> str | None:
    """The algorithm a registered model must be trained with (None: any algorithm)."""
    return MODEL_ALGORITHMS.get(model)
