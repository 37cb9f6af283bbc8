"""``shortcutlab factors``: factor-annotated error analysis of any dataset's predictions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

import typer

from shortcutlab.cli.options import option_group
from shortcutlab.cli.output import json_option, print_json, print_json_file

app = typer.Typer(
    no_args_is_help=True,
    help="Which annotated factors a model's mistakes concentrate on, for any dataset.",
)


def _option(default: Any, *names: str, **kwargs: Any) -> Any:
    """A dataclass field whose metadata holds its typer option."""
    return field(metadata={"option": typer.Option(default, *names, **kwargs)})


@dataclass(frozen=True)
class FactorOptions:
    """The inputs and settings both ``factors`` commands take, declared once: each field is
    one command-line option (its typer option in the field's metadata)."""

    annotations: Path = _option(
        ..., "--annotations", help="Per-item annotations (CSV, Parquet or JSON lines): an id, "
        "the true label, and factor columns (binary 0/1 or categorical).")
    predictions: Path = _option(
        ..., "--predictions", help="Predictions (CSV, Parquet or JSON lines): the id and the "
        "predicted label (several models: a model column), or a timm inference.py CSV.")
    predictions_format: str = _option(
        "auto", "--predictions-format", help="table (the columns named by --id-col, "
        "--pred-col, ...), timm (timm's inference.py CSV: filename, index or label, prob) or "
        "auto (timm when the file looks like it).")
    id_col: str = _option("id", "--id-col", help="Id column of both tables.")
    label_col: str = _option("label", "--label-col", help="True-label column.")
    pred_col: str = _option("prediction", "--pred-col", help="Predicted-label column.")
    prob_col: str | None = _option(
        None, "--prob-col", help="Probability of the predicted label (adds calibration).")
    model_col: str | None = _option(None, "--model-col", help="Model column (several models).")
    factor_cols: list[str] | None = _option(
        None, "--factor-col", help="Factor column to use (repeat; default: every other column).")
    min_coverage: float = _option(
        1.0, "--min-coverage", help="Refuse when a model predicts less than this fraction of "
        "the annotated items.")
    bootstrap: int = _option(1000, min=0, help="Bootstrap resamples for the intervals "
                             "(0: none).")
    seed: int = _option(0, min=0, help="Seed of the bootstrap.")
    top: int = _option(5, min=1, help="Worst factors listed per model (and per class).")
    min_count: int = _option(30, min=1, help="Items a factor (or group) needs to be ranked.")
    group_cols: list[str] | None = _option(
        None, "--group-col", help="Worst-group accuracy over label × these columns (repeat; "
        "default: label × each factor column in turn, the lowest).")

    def analyse(self) -> Any:
        """Read, check and analyse the two tables (a FactorReport)."""
        from shortcutlab.factor_analysis import analyse_factors

        return analyse_factors(
            self.annotations, self.predictions, id_col=self.id_col, label_col=self.label_col,
            pred_col=self.pred_col, prob_col=self.prob_col, model_col=self.model_col,
            factor_cols=self.factor_cols or None, min_coverage=self.min_coverage,
            n_boot=self.bootstrap if self.bootstrap >= 2 else 0, seed=self.seed, k=self.top,
            min_count=self.min_count, group_cols=self.group_cols or None,
            predictions_format=self.predictions_format,
        )


def factor_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` the :class:`FactorOptions` in place of its parameter ``inputs``, which
    receives them as one object."""
    types = get_type_hints(FactorOptions)
    options = [(f.name, types[f.name], f.metadata["option"]) for f in fields(FactorOptions)]
    return option_group(FactorOptions, "inputs", options)(command)


@app.command("evaluate", short_help="Per-factor accuracy, error ratio and worst factors.")
@factor_options
def evaluate_cmd(
    inputs: FactorOptions,  # the factor options
    as_json: bool = json_option(),
) -> None:
    """Per-factor accuracy and error ratio (1 − acc(factor)) / (1 − acc) of each model, its
    worst factors, χ² tests and worst-group accuracy."""
    from rich.table import Table

    from shortcutlab.utils.console import PlainConsole

    report = inputs.analyse()
    if as_json:
        print_json(report.to_dict())
        return
    console = PlainConsole()
    tests = report.tests.set_index(["model", "factor"])
    for model, row in report.coverage.iterrows():
        wg = report.worst_group[str(model)]
        m = report.result.models.index(str(model))
        typer.echo(
            f"{model}: accuracy {report.result.average[m]:.4f} on {int(row['matched']):,} of "
            f"{int(row['annotated']):,} annotated items (coverage {row['coverage']:.1%}); "
            f"worst-group accuracy {wg['acc_wg']:.4f} ({wg['worst_group']})")
        table = Table(title=f"{model}: worst factors (error ratio > 1: over-represented "
                      "among the mistakes)")
        for col in ("factor", "items", "accuracy", "error ratio", "95% interval", "p (Holm)"):
            table.add_column(col, justify="left" if col == "factor" else "right")
        worst = report.worst[report.worst["model"] == model]
        for item in worst.itertuples():
            interval = ""
            if "error_ratio_lower" in worst.columns:
                interval = f"{item.error_ratio_lower:.2f}–{item.error_ratio_upper:.2f}"
            p = tests.loc[(model, item.factor), "pvalue_holm"]
            table.add_row(str(item.factor), f"{item.count:,}", f"{item.accuracy:.4f}",
                          f"{item.error_ratio:.2f}", interval, f"{p:.2g}")
        console.print(table)
        per_class = report.by_class[(report.by_class["model"] == model)
                                    & (report.by_class["rank"] == 1)]
        for item in per_class.itertuples():
            typer.echo(f"  class {item[2]}: worst factor {item.factor} (error ratio "
                       f"{item.error_ratio:.2f}, accuracy {item.accuracy:.4f} on {item.count:,} "
                       f"items vs {item.class_accuracy:.4f} on the class)")


@app.command("report", short_help="Write an HTML report with the numbers beside it.")
@factor_options
def report_cmd(
    inputs: FactorOptions,  # the factor options
    out: Path = typer.Option(Path("factor-report"), "--out", help="Folder for index.html."),
    title: str = typer.Option("Factor analysis", help="Report title."),
    as_json: bool = json_option("Also print factors.json as JSON on stdout; the report's path "
                                "goes to stderr."),
) -> None:
    """Write index.html (coverage, worst factors overall and per class with intervals and
    tests, worst groups, calibration, a bar chart per model) and the numbers (factors.json,
    factors.csv, worst_factors.csv, by_class.csv, tests.csv, groups.csv, calibration.csv)."""
    from shortcutlab.factor_analysis import write_report

    report = inputs.analyse()
    path = write_report(report, out, title, min_count=inputs.min_count)
    typer.echo(f"report written to {path} (factors.json and CSV tables beside it)", err=as_json)
    if as_json:
        print_json_file(path.parent / "factors.json")
