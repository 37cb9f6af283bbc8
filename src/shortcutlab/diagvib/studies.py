"""The nine DiagViB-6 studies (paper sec. 3.2-3.3, fig. 3) as exact experiment specifications.

An experiment is named ``<STUDY>/<predicted>-<correlated>/<sample>`` (``ZSO/<factor>/<sample>``
for ZSO). Per dataset sample, 3 classes of every factor are selected (the same selection for
every study and pair of that sample): drawn from the benchmark seed (``selection="seeded"``), or
the DiagViB-6 authors' own five samples (``selection="paper"``, from ``data/paper_selection.yaml``,
which also fixes the CGO cells and the CHGO shortcut class). Training cells of the (Fi, Fj) 3x3
matrix, rows = classes of the predicted factor Fi:

- ZSO: all 9 cells (predicted factor alone, uniform); test the same distribution.
- ZGO: the diagonal; test the 6 off-diagonal cells.
- CGO-c: diagonal + c random off-diagonal cells (nested: CGO-1 in CGO-2 in CGO-3), at most one
  per row so every class of Fi keeps an unseen cell; test the unseen cells.
- CHGO: one random class of Fi (class 0 for the paper selection) only with its diagonal class
  of Fj; the other two classes of Fi uniform over the other two classes of Fj; test the 4 cells
  outside training.
- FGO-f: the diagonal with f% of every class of Fi spread evenly over its off-diagonal cells;
  test the off-diagonal (under-represented) cells.

CGO-c weights every training *cell* equally, as the paper's figure 1 ("all five ... uniformly
shown") and the authors' code do: 1/(3+c) per cell, so the classes of Fi get 2:1:1 (CGO-1),
2:2:1 (CGO-2) and 1:1:1 (CGO-3). Every other study gives every class of Fi a third of the
training images. Validation follows training. Test images are uniform over the test cells: the
authors' "violate" half of their test split, on which the paper's accuracies are measured.

Each study is described once, as a :class:`~shortcutlab.diagvib.spec.Study` registered at the
end of this module (its weights, description and place in the figures); the registry in
:mod:`~shortcutlab.diagvib.spec` imports this module on first use, so the paper's studies come
first, and a user's :func:`~shortcutlab.diagvib.spec.register_study` adds more.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.spec import (
    CUSTOM_STUDY,
    DEFAULT_SELECTION,
    MAX_SPLIT_SIZE,
    MIN_SPLIT_SIZE,
    N_SELECTED,
    SELECTIONS,
    SPLITS,
    STUDIES,
    ExperimentSpec,
    Selection,
    Study,
    Weights,
    get_study,
    register_study,
    study_names,
)
from shortcutlab.errors import SpecError, unknown_choice
from shortcutlab.utils.io import write_text
from shortcutlab.utils.rng import rng

__all__ = [
    "DEFAULT_SAMPLES",
    "DEFAULT_SIZES",
    "SELECTIONS",
    "STUDIES",
    "PaperSample",
    "Selection",
    "experiment_names",
    "factor_pairs",
    "make_experiment",
    "paper_sample",
    "paper_samples",
    "parse_experiment_name",
    "scaled_sizes",
    "select_classes",
    "study_weights",
    "write_benchmark",
]

DEFAULT_SIZES: dict[str, int] = {"train": 43740, "val": 8748, "test": 10000}
DEFAULT_SAMPLES = 5

Pair = tuple[str, str]
Cell = tuple[int, int]
"""(row, column) of a cell of the 3 x 3 table of selected classes."""


def factor_pairs() -> list[Pair]:
    """The 30 ordered (predicted, correlated) pairs of distinct factors, in FACTORS order."""
    return list(itertools.permutations(FACTORS, 2))


def _check_study(study: str) -> str:
    """``study`` if it is a registered study with cell weights (the paper's or a user's)."""
    known = [n for n in study_names() if get_study(n).weights is not None]
    if study not in known:
        raise SpecError(unknown_choice("study", study, known))
    return study


def _check_factor(name: str) -> str:
    if name not in FACTORS:
        raise SpecError(unknown_choice("factor", name, FACTORS))
    return name


def _parse_pair(pair: str | Sequence[str]) -> Pair:
    if isinstance(pair, str):
        parts = pair.split("-")
        if len(parts) != 2:
            raise SpecError(
                f"pair {pair!r} must look like 'predicted-correlated', e.g. 'hue-shape'; "
                f"factors: {', '.join(FACTORS)}"
            )
    else:
        parts = list(pair)
        if len(parts) != 2:
            raise SpecError(f"pair {pair!r} must have exactly two factors")
    predicted, correlated = (_check_factor(p) for p in parts)
    if predicted == correlated:
        raise SpecError(
            f"pair {pair!r} names factor {predicted!r} twice; the correlated factor must be one "
            "of: " + ", ".join(f for f in FACTORS if f != predicted)
        )
    return predicted, correlated


def _samples(samples: int | Iterable[int] | None) -> list[int]:
    if samples is None:
        return list(range(DEFAULT_SAMPLES))
    if isinstance(samples, (int, np.integer)):
        if samples <= 0:
            raise SpecError(f"number of samples must be positive (got {samples})")
        return list(range(int(samples)))
    out = [int(s) for s in samples]
    for s in out:
        if s < 0:
            raise SpecError(f"dataset sample must be >= 0 (got {s})")
    return out


def experiment_names(
    studies: str | Iterable[str] | None = None,
    pairs: str | Iterable[str | Sequence[str]] | None = None,
    samples: int | Iterable[int] | None = None,
) -> list[str]:
    """Names of the benchmark's experiments, ordered by study, pair (or factor), sample.

    Defaults: all 9 studies, all 30 pairs, samples 0..4 -> 6*5 + 8*30*5 = 1,230 names.
    ``studies`` and ``pairs`` are lists or one name each (``"ZGO"``, ``"hue-shape"``);
    ``samples`` is a count or a list of sample ids. ZSO (a study without a correlated factor)
    uses the predicted factors of ``pairs``.
    """
    studies = [studies] if isinstance(studies, str) else studies  # not letter by letter
    pairs = [pairs] if isinstance(pairs, str) else pairs
    # each experiment once, however often a study, pair or sample is repeated
    chosen_studies = list(dict.fromkeys(
        _check_study(s) for s in (STUDIES if studies is None else studies)))
    chosen_pairs = factor_pairs() if pairs is None else list(dict.fromkeys(
        _parse_pair(p) for p in pairs))
    chosen_samples = list(dict.fromkeys(_samples(samples)))
    zso_factors = list(dict.fromkeys(p for p, _ in chosen_pairs))
    names: list[str] = []
    for study in chosen_studies:
        if not get_study(study).correlated:
            for factor in zso_factors:
                names += [f"{study}/{factor}/{s}" for s in chosen_samples]
        else:
            for predicted, correlated in chosen_pairs:
                names += [f"{study}/{predicted}-{correlated}/{s}" for s in chosen_samples]
    return names


def parse_experiment_name(name: str) -> tuple[str, str, str | None, int]:
    """``"ZGO/hue-shape/0"`` -> ("ZGO", "hue", "shape", 0); ``"ZSO/texture/2"`` -> (.., None, 2)."""
    parts = name.split("/")
    if len(parts) != 3:
        raise SpecError(
            f"experiment name {name!r} must look like STUDY/predicted-correlated/SAMPLE "
            f"(e.g. 'ZGO/hue-shape/0') or ZSO/factor/SAMPLE; studies: {', '.join(STUDIES)}"
        )
    study, middle, sample_text = parts
    _check_study(study)
    # Only the plain spelling: the name is hashed into the class table and the pixels, so
    # "01" or "+1" would be another experiment with the same study, pair and sample.
    if not re.fullmatch(r"0|-?[1-9][0-9]*", sample_text):
        raise SpecError(
            f"dataset sample {sample_text!r} in {name!r} must be a non-negative integer written "
            "plainly, e.g. 0 or 4 (no signs, spaces, leading zeros or underscores)"
        )
    sample = int(sample_text)
    if sample < 0:
        raise SpecError(f"dataset sample {sample} in {name!r} must be >= 0")
    if not get_study(study).correlated:
        if "-" in middle:
            raise SpecError(
                f"{study} has no correlated factor: use {study}/<factor>/<sample>, factor one of: "
                f"{', '.join(FACTORS)} (got {middle!r})"
            )
        return study, _check_factor(middle), None, sample
    predicted, correlated = _parse_pair(middle)
    return study, predicted, correlated, sample


# --------------------------------------------------------------------------- the paper's samples
PAPER_SELECTION_FILE = "paper_selection.yaml"


@dataclass(frozen=True)
class PaperSample:
    """One of the DiagViB-6 authors' dataset samples: the 3 classes of every factor (label
    order), the off-diagonal (row, column) cells that CGO-1/2/3 add in that order (row = class of
    the predicted factor), and the class of the predicted factor that CHGO gives only a shortcut."""

    sample: int
    classes: dict[str, tuple[str, ...]]
    cgo_cells: tuple[tuple[int, int], ...]
    chgo_shortcut_class: int


def _bad_table(message: str) -> SpecError:
    return SpecError(f"corrupt {PAPER_SELECTION_FILE}: {message}")


@functools.lru_cache(maxsize=1)
def _paper_table() -> tuple[PaperSample, ...]:
    text = resources.files("shortcutlab.diagvib").joinpath("data", PAPER_SELECTION_FILE)
    doc = yaml.safe_load(text.read_text(encoding="utf-8"))
    chgo = int(doc["chgo_shortcut_class"])
    out = []
    for i, entry in enumerate(doc["samples"]):
        if entry["sample"] != i:
            raise _bad_table(f"entry {i} is numbered {entry['sample']}")
        classes: dict[str, tuple[str, ...]] = {
            f: tuple(str(c) for c in entry["classes"][f]) for f in FACTORS
        }
        for f, chosen in classes.items():
            if len(set(chosen)) != N_SELECTED or not set(chosen) <= set(FACTOR_TABLE[f].classes):
                raise _bad_table(f"sample {i}: {f} classes {list(chosen)}")
        cells = tuple((int(a), int(b)) for a, b in entry["cgo_cells"])
        if [a for a, _ in cells] != list(range(N_SELECTED)) or any(a == b for a, b in cells):
            raise _bad_table(f"sample {i}: CGO cells {cells} need one off-diagonal cell per row")
        out.append(PaperSample(i, classes, cells, chgo))
    return tuple(out)


def paper_samples() -> tuple[int, ...]:
    """The dataset samples the paper selection has (0..4)."""
    return tuple(p.sample for p in _paper_table())


def paper_sample(sample: int) -> PaperSample:
    """The authors' dataset sample ``sample``; a clear error for samples they do not have."""
    table = _paper_table()
    if not 0 <= sample < len(table):
        raise SpecError(
            f"selection 'paper' has the authors' dataset samples "
            f"{', '.join(map(str, paper_samples()))} only (got sample {sample}); "
            f"use selection 'seeded' for other samples"
        )
    return table[sample]


