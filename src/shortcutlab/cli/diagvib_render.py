"""``shortcutlab diagvib factors|render|traverse``: look at the generator's factors and images."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from shortcutlab.cli.options import equalize_textures_option, mnist_option, textures_option
from shortcutlab.cli.output import json_option, print_json
from shortcutlab.utils.console import PlainConsole

if TYPE_CHECKING:
    import numpy as np

    from shortcutlab.diagvib.render import ImageGenerator

RENDER_CHUNK = 256  # images per generator call: bounded memory, visible progress, and one
# reused 12.6 MB buffer (small enough that the writer's copy of each chunk reuses heap pages)
MAX_RENDER_IMAGES = 10_000_000  # per-image classes and factor values stay in memory (~600 B
# each at the peak: 6 GB here), and the images take 3·S² bytes each on disk (490 GB at S = 128)


def _format_region(name: str, region: tuple[tuple[float, float], ...]) -> str:
    if name == "shape":
        return "MNIST digits"
    if name == "texture":
        return "texture crops"
    unit = "°" if name == "hue" else ""
    return " × ".join(f"[{lo:.3g}{unit}, {hi:.3g}{unit}]" for lo, hi in region)


def factors(
    as_json: bool = json_option("Print {factors: {name: {classes, regions}}, n_combinations} "
                                "as one JSON object (regions: one [low, high] per dimension; "
                                "empty for shape and texture)."),
) -> None:
    """List the six factors, their classes and factor-space regions (paper Table A1)."""
    from rich.table import Table

    from shortcutlab.diagvib.factors import FACTOR_TABLE, n_combinations

    if as_json:
        print_json({"n_combinations": n_combinations(), "factors": {
            name: {"classes": list(f.classes), "regions": [list(r) for r in f.regions]}
            for name, f in FACTOR_TABLE.items()}})
        return
    table = Table(title=f"DiagViB-6 factors ({n_combinations():,} class combinations)")
    table.add_column("factor", style="bold")
    table.add_column("#", justify="right")
    table.add_column("class")
    table.add_column("region")
    for name, factor in FACTOR_TABLE.items():
        for i, (cls, region) in enumerate(zip(factor.classes, factor.regions, strict=True)):
            table.add_row(name if i == 0 else "", str(factor.n_classes) if i == 0 else "",
                          cls, _format_region(name, region))
        table.add_section()
    PlainConsole().print(table)


def build_generator(mnist: Path | None, textures: Path | None, shape_seed: int,
                    image_size: int = 128, equalize: bool = False) -> ImageGenerator:
    from shortcutlab.diagvib.render import ImageGenerator, check_image_size
    from shortcutlab.diagvib.sources import load_shapes, load_textures

    check_image_size(image_size)  # before the (slower) source loading
    return ImageGenerator(load_shapes(mnist, seed=shape_seed),
                          load_textures(textures, equalize=equalize), image_size=image_size)


def _may_have_cuda() -> bool:
    """False when this machine certainly has no usable CUDA GPU (no NVIDIA driver on Linux, or
    ``CUDA_VISIBLE_DEVICES`` empty): ``--device auto`` then needs no torch import (~1-2 s)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1"):
        return False
    if sys.platform.startswith("linux"):
        return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()
    return True


def _backend(device: str) -> tuple[str, str]:
    if device == "cpu" or (device == "auto" and not _may_have_cuda()):
        return "numpy", "cpu"
    from shortcutlab.utils.device import resolve_device

    dev = resolve_device(device)
    return ("numpy", "cpu") if dev.type == "cpu" else ("torch", str(dev))


def _check_space(out: Path, needed: int) -> None:
    """Refuse to start an output of ``needed`` bytes that the disk of ``out`` cannot hold."""
    import shutil

    from shortcutlab.errors import DiagvibError

    folder = out.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise DiagvibError(f"{out}: the images need {needed / 1e9:,.1f} GB and {folder} has "
                           f"{free / 1e9:,.1f} GB free; render fewer (--n) or smaller "
                           "(--image-size) images, or write elsewhere")


