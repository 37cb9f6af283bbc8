"""VQA-VS construction (paper section 3.1, 3.4, 4 and 5.3), as pure functions on arrays.

* a seeded 70/5/25 split by question (independent of row order: ids are sorted first);
* per shortcut, the samples of each split are grouped by concept (samples without one, e.g.
  no objects for KO, stay ungrouped); a group's normalised answer
  entropy ``e / log(M)`` (``M`` distinct answers in the group; a one-answer group counts as
  balanced, 1.0) marks it imbalanced below 0.9; in an imbalanced group, answers with fewer
  samples than 1.2 x the group's mean count per answer form the tail (OOD), the rest the head;
* statistics like the paper's Table 1, the Jaccard similarity of the head splits on train,
  coincidence ratios ``|A n B| / |A|`` between the OOD test sets, and the imbalance degree
  ``E = sum_g e_hat(g) * |g| / N`` of the training data per shortcut.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError, unknown_choice
from shortcutlab.utils.rng import rng
from shortcutlab.vqa.concepts import NONE, SHORTCUTS, ConceptConfig, compute_concepts
from shortcutlab.vqa.table import validate_table

__all__ = [
    "SPLITS",
    "ONE_ANSWER_GROUPS",
    "TAIL_RULES",
    "BuildConfig",
    "GroupFlags",
    "VQASplits",
    "build_splits",
    "coincidence_matrix",
    "group_flags",
    "imbalance_degree",
    "jaccard_matrix",
    "normalized_entropy",
    "split_questions",
    "statistics_table",
    "tail_threshold",
]

SPLITS: tuple[str, ...] = ("train", "val", "test")
# Open choices of the construction (the first is the default): a group with a single answer
# has normalised entropy 1 ("balanced") or 0 ("imbalanced") in the imbalance degree E (either
# way it yields no head or tail: it has no rare answer to hold out); an answer is in the tail
# when its count is "<" (strict, as the paper's "less than") or "<=" 1.2 x the group's mean
# count per answer.
ONE_ANSWER_GROUPS: tuple[str, ...] = ("balanced", "imbalanced")
TAIL_RULES: tuple[str, ...] = ("<", "<=")


@dataclass(frozen=True)
class BuildConfig:
    """Parameters of the construction (defaults are the paper's)."""

    seed: int = 0
    fractions: tuple[float, float, float] = (0.70, 0.05, 0.25)
    entropy_threshold: float = 0.9
    tail_factor: float = 1.2
    concepts: ConceptConfig = field(default_factory=ConceptConfig)
    one_answer_groups: str = "balanced"
    tail_rule: str = "<"

    def __post_init__(self) -> None:
        if len(self.fractions) != 3 or not all(0 <= f < math.inf for f in self.fractions):
            raise VQAError(f"fractions {self.fractions!r} must be three non-negative numbers")
        if abs(sum(self.fractions) - 1.0) > 1e-9:
            raise VQAError(f"fractions {self.fractions!r} must sum to 1")
        if not 0.0 < self.entropy_threshold <= 1.0:
            raise VQAError(f"entropy threshold {self.entropy_threshold} must lie in (0, 1]")
        if not 0 < self.tail_factor < math.inf:
            raise VQAError(f"tail factor {self.tail_factor} must be a positive finite number")
        if self.one_answer_groups not in ONE_ANSWER_GROUPS:
            raise VQAError(unknown_choice("one-answer group rule", self.one_answer_groups,
                                          ONE_ANSWER_GROUPS))  # fmt: skip
        if self.tail_rule not in TAIL_RULES:
            raise VQAError(unknown_choice("tail rule", self.tail_rule, TAIL_RULES))


def split_questions(
    question_ids: np.ndarray | pd.Series,
    seed: int,
    fractions: tuple[float, float, float] = (0.70, 0.05, 0.25),
) -> np.ndarray:
    """Assign each question to ``train``/``val``/``test`` by a seeded permutation.

    The permutation acts on the sorted ids, so the result depends only on the set of ids and
    the seed, not on row order.
    """
    ids = np.asarray(question_ids, dtype=object).astype(str)
    n = len(ids)
    order = np.argsort(ids, kind="stable")
    perm = rng(seed, "vqa-split").permutation(n)
    n_train = int(round(fractions[0] * n))
    n_val = int(round(fractions[1] * n))
    labels = np.empty(n, dtype=object)
    ranked = order[perm]
    labels[ranked[:n_train]] = "train"
    labels[ranked[n_train : n_train + n_val]] = "val"
    labels[ranked[n_train + n_val :]] = "test"
    return labels


def normalized_entropy(counts: np.ndarray) -> float:
    """Shannon entropy of a count vector divided by ``log(M)``; 1.0 when ``M <= 1``."""
    c = np.asarray(counts, dtype=np.float64)
    c = c[c > 0]
    if len(c) <= 1:
        return 1.0
    p = c / c.sum()
    return float(-(p * np.log(p)).sum() / np.log(len(c)))


@dataclass(frozen=True)
class GroupFlags:
    """Per-sample and per-group results of grouping one split by one shortcut's concepts."""

    head: np.ndarray  # bool per sample
    tail: np.ndarray  # bool per sample
    group_entropy: np.ndarray  # normalised entropy per group (indexed by group code)
    group_size: np.ndarray  # samples per group
    present: np.ndarray  # bool per group: the group has samples in this split
    imbalanced: np.ndarray  # bool per group: present and normalised entropy below threshold

    @property
    def n_groups(self) -> int:
        """Number of groups with samples in this split."""
        return int(self.present.sum())


def group_flags(
    concept: np.ndarray,
    answer: np.ndarray,
    entropy_threshold: float = 0.9,
    tail_factor: float = 1.2,
    n_groups: int | None = None,
    one_answer_entropy: float = 1.0,
    tail_inclusive: bool = False,
) -> GroupFlags:
    """Group samples by integer concept code and mark head/tail samples (vectorised).

    ``tail_factor`` is compared exactly (as a fraction) so that an answer count equal to
    1.2 x the mean is not rare (rare with ``tail_inclusive``). A one-answer group gets the
    normalised entropy ``one_answer_entropy`` (1: balanced, the default; 0: imbalanced), which
    enters E only: with one answer there is nothing rare to hold out.
    """
    concept = np.asarray(concept, dtype=np.int64)
    answer = np.asarray(answer, dtype=np.int64)
    n_groups = int(concept.max()) + 1 if n_groups is None and len(concept) else (n_groups or 0)
    if len(concept) == 0:
        empty = np.zeros(n_groups, dtype=np.float64)
        return GroupFlags(
            np.zeros(0, bool), np.zeros(0, bool), empty + 1.0, empty.astype(np.int64),
            np.zeros(n_groups, bool), np.zeros(n_groups, bool),
        )  # fmt: skip
    n_ans = int(answer.max()) + 1
    key = concept * n_ans + answer
    uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    g = uniq // n_ans
    size = np.bincount(g, weights=cnt, minlength=n_groups).astype(np.int64)
    m = np.bincount(g, minlength=n_groups).astype(np.int64)
    p = cnt / size[g]
    h = -np.bincount(g, weights=p * np.log(p), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = np.where(m > 1, h / np.log(np.maximum(m, 2)), float(one_answer_entropy))
    imb = (ent < entropy_threshold) & (m > 1)  # one answer: nothing rare to hold out
    frac = _tail_fraction(tail_factor)
    lhs, rhs = cnt * m[g] * frac.denominator, frac.numerator * size[g]
    rare_pair = lhs <= rhs if tail_inclusive else lhs < rhs
    sample_imb = imb[concept]
    tail = sample_imb & rare_pair[inv]
    head = sample_imb & ~rare_pair[inv]
    return GroupFlags(head, tail, ent, size, size > 0, imb & (size > 0))


def _tail_fraction(tail_factor: float) -> Fraction:
    """``tail_factor`` as the exact fraction :func:`group_flags` compares counts with."""
    return Fraction(str(tail_factor)).limit_denominator(10**6)


def tail_threshold(group_size: int, n_answers: int, tail_factor: float = 1.2) -> float:
    """The answer count that :func:`group_flags` compares with in an imbalanced group of
    ``group_size`` samples and ``n_answers`` distinct answers: ``tail_factor`` x the mean count
    per answer. Answers counted below it (at or below it with ``tail_inclusive``) are the tail;
    :func:`group_flags` makes the comparison exactly, in fractions. NaN for an empty group."""
    if n_answers <= 0:
        return float("nan")
    return float(_tail_fraction(tail_factor) * group_size / n_answers)


def imbalance_degree(flags: GroupFlags) -> float:
    """``E = sum_g e_hat(g) * |g| / N`` over the groups of one split (lower: more imbalanced)."""
    total = flags.group_size.sum()
    if total == 0:
        return float("nan")
    return float((flags.group_entropy * flags.group_size).sum() / total)


def jaccard_matrix(sets: dict[str, np.ndarray]) -> pd.DataFrame:
    """Jaccard similarity ``|A n B| / |A u B|`` of membership vectors (NaN if both empty)."""
    names = list(sets)
    m = np.stack([sets[n] for n in names], axis=1).astype(np.int64)
    inter = m.T @ m
    size = np.diag(inter)
    union = size[:, None] + size[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = np.where(union > 0, inter / np.maximum(union, 1), np.nan)
    return pd.DataFrame(jac, index=names, columns=names)


def coincidence_matrix(sets: dict[str, np.ndarray]) -> pd.DataFrame:
    """Coincidence ratios: row A, column B holds ``|A n B| / |A|`` (NaN when A is empty)."""
    names = list(sets)
    m = np.stack([sets[n] for n in names], axis=1).astype(np.int64)
    inter = m.T @ m
    size = np.diag(inter).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(size[:, None] > 0, inter / np.maximum(size[:, None], 1), np.nan)
    return pd.DataFrame(ratio, index=names, columns=names)


@dataclass
class VQASplits:
    """Everything the construction produces.

    ``samples``: one row per question with ``split``, the nine concept columns and boolean
    ``head:<S>`` / ``tail:<S>`` columns (grouping done within each split; the OOD test set of
    shortcut S is the test rows with ``tail:<S>``).
    """

    samples: pd.DataFrame
    statistics: pd.DataFrame
    jaccard: pd.DataFrame
    coincidence: pd.DataFrame
    imbalance: pd.DataFrame
    config: BuildConfig

    def ids(self, split: str, shortcut: str | None = None, part: str = "tail") -> list[str]:
        """Question ids of a split, or of its head/tail part for one shortcut."""
        s = self.samples
        mask = s["split"].to_numpy() == split
        if shortcut is not None:
            mask &= s[f"{part}:{shortcut}"].to_numpy()
        return s.loc[mask, "question_id"].tolist()


def statistics_table(flags: dict[tuple[str, str], GroupFlags]) -> pd.DataFrame:
    """Per shortcut: groups in train and test, imbalanced test groups, head and tail sizes."""
    rows = []
    for s in SHORTCUTS:
        tr, te = flags[(s, "train")], flags[(s, "test")]
        rows.append(
            {
                "shortcut": s,
                "train_groups": tr.n_groups,
                "test_groups": te.n_groups,
                "test_imbalanced_groups": int(te.imbalanced.sum()),
                "test_head": int(te.head.sum()),
                "test_tail": int(te.tail.sum()),
                "train_head": int(tr.head.sum()),
                "train_tail": int(tr.tail.sum()),
            }
        )
    return pd.DataFrame(rows)


def build_splits(
    table: pd.DataFrame, config: BuildConfig | None = None, split: np.ndarray | None = None
) -> VQASplits:
    """Run the VQA-VS construction on a validated VQA table.

    ``split`` (``train``/``val``/``test`` per row) replaces the seeded 70/5/25 split, e.g. to
    analyse a released split as it is (:mod:`shortcutlab.vqa.analysis`).
    """
    config = config or BuildConfig()
    validate_table(table)
    concepts = compute_concepts(table, config.concepts)
    if split is None:
        split = split_questions(table["question_id"], config.seed, config.fractions)
    else:
        split = np.asarray(split, dtype=object)
        bad = sorted(set(split) - set(SPLITS))
        if len(split) != len(table) or bad:
            raise VQAError(
                f"a given split needs one of {', '.join(SPLITS)} per row ({len(table)} rows); "
                f"got {len(split)} labels{', including ' + repr(bad[0]) if bad else ''}"
            )
    answer, _ = pd.factorize(table["answer"], sort=True)
    samples = pd.DataFrame(
        {
            "question_id": table["question_id"].to_numpy(),
            "image_id": table["image_id"].to_numpy(),
            "question": table["question"].to_numpy(),
            "answer": table["answer"].to_numpy(),
            "answers": table["answers"].to_numpy(),
            "split": split,
        }
    )
    if "answer_type" in table.columns:  # VQA v2 / VQA-VS: per-answer-type accuracy in scores
        samples["answer_type"] = table["answer_type"].fillna("").astype(str).to_numpy()
    flags: dict[tuple[str, str], GroupFlags] = {}
    masks = {name: split == name for name in SPLITS}
    extra: dict[str, np.ndarray] = {}
    for s in SHORTCUTS:
        codes, uniques = pd.factorize(concepts[s], sort=False)
        # a sample without a keyword or object has no concept for this shortcut: ungrouped
        defined = ~concepts[s].str.contains(NONE, regex=False).to_numpy()
        head = np.zeros(len(table), dtype=bool)
        tail = np.zeros(len(table), dtype=bool)
        for name, split_mask in masks.items():
            mask = split_mask & defined
            f = group_flags(
                codes[mask], answer[mask], config.entropy_threshold, config.tail_factor,
                n_groups=len(uniques),
                one_answer_entropy=1.0 if config.one_answer_groups == "balanced" else 0.0,
                tail_inclusive=config.tail_rule == "<=",
            )  # fmt: skip
            flags[(s, name)] = f
            head[mask], tail[mask] = f.head, f.tail
        extra[s] = concepts[s].to_numpy()
        extra[f"head:{s}"] = head
        extra[f"tail:{s}"] = tail
    samples = pd.concat([samples, pd.DataFrame(extra)], axis=1)
    train, test = masks["train"], masks["test"]
    jac = jaccard_matrix({s: extra[f"head:{s}"][train] for s in SHORTCUTS})
    coi = coincidence_matrix({s: extra[f"tail:{s}"][test] for s in SHORTCUTS})
    imbalance = pd.DataFrame(
        {
            "shortcut": list(SHORTCUTS),
            "E_train": [imbalance_degree(flags[(s, "train")]) for s in SHORTCUTS],
            "E_test": [imbalance_degree(flags[(s, "test")]) for s in SHORTCUTS],
        }
    )
    return VQASplits(
        samples=samples,
        statistics=statistics_table(flags),
        jaccard=jac,
        coincidence=coi,
        imbalance=imbalance,
        config=config,
    )
