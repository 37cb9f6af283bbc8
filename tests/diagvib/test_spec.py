"""ExperimentSpec validation, serialisation, hashing, exact counting and class assignment."""

from __future__ import annotations

import numpy as np
import pytest

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.spec import (
    ExperimentSpec,
    apportion,
    apportion_cells,
    assign_classes,
    is_distribution,
)
from shortcutlab.errors import SpecError

SELECTED = {
    "position": ["top-left", "center-center", "bottom-right"],
    "hue": ["red", "green", "blue"],
    "lightness": ["dark", "darker", "bright"],
    "scale": ["small", "normal", "large"],
    "shape": ["2", "4", "3"],
    "texture": ["tiles", "wood", "lava"],
}
DIAG = [[1 / 3, 0, 0], [0, 1 / 3, 0], [0, 0, 1 / 3]]
OFF = [[0, 1 / 6, 1 / 6], [1 / 6, 0, 1 / 6], [1 / 6, 1 / 6, 0]]


def make(**overrides: object) -> ExperimentSpec:
    data: dict[str, object] = dict(
        name="ZGO/hue-shape/0", study="ZGO", predicted="hue", correlated="shape", sample=0,
        selected=SELECTED, sizes={"train": 90, "val": 30, "test": 60},
        weights={"train": DIAG, "test": OFF},
    )
    data.update(overrides)
    return ExperimentSpec(**data)


def test_yaml_and_json_round_trip_keep_the_hash() -> None:
    spec = make()
    assert ExperimentSpec.from_yaml(spec.to_yaml()) == spec
    assert ExperimentSpec.from_json(spec.to_json()) == spec
    assert ExperimentSpec.from_yaml(spec.to_yaml()).content_hash() == spec.content_hash()


def test_content_hash_is_pinned_and_sensitive() -> None:
    spec = make()
    # Canonical JSON (sorted keys, compact) -> sha256; pinned so the identity never drifts.
    assert spec.content_hash() == (
        "adde85839558060bb26b9bf82ba780733d017bccc4cdcb419c912eac1a377fed"
    )
    assert make(sample=1).content_hash() != spec.content_hash()
    assert make(sizes={"train": 91, "val": 30, "test": 60}).content_hash() != spec.content_hash()


@pytest.mark.parametrize(
    ("overrides", "needles"),
    [
        ({"study": "CGO-4"}, ["CGO-4", "CGO-3", "FGO-20"]),
        ({"correlated": "hue"}, ["hue", "twice", "texture"]),
        ({"predicted": "colour"}, ["colour", "position"]),
        ({"sizes": {"train": 0, "val": 30, "test": 60}}, ["sizes.train", "0"]),
        ({"sizes": {"train": 90, "val": -1, "test": 60}}, ["sizes.val", "-1"]),
        ({"sizes": {"train": 90, "test": 60}}, ["sizes", "val"]),
        ({"weights": {"train": [[0.5, 0, 0], [0, 0.5, 0], [0, 0, 0.5]], "test": OFF}},
         ["weights.train", "1.5", "distribution"]),
        ({"weights": {"train": [[-0.1, 0, 0], [0, 0.6, 0], [0, 0, 0.5]], "test": OFF}},
         ["weights.train", "-0.1"]),
        # short of 1 is refused as well as over 1 (apportionment would silently renormalise)
        ({"weights": {"train": DIAG, "test": [[0, 0.15, 0.15], [0.15, 0, 0.15],
                                              [0.15, 0.15, 0]]}},
         ["weights.test", "0.9", "distribution"]),
        ({"weights": {"train": [1 / 3] * 3, "test": OFF}}, ["weights.train", "shape"]),
        ({"weights": {"train": DIAG, "tset": OFF}}, ["tset", "train, val, test"]),
        ({"weights": {"train": DIAG}}, ["weights.test"]),
        ({"selected": {**SELECTED, "hue": ["red", "pink", "blue"]}}, ["pink", "magenta"]),
        ({"selected": {**SELECTED, "hue": ["red", "red", "blue"]}}, ["selected.hue", "distinct"]),
        ({"study": "ZSO"}, ["ZSO", "shape"]),
        ({"correlated": None}, ["ZGO", "correlated"]),
        ({"sizes": {"train": "many", "val": 30, "test": 60}}, ["sizes.train", "many"]),
        ({"bogus": 1}, ["bogus"]),
    ],
)
def test_bad_specs_raise_spec_error_naming_value(overrides: dict, needles: list[str]) -> None:
    with pytest.raises(SpecError) as err:
        make(**overrides)
    for needle in needles:
        assert needle in str(err.value)


def test_bad_yaml_and_non_mapping() -> None:
    with pytest.raises(SpecError, match="mapping"):
        ExperimentSpec.from_yaml("- 1\n- 2\n")
    with pytest.raises(SpecError, match="YAML"):
        ExperimentSpec.from_yaml("name: [unclosed\n")
    with pytest.raises(SpecError, match="JSON"):
        ExperimentSpec.from_json("{nope")


