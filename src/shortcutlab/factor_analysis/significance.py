"""The significance tests of ImageNet-X's analyses, for any models × factors table.

* Alexander-Govern test per factor across groups of models (do the groups' mean error ratios
  differ? unequal variances allowed).
* Welch's t-test per factor between two sets of models.
* Spearman correlations between 0/1 item indicators.
* χ² test of homogeneity of two sets of factor counts.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from shortcutlab.errors import FactorAnalysisError

__all__ = ["alexander_govern_by_factor", "chi2_homogeneity", "spearman_matrix",
           "welch_by_factor"]


def _as_groups(models: Sequence[str], groups: Mapping[str, str] | pd.Series) -> pd.Series:
    series = pd.Series(groups, dtype=object)
    repeated = series.index[series.index.duplicated()].unique()
    if len(repeated):
        raise FactorAnalysisError(
            f"models in more than one group: {', '.join(map(str, repeated[:5]))}"
            f"{' ...' if len(repeated) > 5 else ''}; give each model one group"
        )
    missing = [m for m in models if m not in series.index or pd.isna(series[m])]
    if missing:
        raise FactorAnalysisError(
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
        raise FactorAnalysisError(f"need at least 2 model groups, got {names}")
    rows = []
    for factor in table.columns:
        samples = []
        for name in names:
            values = table.loc[group_of.index[group_of == name], factor].to_numpy(dtype=float)
            samples.append(values[np.isfinite(values)])
        small = [n for n, s in zip(names, samples, strict=True) if len(s) < 2]
        if small:
            raise FactorAnalysisError(
                f"factor {factor!r}: groups {small} have fewer than 2 models with a value; "
                "the Alexander-Govern test needs at least 2 per group"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a group of equal values: NaN
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
        raise FactorAnalysisError("the two tables share no factor column")
    rows = []
    for factor in common:
        a = table_a[factor].to_numpy(dtype=float)
        b = table_b[factor].to_numpy(dtype=float)
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if len(a) < 2 or len(b) < 2:
            raise FactorAnalysisError(
                f"factor {factor!r}: Welch's t-test needs at least 2 models per side, got "
                f"{len(a)} and {len(b)}"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a side of equal values
            result = stats.ttest_ind(b, a, equal_var=False)
        rows.append({
            "factor": factor, "mean_a": a.mean(), "mean_b": b.mean(),
            "difference": b.mean() - a.mean(), "statistic": float(result.statistic),
            "pvalue": float(result.pvalue),
        })
    frame = pd.DataFrame(rows).set_index("factor")
    frame["significant"] = frame["pvalue"] <= alpha
    return frame


def spearman_matrix(indicators: np.ndarray, names: Sequence[str]
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spearman correlation and p-value matrices between the columns of an items × columns
    0/1 matrix (constant columns give NaN)."""
    if indicators.shape[1] != len(names):
        raise FactorAnalysisError(
            f"{indicators.shape[1]} indicator columns but {len(names)} names")
    k = indicators.shape[1]
    if k < 2:
        raise FactorAnalysisError(f"Spearman correlations need at least 2 columns, got {k}")
    data = indicators.astype(np.int8)
    if k == 2:  # scipy gives two columns one coefficient: add a third, keep the 2 × 2 block
        data = np.column_stack([data, data[:, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant columns
        result = stats.spearmanr(data)
    corr = np.asarray(result.statistic)[:k, :k]
    pval = np.asarray(result.pvalue)[:k, :k]
    return (pd.DataFrame(corr, index=list(names), columns=list(names)),
            pd.DataFrame(pval, index=list(names), columns=list(names)))


def chi2_homogeneity(counts: pd.DataFrame) -> dict[str, object]:
    """χ² test of homogeneity of factor counts (factors × two or more sets of items), with
    Cramér's V (from the χ² without Yates' correction, as scipy's ``association``). Factors
    with no item in any set are dropped (they carry no information)."""
    values = counts.to_numpy(dtype=float)
    if not (np.isfinite(values).all() and (values >= 0).all() and (values % 1 == 0).all()):
        raise FactorAnalysisError("χ² test: the counts must be whole numbers >= 0")
    used = counts[(counts > 0).any(axis=1)]
    if len(used) < 2:
        raise FactorAnalysisError("need at least two factors with items for a χ² test")
    observed = used.T.to_numpy(dtype=np.int64)
    result = stats.chi2_contingency(observed)
    return {
        "statistic": float(result.statistic),
        "pvalue": float(result.pvalue),
        "dof": int(result.dof),
        "counts": counts,
        "cramers_v": float(stats.contingency.association(observed, method="cramer")),
    }
