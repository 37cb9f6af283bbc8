"""Table A1 as encoded in factors.py, and the name <-> index helpers of the generator."""

from __future__ import annotations

import numpy as np
import pytest

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS, get_factor, n_combinations
from shortcutlab.diagvib.render import (
    class_names,
    classes_from_names,
    parse_assignments,
    random_classes,
)
from shortcutlab.errors import DiagvibError


def test_table_a1_counts_and_regions() -> None:
    assert FACTORS == ("position", "hue", "lightness", "scale", "shape", "texture")
    assert [FACTOR_TABLE[f].n_classes for f in FACTORS] == [9, 6, 4, 5, 10, 5]
    assert n_combinations() == 54_000
    pos = get_factor("position")
    assert pos.regions[pos.index("top-left")] == ((1 / 7, 2 / 7), (1 / 7, 2 / 7))
    assert pos.regions[pos.index("center-right")] == ((3 / 7, 4 / 7), (5 / 7, 6 / 7))
    assert pos.regions[pos.index("bottom-center")] == ((5 / 7, 6 / 7), (3 / 7, 4 / 7))
    hue = get_factor("hue")
    assert hue.regions[hue.index("red")] == ((345.0, 375.0),)
    assert hue.regions[hue.index("blue")] == ((225.0, 255.0),)
    light = get_factor("lightness")
    assert light.regions[0] == ((0.0, 1 / 11), (4 / 11, 5 / 11))
    assert light.regions[3] == ((6 / 11, 7 / 11), (10 / 11, 1.0))
    scale = get_factor("scale")
    assert scale.regions[0] == ((1 / 1.45, 1 / 1.35),)
    assert scale.regions[4] == ((1.35, 1.45),)
    # the middle classes too (the authors' config: 1/1.25..1/1.15, 1/1.05..1.05, 1.15..1.25)
    assert scale.regions[1:4] == (((1 / 1.25, 1 / 1.15),), ((1 / 1.05, 1.05),), ((1.15, 1.25),))
    assert list(scale.classes) == ["small", "smaller", "normal", "larger", "large"]
    assert get_factor("texture").classes == ("tiles", "wood", "carpet", "bricks", "lava")
    assert get_factor("shape").classes == tuple("0123456789")


def test_each_hue_class_is_centred_on_the_hue_of_its_colour_name() -> None:
    """Table A1: six hue classes, each 30 degrees wide around the hue its name denotes. The
    names' hues come from matplotlib's colour table (HSV hue = HLS hue), not from factors.py."""
    from matplotlib.colors import rgb_to_hsv, to_rgb

    hue = get_factor("hue")
    for name, ((lo, hi),) in zip(hue.classes, hue.regions, strict=True):
        named = float(rgb_to_hsv(np.array(to_rgb(name)))[0]) * 360
        assert hi - lo == pytest.approx(30.0), name
        assert ((lo + hi) / 2 - named + 180) % 360 - 180 == pytest.approx(0.0, abs=1e-9), name


def test_factor_names_are_a_closed_literal_type() -> None:
    from typing import get_args

    from shortcutlab.diagvib.factors import FactorName

    assert get_args(FactorName) == FACTORS
    assert all(FACTOR_TABLE[f].name == f for f in FACTORS)


def test_unknown_names_list_valid_choices() -> None:
    with pytest.raises(DiagvibError, match="unknown factor 'colour'.*position, hue"):
        get_factor("colour")
    with pytest.raises(DiagvibError, match="unknown hue class 'pink'.*red, yellow"):
        get_factor("hue").index("pink")


