"""The nine studies: names, invariants of every study and pair, the benchmark writer."""

from __future__ import annotations

import csv
import itertools

import numpy as np
import pytest

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.spec import ExperimentSpec, assign_classes
from shortcutlab.diagvib.studies import (
    DEFAULT_SIZES,
    STUDIES,
    experiment_names,
    factor_pairs,
    make_experiment,
    parse_experiment_name,
    scaled_sizes,
    select_classes,
    write_benchmark,
)
from shortcutlab.errors import SpecError

EYE = np.eye(3, dtype=bool)
ROW = DEFAULT_SIZES["train"] // 3  # 14,580 training images per class of the predicted factor


def test_names_and_pairs() -> None:
    pairs = factor_pairs()
    assert len(pairs) == 30 and len(set(pairs)) == 30 and all(a != b for a, b in pairs)
    names = experiment_names()
    assert len(names) == 6 * 5 + 8 * 30 * 5 == 1230 and len(set(names)) == 1230
    assert "ZGO/hue-shape/0" in names and "ZSO/texture/2" in names
    assert experiment_names(["ZSO", "CHGO"], ["hue-shape", ("shape", "hue")], 2) == [
        "ZSO/hue/0", "ZSO/hue/1", "ZSO/shape/0", "ZSO/shape/1",
        "CHGO/hue-shape/0", "CHGO/hue-shape/1", "CHGO/shape-hue/0", "CHGO/shape-hue/1",
    ]
    assert parse_experiment_name("ZGO/hue-shape/0") == ("ZGO", "hue", "shape", 0)
    assert parse_experiment_name("ZSO/texture/2") == ("ZSO", "texture", None, 2)


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("CGO-4/hue-shape/0", ["CGO-4", "CGO-3", "CHGO"]),
        ("ZGO/hue-hue/0", ["hue", "twice", "shape"]),
        ("ZGO/hue-colour/0", ["colour", "texture"]),
        ("ZGO/hue-shape", ["ZGO/hue-shape", "STUDY"]),
        ("ZGO/hue-shape/-1", [">= 0"]),
        ("ZSO/hue-shape/0", ["ZSO", "hue-shape"]),
    ],
)
def test_bad_names(name: str, needles: list[str]) -> None:
    with pytest.raises(SpecError) as err:
        make_experiment(name)
    for needle in needles:
        assert needle in str(err.value)


def test_bad_filters_and_scale() -> None:
    with pytest.raises(SpecError, match="CGO-4"):
        experiment_names(["CGO-4"])
    with pytest.raises(SpecError, match="twice"):
        experiment_names(pairs=["shape-shape"])
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(SpecError, match="scale"):
            make_experiment("ZGO/hue-shape/0", scale=bad)


def test_selection_is_per_sample_and_shared_by_studies() -> None:
    a = make_experiment("ZGO/hue-shape/1", seed=3)
    b = make_experiment("CGO-2/position-texture/1", seed=3)
    assert a.selected == b.selected == select_classes(3, 1)
    assert select_classes(3, 1) != select_classes(3, 2) != select_classes(4, 1)
    for name, chosen in a.selected.items():
        assert len(set(chosen)) == 3 and set(chosen) <= set(FACTOR_TABLE[name].classes)


def _cells(spec: ExperimentSpec, split: str) -> np.ndarray:
    return spec.cell_counts(split)


