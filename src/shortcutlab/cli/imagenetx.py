"""``shortcutlab imagenetx``: per-factor error analysis of ImageNet models (ImageNet-X)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from shortcutlab.cli.output import json_option, print_json, print_json_file

if TYPE_CHECKING:
    from shortcutlab.imagenetx.annotations import Which
    from shortcutlab.imagenetx.evaluate import ErrorType

app = typer.Typer(
    no_args_is_help=True,
    help="ImageNet-X: which factors of variation a model's mistakes are associated with.",
)

_ERROR_TYPE_HELP = (
    "What counts as right: class (original label), metaclass (same meta-label), real_class "
    "(any ReaL label)."
)


def _file_col_option() -> Any:
    return typer.Option(
        None, "--file-col", help="CSV column with the image file names (default: file_name, or "
        "timm's filename); full paths are reduced to file names.")


def _pred_col_option() -> Any:
    return typer.Option(
        None, "--pred-col", help="CSV column with the top-1 class id (default: predicted_class, "
        "or timm's index).")


def _warn_if_trivial(original_labels: bool, error_type: str) -> None:
    """The original labels are what error type ``class`` compares with: right by construction."""
    if original_labels and error_type == "class":
        typer.echo("Warning: with --error-type class the original labels score 1.0 by "
                   "construction (no mistakes, undefined error ratios); use --error-type "
                   "real_class to score them against the ReaL labels", err=True)


def _check_choices(error_type: str, which: str) -> tuple[ErrorType, Which]:
    """``error_type`` and ``which``, refused unless one of their choices."""
    from shortcutlab.errors import ImagenetXError, unknown_choice
    from shortcutlab.imagenetx.annotations import WHICH_CHOICES
    from shortcutlab.imagenetx.evaluate import ERROR_TYPES

    if error_type not in ERROR_TYPES:
        raise ImagenetXError(unknown_choice("error type", error_type, ERROR_TYPES))
    if which not in WHICH_CHOICES:
        raise ImagenetXError(unknown_choice("factor selection", which, WHICH_CHOICES))
    return error_type, which  # narrowed by the checks


@app.command("evaluate", short_help="Per-factor accuracy and error ratio of each model.")
def evaluate_cmd(
    paths: list[Path] = typer.Argument(
        None, help="Prediction CSVs (file_name,predicted_class[,predicted_probability], or the "
        "CSV of timm's inference.py), folders of CSVs, or .npz/.npy models × images matrices."
    ),
    error_type: str = typer.Option("class", "--error-type", help=_ERROR_TYPE_HELP),
    which: str = typer.Option("top", "--which", help="Factor annotations: top or multi."),
    original_labels: bool = typer.Option(
        False, "--original-labels",
        help="Also evaluate the original ImageNet labels as a model named original_labels.",
    ),
    ignore_empty_real: bool = typer.Option(
        False, "--ignore-empty-real",
        help="Leave out images whose ReaL label set is empty (by default they count as wrong).",
    ),
    file_col: str = _file_col_option(),
    pred_col: str = _pred_col_option(),
    min_coverage: float = typer.Option(
        0.0, "--min-coverage", help="Refuse a model that predicts less than this fraction of "
        "the annotated images (default 0: score what is predicted, and say how much)."),
    as_json: bool = json_option(),
    out: Path = typer.Option(None, "--out", help="Also write the JSON results to this file."),
) -> None:
    """Per-factor accuracy and error ratio (1 − acc(factor)) / (1 − acc) of each model."""
    from rich.table import Table

    from shortcutlab.imagenetx.annotations import FACTORS, load_annotations
    from shortcutlab.imagenetx.evaluate import evaluate
    from shortcutlab.imagenetx.predictions import gather_predictions
    from shortcutlab.utils.console import PlainConsole
    from shortcutlab.utils.io import write_json

    kind, which_factors = _check_choices(error_type, which)
    _warn_if_trivial(original_labels, error_type)
    predictions = gather_predictions(paths, original_labels=original_labels,
                                     file_col=file_col, pred_col=pred_col)
    result = evaluate(predictions, load_annotations(which_factors, "val"), kind,
                      ignore_empty_real, min_coverage=min_coverage)
    data = result.to_dict()
    if out is not None:
        write_json(out, data)
    if as_json:
        print_json(data)
        return
    scored = sorted({int(n) for n in result.evaluated})
    images = (f"{result.n_images:,} images" if scored == [result.n_images] else
              f"{' to '.join(f'{n:,}' for n in (scored[0], scored[-1])[:len(scored)])} of "
              f"{result.n_images:,} images predicted")
    table = Table(title=f"Error ratio per factor ({which} factor, {error_type}, {images})")
    table.add_column("factor")
    for model in result.models:
        table.add_column(model, justify="right")
    ratios = result.table("error_ratio")
    table.add_row("average accuracy", *[f"{a:.4f}" for a in result.average])
    table.add_row("worst factor", *[str(w) for w in result.worst_factor_name])
    for factor in FACTORS:
        table.add_row(factor, *[f"{v:.3f}" for v in ratios[factor]])
    PlainConsole().print(table)


@app.command("predict", short_help="Predict a local ImageNet validation folder with a model.")
def predict_cmd(
    model: str = typer.Option(
        ..., "--model", help="Model name, as for training: registered, timm:<arch>, "
        "torchvision:<arch> or module:factory (see `shortcutlab models`)."),
    imagenet_val: Path = typer.Option(
        ..., "--imagenet-val", help="Local ImageNet validation folder (flat or class sub-folders)."
    ),
    out: Path = typer.Option(..., "--out", help="Predictions CSV to write."),
    weights: Path = typer.Option(
        None, "--weights", help="Local state-dict file with the model's 1000-class weights."
    ),
    batch_size: int = typer.Option(64, min=1, help="Images per forward pass."),
    image_size: int = typer.Option(None, min=1, help="Centre-crop size (resize to size / "
                                   "crop-pct first)  [default: 224]"),
    crop_pct: float = typer.Option(None, help="Crop fraction (timm's crop_pct; 0.875 = 224/256)"
                                   "  [default: 0.875]"),
    interpolation: str = typer.Option(None, help="Resize interpolation: bilinear, bicubic "
                                      "or nearest  [default: bilinear]"),
    data_config: Path = typer.Option(
        None, "--data-config", help="JSON/YAML data config of the model (timm's input_size, "
        "crop_pct, interpolation, mean, std); replaces the three options above (not given "
        "with it)."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    num_workers: int = typer.Option(0, min=0, help="DataLoader worker processes."),
) -> None:
    """Run a model over a local ImageNet validation folder and write its predictions CSV."""
    from shortcutlab.errors import DataNotFoundError, ImagenetXError
    from shortcutlab.imagenetx.predict import (
        CROP_PCT,
        build_model,
        eval_transform,
        predict_folder,
        transform_from_config,
    )

    given = {"--image-size": image_size, "--crop-pct": crop_pct, "--interpolation": interpolation}
    if data_config is not None:
        import yaml

        clash = [name for name, value in given.items() if value is not None]
        if clash:
            raise ImagenetXError(f"{', '.join(clash)} and --data-config both set the "
                                 "preprocessing; give the data config alone (edit its keys) or "
                                 "the options alone")
        if not data_config.is_file():
            raise DataNotFoundError(f"data config {str(data_config)!r} does not exist")
        from shortcutlab.utils.io import load_yaml

        try:
            config = load_yaml(data_config.read_text(encoding="utf-8"))  # JSON is YAML
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ImagenetXError(f"{data_config}: not a readable YAML/JSON data config "
                                 f"({reason})") from None
        if not isinstance(config, dict):
            raise ImagenetXError(f"{data_config}: expected a mapping of data-config keys")
        transform = transform_from_config(config)
    else:
        transform = eval_transform(224 if image_size is None else image_size,
                                   CROP_PCT if crop_pct is None else crop_pct,
                                   interpolation or "bilinear")
    net = build_model(model, weights)
    if weights is None:
        typer.echo("Warning: no --weights given; the model is randomly initialised", err=True)
    result = predict_folder(
        net, imagenet_val, out, batch_size=batch_size, device=device, num_workers=num_workers,
        transform=transform,
    )
    typer.echo(str(result))


@app.command("report", short_help="Write an HTML report: error ratios, tests and figures.")
def report_cmd(
    paths: list[Path] = typer.Argument(
        None, help="Prediction CSVs, folders of CSVs, or .npz/.npy matrices."
    ),
    out: Path = typer.Option(Path("imagenetx-report"), "--out", help="Folder for index.html."),
    error_type: str = typer.Option("class", "--error-type", help=_ERROR_TYPE_HELP),
    which: str = typer.Option("top", "--which", help="Factor annotations: top or multi."),
    original_labels: bool = typer.Option(
        False, "--original-labels", help="Include the original labels as model original_labels."
    ),
    ignore_empty_real: bool = typer.Option(
        False, "--ignore-empty-real", help="Leave out images whose ReaL label set is empty."
    ),
    groups: Path = typer.Option(
        None, "--groups", help="CSV with columns model,group for the Alexander-Govern comparison."
    ),
    bootstrap: int = typer.Option(1000, help="Bootstrap resamples for the CIs (0: none)."),
    seed: int = typer.Option(0, min=0, help="Seed of the bootstrap."),
    title: str = typer.Option("ImageNet-X error analysis", help="Report title."),
    file_col: str = _file_col_option(),
    pred_col: str = _pred_col_option(),
    results: Path = typer.Option(
        None, "--results", help="The authors' results folder (results/val/{top,multi}_factor/"
        "<group>/<error_type>/accuracies_per_factor.csv): adds figures 1b, 4, 6 and 17."),
    spillover: str = typer.Option(
        "cubic", "--spillover", help="Spill-over procedure for figure 6: cubic (the authors' "
        "cubic fit in augmentation strength) or welch (strongest vs weakest third)."),
    families: Path = typer.Option(
        None, "--families", help="CSV model,family adding to / overriding the shipped model-"
        "family map (figure 4)."),
    as_json: bool = json_option("Also print imagenetx.json (error ratios, CIs, tests) as JSON "
                                "on stdout; the report's path goes to stderr."),
) -> None:
    """Write an HTML report: error ratios with CIs, group tests, meta-label heatmaps, data stats,
    figures 2, 4, 7, per-factor calibration, table 3 (and figures 1b, 4, 6, 17 with --results)."""

    from shortcutlab.imagenetx.predictions import gather_predictions
    from shortcutlab.imagenetx.report import (
        analyse,
        no_calibration_note,
        report_tables,
        write_report,
    )
    from shortcutlab.utils.io import check_output_folder

    kind, which_factors = _check_choices(error_type, which)
    check_output_folder(out)  # a bad --out is refused now, not after the analysis and figures
    _warn_if_trivial(original_labels, error_type)
    predictions = gather_predictions(paths, original_labels=original_labels,
                                     file_col=file_col, pred_col=pred_col)
    group_map = _model_map(groups, "group")
    family_map = _report_extras(results, spillover, families)
    analysis = analyse(
        predictions, which_factors, kind, ignore_empty_real, group_map, n_boot=bootstrap,
        seed=seed, results_dir=results, spillover_method=spillover, families=family_map,
    )
    path = write_report(analysis, out, title)
    beside = ["imagenetx.json", *report_tables(analysis)]
    typer.echo(f"report written to {path} ({', '.join(beside)} beside it)", err=as_json)
    if analysis.calibration is None:  # say why calibration.csv is missing, on one line
        typer.echo(no_calibration_note(analysis.result.models), err=True)
    if as_json:
        print_json_file(path.parent / "imagenetx.json")


def _report_extras(results: Path | None, spillover: str, families: Path | None
                   ) -> dict[str, str] | None:
    """Check --results / --spillover and read --families (model,family CSV)."""
    from shortcutlab.errors import DataNotFoundError, ImagenetXError, unknown_choice
    from shortcutlab.imagenetx.spillover import METHODS

    if spillover not in METHODS:
        raise ImagenetXError(unknown_choice("spill-over method", spillover, METHODS))
    if results is not None and not results.is_dir():
        raise DataNotFoundError(f"results folder {str(results)!r} does not exist")
    return _model_map(families, "family")


def _model_map(path: Path | None, column: str) -> dict[str, str] | None:
    """Read a ``model,<column>`` CSV (--groups, --families) into model → value; a model listed
    twice is refused (a dict would keep its last row without a word)."""
    from shortcutlab.errors import DataNotFoundError, ImagenetXError
    from shortcutlab.utils.io import read_csv_file

    if path is None:
        return None
    what = f"{'families' if column == 'family' else 'groups'} file"
    if not path.is_file():
        raise DataNotFoundError(f"{what} {str(path)!r} does not exist")
    frame = read_csv_file(path, what, ImagenetXError, dtype=str)
    if not {"model", column} <= set(frame.columns):
        raise ImagenetXError(f"{path}: needs columns model,{column}; found {list(frame.columns)}")
    repeated = frame["model"][frame["model"].duplicated()].unique().tolist()
    if repeated:
        raise ImagenetXError(
            f"{path}: model(s) listed more than once: {', '.join(map(str, repeated[:5]))}; "
            f"give each model one {column}"
        )
    return dict(zip(frame["model"], frame[column], strict=True))
