"""Dataset capabilities: what an algorithm may ask of a training set beyond ``x`` and ``y``.

An algorithm that needs more than batches asks ``AlgorithmContext.train_dataset`` for a
capability with ``isinstance(dataset, Capability)``; the datasets that can offer it implement
the protocol, in the area that owns the data. The engine never learns what the data is.

:class:`Restylable`: a training set that can re-render its items with their *style* redrawn,
the rest of each item (its content, hence its label) kept. The factor-space Stylized and
Debiased algorithms ask for it (DiagViB-6 datasets offer it: the style is the texture class,
optionally with other factors; see :mod:`shortcutlab.diagvib.restyle`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the protocol itself needs neither at run time
    import numpy as np
    import torch

__all__ = ["STYLE_POOLS", "ItemRestyler", "Restylable"]

#: Where redrawn styles come from: the values the training set uses (``selected``) or every
#: value the dataset can render (``all``).
STYLE_POOLS = ("selected", "all")


class ItemRestyler(Protocol):
    """Re-renders a batch's items with other styles.

    An item is described by a row of integers (:meth:`rows`); the algorithm only permutes,
    selects and concatenates rows, and hands them back to :meth:`render`.
    """

    def rows(self, batch: Mapping[str, torch.Tensor]) -> np.ndarray:
        """int64 (B, K): one row per item of ``batch`` (a collated batch of the training set)."""
        ...

    def redrawn(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A copy of ``rows`` with each item's style drawn at random (from ``rng``) from the
        pool."""
        ...

    def donated(self, rows: np.ndarray, donors: np.ndarray) -> np.ndarray:
        """A copy of ``rows`` where item i takes the style of item ``donors[i]``."""
        ...

    def render(self, rows: np.ndarray, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """float32 images (B, C, H, W) in [0, 1] of the batch's items as ``rows`` describe them
        (unchanged rows give the batch's own images)."""
        ...


@runtime_checkable
class Restylable(Protocol):
    """A training set whose items can be re-rendered with their style redrawn."""

    def restyler(self, style: str = "", pool: str = "selected") -> ItemRestyler:
        """An :class:`ItemRestyler` for this set. ``style``: which style to redraw, in the
        set's own terms ("" = its default); ``pool``: one of :data:`STYLE_POOLS`. Raises
        TrainError when the request is unknown or would change the labels (e.g. the set
        predicts what the style changes)."""
        ...