@pytest.mark.parametrize("study", [s for s in STUDIES if s != "ZSO"])
def test_study_invariants_for_every_pair(study: str) -> None:
    for (pred, corr), sample in itertools.product(factor_pairs(), range(2)):
        spec = make_experiment(f"{study}/{pred}-{corr}/{sample}")
        train, val, test = _cells(spec, "train"), _cells(spec, "val"), _cells(spec, "test")
        assert train.sum() == 43740 and val.sum() == 8748 and test.sum() == 10000
        assert train.sum(axis=1).tolist() == [ROW] * 3  # every class of Fi gets a third
        assert np.array_equal(spec.weights_of("val"), spec.weights_of("train"))
        seen, tested = train > 0, test > 0
        if study == "ZGO":
            assert np.array_equal(seen, EYE) and np.array_equal(tested, ~EYE)
        elif study.startswith("CGO-"):
            c = int(study[-1])
            assert seen[EYE].all() and seen[~EYE].sum() == c
            assert (~seen).sum(axis=1).min() >= 1  # each class of Fi keeps an unseen cell
            assert np.array_equal(tested, ~seen)
            if c > 1:  # successive: CGO-(c-1) cells are a subset of CGO-c cells
                prev = make_experiment(f"CGO-{c - 1}/{pred}-{corr}/{sample}").cell_counts("train")
                assert np.all(seen[prev > 0])
        elif study == "CHGO":
            singles = [a for a in range(3) if seen[a].sum() == 1]
            assert len(singles) == 1
            a = singles[0]
            assert seen[a, a]  # coupled only to its diagonal class of Fj
            others = [i for i in range(3) if i != a]
            assert seen[np.ix_(others, others)].all() and not seen[others, a].any()
            assert np.array_equal(tested, ~seen) and tested.sum() == 4
        else:  # FGO-f: exactly f% of each class of Fi off the diagonal, spread evenly
            f = int(study.split("-")[1])
            assert seen.all() and np.array_equal(tested, ~EYE)
            violating = train[~EYE].reshape(3, 2)
            assert violating.sum(axis=1).tolist() == [ROW * f // 100] * 3
            assert violating.max() - violating.min() <= 1
            assert train.sum(axis=0).tolist() == [ROW] * 3  # ties rotate: Fj balanced too
        if not study.startswith("FGO"):
            assert not (seen & tested).any()  # disjoint train and test cells
        # Test images are uniform over the test cells.
        assert test[tested].max() - test[tested].min() <= 1
    # The other four factors are exactly uniform over their selected classes, in every split.
    for pred, corr in factor_pairs():
        spec = make_experiment(f"{study}/{pred}-{corr}/0", scale=0.1)  # 4,374 / 875 / 1,000
        for split in ("train", "test"):
            a = assign_classes(spec, split)
            n = len(a.labels)
            for f in set(FACTORS) - {pred, corr}:
                counts = np.bincount(a.local[:, FACTORS.index(f)], minlength=3)
                assert counts.max() - counts.min() <= 1 and counts.sum() == n
            assert np.array_equal(a.labels, a.local[:, FACTORS.index(pred)])


def test_zso_all_factors() -> None:
    for factor in FACTORS:
        spec = make_experiment(f"ZSO/{factor}/0")
        assert spec.joint_factors == (factor,)
        assert spec.cell_counts("train").tolist() == [ROW] * 3
        assert np.array_equal(spec.weights_of("test"), spec.weights_of("train"))


def test_cgo_cells_vary_with_pair_and_sample() -> None:
    patterns = {
        tuple(make_experiment(f"CGO-1/{p}-{c}/{s}").cell_counts("train").ravel() > 0)
        for (p, c), s in itertools.product(factor_pairs()[:10], range(5))
    }
    assert len(patterns) == 6  # all six off-diagonal cells get picked somewhere


@pytest.mark.parametrize("name", ["ZSO/hue/0", "CHGO/shape-hue/3", "FGO-10/scale-position/2"])
def test_full_size_assignment_other_factors_uniform(name: str) -> None:
    spec = make_experiment(name)
    a = assign_classes(spec, "train")
    assert len(a.labels) == 43740
    joint = {FACTORS.index(f) for f in spec.joint_factors}
    for fi in range(6):
        counts = np.bincount(a.local[:, fi], minlength=3)
        if fi not in joint:
            assert counts.tolist() == [ROW] * 3
    assert np.array_equal(a.labels, a.local[:, FACTORS.index(spec.predicted)])
    expected = spec.cell_counts("train").ravel()
    assert np.bincount(a.cells, minlength=expected.size).tolist() == expected.tolist()


def test_scale_keeps_proportions() -> None:
    assert scaled_sizes(0.01) == {"train": 437, "val": 87, "test": 100}
    spec = make_experiment("FGO-20/hue-shape/0", scale=0.1)
    assert spec.sizes == {"train": 4374, "val": 875, "test": 1000}
    assert spec.cell_counts("train").sum(axis=1).tolist() == [1458] * 3


def test_write_benchmark_full(tmp_path) -> None:
    index = write_benchmark(tmp_path, seed=0)
    with open(index, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["name"] for r in rows] == experiment_names()
    assert len({r["hash"] for r in rows}) == 1230
    for row in rows[::97]:
        spec = ExperimentSpec.from_yaml((tmp_path / row["path"]).read_text())
        assert spec.name == row["name"] and spec.content_hash() == row["hash"]
        assert spec == make_experiment(row["name"])
    assert not list(tmp_path.rglob(".*"))  # no temporary files left behind


def test_write_benchmark_rejects_before_writing(tmp_path) -> None:
    with pytest.raises(SpecError, match="CGO-4"):
        write_benchmark(tmp_path / "b", studies=["ZGO", "CGO-4"])
    assert not (tmp_path / "b").exists()


def test_pinned_assignment_reproducible_across_processes_and_versions() -> None:
    # Pinned values: the class table is a pure function of (benchmark seed, name, split).
    a = assign_classes(make_experiment("CGO-2/hue-shape/1", scale=0.01), "train")
    assert a.cells[:12].tolist() == [5, 4, 4, 8, 4, 0, 5, 8, 4, 5, 1, 4]
    assert a.local[:4].tolist() == [[0, 1, 2, 2, 2, 1], [0, 1, 2, 2, 1, 1],
                                    [2, 1, 0, 1, 1, 2], [2, 2, 2, 0, 2, 0]]
