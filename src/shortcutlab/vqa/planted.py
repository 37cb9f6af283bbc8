"""The planted-shortcut study: VQA-VS built on :func:`synthetic_vqa`, where each OOD set is
its own population, scored with one concept prior per shortcut (a model that has learnt that
shortcut only). Measured: the overlap between the OOD sets and each prior's accuracy per set."""

from __future__ import annotations

from typing import Any

import pandas as pd

from shortcutlab.vqa.baselines import concept_prior
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.evaluate import score_splits
from shortcutlab.vqa.splits import BuildConfig, VQASplits, build_splits
from shortcutlab.vqa.synthetic import CONCEPTS, synthetic_vqa

__all__ = ["planted_study"]


def planted_study(per_population: int = 2560, seed: int = 0) -> dict[str, Any]:
    """Build the splits of the synthetic VQA and score the nine concept priors.

    Returns ``splits`` (:class:`VQASplits`), ``population`` (per OOD test set, the share of its
    questions from each planted population), ``accuracy`` (prior x set, IID and nine OOD sets,
    fractions) and ``scores`` (the :func:`score_splits` rows).
    """
    table = synthetic_vqa(per_population, seed)
    splits: VQASplits = build_splits(table, BuildConfig(seed=seed, concepts=CONCEPTS))
    s = splits.samples
    train, evals = s[s["split"] == "train"], s[s["split"].isin(["val", "test"])]
    scores = {f"{k} prior": score_splits(s, concept_prior(train, evals, k)) for k in SHORTCUTS}
    accuracy = pd.DataFrame(
        {name: {"IID": r["iid"], **r["ood"]} for name, r in scores.items()}
    ).T
    population = table.set_index("question_id")["population"]
    test = s[s["split"] == "test"]
    shares = pd.DataFrame(
        {
            k: population.loc[test.loc[test[f"tail:{k}"], "question_id"]]
            .value_counts(normalize=True)
            .reindex(list(SHORTCUTS), fill_value=0.0)
            for k in SHORTCUTS
        }
    ).T
    return {"splits": splits, "population": shares, "accuracy": accuracy, "scores": scores}
