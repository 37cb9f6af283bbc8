"""``shortcutlab biasbed run`` and ``report``: the BiasBed multi-run protocol from the shell."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer

from shortcutlab.cli.options import (
    BackendOptions,
    backend_options,
    check_statistics,
    df_option,
    mnist_option,
    nemenyi_clip_option,
    nemenyi_option,
    no_tie_correction_option,
    textures_option,
)
from shortcutlab.cli.output import json_option, print_json


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
        "--protocol biasbed), imagenet (torchvision's crop at --image-size) or resize (shorter "
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
    name: str = typer.Option("folders", help="Name of the image-folder dataset in tables."),
    image_size: int = typer.Option(
        None, min=1, help="Image-folder images are resized/cropped to this (256 with --preprocess "
        "biasbed, else 224)."
    ),
    seeds: list[int] = typer.Option(
        None, "--seeds", help="Training seed (repeatable); one run each. Default 0-9 (BiasBed's "
        "ten runs) with --protocol biasbed, else 0, 1, 2."
    ),
    protocol: str = typer.Option(
        None,
        help="Training recipe preset: paper, demo or biasbed (SGD momentum 0.9, wd 1e-4, "
        "batch 128, 100 epochs, lr /10 at 30/60/90, lr 0.2; 1e-4 for erm and sagnet). "
        "Without it: Adam, 10 epochs, batch 64, lr 1e-3.",
    ),
    epochs: int = typer.Option(None, min=1, help="Epochs per run (no early stopping)."),
    model: str = typer.Option("small_cnn", help="Registered model name."),
    batch_size: int = typer.Option(None, min=1, help="Training batch size."),
    lr: float = typer.Option(None, callback=_positive,
                             help="Learning rate (Adam, or SGD with --protocol biasbed)."),
    pretrained: Path = typer.Option(
        None, help="Local weights file (state dict) every run starts from, e.g. ImageNet."
    ),
    hparam: list[str] = typer.Option(
        None, "--hparam", help="Algorithm hyper-parameter ALGORITHM:KEY=VALUE, e.g. padain:p=0.1."
    ),
    scale: float = typer.Option(0.01, callback=_positive,
                                help="DiagViB-6 dataset size relative to the paper's."),
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
    from typing import get_args

    from shortcutlab.biasbed.datasets import FolderExperiment, parse_test_dirs
    from shortcutlab.biasbed.protocol import (
        ProtocolError,
        ProtocolSettings,
        build_protocol_jobs,
        parse_hparams,
        run_protocol,
    )
    from shortcutlab.errors import unknown_choice
    from shortcutlab.runner.backends import describe_failures
    from shortcutlab.train.config import PROTOCOLS, Precision
    from shortcutlab.train.trainer import check_precision
    from shortcutlab.utils.console import PlainConsole, styled
    from shortcutlab.utils.device import resolve_device

    resolved = resolve_device(device)
    if protocol is not None and protocol not in PROTOCOLS:
        raise ProtocolError(unknown_choice("--protocol", protocol, tuple(PROTOCOLS)))
    if precision is not None and precision not in get_args(Precision):
        raise ProtocolError(unknown_choice("--precision", precision, get_args(Precision)))
    if precision is not None and run_on.backend != "slurm":  # SLURM jobs resolve their own device
        check_precision(precision, resolved)
    seeds = list(seeds or (range(10) if protocol == "biasbed" else (0, 1, 2)))
    folder_options = {"preprocess": preprocess, "image_size": image_size}  # as given
    preprocess = preprocess or ("biasbed" if protocol == "biasbed" else "resize")
    image_size = image_size or (256 if preprocess == "biasbed" else 224)
    if protocol is None:  # the fast defaults (a given value, even a bad one, is kept)
        epochs = 10 if epochs is None else epochs
        batch_size = 64 if batch_size is None else batch_size
        lr = 1e-3 if lr is None else lr
    datasets: list[str | FolderExperiment] = list(dataset or [])
    names: list[str] = []
    folder_given = bool(train_dir) or bool(val_dir) or bool(test_dir)
    if folder_given:
        if not train_dir or not val_dir or not test_dir:
            raise ProtocolError(
                "an image-folder dataset needs --train-dir, --val-dir and at least one "
                "--test-dir NAME=DIR"
            )
        trains, vals = _named_dirs(train_dir, name, "--train-dir"), _named_dirs(
            val_dir, name, "--val-dir"
        )
        if list(trains) != list(vals):
            raise ProtocolError(
                f"--train-dir names {list(trains)} and --val-dir names {list(vals)} must match"
            )
        tests = parse_test_dirs(test_dir)
        heads = _pairs(test_head or [], "--test-head", "NAME=HEAD")
        marks = _pairs(in_distribution or [], "--in-distribution", "DATASET=TESTSET")
        for label in marks:
            if label not in trains:
                choices = list(trains)
                raise ProtocolError(unknown_choice("--in-distribution dataset", label, choices))
        for label, root in trains.items():
            datasets.append(
                FolderExperiment(
                    train_dir=root,
                    val_dir=vals[label],
                    test_dirs=tests,
                    class_map=class_map,
                    image_size=image_size,
                    label_space_kind=label_space,
                    preprocess=preprocess,
                    test_heads={k: v[0] for k, v in heads.items()},
                    in_distribution=tuple(marks.get(label, [])),
                    metric=metric,
                )
            )
            names.append(label)
    else:
        _refuse_folder_options(class_map=class_map, test_head=test_head,
                               in_distribution=in_distribution, label_space=label_space,
                               **folder_options)
    _check_dataset_samples(datasets)
    settings = ProtocolSettings(
        tuple(algorithm), seeds=tuple(seeds), epochs=epochs, model=model,
        batch_size=batch_size, lr=lr, protocol=protocol, pretrained=pretrained,
        precision=precision, hparams=parse_hparams(hparam or []), scale=scale, mnist=mnist,
        textures=textures,
    )
    planned = build_protocol_jobs(datasets, settings, dataset_names=names or [name])
    planned = [replace(p, job=run_on.apply_threads(p.job)) for p in planned]
    console = PlainConsole(stderr=as_json)
    console.print(
        f"{len(planned)} runs ({len(algorithm)} algorithms x {len(datasets)} datasets "
        f"x {len(seeds)} runs, seeds {', '.join(map(str, seeds))}) -> {out}"
    )
    for line in dict.fromkeys(p.settings() for p in planned):
        console.print(f"  {line}")
    console.print(f"backend {run_on.backend}")
    summary = run_protocol(planned, out, device=device, **run_on.run_kwargs())
    console.print(
        f"done {len(summary.done)}, skipped {len(summary.skipped)} (already done), failed "
        f"{len(summary.failed)} in {summary.seconds:.1f} s"
    )
    if as_json:
        print_json({"runs": len(planned), "done": len(summary.done),
                    "skipped": len(summary.skipped), "failed": len(summary.failed),
                    "out": str(out)})
    for line in describe_failures(summary, out):
        console.print(styled("failed", "red", f" {line}"))
    if summary.failed:
        raise typer.Exit(1)


def _named_dirs(items: list[str], default: str, option: str) -> dict[str, Path]:
    """``DIR`` (named ``default``) or ``NAME=DIR`` items, in order; names unique."""
    from shortcutlab.biasbed.protocol import ProtocolError

    out: dict[str, Path] = {}
    for item in items:
        label, sep, root = item.partition("=")
        label, root = (label.strip(), root.strip()) if sep else (default, item)
        if not label or not root:
            raise ProtocolError(f"{option} expects DIR or NAME=DIR, got {item!r}")
        if label in out:
            raise ProtocolError(f"{option}: name {label!r} is given twice (use NAME=DIR)")
        out[label] = Path(root)
    return out


def _pairs(items: list[str], option: str, form: str) -> dict[str, list[str]]:
    from shortcutlab.biasbed.protocol import ProtocolError

    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ProtocolError(f"{option} expects {form}, got {item!r}")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


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

    Files: index.html, epochs.csv, selection.csv and (with >= 2 algorithms and >= 2 test sets)
    comparison.json/.tex/_scores.csv/_ranks.csv/_nemenyi.csv/_cd_diagram.png.
    """
    from shortcutlab.biasbed.protocol import COMPARE_BY
    from shortcutlab.biasbed.report import write_report
    from shortcutlab.errors import StatsError, unknown_choice
    from shortcutlab.stats.selection import RULES
    from shortcutlab.utils.console import PlainConsole

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


