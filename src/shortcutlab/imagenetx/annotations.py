"""ImageNet-X annotations, read at run time from the installed ``imagenet-x`` package.

Nothing is copied into this repository: every table is loaded from the package's
``imagenet_x/annotations`` folder with :mod:`importlib.resources`. The conventions follow the
package: 16 factors in its order, 17 meta-labels (16 WordNet ancestors plus ``other``),
prototypical images (the three per class the annotators compared against) filtered out by
default, ReaL label sets indexed by validation image number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal, get_args

import numpy as np
import pandas as pd

from shortcutlab.errors import DataNotFoundError, ImagenetXError, unknown_choice
from shortcutlab.utils.imagenet import NUM_CLASSES

FACTORS: tuple[str, ...] = (
    "pose",
    "background",
    "pattern",
    "color",
    "smaller",
    "shape",
    "partial_view",
    "subcategory",
    "texture",
    "larger",
    "darker",
    "object_blocking",
    "person_blocking",
    "style",
    "brighter",
    "multiple_objects",
)
META_LABELS: tuple[str, ...] = (
    "device",
    "dog",
    "commodity",
    "bird",
    "structure",
    "covering",
    "wheeled_vehicle",
    "food",
    "equipment",
    "insect",
    "vehicle",
    "furniture",
    "primate",
    "vessel",
    "snake",
    "natural_object",
    "other",
)
Which = Literal["top", "multi"]
WHICH_CHOICES: tuple[Which, ...] = get_args(Which)
PARTITION_CHOICES = ("val", "train")
NUM_VAL_IMAGES = 50_000

Partition = Literal["val", "train"]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _annotation_file(name: str) -> resources.abc.Traversable:
    """A file of the imagenet-x package's annotation folder, or a clear error."""
    try:
        folder = resources.files("imagenet_x") / "annotations"
    except ModuleNotFoundError as exc:  # pragma: no cover - the package is a dependency
        raise DataNotFoundError(
            "the imagenet-x package is not installed; install it with `pip install imagenet-x`"
        ) from exc
    path = folder / name
    if not path.is_file():
        raise DataNotFoundError(
            f"annotation file {name!r} is missing from the installed imagenet-x package "
            f"({folder}); reinstall it with `pip install --force-reinstall imagenet-x`"
        )
    return path


@dataclass(frozen=True)
class Annotations:
    """Factor annotations of one ImageNet-X partition, as aligned arrays (one row per image).

    ``factors`` is a boolean (images × 16) matrix in :data:`FACTORS` order; ``meta_label`` indexes
    :data:`META_LABELS`. With ``which="top"`` each image has (at most) one active factor.
    """

    which: Which
    partition: str
    filtered: bool
    file_names: np.ndarray
    labels: np.ndarray
    factors: np.ndarray
    meta_label: np.ndarray

    def __len__(self) -> int:
        return len(self.file_names)

    def to_frame(self) -> pd.DataFrame:
        """One row per image: file_name, class, meta_label and one 0/1 column per factor."""
        frame = pd.DataFrame({"file_name": self.file_names, "class": self.labels})
        frame["meta_label"] = pd.Categorical.from_codes(self.meta_label, META_LABELS)
        for k, factor in enumerate(FACTORS):
            frame[factor] = self.factors[:, k].astype(np.int8)
        return frame

    def factor_counts(self) -> pd.Series:
        """Number of images with each factor active."""
        return pd.Series(self.factors.sum(axis=0), index=list(FACTORS), name="count")

    def take(self, indices: np.ndarray) -> Annotations:
        """The images at ``indices``, in that order."""
        return self.subset(np.asarray(indices, dtype=np.intp))

    def subset(self, keep: np.ndarray) -> Annotations:
        """The images where the boolean mask ``keep`` is true (or at integer positions)."""
        return Annotations(
            self.which,
            self.partition,
            self.filtered,
            _read_only(self.file_names[keep]),
            _read_only(self.labels[keep]),
            _read_only(self.factors[keep]),
            _read_only(self.meta_label[keep]),
        )


