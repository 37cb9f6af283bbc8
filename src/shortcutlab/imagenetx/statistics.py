"""Significance tests of the ImageNet-X paper, as pure functions on tables.

* Alexander-Govern test per factor across groups of models (figure 1b: which factors' error
  ratios differ between supervised, self-supervised, ... models; unequal variances allowed).
* Welch's t-test per factor between two augmentation strengths (figure 6).
* Spearman correlations between factors and meta-labels over images (appendix A.4).
* χ² test of the training against the validation factor distribution (section 2.1).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS, Annotations

_HYPER = re.compile(r"^([a-z]+)(-?\d+(?:\.\d+)?(?:e-?\d+)?)$", re.IGNORECASE)


def _as_groups(models: Sequence[str], groups: Mapping[str, str] | pd.Series) -> pd.Series:
    series = pd.Series(groups, dtype=object)
    missing = [m for m in models if m not in series.index]
    if missing:
        raise ImagenetXError(
            f"no group given for models {', '.join(map(str, missing[:5]))}"
            f"{' ...' if len(missing) > 5 else ''}; every model of the table needs a group"
        )
    return series.loc[list(models)]


def alexander_govern_by_factor(
    table: pd.DataFrame, groups: Mapping[str, str] | pd.Series, alpha: float = 0.05
) -> pd.DataFrame:
    """Alexander-Govern test of equal group means, one per factor column of ``table``.

    ``table`` is models × factors (e.g. error ratios); ``groups`` maps each model to its group.
    Returns factors × (statistic, pvalue, significant, mean_<group>...). Models with a NaN value
    for a factor are left out of that factor's test.
    """
    group_of = _as_groups(list(table.index), groups)
    names = sorted(group_of.unique())
    if len(names) < 2:
        raise ImagenetXError(f"need at least 2 model groups, got {names}")
    rows = []
    for factor in table.columns:
        samples = []
        for name in names:
            values = table.loc[group_of.index[group_of == name], factor].to_numpy(dtype=float)
            samples.append(values[np.isfinite(values)])
        small = [n for n, s in zip(names, samples, strict=True) if len(s) < 2]
        if small:
            raise ImagenetXError(
                f"factor {factor!r}: groups {small} have fewer than 2 models with a value; "
                "the Alexander-Govern test needs at least 2 per group"
            )
        result = stats.alexandergovern(*samples)
        row = {"factor": factor, "statistic": result.statistic, "pvalue": result.pvalue}
        row.update({f"mean_{n}": float(np.mean(s)) for n, s in zip(names, samples, strict=True)})
        rows.append(row)
    frame = pd.DataFrame(rows).set_index("factor")
    frame.insert(2, "significant", frame["pvalue"] <= alpha)
    return frame


def welch_by_factor(
    table_a: pd.DataFrame, table_b: pd.DataFrame, alpha: float = 0.05
) -> pd.DataFrame:
    """Welch's unequal-variance t-test per factor between two sets of models.

    Returns factors × (mean_a, mean_b, difference b − a, statistic, pvalue, significant).
    """
    common = [c for c in table_a.columns if c in table_b.columns]
    if not common:
        raise ImagenetXError("the two tables share no factor column")
    rows = []
    for factor in common:
        a = table_a[factor].to_numpy(dtype=float)
        b = table_b[factor].to_numpy(dtype=float)
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if len(a) < 2 or len(b) < 2:
            raise ImagenetXError(
                f"factor {factor!r}: Welch's t-test needs at least 2 models per side, got "
                f"{len(a)} and {len(b)}"
            )
        result = stats.ttest_ind(b, a, equal_var=False)
        rows.append(
            {
                "factor": factor,
                "mean_a": a.mean(),
                "mean_b": b.mean(),
                "difference": b.mean() - a.mean(),
                "statistic": float(result.statistic),
                "pvalue": float(result.pvalue),
            }
        )
    frame = pd.DataFrame(rows).set_index("factor")
    frame["significant"] = frame["pvalue"] <= alpha
    return frame


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
    names = list(FACTORS) + list(META_LABELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant columns
        result = stats.spearmanr(data)
    corr = np.atleast_2d(result.statistic)
    pval = np.atleast_2d(result.pvalue)
    return (
        pd.DataFrame(corr, index=names, columns=names),
        pd.DataFrame(pval, index=names, columns=names),
    )


def chi2_train_vs_val(train: Annotations, val: Annotations) -> dict[str, object]:
    """χ² test of homogeneity of the factor counts in the training and validation subsets.

    Factors with no image in either subset are dropped (they carry no information).
    """
    counts = pd.DataFrame(
        {"train": train.factors.sum(axis=0), "val": val.factors.sum(axis=0)}, index=list(FACTORS)
    )
    used = counts[(counts > 0).any(axis=1)]
    if len(used) < 2:
        raise ImagenetXError("need at least two factors with images for a χ² test")
    result = stats.chi2_contingency(used.T.to_numpy())
    return {
        "statistic": float(result.statistic),
        "pvalue": float(result.pvalue),
        "dof": int(result.dof),
        "counts": counts,
        "cramers_v": float(np.sqrt(result.statistic / used.to_numpy().sum())),
    }