def test_classes_from_names_roundtrip() -> None:
    rows = [
        {"position": "top-left", "hue": "red", "lightness": "dark", "scale": "small",
         "shape": "0", "texture": "tiles"},
        {"position": "bottom-right", "hue": "magenta", "lightness": "bright", "scale": "large",
         "shape": "9", "texture": "lava"},
    ]
    classes = classes_from_names(rows)
    assert classes.tolist() == [[0, 0, 0, 0, 0, 0], [8, 5, 3, 4, 9, 4]]
    assert classes_from_names(rows[1]).tolist() == [[8, 5, 3, 4, 9, 4]]
    names = class_names(classes)
    assert list(names) == list(FACTORS)
    assert names["hue"].tolist() == ["red", "magenta"]
    with pytest.raises(DiagvibError, match="no class given for factor.*texture"):
        classes_from_names({k: v for k, v in rows[0].items() if k != "texture"})
    with pytest.raises(DiagvibError, match="unknown factor 'size'"):
        classes_from_names({**rows[0], "size": "big"})
    with pytest.raises(DiagvibError, match="unknown shape class '10'"):
        classes_from_names({**rows[0], "shape": "10"})


def test_parse_assignments_rejects_bad_input() -> None:
    assert parse_assignments(["hue=red", "shape = 3"]) == {"hue": "red", "shape": "3"}
    with pytest.raises(DiagvibError, match="given twice"):
        parse_assignments(["hue=red", "hue=blue"])
    with pytest.raises(DiagvibError, match="FACTOR=CLASS"):
        parse_assignments(["hue"])
    with pytest.raises(DiagvibError, match="unknown texture class 'marble'.*tiles"):
        parse_assignments(["texture=marble"])


def test_random_classes_pure_and_uniform() -> None:
    a = random_classes(3000, seed=5, split="val", fixed={"hue": "green"})
    b = random_classes(np.arange(2990, 3000), seed=5, split="val", fixed={"hue": "green"})
    assert (a[2990:] == b).all()  # image i's classes depend only on (seed, split, i)
    assert (a[:, 1] == get_factor("hue").index("green")).all()
    counts = np.bincount(a[:, 4], minlength=10)
    assert counts.min() > 230 and counts.max() < 370  # ~300 each
    assert not (random_classes(50, seed=6) == random_classes(50, seed=5)).all()
    with pytest.raises(DiagvibError, match="positive"):
        random_classes(0, seed=0)


def test_random_classes_draw_the_factors_independently() -> None:
    """Uniform marginals are not enough: a shared draw would tie the factors together (a
    shortcut in data meant to have none). Every pair of factors passes scipy's chi-square test
    of independence, and every (shape, texture) combination turns up."""
    from scipy.stats import chi2_contingency

    a = random_classes(3000, seed=8)
    for i in range(len(FACTORS)):
        for j in range(i + 1, len(FACTORS)):
            table = np.zeros((a[:, i].max() + 1, a[:, j].max() + 1))
            np.add.at(table, (a[:, i], a[:, j]), 1)
            assert chi2_contingency(table).pvalue > 1e-4, (FACTORS[i], FACTORS[j])
    assert np.unique(a[:, 4] * 5 + a[:, 5]).size == 50


def test_every_lightness_class_matches_the_authors_config() -> None:
    """All four lightness classes (dark value, bright value), not only the outer two: the
    authors' code (boschresearch/diagvib-6, diagvibsix/dataset/config.py, LIGHTNESS) defines
    dark ((0, 1/11), (4/11, 5/11)), darker ((2/11, 3/11), (6/11, 7/11)), brighter
    ((4/11, 5/11), (8/11, 9/11)) and bright ((6/11, 7/11), (10/11, 1))."""
    authors = {
        "dark": ((0.0, 1 / 11), (4 / 11, 5 / 11)),
        "darker": ((2 / 11, 3 / 11), (6 / 11, 7 / 11)),
        "brighter": ((4 / 11, 5 / 11), (8 / 11, 9 / 11)),
        "bright": ((6 / 11, 7 / 11), (10 / 11, 1.0)),
    }
    light = get_factor("lightness")
    assert light.classes == tuple(authors)
    for name, region in authors.items():
        assert light.regions[light.index(name)] == region, name
