"""Sample images of the BiasBed datasets (the paper's Figure 1), drawn from the user's folders.

One row per image folder, named as ``biasbed run`` names it (``--train-dir`` / ``--val-dir``
``DIR`` or ``NAME=DIR``, ``--test-dir NAME=DIR``: the same parsing and errors), ``per_set``
images drawn at random with ``seed`` (the same seed draws the same files; each folder's draw
depends on the seed and that folder alone), each resized (shorter side) and centre-cropped as
:class:`~shortcutlab.biasbed.datasets.ImageFolderDataset` does for evaluation, and captioned
with its class folder (a WordNet id or a class name, as the folder has it). No data is shipped:
the picture is a check that each folder holds what its name says, before the runs.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shortcutlab.biasbed.datasets import (
    BiasbedDataError,
    ImageFolderDataset,
    list_classes,
    named_dirs,
    parse_test_dirs,
)
from shortcutlab.errors import unknown_choice
from shortcutlab.utils.checks import range_problem
from shortcutlab.utils.io import atomic_path, check_output_folder

__all__ = ["FORMATS", "PER_SET", "SIZES", "SampleSet", "check_figure_path", "draw_samples",
           "folder_name", "sample_sets"]

#: ``per_set`` bounds (inclusive): images per folder.
PER_SET = (1, 32)
#: ``size`` bounds (inclusive): pixels per image side in the figure.
SIZES = (16, 512)
#: Figure file formats, by suffix (none: PNG).
FORMATS = (".png", ".pdf", ".svg")


@dataclass(frozen=True)
class SampleSet:
    """The images drawn from one folder: ``role`` (train, val or test), its ``name``, ``root``,
    the chosen ``files`` with their ``classes`` (class folder names), and the folder's number
    of images and of classes; ``data`` reads them (at the figure's size)."""

    role: str
    name: str
    root: Path
    files: tuple[Path, ...]
    classes: tuple[str, ...]
    images: int
    n_classes: int
    data: ImageFolderDataset = field(repr=False, compare=False)

    @property
    def label(self) -> str:
        """The row's name: the set's name, with its role unless it is a test set."""
        return self.name if self.role == "test" else f"{self.name} ({self.role})"

    def to_dict(self) -> dict[str, object]:
        return {"role": self.role, "name": self.name, "dir": str(self.root),
                "images": self.images, "classes": self.n_classes,
                "files": [{"path": str(f), "class": c}
                          for f, c in zip(self.files, self.classes, strict=True)]}


def _check_range(option: str, value: int, bounds: tuple[float, float]) -> None:
    problem = range_problem(option, value, *bounds, integer=True)
    if problem is not None:
        raise BiasbedDataError(problem)


def check_figure_path(out: str | os.PathLike[str]) -> Path:
    """Refuse, creating nothing, a figure path that could not be written: an unknown suffix,
    a folder that does not exist, a folder where the file goes, a folder one may not write to."""
    path = Path(out)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if path.suffix and path.suffix.lower() not in FORMATS:
        raise BiasbedDataError(unknown_choice("figure format", path.suffix, FORMATS))
    parent = path.parent
    if not parent.is_dir():
        raise BiasbedDataError(f"--out {str(path)!r}: its folder {str(parent)!r} does not exist "
                               "(create it first, or give a file in an existing folder)")
    check_output_folder(parent)
    return path


def folder_name(name: str | None, train_dirs: Sequence[str], val_dirs: Sequence[str]) -> str:
    """The name of a ``--train-dir``/``--val-dir`` given as a bare ``DIR`` (None: ``folders``);
    a ``name`` given with no such folder would be ignored, and is refused."""
    if name is not None and all("=" in item for item in (*train_dirs, *val_dirs)):
        raise BiasbedDataError(f"--name {name!r} names a --train-dir/--val-dir given as DIR, "
                               "and there is none (test sets and NAME=DIR folders carry their "
                               "own names): it would be ignored; drop it")
    return "folders" if name is None else name


def sample_sets(
    train_dirs: Sequence[str] = (),
    val_dirs: Sequence[str] = (),
    test_dirs: Sequence[str] = (),
    *,
    name: str | None = None,
    per_set: int = 6,
    seed: int = 0,
    size: int = 128,
) -> list[SampleSet]:
    """Draw ``per_set`` images (all, when a folder has fewer) from every folder, in the order
    train, val, test and as given; the options are ``biasbed run``'s (see
    :func:`~shortcutlab.biasbed.datasets.folder_experiments`), each folder read by
    :class:`~shortcutlab.biasbed.datasets.ImageFolderDataset` in its own label space (its
    class folders) and loaded ``size`` pixels square. ``name`` (default ``folders``) names a
    train/val folder given as a bare ``DIR``; given with none, it would be ignored: refused."""
    _check_range("--per-set", per_set, PER_SET)
    _check_range("--size", size, SIZES)
    _check_range("--seed", seed, (0, math.inf))
    if not (train_dirs or val_dirs or test_dirs):
        raise BiasbedDataError("no image folder given; give at least one --test-dir NAME=DIR "
                               "(or --train-dir / --val-dir DIR or NAME=DIR)")
    name = folder_name(name, train_dirs, val_dirs)
    folders = [("train", label, root)
               for label, root in named_dirs(train_dirs, name, "--train-dir").items()]
    folders += [("val", label, root)
                for label, root in named_dirs(val_dirs, name, "--val-dir").items()]
    folders += [("test", label, root) for label, root in parse_test_dirs(test_dirs).items()]
    sets = []
    for role, label, root in folders:
        classes = list_classes(root)
        data = ImageFolderDataset(root, classes, image_size=size, name=label)
        rng = np.random.default_rng(seed)  # per folder: adding a folder changes no other row
        chosen = np.sort(rng.choice(len(data), size=min(per_set, len(data)), replace=False))
        files = tuple(data.samples[int(i)][0] for i in chosen)
        sets.append(SampleSet(
            role=role, name=label, root=root, files=files,
            classes=tuple(classes[data.samples[int(i)][1]] for i in chosen),
            images=len(data), n_classes=len(classes), data=data))
    return sets


def draw_samples(sets: Sequence[SampleSet], out: str | os.PathLike[str], dpi: int = 100) -> Path:
    """Write the figure of ``sets`` to ``out`` atomically: one row per set (its name, images
    and classes on the left), each image at its set's size with its class as caption."""
    from matplotlib.figure import Figure

    from shortcutlab.utils.mpl_text import literal_names

    path = check_figure_path(out)
    if not sets:
        raise BiasbedDataError("no sample sets to draw")
    ncols = max(len(s.files) for s in sets)
    side = max(s.data.image_size for s in sets) / dpi + 0.35  # inches: an image and caption
    fig = Figure(figsize=(1.8 + side * ncols, (side + 0.1) * len(sets)), layout="constrained")
    axes = np.asarray(fig.subplots(len(sets), ncols, squeeze=False))
    for row, sample in zip(axes, sets, strict=True):
        for col, ax in enumerate(row):
            if col >= len(sample.files):
                ax.axis("off")
                continue
            image = sample.data.load(sample.files[col]).permute(1, 2, 0).numpy()
            ax.imshow(image, interpolation="nearest")
            ax.set_title(sample.classes[col], fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
        row[0].set_ylabel(f"{sample.label}\n{sample.images} images\n{sample.n_classes} classes",
                          rotation=0, ha="right", va="center", fontsize=8)
    literal_names(fig)
    with atomic_path(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, format=path.suffix.lower()[1:] or "png", dpi=dpi)
    return path
