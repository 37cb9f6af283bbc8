"""``shortcutlab diagvib studies``, ``study-figures`` and ``export``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from shortcutlab.cli.options import (
    check_samples,
    equalize_textures_option,
    mnist_option,
    pairs_option,
    samples_option,
    selection_option,
    textures_option,
)
from shortcutlab.cli.output import json_option, print_json
from shortcutlab.utils.console import PlainConsole

if TYPE_CHECKING:
    from shortcutlab.diagvib.dataset import ExportFormat
    from shortcutlab.diagvib.spec import Selection


def studies(
    out: Path = typer.Option(..., "--out", help="Folder for the YAML specs and index.csv."),
    seed: int = typer.Option(0, help="Benchmark seed (class selection, CGO/CHGO random cells)."),
    scale: float = typer.Option(1.0, help="Shrink all split sizes, e.g. 0.01 for CPU work."),
    study: list[str] = typer.Option(None, help="Only these studies (repeatable), e.g. ZGO."),
    pair: list[str] = pairs_option(),
    samples: list[int] = samples_option(),
    selection: str = selection_option("--seed"),
    as_json: bool = json_option("Print {out, index, experiments: [names], seconds} as one JSON "
                                "object."),
) -> None:
    """Write the DiagViB-6 benchmark: one YAML spec per experiment plus index.csv (name, hash).

    Specs say what to render, not from which digits and textures: give --mnist/--textures to the
    `diagvib run` or `export` that uses them."""
    from shortcutlab.diagvib.studies import experiment_names, write_benchmark

    start = time.perf_counter()
    index = write_benchmark(
        out, seed=seed, scale=scale, studies=study or None, pairs=pair or None,
        samples=samples or None, selection=cast("Selection", selection),  # checked there
    )
    names = experiment_names(study or None, pair or None, samples or None)
    seconds = time.perf_counter() - start
    if as_json:
        print_json({"out": str(out), "index": str(index), "experiments": list(names),
                    "seconds": round(seconds, 3)})
        return
    PlainConsole().print(f"wrote {len(names)} experiment specs and {index} in {seconds:.2f} s")


def _check_sample(sample: int) -> int:
    check_samples([sample])
    return sample


def study_figures(
    out: Path = typer.Option(..., "--out", help="Folder for fig1.png, fig3.png, figA1.png and "
                             "cell_shares.csv."),
    pair: str = typer.Option("shape-hue", "--pair", help="predicted-correlated pair of "
                             "every panel, e.g. hue-texture (shape-hue: Fig. 1's)."),
    sample: int = typer.Option(
        2, "--sample", callback=_check_sample, help="Dataset sample id 0-4 (2: with --selection "
        "paper, Fig. 1's shapes 2, 4, 3)."),
    selection: str = typer.Option(
        "paper", help="Classes and CGO/CHGO cells: paper (the authors' five samples, the "
        "default here) or seeded (from --seed)."),
    seed: int = typer.Option(0, min=0, help="Benchmark seed (the seeded selection's classes "
                             "and cells)."),
    study: list[str] = typer.Option(
        None, "--study", help="Studies of fig3.png, in order (repeatable; default the nine in "
        "the order of Fig. 3's caption: ZSO FGO-5 FGO-10 FGO-20 ZGO CGO-1 CGO-2 CGO-3 CHGO)."),
    example: str = typer.Option("CGO-2", "--example", help="Study of fig1.png (CGO-2: the "
                                "paper's Fig. 1)."),
    image_seed: int = typer.Option(0, "--image-seed", min=0, help="Pixel seed of the images "
                                   "(0: the dataset's default)."),
    image_size: int = typer.Option(128, "--image-size", help="Image side in pixels of "
                                   "fig1.png's images (32..1024)."),
    mnist: Path = mnist_option(),
    textures: Path = textures_option("Drawn in figA1.png. "),
    equalize_textures: bool = equalize_textures_option(),
    as_json: bool = json_option("Print {out, files, experiments, example, textures, shares: "
                                "[one row of cell_shares.csv per cell]} as one JSON object."),
) -> None:
    """Draw the studies from their specifications: fig3.png (paper Fig. 3), one 3×3 panel of
    class cells per study, training cells × sized by their share of the training images, test
    cells ○; fig1.png (Fig. 1), one experiment's cells filled with its own images; figA1.png
    (Fig. A1), the textures in use; and cell_shares.csv, every cell's train/test share and
    image count at the paper's sizes. Rows are the classes of the predicted factor, columns
    those of the correlated one."""
    from shortcutlab.cli.diagvib_render import build_generator
    from shortcutlab.diagvib.render import check_image_size
    from shortcutlab.diagvib.study_figures import study_specs, write_study_figures
    from shortcutlab.utils.io import check_output_folder

    chosen = study or None
    sel = cast("Selection", selection)  # checked by study_specs
    study_specs(pair, sample=sample, selection=sel, seed=seed, studies=chosen)
    study_specs(pair, sample=sample, selection=sel, seed=seed, studies=[example])
    check_image_size(image_size)
    check_output_folder(out)  # all refused before the image sources load
    generator = build_generator(mnist, textures, 0, image_size, equalize_textures)
    result = write_study_figures(out, pair=pair, sample=sample, selection=sel, seed=seed,
                                 studies=chosen, example=example, generator=generator,
                                 image_seed=image_seed)
    files = {key: str(path) for key, path in result.files.items()}
    if as_json:
        print_json({"out": str(out), "files": files, "experiments": result.experiments,
                    "example": result.example, "textures": result.textures,
                    "shares": result.rows})
        return
    PlainConsole().print(
        f"wrote to {out}: fig3.png ({len(result.experiments)} studies, {pair}, {selection} "
        f"sample {sample}), fig1.png ({result.example}), figA1.png ({result.textures} "
        f"textures), cell_shares.csv")


def export(
    experiment: str = typer.Argument(
        ..., help="Experiment name (e.g. ZGO/hue-shape/0, ZSO/texture/2) or a spec .yaml/.json."
    ),
    split: str = typer.Option("train", help="Split: train, val or test."),
    out: Path = typer.Option(..., "--out", help="Target .npz file or PNG folder."),
    limit: int = typer.Option(None, help="Export only the first N images."),
    fmt: str = typer.Option("npz", "--format", help="npz or png (folder + metadata.csv)."),
    scale: float = typer.Option(None, show_default=False, help="Shrink split sizes [default: "
                                "1.0]; a spec file has its own."),
    seed: int = typer.Option(None, show_default=False, help="Benchmark seed [default: 0]; a "
                             "spec file has its own."),
    image_seed: int = typer.Option(None, help="Pixel seed of the dataset (default 0)."),
    selection: str = selection_option("--seed"),
    mnist: Path = mnist_option(),
    textures: Path = textures_option(),
    as_json: bool = json_option("Print {experiment, split, format, out, images, seconds} as one "
                                "JSON object."),
) -> None:
    """Render one split of an experiment to an .npz or a PNG folder with metadata.csv."""
    from shortcutlab.diagvib.dataset import prepare_export, write_export
    from shortcutlab.diagvib.jobs import source_generator
    from shortcutlab.diagvib.spec import ExperimentSpec
    from shortcutlab.diagvib.studies import make_experiment
    from shortcutlab.errors import DiagvibError
    from shortcutlab.utils.progress import progress_bar

    path = Path(experiment)
    if experiment.endswith((".yaml", ".yml", ".json")):
        from shortcutlab.errors import DataNotFoundError

        if not path.is_file():
            raise DataNotFoundError(f"spec file {experiment!r} not found")
        given = [flag for flag, value in (("--scale", scale), ("--seed", seed),
                                          ("--selection", None if selection == "seeded"
                                           else selection)) if value is not None]
        if given:  # the spec fixes its sizes and classes: the option would be ignored
            raise DiagvibError(f"{'/'.join(given)} shapes a named experiment only; the spec "
                               f"file {experiment!r} fixes its own sizes and classes: drop it")
        text = path.read_text(encoding="utf-8")
        spec = (ExperimentSpec.from_json(text) if experiment.endswith(".json")
                else ExperimentSpec.from_yaml(text))
    else:
        from shortcutlab.cli.options import check_samples
        from shortcutlab.diagvib.studies import parse_experiment_name

        try:
            check_samples([parse_experiment_name(experiment)[3]])
        except typer.BadParameter as exc:
            raise DiagvibError(f"{exc} (in {experiment!r})") from None
        spec = make_experiment(experiment, scale=1.0 if scale is None else scale,
                               seed=seed or 0,
                               selection=cast("Selection", selection))  # checked there
    start = time.perf_counter()
    generator = source_generator(mnist, textures)
    export_format = cast("ExportFormat", fmt)
    dataset, total = prepare_export(spec, split, out, fmt=export_format, limit=limit,
                                    seed=image_seed, generator=generator)  # before the bar
    with progress_bar() as bar:
        task = bar.add_task(f"export {split}", total=total)
        written = write_export(dataset, total, out, fmt=export_format,
                               progress=lambda k: bar.advance(task, k))
    seconds = time.perf_counter() - start
    if as_json:
        print_json({"experiment": spec.name, "split": split, "format": fmt, "out": str(written),
                    "images": total, "seconds": round(seconds, 3)})
        return
    PlainConsole().print(f"exported the {split} split of {spec.name} to {written} in "
                         f"{seconds:.1f} s")


def register(app: typer.Typer) -> None:
    app.command("studies", short_help="Write the benchmark: one YAML spec per experiment.")(studies)
    app.command(
        "study-figures", short_help="Draw the studies' cells and images (paper figs. 1, 3, A1)."
    )(study_figures)
    app.command(
        "export", short_help="Render one split of an experiment to an .npz or PNGs."
    )(export)