def _check_choice(kind: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ImagenetXError(unknown_choice(kind, value, choices))


@lru_cache(maxsize=8)
def load_annotations(
    which: Which = "top", partition: Partition = "val", filter_prototypes: bool = True
) -> Annotations:
    """Load top- or multi-factor annotations of the validation or training subset.

    Cached: the arrays are read-only and shared between calls.
    """
    _check_choice("factor selection", which, WHICH_CHOICES)
    _check_choice("partition", partition, PARTITION_CHOICES)
    import pyarrow.json as pa_json

    source = _annotation_file(f"imagenet_x_{partition}_{which}_factor.jsonl")
    with resources.as_file(source) as path:
        table = pa_json.read_json(str(path))
    missing = [c for c in ("file_name", "class", *FACTORS) if c not in table.column_names]
    if missing:
        raise DataNotFoundError(f"{source} lacks columns {missing}; reinstall imagenet-x")
    file_names = table.column("file_name").to_numpy(zero_copy_only=False).astype(str)
    labels = table.column("class").to_numpy().astype(np.int16)
    factors = np.stack([table.column(f).to_numpy() != 0 for f in FACTORS], axis=1)
    keep = np.ones(len(file_names), dtype=bool)
    if filter_prototypes:
        keep = ~pd.Index(file_names).isin(prototypical_file_names())
    meta = class_to_meta_label()[labels]
    return Annotations(
        which,
        partition,
        filter_prototypes,
        _read_only(file_names[keep]),
        _read_only(labels[keep]),
        _read_only(np.ascontiguousarray(factors[keep])),
        _read_only(meta[keep]),
    )


@lru_cache(maxsize=1)
def prototypical_file_names() -> np.ndarray:
    """File names of the 3,000 prototypical validation images (three per class)."""
    with _annotation_file("prototypical_paths.csv").open("r") as fh:
        names = pd.read_csv(fh)["file_name"].to_numpy(dtype=str)
    return _read_only(names)


@lru_cache(maxsize=1)
def class_to_meta_label() -> np.ndarray:
    """Index into :data:`META_LABELS` for each of the 1,000 classes (``other`` when none fits)."""
    with _annotation_file("imagenet_1k_classes_to_100_metaclasses.csv").open("r") as fh:
        names = pd.read_csv(fh)["name"].to_numpy(dtype=str)
    if len(names) != NUM_CLASSES:
        raise DataNotFoundError(f"expected {NUM_CLASSES} metaclass rows, found {len(names)}")
    lookup = {name: i for i, name in enumerate(META_LABELS)}
    other = lookup["other"]
    return _read_only(np.array([lookup.get(n, other) for n in names], dtype=np.int8))


@lru_cache(maxsize=1)
def class_names() -> tuple[str, ...]:
    """Human-readable names of the 1,000 ImageNet classes, in class-id order."""
    with _annotation_file("imagenet_labels.txt").open("r") as fh:
        table = pd.read_csv(fh, names=["wnid", "name"], header=None)
    return tuple(table["name"].astype(str))


@lru_cache(maxsize=1)
def original_val_labels() -> pd.Series:
    """The original ImageNet label of each of the 50,000 validation images, by file name."""
    with _annotation_file("filename_label.csv").open("r") as fh:
        table = pd.read_csv(fh)
    return table.set_index("file_name")["label"].astype(np.int16).sort_index()


def val_image_index(file_names: np.ndarray) -> np.ndarray:
    """Zero-based position of validation file names ``ILSVRC2012_val_%08d.JPEG``; -1 otherwise.

    Parsed on fixed-width bytes (no string hashing), so 50,000 names take a few milliseconds.
    """
    names = np.asarray(file_names, dtype=str)
    out = np.full(len(names), -1, dtype=np.int64)
    fits = np.flatnonzero(np.char.str_len(names) == 28)
    try:
        raw = names[fits].astype("S28")
    except UnicodeEncodeError:  # non-ASCII names: slow path
        series = pd.Series(names)
        valid = series.str.fullmatch(r"ILSVRC2012_val_[0-9]{8}\.JPEG").to_numpy()  # ASCII
        out[valid] = series[valid].str.slice(15, 23).astype(np.int64).to_numpy() - 1
    else:
        chars = raw.view("S1").reshape(len(raw), 28)
        digits = chars[:, 15:23].view(np.uint8).astype(np.int64) - ord("0")
        valid = (raw.astype("S15") == b"ILSVRC2012_val_") & (digits >= 0).all(axis=1)
        valid &= (digits <= 9).all(axis=1)
        valid &= np.ascontiguousarray(chars[:, 23:]).view("S5").ravel() == b".JPEG"
        number = digits @ (10 ** np.arange(7, -1, -1, dtype=np.int64))
        out[fits[valid]] = number[valid] - 1
    out[(out < 0) | (out >= NUM_VAL_IMAGES)] = -1
    return out


@lru_cache(maxsize=1)
def _real_matrix() -> np.ndarray:
    with _annotation_file("imagenet_real_labels.jsonl").open("r") as fh:
        sets = json.load(fh)
    width = max(len(s) for s in sets)
    matrix = np.full((len(sets), width), -1, dtype=np.int16)
    for i, labels in enumerate(sets):
        matrix[i, : len(labels)] = labels
    return _read_only(matrix)


def real_labels(file_names: np.ndarray) -> np.ndarray:
    """ReaL label sets (Beyer et al. 2020) as an (images × 9) int16 matrix padded with -1.

    An all -1 row is an image whose ReaL set is empty (no valid label was agreed on).
    """
    index = val_image_index(file_names)
    bad = np.flatnonzero(index < 0)
    if len(bad):
        shown = ", ".join(str(file_names[i]) for i in bad[:5])
        raise ImagenetXError(
            f"ReaL labels exist only for the 50,000 validation images; {len(bad)} file names are "
            f"not validation images (e.g. {shown})"
        )
    return _real_matrix()[index]
