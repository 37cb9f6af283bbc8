"""Everything at once: read the tables, join, and compute the factor analysis a report shows.

    from shortcutlab.factor_analysis import analyse_factors
    report = analyse_factors("annotations.csv", "predictions.csv")
    print(report.worst)          # the factors the mistakes concentrate on
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd

from shortcutlab.errors import FactorAnalysisError, unknown_choice
from shortcutlab.factor_analysis.analysis import (
    FactorResult,
    calibration_by_factor,
    factor_error_tests,
    factor_result,
    worst_factors,
    worst_factors_by_class,
    worst_group_accuracy,
)
from shortcutlab.factor_analysis.table import (
    FactorTable,
    Joined,
    annotation_table,
    join_predictions,
)
from shortcutlab.factor_analysis.timm import from_timm, resolve_format
from shortcutlab.utils.io import read_csv_file

__all__ = ["FORMATS", "FactorReport", "analyse_factors", "read_table"]

#: Table formats read by :func:`read_table`, by file suffix.
FORMATS = (".csv", ".parquet", ".jsonl")

TableSource: TypeAlias = pd.DataFrame | str | os.PathLike[str]


def read_table(source: TableSource, what: str = "table") -> pd.DataFrame:
    """A DataFrame as given, or a CSV, Parquet or JSON-lines file."""
    if isinstance(source, pd.DataFrame):
        return source
    path = Path(source)
    if not path.is_file():
        raise FactorAnalysisError(f"{what} file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return read_csv_file(path, what, FactorAnalysisError)
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(path, lines=True)
    except (ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FactorAnalysisError(f"{what} {path}: not a readable {suffix} table ({reason})"
                                  ) from None
    raise FactorAnalysisError(unknown_choice(f"{what} format", suffix or path.name, FORMATS))


@dataclass(frozen=True)
class FactorReport:
    """The analysis of one annotation table and its predictions, built once."""

    result: FactorResult
    coverage: pd.DataFrame
    worst: pd.DataFrame
    by_class: pd.DataFrame
    tests: pd.DataFrame
    worst_group: dict[str, Any]
    calibration: pd.DataFrame | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: coverage, per-factor numbers, worst factors (overall and per class),
        tests, worst-group accuracy and calibration per model."""
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")

        wg = {k: v for k, v in self.worst_group.items() if k != "groups"}
        return {
            "coverage": records(self.coverage.reset_index()),
            "factors": records(self.result.long()),
            "worst_factors": records(self.worst),
            "worst_factors_by_class": records(self.by_class),
            "tests": records(self.tests),
            "worst_group": wg,
            "calibration": None if self.calibration is None
            else records(self.calibration.reset_index()),
        }


def _worst_group(table: FactorTable, joined: Joined, group_cols: Sequence[str] | None,
                 min_count: int) -> dict[str, Any]:
    if group_cols is not None:
        return worst_group_accuracy(table, joined, group_cols, min_count=min_count)
    per_column = []
    for column in table.values.columns:
        try:
            per_column.append(worst_group_accuracy(table, joined, [column], min_count=min_count))
        except FactorAnalysisError:
            continue  # every group of this column below min_count
    if not per_column:
        raise FactorAnalysisError(
            f"no factor column has label groups of {min_count}+ items; lower min_count")
    out: dict[str, Any] = {"min_count": min_count}
    for model in joined.models:
        out[model] = min((wg[model] for wg in per_column), key=lambda r: r["acc_wg"])
    out["groups"] = pd.concat([wg["groups"] for wg in per_column], ignore_index=True)
    return out


def analyse_factors(
    annotations: TableSource,
    predictions: TableSource,
    *,
    id_col: str = "id",
    label_col: str = "label",
    pred_col: str = "prediction",
    prob_col: str | None = None,
    model_col: str | None = None,
    factor_cols: Sequence[str] | None = None,
    min_coverage: float = 1.0,
    n_boot: int = 1000,
    seed: int = 0,
    k: int = 5,
    min_count: int = 30,
    group_cols: Sequence[str] | None = None,
    predictions_format: str = "auto",
) -> FactorReport:
    """Read and check both tables, join them on ``id_col`` and compute per-factor accuracy and
    error ratio (bootstrap intervals with ``n_boot`` ≥ 2), the ``k`` worst factors overall and
    per class (factors with ``min_count``+ items), χ² tests, worst-group accuracy and, with
    ``prob_col``, calibration per factor.

    Worst-group accuracy: over label × ``group_cols`` combinations when given; by default over
    label × each factor column in turn, the lowest (the column that splits the classes into
    their worst subgroup). Groups with fewer than ``min_count`` items are excluded (listed).

    ``predictions_format``: ``table`` (the columns named above), ``timm`` (what timm's
    ``inference.py`` writes: ``filename``, ``index``/``label``, ``prob``; see
    :mod:`~shortcutlab.factor_analysis.timm`) or ``auto`` (timm's when the table looks like it).
    """
    table = annotation_table(read_table(annotations, "annotations"), id_col, label_col,
                             factor_cols)
    frame = read_table(predictions, "predictions")
    if resolve_format(predictions_format, frame, id_col, pred_col) == "timm":
        if model_col is not None:
            raise FactorAnalysisError(
                "a timm inference CSV holds one model: leave out model_col / --model-col")
        prob_col = prob_col or "probability"
        frame = from_timm(frame, table.ids, table.label_set, id_col=id_col, pred_col=pred_col,
                          prob_col=prob_col)
        if prob_col not in frame.columns:
            prob_col = None
    joined = join_predictions(table, frame, id_col, pred_col, prob_col, model_col,
                              min_coverage)
    result = factor_result(table, joined, n_boot=n_boot, seed=seed)
    return FactorReport(
        result=result,
        coverage=joined.coverage,
        worst=worst_factors(result, k, min_count),
        by_class=worst_factors_by_class(table, joined, k=k, min_count=min_count),
        tests=factor_error_tests(result),
        worst_group=_worst_group(table, joined, group_cols, min_count),
        calibration=None if joined.probabilities is None
        else calibration_by_factor(table, joined),
    )
