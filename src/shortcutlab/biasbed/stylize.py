"""Build Stylized ImageNet (Geirhos et al.) from a local ImageNet folder, a folder of style images
and the AdaIN weight pair, resumably, on CPU or GPU.

The recipe of the Stylized-ImageNet authors' script: each content image is resized (shorter side
to 256) and centre-cropped to 224; each style image (paintings) is centre-cropped to a square and
downsampled to 224, style images smaller than that are left out; every content image gets one
style image drawn at random, AdaIN with strength 1.0; the output mirrors the class folders, one
PNG per content image named after it. Here the style of content image i (in sorted order) is the
i-th draw of ``numpy.random.default_rng(seed)``, so the assignment does not depend on the batch
size or on how often the build was interrupted; images already written are skipped, and each is
written atomically, so an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from shortcutlab.biasbed.datasets import (
    IMAGE_EXTENSIONS,
    BiasbedDataError,
    ImageFolderDataset,
    to_rgb,
)
from shortcutlab.errors import DataNotFoundError
from shortcutlab.utils.io import atomic_path
from shortcutlab.utils.progress import progress_bar

__all__ = ["StylizeSummary", "load_style_image", "style_assignment", "stylize_folder"]


@dataclass(frozen=True)
class StylizeSummary:
    """What one build did: images written now, images already present, style images in the
    folder, and those met in this build that were too small or unreadable (left out)."""

    written: int
    skipped: int
    styles: int
    styles_too_small: int


def _style_files(style_dir: Path) -> list[Path]:
    if not style_dir.is_dir():
        raise DataNotFoundError(f"style image folder {str(style_dir)!r} does not exist")
    files = sorted(p for p in style_dir.rglob("*")
                   if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)
    if not files:
        raise BiasbedDataError(f"style image folder {str(style_dir)!r} holds no images")
    return files


def load_style_image(path: Path, size: int) -> torch.Tensor | None:
    """A style image centre-cropped to a square and downsampled to ``size`` (float (3, S, S) in
    [0, 1]); None when it is smaller than ``size`` or unreadable (left out, as the authors do)."""
    try:
        with Image.open(path) as opened:
            im = to_rgb(opened)
            w, h = im.size
            if min(w, h) < size:
                return None
            side = min(w, h)
            left, top = (w - side) // 2, (h - side) // 2
            im = im.crop((left, top, left + side, top + side)).resize(
                (size, size), Image.Resampling.LANCZOS)
            arr = np.asarray(im, dtype=np.uint8)
    except OSError:
        return None
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255.0)


def style_assignment(n_content: int, n_styles: int, seed: int) -> np.ndarray:
    """The style index of each content image (sorted order): independent uniform draws."""
    return np.random.default_rng(seed).integers(0, n_styles, size=n_content)


def stylize_folder(
    content_dir: str | os.PathLike[str],
    style_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    vgg_weights: str | os.PathLike[str],
    decoder_weights: str | os.PathLike[str],
    *,
    size: int = 224,
    alpha: float = 1.0,
    seed: int = 0,
    batch_size: int = 16,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> StylizeSummary:
    """Write the stylised version of every image of ``content_dir`` (``<class>/<image>``) to
    ``out_dir/<class>/<image stem>.png``; see the module docstring for the recipe."""
    from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer

    if not 0.0 <= alpha <= 1.0:
        raise BiasbedDataError(f"alpha must lie in [0, 1], got {alpha}")
    if size < 1 or batch_size < 1:
        raise BiasbedDataError(f"size and batch size must be positive, got {size}, {batch_size}")
    if seed < 0:
        raise BiasbedDataError(f"the seed must be >= 0 (got {seed})")
    content_root = Path(content_dir)
    target = Path(out_dir).expanduser().resolve()
    for role, folder in (("content", content_root), ("style", Path(style_dir))):
        if target.is_relative_to(folder.expanduser().resolve()):
            raise BiasbedDataError(
                f"--out {str(out_dir)!r} lies in the {role} folder {str(folder)!r}; the "
                f"stylised images would be read back as {role} images: give a folder outside "
                "the content and style folders")
    classes = sorted(p.name for p in content_root.iterdir()
                     if p.is_dir() and not p.name.startswith(".")) if content_root.is_dir() else []
    if not classes:
        raise DataNotFoundError(
            f"content folder {str(content_dir)!r} must hold one subfolder per class")
    content = ImageFolderDataset(content_root, classes, image_size=size, preprocess="imagenet-eval")
    files = _style_files(Path(style_dir))
    transfer = AdaINStyleTransfer.from_pair(vgg_weights, decoder_weights).to(device)
    styles = style_assignment(len(content), len(files), seed)
    out = Path(out_dir)
    targets = [out / classes[y] / (path.stem + ".png") for path, y in content.samples]
    todo = [i for i, t in enumerate(targets) if not t.is_file()]
    too_small: set[int] = set()
    cache: dict[int, torch.Tensor | None] = {}

    def style_of(i: int) -> torch.Tensor:
        j = int(styles[i])
        while True:  # a style image too small or unreadable: take the next usable one
            if j not in cache:
                cache[j] = load_style_image(files[j], size)
                if cache[j] is None:
                    too_small.add(j)
            image = cache[j]
            if image is not None:
                return image
            j = (j + 1) % len(files)
            if len(too_small) == len(files):
                raise BiasbedDataError(
                    f"no style image in {str(style_dir)!r} is at least {size} px on each side")

    with progress_bar(disable=not progress) as bar:
        task = bar.add_task("stylizing", total=len(todo))
        for start in range(0, len(todo), batch_size):
            chunk = todo[start:start + batch_size]
            x = torch.stack([content[i]["x"] for i in chunk]).to(device)
            s = torch.stack([style_of(i) for i in chunk]).to(device)
            y = transfer(x, s, alpha).clamp(0.0, 1.0).mul(255).round().byte().cpu()
            for i, img in zip(chunk, y, strict=True):
                targets[i].parent.mkdir(parents=True, exist_ok=True)
                with atomic_path(targets[i], suffix=".png") as tmp:
                    Image.fromarray(img.permute(1, 2, 0).numpy()).save(tmp, format="PNG")
            bar.advance(task, len(chunk))
            if len(cache) > 4096:  # bound the memory of the style cache
                cache.clear()
    return StylizeSummary(len(todo), len(targets) - len(todo), len(files), len(too_small))
