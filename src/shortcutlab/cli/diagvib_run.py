"""``shortcutlab diagvib run`` and ``collect``: train a model on the benchmark, tabulate jobs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from shortcutlab.cli.options import (
    BackendOptions,
    backend_options,
    former_preset_option,
    merge_preset_options,
    mnist_option,
    pairs_option,
    preset_option,
    samples_option,
    seeds_option,
    selection_option,
    textures_option,
)
from shortcutlab.cli.output import json_option, print_json

#: `diagvib run`'s dataset size relative to the paper's unless --scale or --specs says
DEMO_SCALE = 0.01

if TYPE_CHECKING:
    from shortcutlab.diagvib.presets import Head
    from shortcutlab.diagvib.spec import Selection


@backend_options
def run(
    model: str = typer.Option(
        ..., "--model", help="A registered name, timm:<arch>, torchvision:<arch> or "
        "module:factory (list them: shortcutlab models)."
    ),
    study: list[str] = typer.Option(..., "--study", help="Study to run; repeat for several."),
    pairs: list[str] = pairs_option(),
    samples: list[int] = samples_option([0]),
    seeds: list[int] = seeds_option(),
    scale: float = typer.Option(
        None, show_default=False, help="Dataset size relative to the paper's (1.0 = full) "
        f"[default: {DEMO_SCALE:g}; with --specs: the scale they were written at]."),
    benchmark_seed: int = typer.Option(
        None, show_default=False, help="Seed selecting the classes of each sample [default: 0; "
        "with --specs: the seed they were written with]."),
    selection: str = selection_option("--benchmark-seed"),
    specs: Path = typer.Option(
        None, help="Use the exact specs of a folder written by `diagvib studies --out`."
    ),
    mnist: Path = mnist_option(),
    textures: Path = textures_option(),
    preset: str = preset_option("paper (the authors' ResNet-18 recipe, the default), demo "
                                "(fast CPU settings)"),
    protocol: str = former_preset_option(),
    config: Path = typer.Option(None, help="YAML/JSON training config; options below override."),
    algorithm: str = typer.Option(None, help="Training algorithm (default erm)."),
    epochs: int = typer.Option(None, help="Maximum epochs (early stopping on val loss)."),
    lr: float = typer.Option(None, help="Adam learning rate."),
    batch_size: int = typer.Option(None, help="Training batch size."),
    patience: int = typer.Option(None, help="Early-stopping patience in epochs."),
    pretrained: Path = typer.Option(None, help="Local weights file (state dict)."),
    freeze_backbone: bool = typer.Option(None, help="Train only the classifier head."),
    head: str = typer.Option(
        None, "--head", help="Classifier outputs: full (one per class of the predicted factor, "
        "the authors' networks; paper preset default) or selected (the 3 selected classes; "
        "demo default). Part of the job id."
    ),
    normalization: str = typer.Option(
        None, help="Input statistics: train (paper default, every model), imagenet, auto "
        "(imagenet for rn50_in) or none."
    ),
    frozen_batchnorm: str = typer.Option(
        None, "--frozen-batchnorm", help="BatchNorm of a frozen backbone (rn50_in) while "
        "training: train (paper default, the authors' fixed=True) or eval."
    ),
    budget_seconds: float = typer.Option(
        None, "--budget-seconds", min=0, help="Start no new job after this many seconds and "
        "stop cleanly; the same command goes on with the rest."
    ),
    run_on: BackendOptions = BackendOptions(),  # the backend options
    device: str = typer.Option("auto", help="auto | cpu | cuda."),
    cuda_graphs: str = typer.Option(
        "auto", "--cuda-graphs", help="auto: on CUDA, run the training step as one CUDA graph "
        "where it is safe (ERM, fixed batch shape, Adam, fp32/bf16; the job's step_mode says "
        "why not otherwise); off: always eager. Not part of the job id."),
    compile_network: bool = typer.Option(
        False, "--compile", help="torch.compile the network (measure before use: it must earn "
        "its compile time back). Not part of the job id."),
    out: Path = typer.Option(..., "--out", help="Run folder (one sub-folder per job)."),
    as_json: bool = json_option("Print the run summary as one JSON object (job counts, table)."),
) -> None:
    """Train MODEL on DiagViB-6 experiments; resumable: jobs already done are skipped.

    Each job (experiment, training seed, config) gets <out>/<hash>/ with job.json, result.json,
    epochs.parquet and a `done` marker; failed jobs leave error.txt and are retried next time,
    and jobs whose files cannot be read are moved aside and run again. Several runs on one
    folder share the work (a job is claimed while it runs). At the end the job table is written
    to <out>/jobs.csv and jobs.parquet.
    """
    from shortcutlab.cli.options import check_hyperparameters
    from shortcutlab.diagvib.jobs import DiagvibParams, build_jobs
    from shortcutlab.diagvib.presets import DIAGVIB_PRESET
    from shortcutlab.runner.runs import (
        JobTableError,
        RunInterrupted,
        describe_failures,
        run_jobs,
    )
    from shortcutlab.train.config import TrainConfig
    from shortcutlab.train.runtime import check_cuda_graphs, runtime_options
    from shortcutlab.utils.console import PlainConsole, styled

    run_on.check_device(device)  # only the name where SLURM or a Ray cluster runs the jobs
    check_cuda_graphs(cuda_graphs)
    run_kwargs = run_on.run_kwargs()  # checks --mps and --jobs-per-gpu before any work
    base = TrainConfig.from_sources(
        config, merge_preset_options(preset, protocol), base_preset=DIAGVIB_PRESET,
        model=model, algorithm=algorithm, epochs=epochs, lr=lr, batch_size=batch_size,
        patience=patience,
        freeze_backbone=freeze_backbone, normalization=normalization,
        frozen_batchnorm=frozen_batchnorm, pretrained=pretrained)
    if scale is None and specs is None:
        scale = DEMO_SCALE
    jobs = build_jobs(model, study, pairs or None, samples, seeds, scale, base,  # checks
                      benchmark_seed=benchmark_seed, selection=cast("Selection", selection),
                      specs_dir=specs, mnist=mnist, textures=textures,
                      head=cast("Head | None", head))
    jobs = [run_on.apply_threads(job) for job in jobs]
    check_hyperparameters(job.train for job in jobs)  # before any job.json is written
    run_on.check()  # an unknown or unavailable backend, before anything is written
    console = PlainConsole(stderr=True)
    described = jobs[0].train.describe_preset() if jobs else base.describe_preset()
    params = DiagvibParams.of(jobs[0]) if jobs else None
    console.print(f"{len(jobs)} jobs of {model} in {out} (preset {described}, head "
                  f"{params.head if params else head}, scale "
                  f"{params.scale if params else scale:g}, backend {run_on.backend})")
    table_problem = ""
    try:
        with runtime_options(cuda_graphs=cuda_graphs, compile=compile_network):
            summary = run_jobs(jobs, out, device=device, budget_seconds=budget_seconds,
                               **run_kwargs)
    except RunInterrupted as exc:  # one line: what finished, what did not
        typer.echo(str(exc), err=True)
        raise typer.Exit(130) from None
    except JobTableError as exc:  # the jobs ran: report them first, the table after
        summary, table_problem = exc.summary, str(exc)
    for outcome in summary.notes:
        console.print(styled("note", "yellow", f" {outcome.job_id}: {outcome.note}"),
                      highlight=False, soft_wrap=True)
    console.print(
        f"done {len(summary.done)}, already done {len(summary.skipped)}, "
        f"failed {len(summary.failed)} in {summary.seconds:.0f} s; table: "
        f"{'not written' if table_problem else out / 'jobs.csv'}"
    )
    if summary.remaining:
        console.print(f"time budget spent: {len(summary.remaining)} jobs remain; run the same "
                      "command again to go on")
    if as_json:
        print_json({"jobs": len(jobs), "done": len(summary.done),
                    "skipped": len(summary.skipped), "failed": len(summary.failed),
                    "remaining": len(summary.remaining),
                    "table": None if table_problem else str(out / "jobs.csv"),
                    **({"table_error": table_problem} if table_problem else {})})
    for line in describe_failures(summary, out):
        console.print(styled("failed", "red", f" {line}"))
    if table_problem:
        typer.echo(f"Error: {table_problem}", err=True)
    if summary.failed:
        typer.echo(f"Error: {len(summary.failed)} of {len(jobs)} jobs failed; rerun the same "
                   "command to retry them", err=True)
        raise typer.Exit(1)  # a finished run with failed jobs, not bad input (2)
    if table_problem:
        raise typer.Exit(2)  # as any other file the disk refuses


def collect(
    run_dir: Path = typer.Argument(..., help="Run folder written by `diagvib run`."),
    out: Path = typer.Option(None, help="Output stem (writes .csv and .parquet); default "
                             "<run_dir>/jobs."),
    as_json: bool = json_option("Print the job counts and table paths as one JSON object."),
) -> None:
    """Write one tidy table of all jobs in RUN_DIR (CSV and Parquet) and print a summary."""
    from shortcutlab.diagvib.jobs import collect_jobs
    from shortcutlab.runner.collect import write_table
    from shortcutlab.utils.console import PlainConsole

    table = collect_jobs(run_dir)
    csv_path, parquet_path = write_table(run_dir, out, table=table)
    counts = table["status"].value_counts().to_dict()
    skipped = table.attrs.get("skipped", [])
    if as_json:
        print_json({"jobs": len(table), "status": counts, "unreadable": len(skipped),
                    "csv": str(csv_path), "parquet": str(parquet_path)})
        return
    unreadable = f", {len(skipped)} unreadable skipped" if skipped else ""
    PlainConsole().print(
        f"{len(table)} jobs ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}"
        f"{unreadable}); wrote {csv_path} and {parquet_path}", highlight=False, soft_wrap=True
    )


def register(app: typer.Typer) -> None:
    app.command("run", short_help="Train a model on DiagViB-6 experiments (resumable).")(run)
    app.command("collect", short_help="Write one table of all jobs of a run folder.")(collect)
