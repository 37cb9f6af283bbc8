"""DiagViB-6's restyling capability: re-render training images with other style factors.

DiagViB-6 images are rendered from their factor classes, so the factor-space counterpart of
style transfer needs no network: the same image (same render seed, split and index, so shape,
position, scale, lightness and every sampled detail stay) is rendered again with other classes
of the *style factors*: texture by default; a style ``"texture+hue"`` (the algorithms' former
``hue=True``) redraws the hue class too. :class:`FactorRestyler` implements
:class:`shortcutlab.train.capabilities.ItemRestyler`; ``DiagvibDataset.restyler`` offers it, so a
DiagViB-6 training set is :class:`~shortcutlab.train.capabilities.Restylable`.

An item's row is its (6,) class table row in ``FACTORS`` order; the batch needs ``classes`` and
``index`` (DiagViB-6 items have both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.train.capabilities import STYLE_POOLS

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_STYLE",
    "FactorRestyler",
    "donor_style_classes",
    "random_style_classes",
    "style_factors",
    "style_hparams",
]

#: The factors restyling redraws unless a style names others.
DEFAULT_STYLE = ("texture",)
#: The former hyper-parameters of the stylising algorithms, now ``style`` and ``style_pool``.
_LEGACY = {"stylized": ("hue", "texture_pool"), "debiased": ("hue",)}


def style_factors(style: str) -> tuple[str, ...]:
    """The factors a style redraws: ``""`` -> texture; else ``+``-separated factor names."""
    if not style:
        return DEFAULT_STYLE
    factors = tuple(f.strip() for f in style.split("+"))
    for f in factors:
        if f not in FACTORS:
            raise TrainError(unknown_choice("style factor", f, FACTORS))
    if len(set(factors)) != len(factors):
        raise TrainError(f"style {style!r} names a factor twice")
    return factors


def style_hparams(algorithm: str, hparams: Mapping[str, Any]) -> dict[str, Any]:
    """``hparams`` of ``algorithm`` with the former DiagViB-6 options in today's terms:
    ``hue=True`` -> ``style="texture+hue"`` (``hue=False``: dropped, the default) and
    ``texture_pool`` -> ``style_pool``; other algorithms' hparams are returned unchanged."""
    out = dict(hparams)
    legacy = _LEGACY.get(algorithm, ())
    if "hue" in legacy and "hue" in out:
        hue = out.pop("hue")
        if not isinstance(hue, bool):
            raise TrainError(f"hyper-parameter 'hue' of algorithm {algorithm} must be bool, "
                             f"got {hue!r}")
        if hue:
            if out.get("style", "") not in ("", "texture+hue"):
                raise TrainError(f"algorithm {algorithm}: give hue=true or style, not both")
            out["style"] = "texture+hue"
    if "texture_pool" in legacy and "texture_pool" in out:
        if "style_pool" in out:
            raise TrainError(f"algorithm {algorithm}: give texture_pool or style_pool, not both")
        out["style_pool"] = out.pop("texture_pool")
    return out


def random_style_classes(
    classes: np.ndarray, pools: Mapping[int, np.ndarray], rng: np.random.Generator
) -> np.ndarray:
    """A copy of the (B, 6) class table with each column in ``pools`` redrawn from its pool."""
    out = np.array(classes, dtype=np.int64, copy=True)
    for col, pool in pools.items():
        out[:, col] = rng.choice(np.asarray(pool, dtype=np.int64), size=out.shape[0])
    return out


def donor_style_classes(
    classes: np.ndarray, perm: np.ndarray, columns: Sequence[int]
) -> np.ndarray:
    """A copy of the class table where row i takes ``columns`` from row ``perm[i]``."""
    out = np.array(classes, dtype=np.int64, copy=True)
    cols = list(columns)
    out[:, cols] = np.asarray(classes)[np.asarray(perm)][:, cols]
    return out


@dataclass
class FactorRestyler:
    """Re-renders items of one DiagViB-6 split with the style factors' classes changed.

    ``pools``: class-table column -> global class indices to draw from, one per style factor.
    """

    generator: Any
    render_seed: int
    pools: dict[int, np.ndarray]
    split: str = "train"
    backend: str = "numpy"

    @classmethod
    def for_dataset(cls, ds: Any, style: str = "", pool: str = "selected") -> FactorRestyler:
        """The restyler of a DiagvibDataset (``spec``, ``generator``, ``render_seed``);
        refuses a style that would change the labels (the experiment predicts a style
        factor)."""
        if pool not in STYLE_POOLS:
            raise TrainError(unknown_choice("style pool", pool, STYLE_POOLS))
        factors = style_factors(style)
        spec = ds.spec
        if spec.predicted in factors:
            hint = f", or a style without {spec.predicted}" if len(factors) > 1 else ""
            raise TrainError(
                f"restyling redraws {' and '.join(factors)}, but the experiment predicts "
                f"{spec.predicted!r}: the labels would be destroyed. Use it on experiments "
                f"predicting another factor (e.g. shape){hint}"
            )
        pools = {}
        for f in factors:
            names = list(FACTOR_TABLE[f].classes)
            if pool == "all":
                pools[FACTORS.index(f)] = np.arange(len(names), dtype=np.int64)
            else:
                pools[FACTORS.index(f)] = np.array([names.index(c) for c in spec.selected[f]],
                                                   dtype=np.int64)
        return cls(ds.generator, int(ds.render_seed), pools, ds.split, ds.backend)

    def rows(self, batch: Mapping[str, torch.Tensor]) -> np.ndarray:
        """The batch's (B, 6) class table."""
        for key in ("classes", "index"):
            if key not in batch:
                raise TrainError(f"re-rendering needs the batch key {key!r} (DiagViB-6 items); "
                                 f"got keys {sorted(batch)}")
        return np.asarray(batch["classes"].detach().cpu().numpy(), dtype=np.int64)

    def redrawn(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each style factor's class drawn uniformly from its pool."""
        return random_style_classes(rows, self.pools, rng)

    def donated(self, rows: np.ndarray, donors: np.ndarray) -> np.ndarray:
        """Row i with the style factors' classes of row ``donors[i]``."""
        return donor_style_classes(rows, donors, tuple(self.pools))

    def render(self, rows: np.ndarray, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """float32 images (B, 3, H, W) in [0, 1] for these class rows at the batch's indices."""
        import torch

        index = np.asarray(torch.as_tensor(batch["index"]).cpu().numpy(), dtype=np.int64)
        images = self.generator.render(
            np.asarray(rows, dtype=np.int64),
            seed=self.render_seed,
            split=self.split,
            indices=index,
            backend=self.backend,
        )
        return torch.as_tensor(np.asarray(images)).to(torch.float32).div_(255.0)