def test_apportion_is_exact_and_respects_zero_weights() -> None:
    assert apportion(np.array([0.95, 0.025, 0.025]), 14580).tolist() == [13851, 365, 364]
    assert apportion(np.array([0.95, 0.025, 0.025]), 14580, tie_start=2).tolist() == [
        13851, 364, 365]
    assert apportion(np.array([0.0, 1.0, 0.0]), 7).tolist() == [0, 7, 0]
    counts = apportion(np.array([1 / 3, 1 / 3, 1 / 3]), 10000)
    assert counts.sum() == 10000 and counts.max() - counts.min() == 1
    cells = apportion_cells(np.array(OFF), 10000)
    assert cells.sum() == 10000 and np.all(np.diag(cells) == 0)


def test_assignment_is_exact_balanced_and_deterministic() -> None:
    spec = make(sizes={"train": 900, "val": 300, "test": 600})
    a = assign_classes(spec, "train")
    b = assign_classes(spec, "train")
    assert np.array_equal(a.classes, b.classes) and np.array_equal(a.tags, b.tags)
    hue, shape = FACTORS.index("hue"), FACTORS.index("shape")
    assert np.array_equal(a.local[:, hue], a.local[:, shape])  # ZGO: diagonal only
    assert np.bincount(a.labels).tolist() == [300, 300, 300]
    assert set(a.tags) == {"00-id", "11-id", "22-id"}
    for f in ("position", "lightness", "scale", "texture"):  # balanced within every cell
        col = a.local[:, FACTORS.index(f)]
        for cell in range(3):
            assert np.bincount(col[a.labels == cell], minlength=3).tolist() == [100, 100, 100]
    # Global class indices match the selection; the order is shuffled, not sorted by cell.
    assert a.classes[a.labels == 1][:, hue].tolist() == [2] * 300  # "green" is hue class 2
    assert not np.all(np.diff(a.cells) >= 0)
    t = assign_classes(spec, "test")
    assert set(t.tags) == {"01-ood", "02-ood", "10-ood", "12-ood", "20-ood", "21-ood"}
    assert np.bincount(t.cells, minlength=9).tolist() == [0, 100, 100, 100, 0, 100, 100, 100, 0]
    v = assign_classes(spec, "val")  # validation follows the training distribution
    assert set(v.tags) == {"00-id", "11-id", "22-id"} and len(v.labels) == 300


def test_custom_weighting_and_three_factor_correlation() -> None:
    train = np.zeros((3, 3, 3))
    for a in range(3):
        train[a, a, a] = 0.3
        train[a, (a + 1) % 3, (a + 2) % 3] = 1 / 30
    test = np.full((3, 3, 3), 1 / 27)
    spec = make(
        name="custom/shape-hue-texture", study="custom", predicted="shape", correlated="hue",
        more_correlated=["texture"], sizes={"train": 3000, "val": 300, "test": 2700},
        weights={"train": train.tolist(), "test": test.tolist()},
    )
    assert spec.joint_factors == ("shape", "hue", "texture")
    counts = spec.cell_counts("train")
    assert counts[0, 0, 0] == 900 and counts[0, 1, 2] == 100 and counts.sum() == 3000
    a = assign_classes(spec, "train")
    assert set(a.tags) == {"000-id", "111-id", "222-id", "012-id", "120-id", "201-id"}
    t = assign_classes(spec, "test")
    assert (t.tags == "000-id").sum() == 100 and (t.tags == "001-ood").sum() == 100
    assert ExperimentSpec.from_yaml(spec.to_yaml()).content_hash() == spec.content_hash()
    with pytest.raises(SpecError, match="shape"):
        make(study="custom", more_correlated=["texture"])  # 3 joint factors need a 3x3x3 tensor
    with pytest.raises(SpecError, match="twice"):
        make(study="custom", more_correlated=["hue"], weights={"train": train.tolist(),
                                                                "test": test.tolist()})


def test_custom_zso_like_spec_without_correlated_factor() -> None:
    spec = make(study="custom", correlated=None, weights={"train": [0.5, 0.25, 0.25],
                                                           "test": [1 / 3] * 3})
    a = assign_classes(spec, "train")
    assert np.bincount(a.labels).tolist() == [45, 23, 22]
    assert set(a.tags) == {"0-id", "1-id", "2-id"}


def test_is_distribution() -> None:
    assert is_distribution(np.array(DIAG))
    assert not is_distribution(np.array([0.5, 0.6]))
    assert not is_distribution(np.array([1.5, -0.5]))


