"""``shortcutlab biasbed run``, ``report``, ``stylize`` and ``samples``: BiasBed from the shell."""

from __future__ import annotations

from pathlib import Path

import typer

from shortcutlab.cli.options import (
    BackendOptions,
    backend_options,
    check_hyperparameters,
    check_statistics,
    df_option,
    former_preset_option,
    merge_preset_options,
    mnist_option,
    nemenyi_clip_option,
    nemenyi_option,
    no_tie_correction_option,
    preset_option,
    textures_option,
)
from shortcutlab.cli.output import json_option, print_json
from shortcutlab.errors import ProtocolError

#: the size of `biasbed run`'s DiagViB-6 datasets relative to the paper's unless --scale says
DIAGVIB_SCALE = 0.01


def _positive(value: float | None) -> float | None:
    """Refuse 0 and negative values of a float option that must be > 0 (None: not given)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value} is not in the range x>0")
    return value


app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.command(short_help="Train every algorithm several times on every dataset.")
@backend_options
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
    train_dir: list[str] = typer.Option(
        None,
        "--train-dir",
        help="Image folder for training (<dir>/<class>/*), or NAME=DIR; repeat NAME=DIR for "
        "several training sets scored on the same test sets (each (algorithm, training set) "
        "is then one competitor, e.g. stylized=/data/sin/train).",
    ),
    val_dir: list[str] = typer.Option(
        None,
        "--val-dir",
        help="Image folder for validation (training distribution; used by the best-validation "
        "rule), or NAME=DIR matching a --train-dir NAME.",
    ),
    test_dir: list[str] = typer.Option(
        None, "--test-dir", help="Test image folder as NAME=DIR; repeat for several."
    ),
    test_head: list[str] = typer.Option(
        None,
        "--test-head",
        help="With --label-space imagenet1k: NAME=HEAD, how test set NAME is scored "
        "(imagenet1k | imagenet16 | imagenet-a | imagenet-r); default: detected from its "
        "class folders.",
    ),
    in_distribution: list[str] = typer.Option(
        None,
        "--in-distribution",
        help="DATASET=TESTSET: TESTSET was made like training set DATASET's data (e.g. "
        "stylized=stylized-imagenet); `biasbed report --strict` leaves such test sets out.",
    ),
    label_space: str = typer.Option(
        "map",
        help="map (class map / training classes) or imagenet1k (BiasBed: 1000-class models, "
        "16-class test sets by logit averaging, ImageNet-A/R by their 200 classes).",
    ),
    preprocess: str = typer.Option(
        None,
        help="biasbed (the authors': 256 px RandomResizedCrop scale (0.5, 1) ratio (0.8, 1) + "
        "flip; centre 224/256 at 256 px, 16-class sets resize 256 crop 224; the default with "
        "--preset biasbed), imagenet (torchvision's crop at --image-size) or resize (shorter "
        "side, centre crop; the default otherwise).",
    ),
    metric: str = typer.Option(
        "auto",
        help="Test-set accuracy: top1 (BiasBed's), mean_per_class, or auto (top1 with "
        "--label-space imagenet1k, else mean_per_class).",
    ),
    precision: str = typer.Option(
        None, help="fp32, bf16 (bfloat16 autocast) or fp16 (float16 autocast with a gradient "
        "scaler, the authors' setting).",
    ),
    class_map: Path = typer.Option(
        None,
        help="CSV (source,target) or JSON mapping folder class names to labels, "
        "e.g. 1000 ImageNet ids to 16 classes.",
    ),
    name: str = typer.Option(None, help="Name of the image-folder dataset in tables, for a "
                             "--train-dir/--val-dir given as DIR (default: folders)."),
    image_size: int = typer.Option(
        None, min=1, help="Image-folder images are resized/cropped to this (256 with --preprocess "
        "biasbed, else 224)."
    ),
    seeds: list[int] = typer.Option(
        None, "--seeds", help="Training seed (repeatable); one run each. Default 0-9 (BiasBed's "
        "ten runs) with --preset biasbed, else 0, 1, 2."
    ),
    preset: str = preset_option(
        "biasbed (SGD momentum 0.9, wd 1e-4, batch 128, 100 epochs, lr /10 at 30/60/90, lr "
        "0.2; 1e-4 for erm and sagnet); without it the neutral default (Adam lr 1e-3, batch "
        "64) for 10 epochs"),
    protocol: str = former_preset_option(),
    epochs: int = typer.Option(None, min=1, help="Epochs per run (no early stopping)."),
    model: str = typer.Option("small_cnn", help="A registered name, timm:<arch>, "
                              "torchvision:<arch> or module:factory (shortcutlab models)."),
    batch_size: int = typer.Option(None, min=1, help="Training batch size."),
    lr: float = typer.Option(None, callback=_positive,
                             help="Learning rate (Adam, or SGD with --preset biasbed)."),
    pretrained: Path = typer.Option(
        None, help="Local weights file (state dict) every run starts from, e.g. ImageNet."
    ),
    hparam: list[str] = typer.Option(
        None, "--hparam", help="Algorithm hyper-parameter ALGORITHM:KEY=VALUE, e.g. padain:p=0.1."
    ),
    scale: float = typer.Option(None, callback=_positive, show_default=False,
                                help="DiagViB-6 dataset size relative to the paper's "
                                f"[default: {DIAGVIB_SCALE:g}]."),
    mnist: Path = mnist_option("DiagViB-6 datasets: "),
    textures: Path = textures_option("DiagViB-6 datasets: "),
    run_on: BackendOptions = BackendOptions(),  # the backend options
    device: str = typer.Option("auto", help="auto | cpu | cuda."),
    out: Path = typer.Option(..., "--out", help="Run folder (one sub-folder per run)."),
    as_json: bool = json_option("Print the run counts as one JSON object on stdout; progress "
                                "and messages go to stderr."),
) -> None:
    """Train every algorithm RUNS times on every dataset, evaluating every epoch on every test set.

    Resumable: finished runs are skipped. Afterwards `shortcutlab biasbed report OUT` applies the
    model-selection rules and the Friedman / Iman-Davenport / Nemenyi comparison.
    """
    from dataclasses import replace

    from shortcutlab.biasbed.protocol import parse_hparams, plan_from_options, run_protocol
    from shortcutlab.biasbed.samples import folder_name
    from shortcutlab.runner.runs import JobTableError, RunInterrupted, describe_failures
    from shortcutlab.train.precision import check_precision
    from shortcutlab.utils.console import PlainConsole, styled

    if scale is not None and not dataset:
        raise ProtocolError("--scale applies to DiagViB-6 datasets only and would be ignored "
                            "here; give --dataset diagvib:... too, or drop it")
    resolved = run_on.check_device(device)  # None where SLURM or a Ray cluster runs the jobs
    planned, settings = plan_from_options(
        algorithm, dataset or [], folders={
            "train_dirs": train_dir or [], "val_dirs": val_dir or [], "test_dirs": test_dir or [],
            "name": folder_name(name, train_dir or [], val_dir or []),
            "test_heads": test_head or [], "in_distribution": in_distribution or [],
            "class_map": class_map, "image_size": image_size, "label_space": label_space,
            "preprocess": preprocess, "metric": metric},
        preset=merge_preset_options(preset, protocol), seeds=tuple(seeds) if seeds else None,
        epochs=epochs, model=model, batch_size=batch_size, lr=lr, pretrained=pretrained,
        precision=precision, hparams=parse_hparams(hparam or []),
        scale=DIAGVIB_SCALE if scale is None else scale, mnist=mnist,
        textures=textures)
    if precision is not None and resolved is not None:  # remote jobs resolve their own device
        check_precision(precision, resolved)
    planned = [replace(p, job=run_on.apply_threads(p.job)) for p in planned]
    check_hyperparameters(p.job.train for p in planned)  # before protocol.json is written
    run_on.check()  # an unknown or unavailable backend, before protocol.json is written
    runs, datasets = settings.run_seeds(), dict.fromkeys(p.dataset for p in planned)
    console = PlainConsole(stderr=as_json)
    console.print(
        f"{len(planned)} runs ({len(algorithm)} algorithms x {len(datasets)} datasets "
        f"x {len(runs)} runs, seeds {', '.join(map(str, runs))}) -> {out}"
    )
    for line in dict.fromkeys(p.settings() for p in planned):
        console.print(f"  {line}")
    console.print(f"backend {run_on.backend}")
    table_problem = ""
    try:
        summary = run_protocol(planned, out, device=device, **run_on.run_kwargs())
    except RunInterrupted as exc:  # one line: what finished, what did not
        typer.echo(str(exc), err=True)
        raise typer.Exit(130) from None
    except JobTableError as exc:  # the runs ended: report them first, the table after
        summary, table_problem = exc.summary, str(exc)
    console.print(
        f"done {len(summary.done)}, skipped {len(summary.skipped)} (already done), failed "
        f"{len(summary.failed)} in {summary.seconds:.1f} s"
    )
    if as_json:
        print_json({"runs": len(planned), "done": len(summary.done),
                    "skipped": len(summary.skipped), "failed": len(summary.failed),
                    "out": str(out), **({"table_error": table_problem} if table_problem
                                         else {})})
    for line in describe_failures(summary, out):
        console.print(styled("failed", "red", f" {line}"))
    if table_problem:
        typer.echo(f"Error: {table_problem}", err=True)
    if summary.failed:
        raise typer.Exit(1)
    if table_problem:
        raise typer.Exit(2)  # as any other file the disk refuses


@app.command(short_help="Build Stylized ImageNet with AdaIN from local files.")
def stylize(
    content_dir: Path = typer.Argument(..., help="ImageNet split: <dir>/<wnid>/<images>."),
    style_dir: Path = typer.Argument(..., help="Folder of style images (paintings)."),
    out: Path = typer.Option(..., "--out", help="Output folder (<wnid>/<image>.png)."),
    vgg_weights: Path = typer.Option(..., help="AdaIN encoder: local vgg_normalised.pth."),
    decoder_weights: Path = typer.Option(..., help="AdaIN decoder: local decoder.pth."),
    size: int = typer.Option(224, help="Content crop and style size (the authors' 224)."),
    alpha: float = typer.Option(1.0, help="AdaIN strength (Stylized ImageNet: 1.0)."),
    seed: int = typer.Option(0, min=0, help="Seed of the style assignment."),
    batch_size: int = typer.Option(16, help="Images per AdaIN batch."),
    device: str = typer.Option("auto", help="auto | cpu | cuda."),
    as_json: bool = json_option("Print the counts (written, skipped, style images used and left "
                                "out) as one JSON object on stdout."),
) -> None:
    """Build Stylized ImageNet from a local ImageNet split, style images and the AdaIN weights.

    Resumable: images already written are skipped. Run once for train and once for val.
    """
    from shortcutlab.biasbed.stylize import stylize_folder
    from shortcutlab.utils.console import PlainConsole
    from shortcutlab.utils.device import resolve_device

    summary = stylize_folder(
        content_dir, style_dir, out, vgg_weights, decoder_weights, size=size, alpha=alpha,
        seed=seed, batch_size=batch_size, device=resolve_device(device),
    )
    PlainConsole(stderr=True).print(
        f"wrote {summary.written}, skipped {summary.skipped} (already there); "
        f"{summary.styles} style images, {summary.styles_too_small} left out (too small)"
    )
    if as_json:
        print_json({"written": summary.written, "skipped": summary.skipped,
                    "styles": summary.styles, "styles_too_small": summary.styles_too_small})


@app.command(short_help="Draw sample images of every dataset folder (paper Fig. 1).")
def samples(
    test_dir: list[str] = typer.Option(
        None, "--test-dir", help="Test image folder as NAME=DIR; repeat for several."
    ),
    train_dir: list[str] = typer.Option(
        None, "--train-dir", help="Training image folder (<dir>/<class>/*), or NAME=DIR; "
        "repeatable, as for `biasbed run`."
    ),
    val_dir: list[str] = typer.Option(
        None, "--val-dir", help="Validation image folder, or NAME=DIR; repeatable."
    ),
    name: str = typer.Option(None, help="Name of a --train-dir/--val-dir given as DIR "
                             "(default: folders)."),
    per_set: int = typer.Option(6, help="Images drawn per folder (1-32)."),
    seed: int = typer.Option(0, min=0, help="Seed of the draw: the same seed, the same files."),
    size: int = typer.Option(128, help="Pixels per image side (resized, "
                             "centre-cropped; 16-512)."),
    out: Path = typer.Option(..., "--out", help="Figure file (.png, .pdf or .svg; PNG without "
                             "a suffix) in an existing folder."),
    as_json: bool = json_option("Print the chosen files of every folder (role, name, dir, "
                                "images, classes, files with their class) as one JSON object "
                                "on stdout."),
) -> None:
    """Draw PER_SET random images of every folder, one row per folder, each captioned with its
    class folder: BiasBed's Figure 1 from your data, and a check that each folder holds what its
    name says before the runs. Folders are named and read as `biasbed run` reads them.
    """
    from shortcutlab.biasbed.samples import check_figure_path, draw_samples, sample_sets
    from shortcutlab.utils.console import PlainConsole

    check_figure_path(out)  # a bad --out is refused before the folders are read
    sets = sample_sets(train_dir or [], val_dir or [], test_dir or [], name=name,
                       per_set=per_set, seed=seed, size=size)
    draw_samples(sets, out)
    PlainConsole(stderr=as_json).print(
        f"wrote {len(sets)} rows of up to {per_set} images (seed {seed}) to {out}")
    if as_json:
        print_json({"out": str(out), "seed": seed, "per_set": per_set, "size": size,
                    "sets": [s.to_dict() for s in sets]})


@app.command(short_help="Write the BiasBed report: selection rules and statistics.")
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
    compare_by: str = typer.Option(
        "auto",
        help="competitor: (algorithm, training set) pairs over the test sets; dataset: "
        "algorithms over (dataset, test set) blocks; auto: competitor when the training sets "
        "share their test sets.",
    ),
    strict: bool = typer.Option(
        False, help="BiasBed's strict setting: leave out test sets marked --in-distribution."
    ),
    df: str = df_option(),
    nemenyi_clip: bool = nemenyi_clip_option(),
    nemenyi: str = nemenyi_option(),
    no_tie_correction: bool = no_tie_correction_option(),
    as_json: bool = json_option("Print the selected scores (selection.csv's rows) and the "
                                "comparison (comparison.json) as one JSON object on stdout."),
) -> None:
    """Write the BiasBed report of RUN_DIR: selection rules side by side, curves, statistics.

    Files: index.html, epochs.csv, selection.csv, competitors.csv and (with >= 2
    algorithms and >= 2 test sets)
    comparison.json/.tex/_scores.csv/_ranks.csv/_nemenyi.csv/_cd_diagram.png.
    """
    from shortcutlab.biasbed.protocol import COMPARE_BY
    from shortcutlab.biasbed.report import check_alpha, write_report
    from shortcutlab.errors import StatsError, unknown_choice
    from shortcutlab.stats.selection import RULES
    from shortcutlab.utils.console import PlainConsole

    check_alpha(alpha)
    if rule not in RULES:
        raise StatsError(unknown_choice("selection rule", rule, RULES))
    if compare_by not in COMPARE_BY:
        raise StatsError(unknown_choice("--compare-by", compare_by, COMPARE_BY))
    check_statistics(df, nemenyi)
    written = write_report(
        run_dir, out, rule=rule, n_last=last_n, alpha=alpha, compare_by=compare_by,
        strict=strict, df=df, nemenyi_clip=nemenyi_clip, nemenyi_method=nemenyi,
        tie_correction=not no_tie_correction,
    )
    for path in written:
        PlainConsole(stderr=as_json).print(f"wrote {path}")
    if as_json:
        import json

        import pandas as pd

        comparison = out / "comparison.json"
        print_json({
            "selection": pd.read_csv(out / "selection.csv").to_dict("records"),
            "comparison": (json.loads(comparison.read_text(encoding="utf-8"))
                           if comparison in written else None),
            "files": [str(p) for p in written],
        })
