"""The nine DiagViB-6 studies (paper sec. 3.2-3.3, fig. 3) as exact experiment specifications.

An experiment is named ``<STUDY>/<predicted>-<correlated>/<sample>`` (``ZSO/<factor>/<sample>``
for ZSO). Per dataset sample the benchmark seed selects 3 classes of every factor (the same
selection for every study and pair of that sample). Training cells of the (Fi, Fj) 3x3 matrix,
rows = classes of the predicted factor Fi:

- ZSO: all 9 cells (predicted factor alone, uniform); test the same distribution.
- ZGO: the diagonal; test the 6 off-diagonal cells.
- CGO-c: diagonal + c random off-diagonal cells (nested: CGO-1 in CGO-2 in CGO-3), at most one
  per row so every class of Fi keeps an unseen cell; test the unseen cells.
- CHGO: one random class of Fi only with its diagonal class of Fj; the other two classes of Fi
  uniform over the other two classes of Fj; test the 4 cells outside training.
- FGO-f: the diagonal with f% of every class of Fi spread evenly over its off-diagonal cells;
  test the off-diagonal (under-represented) cells.

Every class of Fi gets a third of the training images; test images are uniform over test cells.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.spec import N_SELECTED, SPLITS, STUDIES, ExperimentSpec
from shortcutlab.errors import SpecError, unknown_choice
from shortcutlab.utils.io import write_text
from shortcutlab.utils.rng import rng

__all__ = [
    "DEFAULT_SAMPLES",
    "DEFAULT_SIZES",
    "STUDIES",
    "experiment_names",
    "factor_pairs",
    "make_experiment",
    "parse_experiment_name",
    "scaled_sizes",
    "select_classes",
    "study_weights",
    "write_benchmark",
]

DEFAULT_SIZES: dict[str, int] = {"train": 43740, "val": 8748, "test": 10000}
DEFAULT_SAMPLES = 5

Pair = tuple[str, str]


def factor_pairs() -> list[Pair]:
    """The 30 ordered (predicted, correlated) pairs of distinct factors, in FACTORS order."""
    return list(itertools.permutations(FACTORS, 2))


def _check_study(study: str) -> str:
    if study not in STUDIES:
        raise SpecError(unknown_choice("study", study, STUDIES))
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
    studies: Iterable[str] | None = None,
    pairs: Iterable[str | Sequence[str]] | None = None,
    samples: int | Iterable[int] | None = None,
) -> list[str]:
    """Names of the benchmark's experiments, ordered by study, pair (or factor), sample.

    Defaults: all 9 studies, all 30 pairs, samples 0..4 -> 6*5 + 8*30*5 = 1,230 names.
    ``samples`` is a count or a list of sample ids. ZSO uses the predicted factors of ``pairs``.
    """
    chosen_studies = [_check_study(s) for s in (STUDIES if studies is None else studies)]
    chosen_pairs = factor_pairs() if pairs is None else [_parse_pair(p) for p in pairs]
    chosen_samples = _samples(samples)
    zso_factors = list(dict.fromkeys(p for p, _ in chosen_pairs))
    names: list[str] = []
    for study in chosen_studies:
        if study == "ZSO":
            for factor in zso_factors:
                names += [f"ZSO/{factor}/{s}" for s in chosen_samples]
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
    try:
        sample = int(sample_text)
    except ValueError:
        raise SpecError(
            f"dataset sample {sample_text!r} in {name!r} must be a non-negative integer"
        ) from None
    if sample < 0:
        raise SpecError(f"dataset sample {sample} in {name!r} must be >= 0")
    if study == "ZSO":
        if "-" in middle:
            raise SpecError(
                f"ZSO has no correlated factor: use ZSO/<factor>/<sample>, factor one of: "
                f"{', '.join(FACTORS)} (got {middle!r})"
            )
        return study, _check_factor(middle), None, sample
    predicted, correlated = _parse_pair(middle)
    return study, predicted, correlated, sample


def select_classes(seed: int, sample: int) -> dict[str, list[str]]:
    """The 3 classes of every factor for dataset sample ``sample`` (random order = label order)."""
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


def _cgo_added_cells(seed: int, sample: int, predicted: str, correlated: str) -> list[Pair]:
    """Random off-diagonal cells in the order CGO adds them (at most one per row)."""
    off = [(a, b) for a in range(N_SELECTED) for b in range(N_SELECTED) if a != b]
    order = rng(seed, "diagvib-cgo", sample, predicted, correlated).permutation(len(off))
    added: list[Pair] = []
    used_rows: set[int] = set()
    for i in order:
        a, b = off[int(i)]
        if a not in used_rows:
            added.append((a, b))  # type: ignore[arg-type]
            used_rows.add(a)
    return added


def _rows_uniform(mask: np.ndarray) -> np.ndarray:
    """Weights giving every row a third, spread evenly over that row's cells in ``mask``."""
    m = mask.astype(np.float64)
    return m / m.sum(axis=1, keepdims=True) / N_SELECTED