def _check_selection(selection: str, samples: Iterable[int] = ()) -> Selection:
    if selection not in SELECTIONS:
        raise SpecError(unknown_choice("selection", selection, SELECTIONS))
    if selection == "paper":
        for s in samples:
            paper_sample(s)
    return selection


# --------------------------------------------------------------------------- selections and cells
def select_classes(
    seed: int, sample: int, selection: Selection = DEFAULT_SELECTION
) -> dict[str, list[str]]:
    """The 3 classes of every factor for dataset sample ``sample`` (list order = label order):
    drawn from the benchmark ``seed``, or the authors' for ``selection="paper"``."""
    if _check_selection(selection, [sample]) == "paper":
        return {f: list(c) for f, c in paper_sample(sample).classes.items()}
    return {name: list(chosen) for name, chosen in _select_classes(seed, sample)}


@functools.lru_cache(maxsize=64)
def _select_classes(seed: int, sample: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    for name in FACTORS:
        classes = FACTOR_TABLE[name].classes
        pick = rng(seed, "diagvib-select", sample, name).choice(
            len(classes), N_SELECTED, replace=False
        )
        out.append((name, tuple(classes[int(i)] for i in pick)))
    return tuple(out)


def _cgo_added_cells(seed: int, sample: int, predicted: str, correlated: str) -> list[Cell]:
    """Random off-diagonal cells in the order CGO adds them (at most one per row)."""
    off = [(a, b) for a in range(N_SELECTED) for b in range(N_SELECTED) if a != b]
    order = rng(seed, "diagvib-cgo", sample, predicted, correlated).permutation(len(off))
    added: list[Cell] = []
    used_rows: set[int] = set()
    for i in order:
        a, b = off[int(i)]
        if a not in used_rows:
            added.append((a, b))
            used_rows.add(a)
    return added


def _cgo_cells(
    seed: int, sample: int, predicted: str, correlated: str, selection: Selection
) -> list[Cell]:
    if selection == "paper":
        return list(paper_sample(sample).cgo_cells)
    return _cgo_added_cells(seed, sample, predicted, correlated)


def _chgo_shortcut_class(
    seed: int, sample: int, predicted: str, correlated: str, selection: Selection
) -> int:
    if selection == "paper":
        return paper_sample(sample).chgo_shortcut_class
    return int(rng(seed, "diagvib-chgo", sample, predicted, correlated).integers(N_SELECTED))


def _rows_uniform(mask: np.ndarray) -> np.ndarray:
    """Weights giving every row a third, spread evenly over that row's cells in ``mask``."""
    m = mask.astype(np.float64)
    return m / m.sum(axis=1, keepdims=True) / N_SELECTED


def _uniform(mask: np.ndarray) -> np.ndarray:
    m = mask.astype(np.float64)
    return m / m.sum()


def _zso(**_: object) -> tuple[np.ndarray, np.ndarray]:
    """ZSO: the predicted factor alone, uniform in training and test."""
    w = np.full(N_SELECTED, 1.0 / N_SELECTED)
    return w, w.copy()


def _zgo(**_: object) -> tuple[np.ndarray, np.ndarray]:
    """ZGO: the diagonal in training; test on the off-diagonal cells."""
    eye = np.eye(N_SELECTED, dtype=bool)
    return _rows_uniform(eye), _uniform(~eye)


@dataclass(frozen=True)
class _Cgo:
    """CGO-c: the diagonal and the first ``c`` CGO cells, every training cell equally often."""

    cells: int

    def __call__(self, *, seed: int, sample: int, predicted: str, correlated: str,
                 selection: Selection) -> tuple[np.ndarray, np.ndarray]:
        train = np.eye(N_SELECTED, dtype=bool)
        for row, col in _cgo_cells(seed, sample, predicted, correlated, selection)[:self.cells]:
            train[row, col] = True
        return _uniform(train), _uniform(~train)


def _chgo(*, seed: int, sample: int, predicted: str, correlated: str,
          selection: Selection) -> tuple[np.ndarray, np.ndarray]:
    """CHGO: one class of the predicted factor only with its diagonal class, the other two
    uniform over the other two classes; test on the cells outside training."""
    a = _chgo_shortcut_class(seed, sample, predicted, correlated, selection)
    train = np.zeros((N_SELECTED, N_SELECTED), dtype=bool)
    train[a, a] = True
    others = [i for i in range(N_SELECTED) if i != a]
    train[np.ix_(others, others)] = True
    return _rows_uniform(train), _uniform(~train)


@dataclass(frozen=True)
class _Fgo:
    """FGO-f: the diagonal with ``percent``% of every class spread evenly off it."""

    percent: int

    def __call__(self, **_: object) -> tuple[np.ndarray, np.ndarray]:
        f = self.percent / 100.0
        eye = np.eye(N_SELECTED)
        off = ~np.eye(N_SELECTED, dtype=bool)
        train = ((1.0 - f) * eye / N_SELECTED
                 + f * off / off.sum(axis=1, keepdims=True) / N_SELECTED)
        return train, _uniform(off)


def study_weights(
    study: str,
    *,
    seed: int = 0,
    sample: int = 0,
    predicted: str = "",
    correlated: str = "",
    selection: Selection = DEFAULT_SELECTION,
) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) cell weights of ``study``, as its registered
    :attr:`~shortcutlab.diagvib.spec.Study.weights` give them: a (3,) vector for a study
    without a correlated factor (ZSO), else (3, 3) matrices.

    ``selection`` picks where the CGO cells and the CHGO shortcut class come from (the
    benchmark ``seed``, or the authors' table for ``"paper"``)."""
    _check_study(study)
    _check_selection(selection, [sample])
    weights = get_study(study).weights
    assert weights is not None  # _check_study keeps only studies with weights
    return weights(seed=seed, sample=sample, predicted=predicted, correlated=correlated,
                   selection=selection)


def scaled_sizes(scale: float = 1.0, sizes: dict[str, int] | None = None) -> dict[str, int]:
    """Split sizes multiplied by ``scale`` (rounded), keeping proportions; a SpecError with
    the valid range of ``scale`` unless every split holds MIN_SPLIT_SIZE..MAX_SPLIT_SIZE."""
    if not (isinstance(scale, (int, float)) and np.isfinite(scale) and scale > 0):
        raise SpecError(f"scale must be a positive number (got {scale!r})")
    base = DEFAULT_SIZES if sizes is None else sizes
    scaled: dict[str, int] = {s: int(round(base[s] * scale)) for s in SPLITS}
    if all(MIN_SPLIT_SIZE <= n <= MAX_SPLIT_SIZE for n in scaled.values()):
        return scaled
    # the scales whose rounded sizes all lie in range, shown rounded inwards to 3 digits
    low = max((MIN_SPLIT_SIZE - 0.5) / base[s] for s in SPLITS)
    high = min((MAX_SPLIT_SIZE + 0.5) / base[s] for s in SPLITS)
    digits = [10.0 ** (math.floor(math.log10(v)) - 2) for v in (low, high)]
    low, high = math.ceil(low / digits[0]) * digits[0], math.floor(high / digits[1]) * digits[1]
    got = ", ".join(f"{s} {n:,}" for s, n in scaled.items())
    raise SpecError(f"scale {scale:g} gives splits of {got} images; each split needs "
                    f"{MIN_SPLIT_SIZE} to {MAX_SPLIT_SIZE:,}: use a scale from {low:.3g} to "
                    f"{high:.3g}")


def make_experiment(
    name: str, *, scale: float = 1.0, seed: int = 0, selection: Selection = DEFAULT_SELECTION
) -> ExperimentSpec:
    """The exact specification of experiment ``name`` for benchmark ``seed`` at ``scale``;
    ``selection="paper"`` uses the authors' classes and cells (samples 0..4 only)."""
    study, predicted, correlated, sample = parse_experiment_name(name)
    if seed < 0:
        raise SpecError(f"benchmark seed must be >= 0 (got {seed})")
    _check_selection(selection, [sample])
    train, test = study_weights(
        study, seed=seed, sample=sample, predicted=predicted, correlated=correlated or "",
        selection=selection,
    )
    return ExperimentSpec(
        name=name,
        study=study,
        predicted=predicted,
        correlated=correlated,
        sample=sample,
        seed=seed,
        selection=selection,
        selected=select_classes(seed, sample, selection),
        sizes=scaled_sizes(scale),
        weights={"train": train.tolist(), "test": test.tolist()},
    )


INDEX_COLUMNS = ("name", "study", "predicted", "correlated", "sample", "hash", "path",
                 "scale")


def write_benchmark(
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    scale: float = 1.0,
    studies: Iterable[str] | None = None,
    pairs: Iterable[str | Sequence[str]] | None = None,
    samples: int | Iterable[int] | None = None,
    selection: Selection = DEFAULT_SELECTION,
) -> Path:
    """Write one YAML spec per experiment (``<out>/<name>.yaml``) and ``<out>/index.csv``
    (name, study, predicted, correlated, sample, content hash, relative path, the ``scale`` the
    specs were made at: jobs run on them record it); returns the index.

    All names are validated before anything is written; every file is written atomically and
    the index last, so a complete index means a complete benchmark.
    """
    names = experiment_names(studies, pairs, samples)
    scaled_sizes(scale)
    _check_selection(selection, _samples(samples))
    out = Path(out_dir)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(INDEX_COLUMNS)
    for name in names:
        spec = make_experiment(name, scale=scale, seed=seed, selection=selection)
        rel = f"{name}.yaml"
        write_text(out / rel, spec.to_yaml())
        writer.writerow([name, spec.study, spec.predicted, spec.correlated or "", spec.sample,
                         spec.content_hash(), rel, repr(float(scale))])
    return write_text(out / "index.csv", buf.getvalue())


# --------------------------------------------------------------------------- the paper's studies
#: name: (cell weights, description, FAAvg/FAMin sequences and x positions, matrix panel)
_PAPER_STUDIES: dict[str, tuple[Weights, str, dict[str, float], float]] = {
    "ZSO": (_zso, "no shortcut opportunity: the predicted factor alone",
            {"CGO": 0, "FGO": 0}, 0),
    "ZGO": (_zgo, "zero generalisation opportunities: the diagonal only",
            {"CGO": 4, "FGO": 4}, 1),
    "CGO-1": (_Cgo(1), "the diagonal and 1 off-diagonal cell", {"CGO": 3}, 2),
    "CGO-2": (_Cgo(2), "the diagonal and 2 off-diagonal cells", {"CGO": 2}, 3),
    "CGO-3": (_Cgo(3), "the diagonal and 3 off-diagonal cells", {"CGO": 1}, 4),
    "CHGO": (_chgo, "one class of the predicted factor only with a shortcut", {}, 8),
    "FGO-5": (_Fgo(5), "the diagonal and 5% of every class off it", {"FGO": 3}, 5),
    "FGO-10": (_Fgo(10), "the diagonal and 10% of every class off it", {"FGO": 2}, 6),
    "FGO-20": (_Fgo(20), "the diagonal and 20% of every class off it", {"FGO": 1}, 7),
}
for _name in STUDIES:
    _weights, _text, _sequences, _panel = _PAPER_STUDIES[_name]
    register_study(Study(_name, correlated=_name != "ZSO", weights=_weights, description=_text,
                         paired=_name == "ZGO", sequences=_sequences, panel=_panel))
register_study(Study(CUSTOM_STUDY, description="cell weights stated by each spec", panel=None))
