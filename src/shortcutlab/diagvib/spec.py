"""Validated, serialisable specifications of DiagViB-6 experiments.

An :class:`ExperimentSpec` says exactly which images a study's splits contain: the 3 selected
classes of every factor, the split sizes, and for each split a weighting of the cells of the
*joint* factors (the predicted factor, the correlated factor and optionally more correlated
factors). Weights are a nested list of shape ``(3,) * k`` (a 3x3 matrix for a factor pair, rows
indexing the predicted factor's classes as in the paper's figure 3). The four (or more) other
factors are always uniform over their 3 selected classes.

:func:`assign_classes` turns a spec and a split into the exact per-image class assignment:
counts per cell are apportioned hierarchically (predicted factor first, then each correlated
factor given the previous ones), so label counts and "f% of each class" are exact, and the
other factors are balanced within every cell. It is a pure, vectorised function of
``(spec, split)``.

``selection`` records where the selected classes (and a study's cells) came from: ``"seeded"``
(drawn from the benchmark seed; the default, and then omitted from the serialised spec so that
older specs keep their hashes) or ``"paper"`` (the DiagViB-6 authors' five dataset samples).

**Paired images.** A ZGO experiment (i, j) and its twin (j, i) have the same image distribution
in every split (diagonal training cells, off-diagonal test cells), so they share one class table
and one set of pixels: :meth:`ExperimentSpec.image_source` is the twin whose predicted factor
comes first in FACTORS order, and :meth:`ExperimentSpec.image_hash` keys the randomness of both.
Only the labels (and cell indices) differ, as in the authors' code; see docs/diagvib-studies.md.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.sources import SPLITS, check_split
from shortcutlab.errors import SpecError, unknown_choice
from shortcutlab.utils.io import load_yaml
from shortcutlab.utils.registry import Registry
from shortcutlab.utils.rng import rng, torch_seed

StudyName = Literal["ZSO", "ZGO", "CGO-1", "CGO-2", "CGO-3", "CHGO", "FGO-5", "FGO-10", "FGO-20"]
STUDIES: tuple[StudyName, ...] = get_args(StudyName)
CUSTOM_STUDY = "custom"
Selection = Literal["seeded", "paper"]
SELECTIONS: tuple[Selection, ...] = get_args(Selection)
DEFAULT_SELECTION: Selection = "seeded"
N_SELECTED = 3
WEIGHT_TOLERANCE = 1e-6
#: Images per split: at least 3 per selected class of the predicted factor (fewer trains or
#: scores nothing), at most 10 million (about 229 times the paper's training split; the class
#: tables of a larger split no longer fit in memory).
MIN_SPLIT_SIZE = 3 * N_SELECTED
MAX_SPLIT_SIZE = 10_000_000


# ------------------------------------------------------------------------------------ studies
Weights = Callable[..., tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Study:
    """A study described once; specs, jobs, metrics, figures and reports read this description.

    ``correlated``: whether its experiments pair the predicted factor with a correlated one
    (every paper study but ZSO; metrics then give ``P_ij`` per ordered pair, else ``P_i`` per
    factor, drawn as a column). ``weights``: ``(train, test)`` cell weights as ``weights(seed=,
    sample=, predicted=, correlated=, selection=)`` returns them (None: the experiment spec
    states them, as a ``custom`` spec does). ``description``: one line for tables and reports.
    ``paired``: its (i, j) and (j, i) experiments share images when their weights are symmetric
    (ZGO). ``sequences``: the FAAvg/FAMin line figures (paper figs. 4b, 5b) the study is a step
    of, as ``{sequence: x position}`` (more generalisation opportunities further left; the
    paper's run from ZSO at 0 to ZGO at 4). ``panel``: its place among the accuracy-matrix panels
    (paper fig. 4a; ties keep registration order, so new studies come after the paper's);
    None: not drawn there.
    """

    name: str
    correlated: bool = True
    weights: Weights | None = None
    description: str = ""
    paired: bool = False
    sequences: Mapping[str, float] = field(default_factory=dict, hash=False)
    panel: float | None = math.inf

    def __post_init__(self) -> None:
        for sequence, position in dict(self.sequences).items():
            if not isinstance(sequence, str) or not sequence or not _is_number(position):
                raise SpecError(f"study {self.name}: sequences maps a sequence name to an x "
                                f"position, got {sequence!r}: {position!r}")
        if self.panel is not None and not _is_number(self.panel, finite=False):
            raise SpecError(f"study {self.name}: panel must be a number or None "
                            f"(got {self.panel!r})")
        object.__setattr__(self, "sequences", MappingProxyType(dict(self.sequences)))


def _is_number(value: Any, finite: bool = True) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) or (not finite and not math.isnan(value))


def _import_paper_studies() -> None:
    import shortcutlab.diagvib.studies  # noqa: F401  (describes and registers the paper's)


#: The studies, in registration order: the paper's first (:mod:`shortcutlab.diagvib.studies`
#: registers them on the first lookup). Tests register theirs in ``REGISTRY.scratch()``.
REGISTRY: Registry[Study] = Registry("study", error=SpecError, builtins=_import_paper_studies)


def _studies() -> dict[str, Study]:
    return dict(REGISTRY.items())


def register_study(study: Study, *, override: bool = False) -> Study:
    """Make ``study`` known to specs, jobs, metrics and reports (a taken name is refused unless
    ``override=True``); studies are listed in registration order, the paper's first."""
    REGISTRY.load()  # the paper's studies first
    return REGISTRY.register(study.name, study, override=override)


def get_study(name: str) -> Study:
    """The registered study ``name``; a SpecError listing the registered ones otherwise."""
    found = REGISTRY.find(name)
    if found is None:
        raise SpecError(unknown_choice("study", name, study_names()))
    return found


def study_names() -> tuple[str, ...]:
    """Every registered study, the paper's first (in the paper's order), then the others."""
    return tuple(_studies())


def studies_in_sequence(sequence: str) -> tuple[str, ...]:
    """The studies of one FAAvg/FAMin line figure (:attr:`Study.sequences`), left to right."""
    members = [(s.sequences[sequence], i, s.name) for i, s in enumerate(_studies().values())
               if sequence in s.sequences]
    return tuple(name for _, _, name in sorted(members))


def sequence_names() -> tuple[str, ...]:
    """Every sequence some study is a step of, in order of first mention."""
    return tuple(dict.fromkeys(q for s in _studies().values() for q in s.sequences))


def panel_studies() -> tuple[str, ...]:
    """The studies drawn in the accuracy-matrix figure, in :attr:`Study.panel` order."""
    drawn = [(s.panel, i, s.name) for i, s in enumerate(_studies().values())
             if s.panel is not None]
    return tuple(name for _, _, name in sorted(drawn))


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "<spec>"


def _validation_to_spec_error(exc: ValidationError) -> SpecError:
    parts = []
    for err in exc.errors():
        parts.append(f"field {_fmt_loc(err['loc'])}: {err['msg']} (got {err.get('input')!r})")
    return SpecError("invalid experiment spec: " + "; ".join(parts))


class ExperimentSpec(BaseModel):
    """One experiment: a study on (predicted, correlated[, more]) factors for one dataset sample.

    ``weights[split]`` is a nested list of shape ``(3,) * len(joint_factors)`` summing to 1;
    ``val`` may be omitted (then it follows ``train``, as in the paper).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    study: str
    predicted: str
    correlated: str | None = None
    more_correlated: tuple[str, ...] = ()
    sample: int = 0
    seed: int = 0
    selection: Selection = DEFAULT_SELECTION
    selected: dict[str, list[str]]
    sizes: dict[str, int]
    weights: dict[str, list[Any]]

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _validation_to_spec_error(exc) from None

    # ----------------------------------------------------------------------------- validation
    @field_validator("selected", mode="before")
    @classmethod
    def _digits_as_text(cls, value: Any) -> Any:
        """Accept unquoted digits (``shape: [2, 4, 3]`` in YAML) as the shape class names."""
        if isinstance(value, dict):
            return {k: [str(c) if isinstance(c, int) and not isinstance(c, bool) else c
                        for c in v] if isinstance(v, list) else v for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _check(self) -> ExperimentSpec:
        study = get_study(self.study)
        joint = [self.predicted] + ([self.correlated] if self.correlated is not None else [])
        joint += list(self.more_correlated)
        if self.correlated is None and self.more_correlated:
            raise SpecError("field more_correlated needs field correlated to be set")
        for what, value in zip(
            ["predicted"] + ["correlated"] * (self.correlated is not None)
            + ["more_correlated"] * len(self.more_correlated), joint, strict=True
        ):
            if value not in FACTORS:
                raise SpecError(f"field {what}: " + unknown_choice("factor", value, FACTORS))
        if len(set(joint)) != len(joint):
            raise SpecError(
                f"fields predicted/correlated: a factor appears twice in {joint!r}; "
                f"choose distinct factors from: {', '.join(FACTORS)}"
            )
        if not study.correlated and self.correlated is not None:
            raise SpecError(f"study {self.study} has no correlated factor "
                            f"(got {self.correlated!r})")
        if study.correlated and self.study != CUSTOM_STUDY and self.correlated is None:
            raise SpecError(f"study {self.study} needs a correlated factor (got None)")
        if self.sample < 0:
            raise SpecError(f"field sample must be >= 0 (got {self.sample})")
        if self.seed < 0:
            raise SpecError(f"field seed must be >= 0 (got {self.seed})")
        self._check_selected()
        self._check_sizes()
        self._check_weights(len(joint))
        return self

    def _check_selected(self) -> None:
        if set(self.selected) != set(FACTORS):
            bad = sorted(set(self.selected) ^ set(FACTORS))
            raise SpecError(
                f"field selected must name every factor exactly once; wrong keys {bad}; "
                f"valid choices: {', '.join(FACTORS)}"
            )
        for name in FACTORS:
            chosen = self.selected[name]
            factor = FACTOR_TABLE[name]
            if len(chosen) != N_SELECTED or len(set(chosen)) != N_SELECTED:
                raise SpecError(
                    f"field selected.{name} needs {N_SELECTED} distinct classes (got {chosen!r})"
                )
            for c in chosen:
                if c not in factor.classes:
                    raise SpecError(
                        f"field selected.{name}: " + unknown_choice(f"{name} class", c,
                                                                    factor.classes)
                    )

    def _check_sizes(self) -> None:
        if set(self.sizes) != set(SPLITS):
            raise SpecError(
                f"field sizes must have exactly the keys {', '.join(SPLITS)} "
                f"(got {sorted(self.sizes)})"
            )
        for split in SPLITS:
            if not MIN_SPLIT_SIZE <= self.sizes[split] <= MAX_SPLIT_SIZE:
                raise SpecError(
                    f"field sizes.{split} must be an integer from {MIN_SPLIT_SIZE} to "
                    f"{MAX_SPLIT_SIZE:,} images (got {self.sizes[split]})"
                )

    def _check_weights(self, k: int) -> None:
        for split in self.weights:
            if split not in SPLITS:
                raise SpecError("field weights: " + unknown_choice("split", split, SPLITS))
        for split in ("train", "test"):
            if split not in self.weights:
                raise SpecError(f"field weights.{split} is required (splits: train, test[, val])")
        shape = (N_SELECTED,) * k
        for split, value in self.weights.items():
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (ValueError, TypeError):
                raise SpecError(
                    f"field weights.{split} must be a nested list of numbers of shape {shape} "
                    f"(got {value!r})"
                ) from None
            if arr.shape != shape:
                raise SpecError(
                    f"field weights.{split} must have shape {shape} for the {k} joint factors "
                    f"(got shape {arr.shape})"
                )
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise SpecError(
                    f"field weights.{split} is not a distribution: weights must be finite and "
                    f">= 0 (got {value!r})"
                )
            total = float(arr.sum())
            if abs(total - 1.0) > WEIGHT_TOLERANCE:
                raise SpecError(
                    f"field weights.{split} is not a distribution: weights sum to {total:.6g}, "
                    f"not 1 (got {value!r})"
                )

    # ----------------------------------------------------------------------------- accessors
    @property
    def joint_factors(self) -> tuple[str, ...]:
        """The factors whose classes are jointly weighted: predicted first, then correlated."""
        rest = (self.correlated,) if self.correlated is not None else ()
        return (self.predicted, *rest, *self.more_correlated)

    def weights_of(self, split: str) -> np.ndarray:
        """Cell weights of ``split`` as an array of shape ``(3,) * len(joint_factors)``."""
        check_split(split)
        key = "train" if split == "val" and "val" not in self.weights else split
        return np.asarray(self.weights[key], dtype=np.float64)

    def cell_counts(self, split: str) -> np.ndarray:
        """Exact number of images per joint cell in ``split`` (hierarchical apportionment; for a
        paired experiment, that of its :meth:`image_source` seen from this orientation)."""
        source = self.image_source()
        if source is not self:
            return source.cell_counts(split).T
        return apportion_cells(self.weights_of(split), self.sizes[split])

    # ----------------------------------------------------------------------------- pairing
    def is_paired(self) -> bool:
        """True when this experiment shares its images with its (correlated, predicted) twin:
        a :attr:`Study.paired` study on two factors whose cell weights are symmetric in every split
        (then both orientations describe the same image distribution)."""
        if not get_study(self.study).paired or self.correlated is None or self.more_correlated:
            return False
        return all(np.array_equal(w, w.T) for w in map(self.weights_of, SPLITS))

    def image_source(self) -> ExperimentSpec:
        """The spec whose class table and pixels this experiment uses: itself, or for a paired
        experiment whose predicted factor comes after its correlated factor in FACTORS order, the
        twin with the two factors swapped (weights transposed)."""
        if not self.is_paired() or FACTORS.index(self.predicted) < FACTORS.index(self.correlated):
            return self
        data = self.model_dump()
        data.update(predicted=self.correlated, correlated=self.predicted,
                    weights={k: np.asarray(v, dtype=np.float64).T.tolist()
                             for k, v in self.weights.items()})
        own = f"{self.study}/{self.predicted}-{self.correlated}/{self.sample}"
        if self.name == own:
            data["name"] = f"{self.study}/{self.correlated}-{self.predicted}/{self.sample}"
        return ExperimentSpec(**data)

    def render_seed(self, seed: int = 0) -> int:
        """The renderer's seed of this experiment's images for pixel seed ``seed`` (keyed by
        :meth:`image_hash`: a ZGO pair renders the same images)."""
        return torch_seed(seed, "diagvib-render", self.image_hash())

    def image_hash(self) -> str:
        """Identity of this experiment's images (keys its class table and render seed):
        :meth:`content_hash` for an unpaired experiment; for a paired one the hash of its
        :meth:`image_source` without the name, equal for (i, j) and (j, i)."""
        if not self.is_paired():
            return self.content_hash()
        data = self.image_source().to_dict()
        del data["name"]
        data["weights"] = {k: np.asarray(v, dtype=np.float64).tolist()  # 0 and 0.0 alike
                           for k, v in data["weights"].items()}
        return content_hash_of(data)

    def cell_tag(self, cell: tuple[int, ...]) -> str:
        """Tag of a joint cell: ``"ab-id"`` if training weights include it, else ``"ab-ood"``."""
        inside = self.weights_of("train")[tuple(cell)] > 0
        return "".join(str(int(c)) for c in cell) + ("-id" if inside else "-ood")

    def class_indices(self) -> np.ndarray:
        """(6, 3) global class index of each selected class, factors in FACTORS order."""
        return np.array(
            [[FACTOR_TABLE[f].index(c) for c in self.selected[f]] for f in FACTORS],
            dtype=np.int64,
        )

    def labels_of(self, split: str) -> np.ndarray:
        """Per-image label (0..2, predicted factor's selected class) of ``split``."""
        return assign_classes(self, split).labels

    # ----------------------------------------------------------------------------- serialising
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-compatible dict (fields in declaration order). ``selection`` is left out
        when it is the default ``"seeded"``, so specs written before the field existed keep
        their content hash."""
        data = self.model_dump(mode="json")
        data["more_correlated"] = list(self.more_correlated)
        if data["selection"] == DEFAULT_SELECTION:
            del data["selection"]
        return data

    def content_hash(self) -> str:
        """SHA-256 hex digest of the canonical JSON (sorted keys, no spaces): stable identity."""
        return content_hash_of(self.to_dict())

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_yaml(self) -> str:
        """Block-style YAML with flow-style lists (one weight row per line)."""
        return "".join(_yaml_lines(self.to_dict(), 0))

    @classmethod
    def from_dict(cls, data: Any) -> ExperimentSpec:
        if not isinstance(data, dict):
            raise SpecError(f"an experiment spec must be a mapping (got {type(data).__name__})")
        odd = [k for k in data if not isinstance(k, str)]
        if odd:
            raise SpecError(f"experiment spec keys must be field names, got {odd[0]!r}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> ExperimentSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"invalid JSON experiment spec: {exc}") from None
        return cls.from_dict(data)

    @classmethod
    def from_yaml(cls, text: str) -> ExperimentSpec:
        try:
            data = load_yaml(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"invalid YAML experiment spec: {exc}") from None
        return cls.from_dict(data)


def content_hash_of(data: dict[str, Any]) -> str:
    """:meth:`ExperimentSpec.content_hash` of a spec stored as a dict (e.g. a job's ``spec``)."""
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def _yaml_scalar(value: Any) -> str:
    """A scalar as JSON, which YAML reads back exactly; floats always get a '.' so that
    YAML 1.1 loaders do not read exponents such as ``1e-05`` as strings."""
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{'' if exponent[0] in '+-' else '+'}{exponent}"
        return text
    if isinstance(value, list):
        return "[" + ", ".join(_yaml_scalar(v) for v in value) + "]"
    return json.dumps(value)


def _yaml_lines(data: dict[str, Any], indent: int) -> list[str]:
    """Hand-rolled YAML emitter for spec dicts (PyYAML's representer dominates benchmark time)."""
    pad = " " * indent
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:" + (" {}\n" if not value else "\n"))
            lines += _yaml_lines(value, indent + 2)
        elif isinstance(value, list) and value and isinstance(value[0], list):
            lines.append(f"{pad}{key}:\n")
            lines += [f"{pad}- {_yaml_scalar(row)}\n" for row in value]
        else:
            lines.append(f"{pad}{key}: {_yaml_scalar(value)}\n")
    return lines


# --------------------------------------------------------------------------------- counting
def apportion(weights: np.ndarray, n: int, tie_start: int = 0) -> np.ndarray:
    """Split ``n`` items over ``weights`` by largest remainder; ties go to the lowest index
    counted cyclically from ``tie_start`` (rotating it per row keeps column totals balanced).

    Zero-weight entries always get zero items; the result sums to ``n`` exactly.
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    if n == 0 or total <= 0:
        return np.zeros(w.shape, dtype=np.int64)
    quota = np.round(w / total * n, 6)  # rounding removes float noise, so ties stay ties
    base = np.floor(quota).astype(np.int64)
    rest = int(n - base.sum())
    remainder = np.where(w > 0, quota - base, -np.inf)
    order = np.lexsort(((np.arange(w.size) - tie_start) % w.size, -remainder))
    base[order[:rest]] += 1
    return base


def apportion_cells(weights: np.ndarray, n: int, tie_start: int = 0) -> np.ndarray:
    """Exact counts per cell of a ``(3,)*k`` weight tensor: first over the predicted factor's
    marginal, then recursively over the next factor given the previous ones."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        return apportion(w, n, tie_start)
    marginal = w.reshape(w.shape[0], -1).sum(axis=1)
    rows = apportion(marginal, n, tie_start)
    return np.stack(
        [apportion_cells(w[a], int(rows[a]), tie_start + a) for a in range(w.shape[0])]
    )


@dataclass(frozen=True)
class Assignment:
    """Per-image classes of one split: ``local`` (N,6) selected-class positions 0..2,
    ``classes`` (N,6) global class indices (FACTORS order), ``labels`` (N,), ``cells`` (N,)
    flat joint-cell index, ``tags`` (N,) cell tags."""

    local: np.ndarray
    classes: np.ndarray
    labels: np.ndarray
    cells: np.ndarray
    tags: np.ndarray


def _tags_of(spec: ExperimentSpec, cells: np.ndarray) -> np.ndarray:
    k = len(spec.joint_factors)
    table = np.array(
        [spec.cell_tag(tuple(int(d) for d in np.unravel_index(c, (N_SELECTED,) * k)))
         for c in range(N_SELECTED**k)]
    )
    return table[cells]


def assign_classes(spec: ExperimentSpec, split: str) -> Assignment:
    """The exact, shuffled per-image class assignment of ``split``; pure in ``(spec, split)``.

    A paired experiment gets the classes of its :meth:`~ExperimentSpec.image_source`, image by
    image, with labels, cells and tags of its own orientation.
    """
    check_split(split)
    source = spec.image_source()
    if source is not spec:
        base = assign_classes(source, split)
        joint = [FACTORS.index(f) for f in spec.joint_factors]
        cells = np.ravel_multi_index(tuple(base.local[:, joint].T), (N_SELECTED,) * len(joint))
        return Assignment(
            local=base.local,
            classes=base.classes,
            labels=base.local[:, joint[0]].copy(),
            cells=cells.astype(np.int64),
            tags=_tags_of(spec, cells),
        )
    counts = spec.cell_counts(split)
    n = int(counts.sum())
    gen = rng(0, "diagvib-assign", spec.image_hash(), split)
    cells = np.repeat(np.arange(counts.size, dtype=np.int64), counts.ravel())  # sorted by cell
    local = np.empty((n, len(FACTORS)), dtype=np.int64)
    digits = np.unravel_index(cells, counts.shape)
    joint_names = spec.joint_factors
    for pos, name in enumerate(joint_names):
        local[:, FACTORS.index(name)] = digits[pos]
    # Other factors: balanced within each (contiguous) cell block, shuffled within the block.
    cycle = np.arange(n, dtype=np.int64) % N_SELECTED
    for fi, name in enumerate(FACTORS):
        if name in joint_names:
            continue
        order = np.lexsort((gen.random(n), cells))
        column = np.empty(n, dtype=np.int64)
        column[order] = cycle
        local[:, fi] = column
    perm = gen.permutation(n)
    local = local[perm]
    cells = cells[perm]
    table = spec.class_indices()
    classes = table[np.arange(len(FACTORS))[None, :], local]
    return Assignment(
        local=local,
        classes=classes,
        labels=local[:, FACTORS.index(spec.predicted)].copy(),
        cells=cells,
        tags=_tags_of(spec, cells),
    )


def is_distribution(weights: np.ndarray) -> bool:
    """True when ``weights`` are finite, non-negative and sum to 1 (within tolerance)."""
    w = np.asarray(weights, dtype=np.float64)
    return bool(np.all(np.isfinite(w)) and np.all(w >= 0)
                and math.isclose(float(w.sum()), 1.0, abs_tol=WEIGHT_TOLERANCE))
