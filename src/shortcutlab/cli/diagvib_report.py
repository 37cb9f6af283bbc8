"""``shortcutlab diagvib report``: the self-contained HTML report of one or more DiagViB-6 runs.

The top-level ``shortcutlab report`` (its name before every area had its own
``<area> report``) stays as an alias that says so on stderr and runs the same command."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import typer

from shortcutlab.cli.options import checkpoint_option, error_bars_option
from shortcutlab.cli.output import json_option


def report(
    dirs: list[Path] = typer.Argument(
        ..., help="Run directories of `diagvib run` (or jobs.csv/jobs.parquet files), one or "
        "more models; NAME=DIR reports DIR's models as model@NAME (two recipes of one model "
        "side by side)."
    ),
    out: Path = typer.Option(Path("report"), "--out", help="Folder for index.html and metrics."),
    title: str = typer.Option("DiagViB-6 shortcut report", help="Title of the report."),
    error_bars: str = error_bars_option(),
    checkpoint: str = checkpoint_option(),
    as_json: bool = json_option("Also print metrics.json (as `diagvib metrics --json` does) "
                                "as JSON on stdout; the report's path goes to stderr."),
) -> None:
    """Write an HTML report (tables, figs. 4a/4b/5b, Table 2) plus metrics.json and metrics.csv.

    The HTML embeds its figures, so the single file reads offline in any browser.
    """
    from shortcutlab.diagvib.report import write_report

    path = write_report(dirs, out, title=title, error_bars=error_bars,
                        checkpoint=checkpoint)
    typer.echo(f"report written to {path} (metrics.json, metrics.csv beside it)", err=as_json)
    if as_json:
        from shortcutlab.cli.output import print_json_file

        print_json_file(path.parent / "metrics.json")


def register(app: typer.Typer) -> None:
    app.command(
        "report", short_help="Write the HTML report of DiagViB-6 runs and their metrics."
    )(report)


@functools.wraps(report)  # the same options (typer reads the signature of __wrapped__)
def _alias(**kwargs: Any) -> None:
    typer.echo("note: `shortcutlab report` is now `shortcutlab diagvib report` (as `biasbed "
               "report` and `imagenetx report`); the old name stays as an alias", err=True)
    report(**kwargs)


def register_alias(app: typer.Typer) -> None:
    """The former top-level ``shortcutlab report``: the same options, a note on stderr."""
    app.command("report", short_help="Alias of `diagvib report` (its former name).",
                help="Alias of `shortcutlab diagvib report` (its former name).")(_alias)