def test_yaml_keeps_tiny_and_exponent_weights_exact() -> None:
    train = np.zeros((3, 3))
    train[0, 0], train[1, 1], train[2, 2] = 1 - 2e-05, 1e-05, 1e-05
    spec = make(study="custom", weights={"train": train.tolist(), "test": OFF})
    text = spec.to_yaml()
    assert "1.0e-05" in text  # YAML 1.1 would read a bare 1e-05 as a string
    assert ExperimentSpec.from_yaml(text) == spec


def test_unquoted_digit_classes_are_read_as_shape_names() -> None:
    text = make().to_yaml().replace('shape: ["2", "4", "3"]', "shape: [2, 4, 3]")
    assert "shape: [2, 4, 3]" in text
    assert ExperimentSpec.from_yaml(text) == make()


def test_selection_is_part_of_the_identity() -> None:
    paper = make(selection="paper")
    assert paper.selection == "paper" and make().selection == "seeded"
    assert paper.content_hash() != make().content_hash()
    assert ExperimentSpec.from_json(paper.to_json()) == paper
    assert '"selection": "paper"' in paper.to_json()
    with pytest.raises(SpecError) as err:
        make(selection="authors")
    assert "selection" in str(err.value) and "'seeded'" in str(err.value)
    assert "'paper'" in str(err.value)


def test_zgo_twin_shares_class_table_and_differs_in_labels() -> None:
    spec = make(sizes={"train": 90, "val": 30, "test": 60})  # ZGO hue-shape
    twin = make(name="ZGO/shape-hue/0", predicted="shape", correlated="hue",
                sizes={"train": 90, "val": 30, "test": 60})
    assert spec.is_paired() and twin.is_paired()
    assert spec.image_source() is spec  # hue comes before shape in FACTORS
    source = twin.image_source()
    assert (source.name, source.predicted, source.correlated) == ("ZGO/hue-shape/0", "hue", "shape")
    assert twin.image_hash() == spec.image_hash() != spec.content_hash()
    hue, shape = FACTORS.index("hue"), FACTORS.index("shape")
    for split in ("train", "val", "test"):
        a, b = assign_classes(spec, split), assign_classes(twin, split)
        assert np.array_equal(a.classes, b.classes)
        assert np.array_equal(a.labels, a.local[:, hue])
        assert np.array_equal(b.labels, b.local[:, shape])
        assert np.array_equal(b.cells, 3 * b.local[:, shape] + b.local[:, hue])
        counts = twin.cell_counts(split).ravel().tolist()
        assert np.bincount(b.cells, minlength=9).tolist() == counts
    assert set(assign_classes(twin, "test").tags) == {f"{a}{b}-ood" for a in range(3)
                                                      for b in range(3) if a != b}


def test_only_symmetric_zgo_specs_are_paired() -> None:
    lopsided = [[0, 0.2, 0.2], [0.1, 0, 0.1], [0.2, 0.1, 0.1]]
    assert not make(weights={"train": DIAG, "test": lopsided}).is_paired()
    custom = make(study="custom")  # same weights, but only the ZGO study pairs
    assert not custom.is_paired() and custom.image_hash() == custom.content_hash()
    assert not make(study="custom", correlated=None,
                    weights={"train": [1 / 3] * 3, "test": [1 / 3] * 3}).is_paired()


def test_uniform_cells_spread_leftover_images_over_the_columns() -> None:
    """Module docstring / apportion_cells: the tie start rotates per row, so with equal weights
    the leftover images of each row go to different columns and the column totals (the
    correlated factor's class counts) differ by at most one, as the row totals do. By hand for
    11 images over 9 equal cells: rows 4, 4, 3; row 0 gives its extra image to column 0, row 1
    to column 1, so the columns hold 4, 4, 3 (without the rotation: 5, 3, 3)."""
    uniform = np.full((3, 3), 1 / 9)
    assert apportion_cells(uniform, 11).tolist() == [[2, 1, 1], [1, 2, 1], [1, 1, 1]]
    for n in (10, 11, 13, 14, 100, 101):
        cells = apportion_cells(uniform, n)
        assert cells.sum() == n
        for totals in (cells.sum(axis=0), cells.sum(axis=1)):
            assert totals.max() - totals.min() <= 1, (n, cells.tolist())


def test_a_spec_with_its_own_val_weights_uses_them() -> None:
    """Only an omitted ``val`` follows ``train`` (class docstring): given val weights are
    the validation split's distribution, never silently replaced by the training one."""
    spec = make(study="custom", weights={"train": DIAG, "val": OFF, "test": OFF})
    assert np.array_equal(spec.weights_of("val"), np.array(OFF))
    assert np.bincount(assign_classes(spec, "val").cells, minlength=9).tolist() == [
        0, 5, 5, 5, 0, 5, 5, 5, 0]  # 30 images over the six off-diagonal cells
    assert set(assign_classes(spec, "val").tags) == {
        f"{a}{b}-ood" for a in range(3) for b in range(3) if a != b}
    assert set(assign_classes(make(study="custom"), "val").tags) == {"00-id", "11-id", "22-id"}
