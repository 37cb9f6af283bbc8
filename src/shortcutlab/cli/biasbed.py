"""``shortcutlab biasbed run`` and ``report``: the BiasBed multi-run protocol from the shell."""

from __future__ import annotations

from pathlib import Path

import typer

from shortcutlab.cli.errors import clean_errors
from shortcutlab.cli.options import mnist_option, textures_option

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.command()
@clean_errors
def run(
    algorithm: list[str] = typer.Option(
        ...,
        "--algorithm",
        help="Algorithm to run (erm, padain, sagnet, infodrop, stylized, "
        "debiased, ...); repeat for several.",
    ),
    dataset: list[str] = typer.Option(
        None,
        "--dataset",
        help="DiagViB-6 experiment, e.g. diagvib:ZGO/shape-texture/0; "
        "repeat for several (each test set of each dataset is one block).",
    ),
    train_dir: Path = typer.Option(None, help="Image folder for training (<dir>/<class>/*)."),
    val_dir: Path = typer.Option(
        None,
        help="Image folder for validation (training "
        "distribution; used by the best-validation rule).",
    ),
    test_dir: list[str] = typer.Option(
        None, "--test-dir", help="Test image folder as NAME=DIR; repeat for several."
    ),
    class_map: Path = typer.Option(
        None,
        help="CSV (source,target) or JSON mapping folder class names to labels, "
        "e.g. 1000 ImageNet ids to 16 classes.",
    ),
    name: str = typer.Option("folders", help="Name of the image-folder dataset in tables."),
    image_size: int = typer.Option(224, help="Image-folder images are resized/cropped to this."),
    runs: int = typer.Option(3, help="Runs (training seeds) per algorithm and dataset."),
    epochs: int = typer.Option(10, help="Epochs per run (no early stopping)."),
    model: str = typer.Option("small_cnn", help="Registered model name."),
    batch_size: int = typer.Option(64, help="Training batch size."),
    lr: float = typer.Option(1e-3, help="Adam learning rate."),
    hparam: list[str] = typer.Option(
        None, "--hparam", help="Algorithm hyper-parameter ALGORITHM:KEY=VALUE, e.g. padain:p=0.1."
    ),
    scale: float = typer.Option(0.01, help="DiagViB-6 dataset size relative to the paper's."),
    mnist: Path = mnist_option("DiagViB-6 datasets: "),
    textures: Path = textures_option("DiagViB-6 datasets: "),
    first_seed: int = typer.Option(0, help="Run r trains with seed first_seed + r."),
    backend: str = typer.Option("serial", help="serial | processes | ray | slurm."),
    workers: int = typer.Option(None, help="Parallel jobs for the processes/ray backends."),
    device: str = typer.Option("auto", help="auto | cpu | cuda."),
    out: Path = typer.Option(..., "--out", help="Run folder (one sub-folder per run)."),
) -> None:
    """Train every algorithm RUNS times on every dataset, evaluating every epoch on every test set.

    Resumable: finished runs are skipped. Afterwards `shortcutlab biasbed report OUT` applies the
    model-selection rules and the Friedman / Iman-Davenport / Nemenyi comparison.
    """
    from rich.console import Console

    from shortcutlab.biasbed.datasets import FolderExperiment, parse_test_dirs
    from shortcutlab.biasbed.protocol import (
        ProtocolError,
        build_protocol_jobs,
        parse_hparams,
        run_protocol,
    )
    from shortcutlab.runner.backends import describe_failures
    from shortcutlab.utils.device import resolve_device

    resolve_device(device)
    datasets: list[str | FolderExperiment] = list(dataset or [])
    folder_given = any(v is not None for v in (train_dir, val_dir)) or bool(test_dir)
    if folder_given:
        if train_dir is None or val_dir is None or not test_dir:
            raise ProtocolError(
                "an image-folder dataset needs --train-dir, --val-dir and at least one "
                "--test-dir NAME=DIR"
            )
        datasets.append(
            FolderExperiment(
                train_dir=train_dir,
                val_dir=val_dir,
                test_dirs=parse_test_dirs(test_dir),
                class_map=class_map,
                image_size=image_size,
            )
        )
    elif class_map is not None:
        raise ProtocolError("--class-map applies to image folders; give --train-dir too")
    planned = build_protocol_jobs(
        algorithm,
        datasets,
        runs,
        epochs,
        model=model,
        scale=scale,
        first_seed=first_seed,
        batch_size=batch_size,
        lr=lr,
        hparams=parse_hparams(hparam or []),
        dataset_names=[name],
        mnist=mnist,
        textures=textures,
    )
    console = Console()
    console.print(
        f"{len(planned)} runs ({len(algorithm)} algorithms x {len(datasets)} datasets "
        f"x {runs} runs) -> {out}"
    )
    summary = run_protocol(planned, out, backend=backend, workers=workers, device=device)
    console.print(
        f"done {len(summary.done)}, skipped {len(summary.skipped)} (already done), failed "
        f"{len(summary.failed)} in {summary.seconds:.1f} s"
    )
    for line in describe_failures(summary, out):
        console.print(f"[red]failed[/red] {line}")
    if summary.failed:
        raise typer.Exit(1)


@app.command()
@clean_errors
def report(
    run_dir: Path = typer.Argument(..., help="Run folder written by `biasbed run`."),
    out: Path = typer.Option(Path("report"), "--out", help="Folder for the report files."),
    rule: str = typer.Option(
        "best_validation",
        help="Selection rule for the comparison: best_validation | last_n | "
        "best_epoch (the oracle, cherry-picking).",
    ),
    last_n: int = typer.Option(None, help="Epochs averaged by last_n (default: last 30%)."),
    alpha: float = typer.Option(0.05, help="Significance level."),
) -> None:
    """Write the BiasBed report of RUN_DIR: selection rules side by side, curves, statistics.

    Files: biasbed.html, epochs.csv, selection.csv and (with >= 2 algorithms and >= 2 test sets)
    comparison.json/.tex/_scores.csv/_ranks.csv/_nemenyi.csv/_cd_diagram.png.
    """
    from rich.console import Console

    from shortcutlab.biasbed.report import write_report
    from shortcutlab.errors import StatsError, unknown_choice
    from shortcutlab.stats.selection import RULES

    if rule not in RULES:
        raise StatsError(unknown_choice("selection rule", rule, RULES))
    for path in write_report(run_dir, out, rule=rule, n_last=last_n, alpha=alpha):
        Console().print(f"wrote {path}")
