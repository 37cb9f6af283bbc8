"""The ImageNet-1k (ILSVRC-2012) class list, shared by the areas that score ImageNet models.

The 1,000 classes in the usual index order (sorted WordNet ids) with their short names, from
``data/imagenet1k_classes.csv`` (columns ``index,wnid,name``). BiasBed maps its test sets' class
folders onto them; ImageNet-X reads timm's ``label`` column (WordNet ids) with them.
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources

__all__ = ["NUM_CLASSES", "imagenet_class_names", "imagenet_classes"]

#: Number of ImageNet-1k classes (class ids 0–999).
NUM_CLASSES = 1000


@cache
def _rows() -> tuple[tuple[str, str], ...]:
    text = resources.files("shortcutlab.utils").joinpath(
        "data", "imagenet1k_classes.csv").read_text("utf-8")
    rows = sorted(csv.DictReader(text.splitlines()), key=lambda r: int(r["index"]))
    return tuple((r["wnid"], r["name"]) for r in rows)


@cache
def imagenet_classes() -> tuple[str, ...]:
    """The 1000 ILSVRC-2012 WordNet ids in class-index order (sorted)."""
    return tuple(wnid for wnid, _ in _rows())


@cache
def imagenet_class_names() -> tuple[str, ...]:
    """The 1000 short class names (``tench``, ``goldfish``, ...) in class-index order."""
    return tuple(name for _, name in _rows())
