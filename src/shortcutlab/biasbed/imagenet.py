"""BiasBed's 1000-class evaluation: ImageNet models scored on 16-class and 200-class test sets.

BiasBed trains 1000-class ImageNet models and scores every test set with the same network:

- the **16-class** test sets of Geirhos et al. (cue-conflict, edge, silhouette, sketch,
  Stylized-ImageNet-16) by *averaging the logits* of each category's member ImageNet classes
  (the mapping of Geirhos et al.'s ``HumanCategories``, re-encoded in ``data/imagenet16.csv``:
  207 ImageNet classes in 16 categories; the others are left out);
- **ImageNet-A** and **ImageNet-R** by restricting the logits to their 200 classes
  (``data/imagenet_a_wnids.txt``, ``data/imagenet_r_wnids.txt``, as published with the data sets);
- ImageNet, ImageNet-Sketch, DeepAugment and other 1000-class folders by all 1000 logits.

The ImageNet classes are indexed in the usual order (sorted WordNet ids; the list lives in
:mod:`shortcutlab.utils.imagenet`, re-exported here as :func:`imagenet_classes`). A *head*
turns the model's (B, 1000) logits into the test set's (B, C) logits; test datasets carry it
as ``reduce_logits``, which the trainer applies.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from functools import cache
from importlib import resources

import torch

from shortcutlab.errors import ShortcutlabError, unknown_choice
from shortcutlab.utils.imagenet import imagenet_classes

__all__ = [
    "HEADS",
    "CategoryAverage",
    "ClassSubset",
    "detect_head",
    "imagenet16_categories",
    "imagenet_classes",
    "make_head",
    "subset_wnids",
]

#: Test-set heads: ``imagenet1k`` (all 1000 logits), ``imagenet16`` (category logit averages),
#: ``imagenet-a`` / ``imagenet-r`` (the 200 classes of each).
HEADS = ("imagenet1k", "imagenet16", "imagenet-a", "imagenet-r")


class ImagenetHeadError(ShortcutlabError):
    """A test folder whose classes do not fit the chosen head."""


def _data(name: str) -> str:
    return resources.files("shortcutlab.biasbed").joinpath("data", name).read_text("utf-8")


@cache
def imagenet16_categories() -> dict[str, tuple[int, ...]]:
    """The 16 categories (sorted) → their ImageNet class indices (Geirhos et al.)."""
    out: dict[str, list[int]] = {}
    for row in csv.DictReader(_data("imagenet16.csv").splitlines()):
        out.setdefault(row["category"], []).append(int(row["index"]))
    return {c: tuple(out[c]) for c in sorted(out)}


@cache
def subset_wnids(head: str) -> tuple[str, ...]:
    """The 200 WordNet ids of ImageNet-A (``imagenet-a``) or ImageNet-R (``imagenet-r``),
    sorted (the class order of their folders)."""
    files = {"imagenet-a": "imagenet_a_wnids.txt", "imagenet-r": "imagenet_r_wnids.txt"}
    if head not in files:
        raise ImagenetHeadError(unknown_choice("200-class subset", head, tuple(files)))
    return tuple(sorted(w for w in _data(files[head]).split() if w))


class CategoryAverage(torch.nn.Module):
    """(B, 1000) logits → (B, G): the mean logit over each group's member classes."""

    weights: torch.Tensor  # (G, 1000) buffer

    def __init__(self, groups: Sequence[Sequence[int]]) -> None:
        super().__init__()
        weights = torch.zeros(len(groups), 1000)
        for g, members in enumerate(groups):
            weights[g, list(members)] = 1.0 / len(members)
        self.register_buffer("weights", weights)

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits @ self.weights.to(logits.device, logits.dtype).T


class ClassSubset(torch.nn.Module):
    """(B, 1000) logits → (B, len(indices)): the logits of these classes, in this order (the
    argmax equals masking every other class to −∞)."""

    indices: torch.Tensor  # (K,) long buffer

    def __init__(self, indices: Sequence[int]) -> None:
        super().__init__()
        self.register_buffer("indices", torch.as_tensor(list(indices), dtype=torch.long))

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.index_select(1, self.indices.to(logits.device))


def head_labels(head: str) -> tuple[str, ...]:
    """The class names a test folder of this head uses, in label order."""
    if head == "imagenet1k":
        return imagenet_classes()
    if head == "imagenet16":
        return tuple(imagenet16_categories())
    return subset_wnids(head)


def make_head(head: str) -> torch.nn.Module | None:
    """The logit reduction of ``head`` (None for ``imagenet1k``: all 1000 logits)."""
    if head not in HEADS:
        raise ImagenetHeadError(unknown_choice("test-set head", head, HEADS))
    if head == "imagenet1k":
        return None
    if head == "imagenet16":
        return CategoryAverage(list(imagenet16_categories().values()))
    index = {w: i for i, w in enumerate(imagenet_classes())}
    return ClassSubset([index[w] for w in subset_wnids(head)])


def detect_head(classes: Sequence[str]) -> str:
    """The head for a folder with these class names: ``imagenet16`` when they are the 16
    categories' names, ``imagenet-a``/``imagenet-r`` when they are exactly that data set's 200
    WordNet ids, else ``imagenet1k`` when they are ImageNet WordNet ids."""
    names = set(classes)
    if names <= set(imagenet16_categories()):
        return "imagenet16"
    for head in ("imagenet-a", "imagenet-r"):
        if names == set(subset_wnids(head)):
            return head
    if names <= set(imagenet_classes()):
        return "imagenet1k"
    unknown = sorted(names - set(imagenet_classes()))[:5]
    raise ImagenetHeadError(
        f"test folder classes {unknown} are neither ImageNet WordNet ids nor the 16 categories "
        f"{list(imagenet16_categories())}; give the head explicitly ({', '.join(HEADS)})"
    )
