"""``shortcutlab stats ...``: BiasBed statistics on score tables and per-epoch records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from shortcutlab.cli.options import (
    check_statistics,
    df_option,
    nemenyi_clip_option,
    nemenyi_option,
    no_tie_correction_option,
)
from shortcutlab.cli.output import json_option, print_json
from shortcutlab.utils.console import PlainConsole

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


TRAINED_ON_HELP = (
    "ALGORITHM=BLOCK: BLOCK is in-distribution for ALGORITHM (made like its training data); "
    "repeat. Used by --strict."
)


def _fmt_p(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.2e}"


@app.command("compare", short_help="Compare algorithms: Friedman, Iman-Davenport, Nemenyi, CD.")
def compare_cmd(
    table: Path = typer.Argument(
        ...,
        help="CSV/TSV/Parquet: wide (first column block, one column per algorithm) or long "
        "(block|dataset|test_set, algorithm|model|method, run|seed|job_id, "
        "score|acc|accuracy|value).",  # stats.tables' *_COLUMNS (tests/stats/test_score_col.py)
    ),
    lower_is_better: bool = typer.Option(
        False, "--lower-is-better", help="Scores are errors/losses: lower ranks first."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level for CD and Nemenyi."),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for CSV, LaTeX, JSON and the CD-diagram PNG."
    ),
    as_json: bool = json_option("Print one JSON object (chi2, chi2_p_value, F, p_value, ...)."),
    df: str = df_option(),
    nemenyi_clip: bool = nemenyi_clip_option(),
    nemenyi: str = nemenyi_option(),
    no_tie_correction: bool = no_tie_correction_option(),
    exclude_block: list[str] = typer.Option(
        None, "--exclude-block", help="Leave this block out; repeat for several."
    ),
    trained_on: list[str] = typer.Option(None, "--trained-on", help=TRAINED_ON_HELP),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="BiasBed's strict setting: drop every block named by --trained-on.",
    ),
    score_col: str = typer.Option(
        None, "--score-col", help="The score column of a long table, whatever its name (e.g. "
        "DomainBed's test_acc); its other columns are ignored."
    ),
) -> None:
    """Compare algorithms over blocks: Friedman, Iman-Davenport, Nemenyi, critical difference."""
    from shortcutlab.errors import StatsError
    from shortcutlab.stats.compare import compare, strict_blocks
    from shortcutlab.stats.tables import load_table

    check_statistics(df, nemenyi)
    pairs = []
    for item in trained_on or []:
        algo, sep, block = item.partition("=")
        if not sep or not algo.strip() or not block.strip():
            raise StatsError(f"--trained-on expects ALGORITHM=BLOCK, got {item!r}")
        pairs.append((algo.strip(), block.strip()))
    if strict and not pairs:
        raise StatsError("--strict needs --trained-on ALGORITHM=BLOCK for the blocks to drop")
    if pairs and not strict:
        raise StatsError("--trained-on is used only by --strict: add --strict, or leave it out")
    parsed = load_table(table, score_col)
    excluded = list(exclude_block or [])
    if strict:
        in_distribution = strict_blocks(pairs, parsed.blocks, parsed.algorithms)
        excluded += [b for b in in_distribution if b not in excluded]
    result = compare(
        parsed,
        alpha=alpha,
        lower_is_better=lower_is_better,
        df=df,
        nemenyi_clip=nemenyi_clip,
        exclude_blocks=excluded,
        nemenyi_method=nemenyi,
        tie_correction=not no_tie_correction,
    )
    written = result.write(out) if out is not None else []
    if as_json:
        print_json(result.to_dict())
        err = PlainConsole(stderr=True)
        for path in written:
            err.print(f"wrote {path}")
        return
    console = PlainConsole()
    direction = "lower" if lower_is_better else "higher"
    scores = Table(title=f"Scores ({direction} is better)")
    scores.add_column("block")
    for a in result.algorithms:
        scores.add_column(a, justify="right")
    text = result.scores_frame()
    for b in result.blocks:
        scores.add_row(b, *[str(text.loc[b, a]) for a in result.algorithms])
    console.print(scores)
    ranks = Table(title="Mean ranks (1 = best)")
    ranks.add_column("algorithm")
    ranks.add_column("mean rank", justify="right")
    ranks.add_column("Nemenyi p vs best", justify="right")
    for name, row in result.ranks_frame().iterrows():
        ranks.add_row(str(name), f"{row['mean_rank']:.3f}", _fmt_p(row["p_vs_best"]))
    console.print(ranks)
    f_text = f"{result.F:.3f}" if math.isfinite(result.F) else "inf"
    dropped = (
        f" (left out: {', '.join(result.excluded_blocks)})" if result.excluded_blocks else ""
    )
    console.print(
        f"N = {len(result.blocks)} blocks{dropped}, k = {len(result.algorithms)} algorithms\n"
        f"Friedman χ² = {result.chi2:.3f} (p = {_fmt_p(result.chi2_p_value)})\n"
        f"Iman-Davenport F({result.df_num:.4g}, {result.df_den:.4g}) = {f_text} "
        f"(p = {_fmt_p(result.p_value)}, {result.df_convention} df)\n"
        f"Critical difference (Nemenyi, α = {alpha:g}) = {result.critical_difference:.3f}"
    )
    if not math.isfinite(result.F):
        console.print(
            "Every block ranks the algorithms identically: F is infinite and its p-value "
            "0 only in the limit; with few blocks, read the Friedman p-value instead.",
            style="yellow")
    if result.significant:
        console.print(f"H0 (all algorithms equal) rejected at α = {alpha:g}.", style="bold")
        significant = result.significant_pairs()
        if significant:
            for better, worse, p in significant:
                console.print(f"  {better} better than {worse} (Nemenyi p = {_fmt_p(p)})")
        else:
            console.print("  but no pair differs significantly under Nemenyi.")
    else:
        console.print(f"H0 (all algorithms equal) not rejected at α = {alpha:g}.")
    for path in written:
        console.print(f"wrote {path}")


@app.command("select", short_help="Model selection: oracle vs last-n vs best validation.")
def select_cmd(
    records: Path = typer.Argument(
        ...,
        help="Per-epoch records (CSV/TSV/Parquet): run|job_id, epoch, validation column, and "
        "test columns (test*) or long test_set + acc|score|test_acc.",
    ),
    val: str = typer.Option("val_acc", "--val", help="Validation column used for selection."),
    test: list[str] = typer.Option(
        None, "--test", help="Test metric column(s) of wide records (default: all test*)."
    ),
    last_n: int = typer.Option(5, "--last-n", help="Epochs averaged by the last-n rule."),
    lower_is_better: bool = typer.Option(
        False, "--lower-is-better", help="Test scores are errors: the oracle takes the minimum."
    ),
    out: Path | None = typer.Option(None, "--out", help="Folder for selection CSVs."),
    as_json: bool = json_option("Print the table as one JSON object."),
) -> None:
    """Model selection: best-epoch oracle vs last-n average vs best validation, side by side."""
    from shortcutlab.stats.selection import RULES, compare_rules, rule_label, select
    from shortcutlab.stats.tables import read_table
    from shortcutlab.utils.io import check_output_folder, output_set

    if out is not None:
        check_output_folder(out)
    df = read_table(records)
    kwargs: dict[str, Any] = dict(
        n_last=last_n, lower_is_better=lower_is_better, val_col=val, test_cols=test or None
    )
    table = compare_rules(df, RULES, **kwargs)
    written = []
    if out is not None:
        tables = {"selection_rules": table} | {
            f"selected_{rule}": select(df, rule, **kwargs) for rule in RULES
        }
        with output_set() as outputs:  # all four files or none
            written = [
                outputs.write_text(out / f"{name}.csv", frame.to_csv(index=False,
                                                                     float_format="%.10g"))
                for name, frame in tables.items()
            ]
    if as_json:
        rows = json.loads(table.to_json(orient="records"))
        print_json({"n_last": last_n, "rules": list(RULES), "rows": rows})
        return
    console = PlainConsole()
    keys = [c for c in table.columns if c in ("algorithm", "model", "dataset", "test_set")]
    view = Table(title="Model selection: how the rule changes the numbers (mean ± std over runs)")
    for k in keys:
        view.add_column(k)
    for rule in RULES:
        view.add_column(rule_label(rule, last_n), justify="right")
    view.add_column("runs", justify="right")
    for _, row in table.iterrows():
        cells = [str(row[k]) for k in keys]
        for rule in RULES:
            cell = f"{row[rule]:.3f}"
            if not math.isnan(row[f"{rule}_std"]):
                cell += f" ± {row[f'{rule}_std']:.3f}"
            if rule != "best_epoch":
                cell += f" ({row[f'{rule}_minus_oracle']:+.3f})"
            cells.append(cell)
        cells.append(str(int(row["n_runs"])))
        view.add_row(*cells)
    console.print(view)
    console.print(
        f"The best-epoch oracle picks the test-set {'minimum' if lower_is_better else 'maximum'}"
        ": it is cherry-picking, shown only to "
        "measure the optimism; differences to it are in parentheses."
    )
    for path in written:
        console.print(f"wrote {path}")
