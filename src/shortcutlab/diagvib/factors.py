"""The six factors of variation, their classes and factor-space regions (paper Table A1).

Regions are closed intervals sampled uniformly. Position is (row, column) in [0, 1]^2 of the image,
rows growing downwards, so "top-left" is the small-row, small-column corner. Hue is in degrees;
red wraps around 0 (345..375 means 345..15). Lightness is a pair (dark value, bright value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from shortcutlab.errors import DiagvibError, unknown_choice

FactorName = Literal["position", "hue", "lightness", "scale", "shape", "texture"]
FACTORS: tuple[FactorName, ...] = get_args(FactorName)
"""The six factors in canonical order (the column order of every class table)."""

Interval = tuple[float, float]


@dataclass(frozen=True)
class Factor:
    """A factor: its class names in canonical order and each class's region (one interval per
    dimension; empty for shape and texture, whose classes are image pools)."""

    name: FactorName
    classes: tuple[str, ...]
    regions: tuple[tuple[Interval, ...], ...]

    def index(self, class_name: str) -> int:
        try:
            return self.classes.index(class_name)
        except ValueError:
            raise DiagvibError(
                unknown_choice(f"{self.name} class", class_name, self.classes)
            ) from None

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _sevenths(k: int) -> Interval:
    return (k / 7, (k + 1) / 7)


_POS_ROWS = {"top": 1, "center": 3, "bottom": 5}
_POS_COLS = {"left": 1, "center": 3, "right": 5}

POSITION = Factor(
    "position",
    tuple(f"{r}-{c}" for r in _POS_ROWS for c in _POS_COLS),
    tuple((_sevenths(_POS_ROWS[r]), _sevenths(_POS_COLS[c])) for r in _POS_ROWS for c in _POS_COLS),
)
HUE = Factor(
    "hue",
    ("red", "yellow", "green", "cyan", "blue", "magenta"),
    tuple(((c - 15.0, c + 15.0),) for c in (360.0, 60.0, 120.0, 180.0, 240.0, 300.0)),
)
LIGHTNESS = Factor(
    "lightness",
    ("dark", "darker", "brighter", "bright"),
    (
        ((0 / 11, 1 / 11), (4 / 11, 5 / 11)),
        ((2 / 11, 3 / 11), (6 / 11, 7 / 11)),
        ((4 / 11, 5 / 11), (8 / 11, 9 / 11)),
        ((6 / 11, 7 / 11), (10 / 11, 1.0)),
    ),
)
SCALE = Factor(
    "scale",
    ("small", "smaller", "normal", "larger", "large"),
    (
        ((1 / 1.45, 1 / 1.35),),
        ((1 / 1.25, 1 / 1.15),),
        ((1 / 1.05, 1.05),),
        ((1.15, 1.25),),
        ((1.35, 1.45),),
    ),
)
SHAPE = Factor("shape", tuple(str(d) for d in range(10)), tuple(() for _ in range(10)))
TEXTURE = Factor(
    "texture", ("tiles", "wood", "carpet", "bricks", "lava"), tuple(() for _ in range(5))
)

FACTOR_TABLE: dict[str, Factor] = {
    f.name: f for f in (POSITION, HUE, LIGHTNESS, SCALE, SHAPE, TEXTURE)
}


def get_factor(name: str) -> Factor:
    """The factor called ``name``; a clear error lists the valid names."""
    try:
        return FACTOR_TABLE[name]
    except KeyError:
        raise DiagvibError(unknown_choice("factor", name, FACTORS)) from None


def n_combinations() -> int:
    """Number of class combinations over all six factors (54,000)."""
    total = 1
    for f in FACTOR_TABLE.values():
        total *= f.n_classes
    return total