def _uniform(mask: np.ndarray) -> np.ndarray:
    m = mask.astype(np.float64)
    return m / m.sum()


def study_weights(
    study: str, *, seed: int = 0, sample: int = 0, predicted: str = "", correlated: str = ""
) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) cell weights of ``study``: a (3,) vector for ZSO, else (3, 3) matrices."""
    _check_study(study)
    eye = np.eye(N_SELECTED, dtype=bool)
    if study == "ZSO":
        w = np.full(N_SELECTED, 1.0 / N_SELECTED)
        return w, w.copy()
    if study == "ZGO":
        return _rows_uniform(eye), _uniform(~eye)
    if study.startswith("CGO-"):
        c = int(study.split("-")[1])
        train = eye.copy()
        for a, b in _cgo_added_cells(seed, sample, predicted, correlated)[:c]:
            train[a, b] = True
        return _rows_uniform(train), _uniform(~train)
    if study == "CHGO":
        a = int(rng(seed, "diagvib-chgo", sample, predicted, correlated).integers(N_SELECTED))
        train = np.zeros((N_SELECTED, N_SELECTED), dtype=bool)
        train[a, a] = True
        others = [i for i in range(N_SELECTED) if i != a]
        train[np.ix_(others, others)] = True
        return _rows_uniform(train), _uniform(~train)
    f = int(study.split("-")[1]) / 100.0  # FGO-f
    off = ~eye
    train = (1.0 - f) * eye / N_SELECTED + f * off / off.sum(axis=1, keepdims=True) / N_SELECTED
    return train, _uniform(off)


def scaled_sizes(scale: float = 1.0, sizes: dict[str, int] | None = None) -> dict[str, int]:
    """Split sizes multiplied by ``scale`` (rounded, at least 1), keeping proportions."""
    if not (isinstance(scale, (int, float)) and np.isfinite(scale) and scale > 0):
        raise SpecError(f"scale must be a positive number (got {scale!r})")
    base = DEFAULT_SIZES if sizes is None else sizes
    return {s: max(1, int(round(base[s] * scale))) for s in SPLITS}


def make_experiment(name: str, *, scale: float = 1.0, seed: int = 0) -> ExperimentSpec:
    """The exact specification of experiment ``name`` for benchmark ``seed`` at ``scale``."""
    study, predicted, correlated, sample = parse_experiment_name(name)
    if seed < 0:
        raise SpecError(f"benchmark seed must be >= 0 (got {seed})")
    train, test = study_weights(
        study, seed=seed, sample=sample, predicted=predicted, correlated=correlated or ""
    )
    return ExperimentSpec(
        name=name,
        study=study,
        predicted=predicted,
        correlated=correlated,
        sample=sample,
        seed=seed,
        selected=select_classes(seed, sample),
        sizes=scaled_sizes(scale),
        weights={"train": train.tolist(), "test": test.tolist()},
    )


INDEX_COLUMNS = ("name", "study", "predicted", "correlated", "sample", "hash", "path")


def write_benchmark(
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    scale: float = 1.0,
    studies: Iterable[str] | None = None,
    pairs: Iterable[str | Sequence[str]] | None = None,
    samples: int | Iterable[int] | None = None,
) -> Path:
    """Write one YAML spec per experiment (``<out>/<name>.yaml``) and ``<out>/index.csv``
    (name, study, predicted, correlated, sample, content hash, relative path); returns the index.

    All names are validated before anything is written; every file is written atomically and
    the index last, so a complete index means a complete benchmark.
    """
    names = experiment_names(studies, pairs, samples)
    scaled_sizes(scale)
    out = Path(out_dir)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(INDEX_COLUMNS)
    for name in names:
        spec = make_experiment(name, scale=scale, seed=seed)
        rel = f"{name}.yaml"
        write_text(out / rel, spec.to_yaml())
        writer.writerow([name, spec.study, spec.predicted, spec.correlated or "", spec.sample,
                         spec.content_hash(), rel])
    return write_text(out / "index.csv", buf.getvalue())
