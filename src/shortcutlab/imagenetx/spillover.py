"""Augmentation spill-over (paper section 3.3.2, figure 6): how the error ratio of each factor
changes with the strength of an augmentation, by two procedures.

* ``cubic`` (default, the authors' procedure): fit a cubic polynomial of error ratio in
  augmentation strength over all models (of degree one less than the number of strengths when
  there are fewer than four), find the strengths where the fit is lowest and
  highest, and compare the models trained at those two strengths with Welch's t-test. Only
  strengths with more than 4 models are used, as the authors do.
* ``welch`` (shortcutlab's): Welch's t-test of the models of the strongest third of the
  strengths against those of the weakest third.

Both report ``change`` = mean error ratio at the stronger − at the weaker strength, so a
negative change means the augmentation makes the factor's share of the mistakes smaller.
:data:`PAPER_CLAIMS` lists the ten statements of the paper's text; :func:`claim_verdicts`
checks them under either procedure.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

import numpy as np
import pandas as pd
from scipy import stats

from shortcutlab.errors import ImagenetXError, unknown_choice

Method = Literal["cubic", "welch"]
METHODS: tuple[Method, ...] = get_args(Method)
#: Result group → the model-name parameter holding its strength.
PARAMETERS: dict[str, str] = {"crop": "crop", "colorjitter": "color", "gaussian_blur": "smoothing"}
MIN_MODELS = 5  # the authors keep strengths with more than 4 models
#: The paper's text claims of section 3.3.2: (group, factor, direction of the error ratio as the
#: augmentation gets stronger).
PAPER_CLAIMS: tuple[tuple[str, str, str], ...] = (
    ("crop", "pose", "lower"),
    ("crop", "partial_view", "lower"),
    ("crop", "pattern", "lower"),
    ("crop", "subcategory", "higher"),
    ("colorjitter", "color", "lower"),
    ("colorjitter", "brighter", "lower"),
    ("colorjitter", "pose", "higher"),
    ("gaussian_blur", "texture", "lower"),
    ("gaussian_blur", "subcategory", "lower"),
    ("gaussian_blur", "pose", "higher"),
)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ImagenetXError(unknown_choice("spill-over method", method, METHODS))


def augmentation_strength(models: pd.Index | list[str], group: str) -> pd.Series:
    """Strength of each model's augmentation, read from its name: ``100 − crop`` for crop (the
    crop parameter is the smallest crop area in %), ``color`` / ``smoothing`` otherwise."""
    if group not in PARAMETERS:
        raise ImagenetXError(unknown_choice("augmentation group", group, tuple(PARAMETERS)))
    name = PARAMETERS[group]
    pattern = re.compile(rf"{name}([+-]?\d*\.?\d+(?:e-?\d+)?)")
    values = {}
    for model in models:
        match = pattern.search(str(model))
        values[model] = float(match.group(1)) if match else np.nan
    strength = pd.Series(values, dtype=float)
    return 100.0 - strength if group == "crop" else strength


def _welch(low: np.ndarray, high: np.ndarray) -> tuple[float, float]:
    result = stats.ttest_ind(high, low, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def spillover(
    ratios: pd.DataFrame, strength: pd.Series, method: Method = "cubic", alpha: float = 0.05
) -> pd.DataFrame:
    """Per factor: the two strengths compared (``weak``, ``strong``), the models at each,
    ``change`` (mean at strong − mean at weak), Welch's ``statistic`` and ``pvalue``,
    ``significant`` and ``direction`` (lower/higher).

    ``ratios`` is models × factors error ratios; ``strength`` maps models to strengths (NaN:
    left out).
    """
    _check_method(method)
    strength = strength.reindex(ratios.index)
    keep = strength.notna()
    ratios, strength = ratios[keep], strength[keep]
    sizes = strength.value_counts()
    used = sizes.index[sizes >= MIN_MODELS]
    if len(used) < 2:
        raise ImagenetXError(
            f"need at least two augmentation strengths with {MIN_MODELS}+ models each; found "
            f"{dict(sizes.sort_index())}"
        )
    ratios, strength = ratios[strength.isin(used)], strength[strength.isin(used)]
    levels = np.sort(used.to_numpy(dtype=float))
    rows = []
    for factor in ratios.columns:
        y = ratios[factor].to_numpy(dtype=float)
        x = strength.to_numpy(dtype=float)
        finite = np.isfinite(y)
        x, y = x[finite], y[finite]
        present = levels[np.isin(levels, x)]
        if method == "cubic":
            # A cubic in the scaled strength (numpy's Polynomial.fit: polyfit on raw strengths
            # is ill-conditioned); with fewer than four strengths the degree drops to fit their
            # means exactly, which is what the under-determined cubic's least-squares fit does.
            degree = min(3, len(present) - 1)
            fitted = np.polynomial.Polynomial.fit(x, y, deg=degree)(present)
            ends = sorted((present[int(np.argmin(fitted))], present[int(np.argmax(fitted))]))
        else:
            third = max(1, len(present) // 3)
            ends = [present[:third], present[-third:]]
        weak_set, strong_set = (np.atleast_1d(e) for e in ends)
        low, high = y[np.isin(x, weak_set)], y[np.isin(x, strong_set)]
        if len(low) < 2 or len(high) < 2 or np.array_equal(weak_set, strong_set):
            statistic, pvalue = np.nan, np.nan
        else:
            statistic, pvalue = _welch(low, high)
        change = float(high.mean() - low.mean()) if len(low) and len(high) else np.nan
        rows.append({
            "factor": factor,
            "weak": ", ".join(f"{v:g}" for v in weak_set),
            "strong": ", ".join(f"{v:g}" for v in strong_set),
            "n_weak": len(low), "n_strong": len(high),
            "change": change, "statistic": statistic, "pvalue": pvalue,
        })
    frame = pd.DataFrame(rows).set_index("factor")
    frame["significant"] = frame["pvalue"] <= alpha
    frame["direction"] = np.where(frame["change"] < 0, "lower", "higher")
    frame.attrs["method"] = method
    return frame


def group_spillover(
    tables: pd.DataFrame, group: str, method: Method = "cubic", alpha: float = 0.05
) -> pd.DataFrame:
    """:func:`spillover` of one augmentation group of the authors' result tables (from
    :func:`~shortcutlab.imagenetx.analyses.read_result_tables`)."""
    from shortcutlab.imagenetx.evaluate import error_ratio

    part = tables[tables["group"] == group]  # rows without a strength (human) are left out
    if part.empty:
        raise ImagenetXError(f"no models of the augmentation group {group!r} in the tables")
    return spillover(error_ratio(part), augmentation_strength(part.index, group), method, alpha)


def claim_verdicts(tables: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """The paper's ten spill-over claims with each procedure's change, p-value and verdict
    (``reproduced``: significant and in the stated direction)."""
    results = {
        (group, method): group_spillover(tables, group, method, alpha)
        for group in PARAMETERS for method in METHODS
    }
    rows = []
    for group, factor, direction in PAPER_CLAIMS:
        row: dict[str, object] = {"augmentation": group, "factor": factor, "paper": direction}
        for method in METHODS:
            res = results[group, method].loc[factor]
            row[f"change_{method}"] = res["change"]
            row[f"pvalue_{method}"] = res["pvalue"]
            row[f"reproduced_{method}"] = bool(res["significant"] and res["direction"] == direction)
        rows.append(row)
    return pd.DataFrame(rows)


