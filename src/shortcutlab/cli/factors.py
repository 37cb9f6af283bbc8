"""``shortcutlab factors``: factor-annotated error analysis of any dataset's predictions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from shortcutlab.cli.output import json_option, print_json, print_json_file

app = typer.Typer(
    no_args_is_help=True,
    help="Which annotated factors a model's mistakes concentrate on, for any dataset.",
)


def _annotations() -> Any:
    return typer.Option(
        ..., "--annotations", help="Per-item annotations (CSV, Parquet or JSON lines): an id, "
        "the true label, and factor columns (binary 0/1 or categorical).")


def _predictions() -> Any:
    return typer.Option(
        ..., "--predictions", help="Predictions (CSV, Parquet or JSON lines): the id and the "
        "predicted label (several models: a model column).")


def _id_col() -> Any:
    return typer.Option("id", "--id-col", help="Id column of both tables.")


def _label_col() -> Any:
    return typer.Option("label", "--label-col", help="True-label column.")


def _pred_col() -> Any:
    return typer.Option("prediction", "--pred-col", help="Predicted-label column.")


def _prob_col() -> Any:
    return typer.Option(
        None, "--prob-col", help="Probability of the predicted label (adds calibration).")


def _model_col() -> Any:
    return typer.Option(None, "--model-col", help="Model column (several models).")


def _factor_cols() -> Any:
    return typer.Option(
        None, "--factor-col", help="Factor column to use (repeat; default: every other column).")


def _min_coverage() -> Any:
    return typer.Option(
        1.0, "--min-coverage", help="Refuse when a model predicts less than this fraction of "
        "the annotated items.")


def _bootstrap() -> Any:
    return typer.Option(1000, min=0, help="Bootstrap resamples for the intervals "
                                  "(0: none).")


def _seed() -> Any:
    return typer.Option(0, min=0, help="Seed of the bootstrap.")


def _top() -> Any:
    return typer.Option(5, min=1, help="Worst factors listed per model.")


def _min_count() -> Any:
    return typer.Option(30, min=1, help="Items a factor (or group) needs to be "
                                  "ranked.")


def _group_cols() -> Any:
    return typer.Option(
        None, "--group-col", help="Worst-group accuracy over label × these columns (repeat; "
        "default: label × each factor column in turn, the lowest).")


def _inputs(annotations: Path, predictions: Path, id_col: str, label_col: str, pred_col: str,
            prob_col: str | None, model_col: str | None, factor_cols: list[str] | None,
            min_coverage: float, bootstrap: int, seed: int, top: int, min_count: int,
            group_cols: list[str] | None) -> Any:
    from shortcutlab.factor_analysis import analyse_factors

    return analyse_factors(
        annotations, predictions, id_col=id_col, label_col=label_col, pred_col=pred_col,
        prob_col=prob_col, model_col=model_col, factor_cols=factor_cols or None,
        min_coverage=min_coverage, n_boot=bootstrap if bootstrap >= 2 else 0, seed=seed,
        k=top, min_count=min_count, group_cols=group_cols or None,
    )


@app.command("evaluate", short_help="Per-factor accuracy, error ratio and worst factors.")
def evaluate_cmd(
    annotations: Path = _annotations(),
    predictions: Path = _predictions(),
    id_col: str = _id_col(),
    label_col: str = _label_col(),
    pred_col: str = _pred_col(),
    prob_col: str = _prob_col(),
    model_col: str = _model_col(),
    factor_cols: list[str] = _factor_cols(),
    min_coverage: float = _min_coverage(),
    bootstrap: int = _bootstrap(),
    seed: int = _seed(),
    top: int = _top(),
    min_count: int = _min_count(),
    group_cols: list[str] = _group_cols(),
    as_json: bool = json_option(),
) -> None:
    """Per-factor accuracy and error ratio (1 − acc(factor)) / (1 − acc) of each model, its
    worst factors, χ² tests and worst-group accuracy."""
    from rich.table import Table

    from shortcutlab.utils.console import PlainConsole

    report = _inputs(annotations, predictions, id_col, label_col, pred_col, prob_col, model_col,
                     factor_cols, min_coverage, bootstrap, seed, top, min_count, group_cols)
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
def report_cmd(
    annotations: Path = _annotations(),
    predictions: Path = _predictions(),
    id_col: str = _id_col(),
    label_col: str = _label_col(),
    pred_col: str = _pred_col(),
    prob_col: str = _prob_col(),
    model_col: str = _model_col(),
    factor_cols: list[str] = _factor_cols(),
    min_coverage: float = _min_coverage(),
    bootstrap: int = _bootstrap(),
    seed: int = _seed(),
    top: int = _top(),
    min_count: int = _min_count(),
    group_cols: list[str] = _group_cols(),
    out: Path = typer.Option(Path("factor-report"), "--out", help="Folder for index.html."),
    title: str = typer.Option("Factor analysis", help="Report title."),
    as_json: bool = json_option("Also print factors.json as JSON on stdout; the report's path "
                                "goes to stderr."),
) -> None:
    """Write index.html (coverage, worst factors overall and per class with intervals and
    tests, worst groups, calibration, a bar chart per model) and the numbers (factors.json,
    factors.csv, worst_factors.csv, by_class.csv, tests.csv, groups.csv, calibration.csv)."""
    from shortcutlab.factor_analysis import write_report

    report = _inputs(annotations, predictions, id_col, label_col, pred_col, prob_col, model_col,
                     factor_cols, min_coverage, bootstrap, seed, top, min_count, group_cols)
    path = write_report(report, out, title, min_count=min_count)
    typer.echo(f"report written to {path} (factors.json and CSV tables beside it)", err=as_json)
    if as_json:
        print_json_file(path.parent / "factors.json")
