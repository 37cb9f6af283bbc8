"""``shortcutlab diagvib metrics``: DiagViB-6 metrics of one or more run directories."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from shortcutlab.cli.options import checkpoint_option, error_bars_option
from shortcutlab.cli.output import json_option, print_json
from shortcutlab.utils.console import PlainConsole, styled

if TYPE_CHECKING:
    import pandas as pd


def _factor_table(title: str, frame: pd.DataFrame, keys: list[str], err: str = "sem",
                  scale: float = 1.0, digits: int = 2, marked: list[bool] | None = None) -> Table:
    """A rich table of :func:`~shortcutlab.diagvib.report.factor_frame`: one row per ``keys``
    tuple, one column per factor, cells "mean ± err"; ``marked`` gets True appended when a
    cell says it lacks samples, correlated factors or (CHGO − ZGO) pair-sample cells."""
    from shortcutlab.diagvib.report import factor_frame, has_incomplete

    cells = factor_frame(frame, keys, err, scale, digits)
    if marked is not None:
        marked.append(has_incomplete(cells))
    table = Table(title=title, title_justify="left")
    for name in cells.index.names:
        table.add_column(name)
    for factor in cells.columns:
        table.add_column(factor, justify="right")
    for key_values, row in cells.iterrows():
        table.add_row(*map(str, key_values), *row)
    return table


def metrics(
    dirs: list[Path] = typer.Argument(
        ..., help="Run directories of `diagvib run` (or jobs.csv/jobs.parquet files); "
        "NAME=DIR reports DIR's models as model@NAME (two recipes of one model side by side)."
    ),
    as_json: bool = json_option(
        "Print one JSON object (P, FAAvg, FAMin, CHGO_over_ZGO per model; fractions)."
    ),
    error_bars: str = error_bars_option(),
    checkpoint: str = checkpoint_option(),
) -> None:
    """Compute DiagViB-6 metrics: P_i (ZSO), P_ij, FAAvg, FAMin and CHGO over ZGO per model.

    Reads <DIR>/jobs.parquet or jobs.csv when present, otherwise collects the run directory.
    Accuracies are averaged over training seeds, then mean ± standard error (or, with
    --error-bars std, standard deviation) over dataset samples; the JSON holds both. Each job's
    accuracy is that of the --checkpoint rule (default: the paper's lowest validation loss).
    """
    from shortcutlab.diagvib.metrics import STUDIES, check_error_bars, compute_metrics
    from shortcutlab.diagvib.report import INCOMPLETE_NOTE, load_job_tables

    err = check_error_bars(error_bars)
    unique: dict[Path, Path] = {}  # resolved -> as first given
    for d in dirs:
        unique.setdefault(d.resolve(), d)
    if len(unique) < len(dirs):  # the same folder twice is one run, not a duplicated job
        again = [str(d) for r, d in unique.items() if [x.resolve() for x in dirs].count(r) > 1]
        typer.echo(f"Warning: {', '.join(again)} given more than once; read once", err=True)
    result = compute_metrics(load_job_tables(list(unique.values()), checkpoint))
    if as_json:
        print_json(result.to_dict())
        return
    console = PlainConsole()
    jobs = result.to_dict()["jobs"]
    for label, counts in jobs.items():
        console.print(styled(label, "bold", ": " + ", ".join(
            f"{n} {s}" for s, n in counts.items()) + " jobs"))
    marked: list[bool] = []
    for study, single in result.singles.groupby("study", sort=False):
        console.print(_factor_table(f"{study} accuracy P_i (mean ± {err} over dataset samples)",
                                    single.drop(columns="study"), ["label"], err=err,
                                    marked=marked))
    rank = {s: i for i, s in enumerate(STUDIES)}
    agg = result.aggregates.sort_values(
        ["label", "study"], key=lambda c: c.map(rank) if c.name == "study" else c, kind="stable"
    )
    for metric in ("FAAvg", "FAMin"):
        sub = agg[agg["metric"] == metric]
        if len(sub):
            console.print(_factor_table(f"{metric} (mean ± {err} over dataset samples)", sub,
                                        ["label", "study"], err=err, marked=marked))
    if len(result.chgo):
        console.print(_factor_table(
            "CHGO over ZGO, percentage points (mean ± std over dataset samples)",
            result.chgo, ["label"], err="std", scale=100, digits=0, marked=marked))
    if any(marked):
        console.print(INCOMPLETE_NOTE[0].upper() + INCOMPLETE_NOTE[1:] + ".")
    console.print("P_ij per pair: --json, or `shortcutlab diagvib report DIR --out report/`.",
                  style="dim")


def register(app: typer.Typer) -> None:
    app.command(
        "metrics", short_help="Compute DiagViB-6 metrics: P_i, P_ij, FAAvg, FAMin, CHGO."
    )(metrics)