def render(
    set_: list[str] = typer.Option(
        None, "--set", metavar="FACTOR=CLASS",
        help="Fix a factor's class (repeatable), e.g. --set hue=red --set shape=3. "
        "Unset factors are drawn uniformly per image."),
    n: int = typer.Option(16, "--n", help="Number of images."),
    seed: int = typer.Option(0, min=0, help="Seed: image i depends only on (seed, split, i)."),
    out: Path = typer.Option(..., "--out", help="Target .npz (images + class names)."),
    png: Path = typer.Option(None, "--png", help="Also write a grid of the first 64 images."),
    split: str = typer.Option("train", help="Digit pool: train, val or test."),
    mnist: Path = mnist_option(),
    textures: Path = textures_option(),
    equalize_textures: bool = equalize_textures_option(),
    shape_seed: int = typer.Option(0, min=0, help="Seed of the digits' split into pools."),
    image_size: int = typer.Option(128, help="Image side in pixels (32..1024)."),
    device: str = typer.Option(
        "auto", help="auto, cpu or cuda (cuda uses the torch path; agrees within ±1 level)."),
    as_json: bool = json_option("Print what was written as one JSON object (out, png, images, "
                                "image_size, classes: per factor the count of each class)."),
) -> None:
    """Render N images with some factors fixed; write them and their classes to an .npz."""
    import numpy as np

    from shortcutlab.diagvib.factors import FACTORS
    from shortcutlab.diagvib.render import class_names, parse_assignments, random_classes
    from shortcutlab.diagvib.sources import check_split
    from shortcutlab.errors import DiagvibError
    from shortcutlab.utils.io import check_output_file, output_set, write_npz_streaming
    from shortcutlab.utils.progress import progress_bar

    if not 0 < n <= MAX_RENDER_IMAGES:
        raise DiagvibError(f"--n must be a positive number of images up to "
                           f"{MAX_RENDER_IMAGES:,}, got {n:,}; render a larger set as several "
                           "files (other --seed)")
    check_split(split)
    fixed = parse_assignments(set_ or [])
    backend, dev = _backend(device)
    gen = build_generator(mnist, textures, shape_seed, image_size, equalize_textures)
    size = gen.image_size
    for target in (out, png):  # both, before rendering: the pair is written all or none
        if target is not None:
            check_output_file(target)
    _check_space(out, n * (3 * size * size + 300))  # images + classes and factor values
    classes = random_classes(n, seed=seed, split=split, fixed=fixed)
    real = gen.realisations(classes, seed=seed, split=split, indices=np.arange(n))
    arrays = dict(class_names(classes))
    arrays.update({f"value_{k}": real[k] for k in ("position", "hue", "lightness", "scale")})
    first: list[np.ndarray] = []

    def chunks() -> Iterator[np.ndarray]:
        # one buffer for every chunk (the writer has copied a chunk out before asking for the
        # next): no fresh pages to fault in per chunk
        buffer = np.empty((min(n, RENDER_CHUNK), 3, size, size), dtype=np.uint8)
        with progress_bar() as bar:
            task = bar.add_task("rendering", total=n)
            for a in range(0, n, RENDER_CHUNK):
                idx = np.arange(a, min(n, a + RENDER_CHUNK))
                if backend == "numpy":
                    batch = gen.render(classes[idx], seed=seed, split=split, indices=idx,
                                       out=buffer[:len(idx)])
                else:
                    batch = gen.render(classes[idx], seed=seed, split=split, indices=idx,
                                       backend="torch", device=dev).cpu().numpy()
                if not first:
                    first.append(batch[:64].copy())
                bar.advance(task, len(idx))
                yield batch

    with output_set() as outputs:  # the npz and the grid, or neither
        write_npz_streaming(outputs.path(out, ".npz"), "images", (n, 3, size, size), chunks(),
                            arrays)
        if png is not None:
            from shortcutlab.diagvib.gallery import image_grid, save_image  # matplotlib: here

            save_image(outputs.path(png, ".png"), image_grid(first[0]))
    if as_json:
        counts = {f: {str(c): int(k) for c, k in
                      zip(*np.unique(arrays[f], return_counts=True), strict=True)}
                  for f in FACTORS}
        print_json({"out": str(out), "png": None if png is None else str(png), "images": n,
                    "image_size": size, "seed": seed, "split": split, "classes": counts})
        return
    lines = [f"wrote {n} images ({size}×{size}) and their classes ({', '.join(FACTORS)}) "
             f"to {out}"]
    if png is not None:
        lines.append(f"wrote a grid of {min(n, 64)} images to {png}")
    PlainConsole().print("\n".join(lines))


def traverse(
    out: Path = typer.Option(..., "--out", help="Target PNG."),
    seed: int = typer.Option(0, min=0, help="Seed of the realisations shared by all cells."),
    mnist: Path = mnist_option(),
    textures: Path = textures_option(),
    equalize_textures: bool = equalize_textures_option(),
) -> None:
    """Draw the figure-2 traversal: one column per factor, its classes varying down the column."""
    from shortcutlab.diagvib.gallery import save_traversal

    save_traversal(out, build_generator(mnist, textures, 0, equalize=equalize_textures), seed=seed)
    PlainConsole().print(f"wrote the factor traversal to {out}")


def register(app: typer.Typer) -> None:
    app.command(
        "factors", short_help="List the six factors and their classes (paper Table A1)."
    )(factors)
    app.command("render", short_help="Render N images with some factors fixed to an .npz.")(render)
    app.command(
        "traverse", short_help="Draw the figure-2 traversal of every factor's classes."
    )(traverse)
