"""Significance tests of the ImageNet-X paper, as pure functions on tables.

* Alexander-Govern test per factor across groups of models (figure 1b: which factors' error
  ratios differ between supervised, self-supervised, ... models; unequal variances allowed).
* Welch's t-test per factor between two augmentation strengths (figure 6).
* Spearman correlations between factors and meta-labels over images (appendix A.4).
* χ² test of the training against the validation factor distribution (section 2.1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from shortcutlab.errors import ImagenetXError
from shortcutlab.factor_analysis import significance
from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS, Annotations
from shortcutlab.imagenetx.evaluate import engine_errors

_HYPER = re.compile(r"^([a-z]+)(-?\d+(?:\.\d+)?(?:e-?\d+)?)$", re.IGNORECASE)


def alexander_govern_by_factor(
    table: pd.DataFrame, groups: Mapping[str, str] | pd.Series, alpha: float = 0.05
) -> pd.DataFrame:
    """Alexander-Govern test of equal group means, one per factor column of ``table`` (the
    engine's :func:`~shortcutlab.factor_analysis.alexander_govern_by_factor`).

    ``table`` is models × factors (e.g. error ratios); ``groups`` maps each model to its group.
    Returns factors × (statistic, pvalue, significant, mean_<group>...). Models with a NaN value
    for a factor are left out of that factor's test.
    """
    with engine_errors():
        return significance.alexander_govern_by_factor(table, groups, alpha)


def welch_by_factor(
    table_a: pd.DataFrame, table_b: pd.DataFrame, alpha: float = 0.05
) -> pd.DataFrame:
    """Welch's unequal-variance t-test per factor between two sets of models (the engine's).

    Returns factors × (mean_a, mean_b, difference b − a, statistic, pvalue, significant).
    """
    with engine_errors():
        return significance.welch_by_factor(table_a, table_b, alpha)


def parse_hyperparameters(model: str) -> dict[str, float]:
    """Numbers encoded in a model name: ``eval_resnet50_crop8.0_wd1e-05`` → crop 8.0, wd 1e-05."""
    out: dict[str, float] = {}
    for token in model.split("_"):
        match = _HYPER.match(token)
        if match and not match.group(1).lower().startswith("id"):
            out[match.group(1).lower()] = float(match.group(2))
    return out


def augmentation_strength_effects(
    table: pd.DataFrame, parameter: str, baseline: float, alpha: float = 0.05
) -> pd.DataFrame:
    """Welch's t-test per factor of every strength of ``parameter`` against ``baseline``.

    The strength is read from the model names (see :func:`parse_hyperparameters`), as in the
    authors' result tables (``crop``, ``color``, ``smoothing``). Returns rows
    (strength, factor) with the Welch statistics.
    """
    strength = pd.Series(
        {m: parse_hyperparameters(str(m)).get(parameter.lower(), np.nan) for m in table.index}
    )
    if strength.isna().all():
        raise ImagenetXError(
            f"no model name encodes parameter {parameter!r} (e.g. '..._{parameter}8.0_...')"
        )
    levels = sorted(strength.dropna().unique())
    if baseline not in levels:
        raise ImagenetXError(
            f"baseline {parameter}={baseline} not among the strengths found: {levels}"
        )
    base = table.loc[strength.index[strength == baseline]]
    parts = []
    for level in levels:
        if level == baseline:
            continue
        other = table.loc[strength.index[strength == level]]
        if len(other) < 2:
            continue
        result = welch_by_factor(base, other, alpha)
        result.insert(0, "strength", level)
        parts.append(result.reset_index())
    if not parts:
        raise ImagenetXError(f"no strength of {parameter!r} besides the baseline has 2+ models")
    return pd.concat(parts, ignore_index=True).set_index(["strength", "factor"])


def spearman_factors_meta_labels(annotations: Annotations) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spearman correlation and p-value matrices over images between factors and meta-labels.

    Both are (16 factors + 17 meta-labels) square tables; constant columns give NaN.
    """
    onehot = np.eye(len(META_LABELS), dtype=np.int8)[annotations.meta_label]
    data = np.concatenate([annotations.factors.astype(np.int8), onehot], axis=1)
    return significance.spearman_matrix(data, list(FACTORS) + list(META_LABELS))


def chi2_train_vs_val(train: Annotations, val: Annotations) -> dict[str, object]:
    """χ² test of homogeneity of the factor counts in the training and validation subsets.

    Factors with no image in either subset are dropped (they carry no information).
    """
    counts = pd.DataFrame(
        {"train": train.factors.sum(axis=0), "val": val.factors.sum(axis=0)}, index=list(FACTORS)
    )
    with engine_errors():
        return significance.chi2_homogeneity(counts)
