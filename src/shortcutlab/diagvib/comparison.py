"""The BiasBed comparison applied to DiagViB-6: models compared over the factor pairs of a study.

Each (predicted, correlated) factor pair of a study is one block; a model's score on a block is
its test metric averaged over dataset samples and training seeds (mean ± std over those runs is
kept). Friedman / Iman-Davenport say whether the models differ at all; Nemenyi and the CD
diagram say which pairs do.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from shortcutlab.errors import StatsError, unknown_choice
from shortcutlab.stats.compare import ComparisonResult, compare
from shortcutlab.stats.tables import parse_long
from shortcutlab.utils.html import HtmlReport

REQUIRED = ("model", "study", "predicted", "correlated", "sample", "seed")


def reported(table: pd.DataFrame) -> pd.DataFrame:
    """A collected job table (one with the metrics' :data:`REQUIRED_COLUMNS`) after
    :func:`~shortcutlab.diagvib.metrics.validate_table`'s refusals (a duplicated job id, one
    model's jobs of two configurations or recipes), its ``model`` the name the metrics report
    it under (``model+algorithm``, ``model@scale=...``, ``model@bf16``): a model run at two
    scales is two competitors, never one. Any other table is returned as given."""
    from shortcutlab.diagvib.metrics import REQUIRED_COLUMNS, validate_table

    if not all(c in table.columns for c in REQUIRED_COLUMNS):
        return table
    named = validate_table(table).drop(columns=["model", "algorithm"], errors="ignore")
    return named.rename(columns={"label": "model"})


def _identity(df: pd.DataFrame, by: str | Sequence[str]) -> pd.Series:
    """Name of the compared entity: the model, joined with the algorithm when that varies."""
    if by == "auto":
        cols = ["model"]
        if "algorithm" in df.columns and df["algorithm"].astype(str).nunique() > 1:
            cols.append("algorithm")
    else:
        cols = [by] if isinstance(by, str) else list(by)
    for c in cols:
        if c not in df.columns:
            raise StatsError(unknown_choice("column to compare by", c, list(df.columns)))
    return df[cols].astype(str).agg("/".join, axis=1)


def study_runs(
    table: pd.DataFrame,
    study: str,
    metric: str = "test_acc",
    by: str | Sequence[str] = "auto",
    complete_only: bool = False,
) -> tuple[pd.DataFrame, list[str]]:
    """Long run table (block = factor pair, algorithm = model, run = sample/seed, score) of a study.

    Only jobs with status ``done`` (when the column exists) and a finite metric are used.
    With ``complete_only`` factor pairs that some model lacks are dropped and listed in the
    second return value; otherwise they surface as a ragged-table StatsError.
    """
    missing = [c for c in (*REQUIRED, metric) if c not in table.columns]
    if missing:
        raise StatsError(
            f"job table lacks column(s) {', '.join(missing)}; needs {', '.join(REQUIRED)} and "
            f"the metric column {metric!r}"
        )
    studies = sorted(table["study"].astype(str).unique())
    if study not in studies:
        raise StatsError(unknown_choice("study", study, studies))
    df = table[table["study"].astype(str) == study]
    if "status" in df.columns:
        df = df[df["status"].astype(str) == "done"]
    df = df[pd.to_numeric(df[metric], errors="coerce").notna()]
    if df.empty:
        raise StatsError(f"study {study!r} has no finished jobs with a {metric!r} value")
    correlated = df["correlated"].fillna("").astype(str)
    predicted = df["predicted"].astype(str)
    block = predicted.where(correlated == "", predicted + "-" + correlated)
    runs = pd.DataFrame(
        {
            "block": block.to_numpy(),
            "algorithm": _identity(df, by).to_numpy(),
            "run": (df["sample"].astype(str) + "/" + df["seed"].astype(str)).to_numpy(),
            "score": pd.to_numeric(df[metric]).to_numpy(dtype=float),
        }
    )
    dropped: list[str] = []
    if complete_only:
        n_models = runs["algorithm"].nunique()
        per_block = runs.groupby("block")["algorithm"].nunique()
        dropped = sorted(per_block[per_block < n_models].index)
        runs = runs[~runs["block"].isin(dropped)].reset_index(drop=True)
    return runs, dropped


def compare_study(
    table: pd.DataFrame,
    study: str,
    metric: str = "test_acc",
    alpha: float = 0.05,
    by: str | Sequence[str] = "auto",
    complete_only: bool = False,
) -> ComparisonResult:
    """Compare models over the factor pairs of one study (pairs as blocks, mean over runs)
    under the names the metrics report them (:func:`reported`)."""
    runs, _ = study_runs(reported(table), study, metric=metric, by=by,
                         complete_only=complete_only)
    return compare(parse_long(runs), alpha=alpha)


def add_comparison_section(
    report: HtmlReport, table: pd.DataFrame, metric: str = "test_acc", alpha: float = 0.05
) -> None:
    """Add the BiasBed-style statistical comparison of models, one subsection per study.

    Studies with fewer than two models (or two factor pairs) get a plain sentence saying why no
    test was run; factor pairs missing for some model are left out and listed.
    """
    report.heading("Statistical comparison of models (Friedman, Iman-Davenport, Nemenyi)")
    report.paragraph(
        "Each factor pair of a study is one block; a model's score on a block is its "
        f"{metric} averaged over dataset samples and seeds. Models are ranked within each "
        "block (1 = best). The Iman-Davenport F test asks whether any models differ; the "
        f"Nemenyi test (α = {alpha:g}) asks which pairs do: models whose mean ranks differ by "
        "less than the critical difference (CD) are joined by a bar in the diagram."
    )
    if "study" not in table.columns or "model" not in table.columns:
        report.paragraph("The job table has no study/model columns; nothing to compare.")
        return
    table = reported(table)
    for study in sorted(table["study"].astype(str).unique()):
        report.heading(f"Study {study}", level=3)
        try:
            runs, dropped = study_runs(table, study, metric=metric, complete_only=True)
        except StatsError as exc:
            report.paragraph(f"No comparison: {exc}")
            continue
        models = sorted(runs["algorithm"].unique())
        if len(models) < 2:
            names = ", ".join(models) if models else "none"
            report.paragraph(
                f"Only one model ({names}) has results for this study; a statistical "
                "comparison needs at least two."
            )
            continue
        if dropped:
            report.paragraph(
                f"Left out {len(dropped)} factor pair(s) not run for every model: "
                f"{', '.join(dropped)}.",
                note=True,
            )
        try:
            result = compare(parse_long(runs), alpha=alpha)
        except StatsError as exc:
            report.paragraph(f"No comparison: {exc}")
            continue
        verdict = (
            "the models differ significantly"
            if result.significant
            else "no significant difference between the models"
        )
        f_text = f"{result.F:.3f}" if result.F != float("inf") else "∞"
        paired = all("-" in b for b in result.blocks)  # ZSO-like studies: one factor per block
        unit = "factor pairs" if paired else "predicted factors"
        report.paragraph(
            f"{len(result.algorithms)} models over {len(result.blocks)} {unit}: Friedman "
            f"χ² = {result.chi2:.3f} (p = {result.chi2_p_value:.3g}); Iman-Davenport "
            f"F({result.df_num}, {result.df_den}) = {f_text}, p = {result.p_value:.3g} — "
            f"{verdict} at α = {alpha:g}. Critical difference CD = "
            f"{result.critical_difference:.3f}."
        )
        if result.F == float("inf"):
            report.paragraph(
                "Every block ranks the models identically, so F is infinite; with few "
                f"{unit} read the Friedman p-value instead.",
                note=True,
            )
        report.table(result.ranks_frame())
        report.figure(
            result.cd_diagram(),
            caption=f"{study}: critical-difference diagram (mean ranks over {unit}).",
        )