_FOLDER_DEFAULTS = {"label_space": "map"}


def _refuse_folder_options(**given: object) -> None:
    """Refuse the image-folder options a DiagViB-6-only run would silently ignore."""
    from shortcutlab.biasbed.protocol import ProtocolError

    for key, value in given.items():
        if value in (None, []) or _FOLDER_DEFAULTS.get(key, object()) == value:
            continue
        flag = "--" + key.replace("_", "-")
        raise ProtocolError(f"{flag} applies to image-folder datasets only and would be "
                            "ignored here; give --train-dir/--val-dir/--test-dir too, or drop it")


def _check_dataset_samples(datasets: Sequence[object]) -> None:
    """Refuse ``diagvib:`` datasets whose sample id is outside the benchmark's five."""
    from shortcutlab.biasbed.datasets import parse_dataset
    from shortcutlab.biasbed.protocol import ProtocolError
    from shortcutlab.diagvib.studies import DEFAULT_SAMPLES, parse_experiment_name

    for dataset in datasets:
        if isinstance(dataset, str):
            sample = parse_experiment_name(parse_dataset(dataset))[3]
            if not 0 <= sample < DEFAULT_SAMPLES:
                raise ProtocolError(f"unknown dataset sample {sample} in --dataset {dataset}; "
                                    f"valid choices: "
                                    f"{', '.join(map(str, range(DEFAULT_SAMPLES)))}")
