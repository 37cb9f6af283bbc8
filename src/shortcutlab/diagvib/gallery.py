"""Pictures of the DiagViB-6 generator: the figure-2 factor traversal and image grids.

``render_gallery`` writes the traversal, a sample of images and their grid (the demo's first
stage)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.render import ImageGenerator, class_names, random_classes
from shortcutlab.utils.html import literal_text
from shortcutlab.utils.io import atomic_path, write_npz

# Fixed classes of the traversal (paper Fig. 2: red, third lightness, fifth scale, first digit,
# second texture), with the object in the centre when position is not the factor varied.
TRAVERSAL_BASE: dict[str, str] = {
    "position": "center-center", "hue": "red", "lightness": "brighter", "scale": "large",
    "shape": "0", "texture": "wood",
}


def traversal_classes(base: dict[str, str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Classes for the traversal grid: ``(rows, 6, 6)`` class indices and a ``(rows, 6)`` mask
    of filled cells; column ``j`` varies factor ``j`` through its classes, all else at ``base``."""
    base = dict(TRAVERSAL_BASE if base is None else base)
    base_idx = np.array([get_factor(f).index(base[f]) for f in FACTORS])
    rows = max(get_factor(f).n_classes for f in FACTORS)
    classes = np.tile(base_idx, (rows, len(FACTORS), 1))
    filled = np.zeros((rows, len(FACTORS)), dtype=bool)
    for j, name in enumerate(FACTORS):
        k = get_factor(name).n_classes
        classes[:k, j, j] = np.arange(k)
        filled[:k, j] = True
    return classes, filled


def traversal_figure(generator: ImageGenerator | None = None, *, seed: int = 0) -> Figure:
    """Figure 2 of the paper: one column per factor, its classes varying down the column.

    Every cell uses image index 0, so all cells share the same random draws (same digit instance
    within a digit class, same relative position inside the region, ...)."""
    gen = generator if generator is not None else ImageGenerator()
    classes, filled = traversal_classes()
    rows, cols = filled.shape
    flat = classes[filled]
    images = gen.render(flat, seed=seed, split="train", indices=np.zeros(len(flat), np.int64))
    fig = Figure(figsize=(cols * 1.35, rows * 1.45))
    axes = fig.subplots(rows, cols, squeeze=False)
    k = 0
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            ax.set_axis_off()
            if r == 0:
                ax.set_title(FACTORS[c], fontsize=10, fontweight="bold", pad=14)
            if not filled[r, c]:
                continue
            ax.imshow(images[k].transpose(1, 2, 0), interpolation="nearest")
            ax.text(0.5, 1.02, get_factor(FACTORS[c]).classes[r], transform=ax.transAxes,
                    ha="center", va="bottom", fontsize=7)
            k += 1
    fig.subplots_adjust(left=0.01, right=0.99, top=0.95, bottom=0.01, wspace=0.05, hspace=0.25)
    return fig


def save_figure(path: str | Path, fig: Figure, dpi: int = 110) -> Path:
    """Atomically write a matplotlib figure as PNG."""
    with atomic_path(path, suffix=".png") as tmp, literal_text(fig):
        fig.savefig(tmp, format="png", dpi=dpi)
    return Path(path)


def save_traversal(path: str | Path, generator: ImageGenerator | None = None, *,
                   seed: int = 0) -> Path:
    """Draw :func:`traversal_figure` into a PNG file (atomically)."""
    return save_figure(path, traversal_figure(generator, seed=seed))


CAPTION_HEIGHT = 38  # three lines of 10 px text under each tile


def image_grid(images: np.ndarray, ncols: int = 8, gap: int = 2,
               captions: list[str] | None = None) -> np.ndarray:
    """Tile uint8 images ``(N, 3, H, W)`` into one ``(rows*H, ncols*W, 3)`` picture; with
    ``captions`` (one per image, up to three lines) each tile gets its text underneath."""
    images = np.asarray(images)
    n, _, h, w = images.shape
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    cell = h + (CAPTION_HEIGHT if captions is not None else 0)
    grid = np.full((nrows * (cell + gap) - gap, ncols * (w + gap) - gap, 3), 255, dtype=np.uint8)
    for i in range(n):
        r, c = divmod(i, ncols)
        grid[r * (cell + gap): r * (cell + gap) + h, c * (w + gap): c * (w + gap) + w] = (
            images[i].transpose(1, 2, 0))
    if captions is None:
        return grid
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.fromarray(grid)
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=10)
    for i, text in enumerate(captions[:n]):
        r, c = divmod(i, ncols)
        draw.multiline_text((c * (w + gap) + 2, r * (cell + gap) + h + 1), text, fill=(0, 0, 0),
                            font=font, spacing=2)
    return np.asarray(picture)


def sample_captions(classes: np.ndarray) -> list[str]:
    """Three short lines per image naming its six classes (digit, hue, texture / scale,
    lightness / position)."""
    names = class_names(classes)
    return [f"{names['shape'][i]} {names['hue'][i]} {names['texture'][i]}\n"
            f"{names['scale'][i]} {names['lightness'][i]}\n{names['position'][i]}"
            for i in range(len(classes))]


def save_image(path: str | Path, picture: np.ndarray) -> Path:
    """Atomically write an RGB uint8 picture ``(H, W, 3)`` as PNG."""
    from PIL import Image

    with atomic_path(path, suffix=".png") as tmp:
        Image.fromarray(picture).save(tmp, format="PNG")
    return Path(path)


def render_gallery(out_dir: str | Path, *, n: int = 64, seed: int = 0,
                   generator: ImageGenerator | None = None) -> list[str]:
    """Write the traversal figure, ``n`` random training images (.npz with class names) and
    their grid into ``out_dir``; return lines saying what was written where."""
    out = Path(out_dir)
    gen = generator if generator is not None else ImageGenerator()
    traversal = save_traversal(out / "traversal.png", gen, seed=seed)
    classes = random_classes(n, seed=seed, split="train")
    images = gen.render(classes, seed=seed, split="train", indices=np.arange(n))
    npz = write_npz(out / "samples.npz", images=images, **class_names(classes))
    grid = save_image(out / "samples.png", image_grid(images, captions=sample_captions(classes)))
    return [
        f"factor traversal (paper Fig. 2): {traversal}",
        f"{n} random images with their classes: {npz}",
        f"grid of those images with their classes: {grid}",
    ]
