"""The data of the paper's answer-distribution figures (Figs. 4, 8 and 10) from a build.

For one group (a shortcut and one of its concepts) of the ``samples`` table of
:func:`~shortcutlab.vqa.splits.build_splits` (``samples.parquet`` of a build):

* the answer counts of train, val, IID test and OOD test (the group's IID test questions that
  the build put in the shortcut's OOD test set), on the answers sorted by their training count
  (the paper's shared abscissa; answers absent from training follow, by their other counts);
* which answers the selection rule puts in the tail, recomputed on the group's IID test
  questions with :func:`~shortcutlab.vqa.splits.group_flags` under the build's configuration
  (the rule itself is not restated here), checked against the build's own flags, and the
  threshold the rule compares with (:func:`~shortcutlab.vqa.splits.tail_threshold`).

Default groups: for Figs. 4 and 10 the largest group of each shortcut that has OOD test
questions (:func:`default_groups`); for Fig. 8 the paper's QT group "what sport is" and KW
group "sky" where the build has them, else the largest QT / KW group (:func:`fig8_groups`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError, unknown_choice
from shortcutlab.vqa.concepts import NONE, SHORTCUTS
from shortcutlab.vqa.splits import SPLITS, BuildConfig, group_flags, tail_threshold

__all__ = [
    "COUNT_COLUMNS",
    "FIG8_GROUPS",
    "GroupDistribution",
    "default_groups",
    "distribution_table",
    "fig8_groups",
    "figure_groups",
    "group_distribution",
    "group_sizes",
    "groups_table",
    "parse_groups",
]

COUNT_COLUMNS: tuple[str, ...] = ("train", "val", "test", "ood")
# the groups of the paper's Fig. 8 (appendix B.1)
FIG8_GROUPS: dict[str, str] = {"QT": "what sport is", "KW": "sky"}


@dataclass(frozen=True)
class GroupDistribution:
    """Answer counts of one group per split, and the tail the selection rule picks in it.

    ``counts``: index ``answer`` in the order of the training counts (descending; answers
    without training samples after, by their val + test count, then by name), integer
    columns ``train``, ``val``, ``test`` (IID test), ``ood`` (the build's OOD test questions
    of the group) and boolean ``tail`` (the answer is tail among the group's IID test
    questions). ``threshold`` is ``tail_factor`` x the mean IID test count per answer, the
    value the rule compares each count with (``tail_rule``), ``entropy`` the group's
    normalised answer entropy on IID test and ``imbalanced`` whether it is below
    ``entropy_threshold`` (only an imbalanced group has a tail).
    """

    shortcut: str
    concept: str
    counts: pd.DataFrame
    threshold: float
    entropy: float
    imbalanced: bool
    tail_factor: float
    tail_rule: str
    entropy_threshold: float

    def proportions(self) -> pd.DataFrame:
        """The counts as shares of each column's total (0 in an empty column)."""
        c = self.counts[list(COUNT_COLUMNS)].astype(np.float64)
        totals = c.sum(axis=0)
        return c.div(totals.where(totals > 0, 1.0), axis=1)

    def selection(self) -> pd.DataFrame:
        """The IID test answers of the group by descending count (ties by name), as the rule
        sees them: the tail is a run at the end, every count of it below ``threshold``."""
        c = self.counts.loc[self.counts["test"] > 0]
        return c.reset_index().sort_values(["test", "answer"], ascending=[False, True],
                                           kind="stable").set_index("answer")  # fmt: skip

    def summary(self) -> dict[str, Any]:
        """One row of :func:`groups_table`."""
        c = self.counts
        return {
            "shortcut": self.shortcut,
            "concept": self.concept,
            **{col: int(c[col].sum()) for col in COUNT_COLUMNS},
            "test_answers": int((c["test"] > 0).sum()),
            "tail_answers": int(c["tail"].sum()),
            "entropy_test": self.entropy,
            "imbalanced": self.imbalanced,
            "threshold": self.threshold,
        }


def _check_shortcut(samples: pd.DataFrame, shortcut: str) -> None:
    if shortcut not in SHORTCUTS:
        raise VQAError(unknown_choice("shortcut", shortcut, SHORTCUTS))
    missing = [c for c in (shortcut, f"tail:{shortcut}", "split", "answer")
               if c not in samples.columns]  # fmt: skip
    if missing:
        raise VQAError(f"the samples have no column(s) {', '.join(missing)}: not the samples "
                       "of a build; build them with `shortcutlab vqa build`")


def _defined(concepts: pd.Series) -> np.ndarray:
    """Samples that have a concept (grouped by the build), as in ``build_splits``."""
    return ~concepts.astype(str).str.contains(NONE, regex=False).to_numpy()


def group_sizes(samples: pd.DataFrame, shortcut: str, split: str | None = None) -> pd.Series:
    """Questions per group of ``shortcut`` (all splits, or one), largest first, ties by name;
    samples without a concept (no keyword, no objects) belong to no group."""
    _check_shortcut(samples, shortcut)
    keep = _defined(samples[shortcut])
    if split is not None:
        keep &= samples["split"].to_numpy() == split
    sizes = samples.loc[keep, shortcut].astype(str).value_counts()
    frame = sizes.rename_axis("concept").reset_index(name="questions")
    frame = frame.sort_values(["questions", "concept"], ascending=[False, True], kind="stable")
    return frame.set_index("concept")["questions"]


def _unknown_group(samples: pd.DataFrame, shortcut: str, concept: str) -> VQAError:
    sizes = group_sizes(samples, shortcut)
    if sizes.empty:
        return VQAError(f"{shortcut} has no groups in this build (no question has a "
                        f"{shortcut} concept), so no group {concept!r}")
    close = difflib.get_close_matches(concept, sizes.index.tolist(), n=3)
    largest = ", ".join(repr(c) for c in sizes.index[:8])
    hint = f"; close: {', '.join(repr(c) for c in close)}" if close else ""
    return VQAError(f"{shortcut} has no group {concept!r} in this build{hint}; valid choices "
                    f"(the largest of {len(sizes):,} groups): {largest}")


def group_distribution(
    samples: pd.DataFrame, shortcut: str, concept: str, config: BuildConfig | None = None
) -> GroupDistribution:
    """The answer counts of the group ``concept`` of ``shortcut`` per split, and its tail.

    ``config`` must be the build's configuration (its entropy threshold, tail factor, tail
    rule and one-answer rule; ``read_build_config`` reads a build folder's). The tail is
    recomputed on the group's IID test questions by :func:`group_flags`; a disagreement with
    the build's ``tail:<shortcut>`` flags raises :class:`VQAError`.
    """
    config = config or BuildConfig()
    _check_shortcut(samples, shortcut)
    concepts = samples[shortcut].astype(str)
    mask = (concepts == concept).to_numpy() & _defined(concepts)
    if not mask.any():
        raise _unknown_group(samples, shortcut, concept)
    rows = samples.loc[mask]
    split = rows["split"].to_numpy()
    answer = rows["answer"].astype(str)
    counts = pd.crosstab(answer, split).reindex(columns=list(SPLITS), fill_value=0)
    counts = counts.rename_axis(index="answer", columns=None).astype(np.int64)
    test = split == "test"
    stored = rows[f"tail:{shortcut}"].to_numpy(dtype=bool) & test
    counts["ood"] = answer[stored].value_counts().reindex(counts.index, fill_value=0)
    codes, answers = pd.factorize(answer[test], sort=True)
    flags = group_flags(
        np.zeros(len(codes), dtype=np.int64), codes, config.entropy_threshold,
        config.tail_factor, n_groups=1,
        one_answer_entropy=1.0 if config.one_answer_groups == "balanced" else 0.0,
        tail_inclusive=config.tail_rule == "<=",
    )  # fmt: skip
    if not np.array_equal(flags.tail, stored[test]):
        raise VQAError(
            f"the {shortcut} tail flags of group {concept!r} differ from the build's rule "
            f"(entropy threshold {config.entropy_threshold}, tail factor {config.tail_factor}, "
            f"tail rule {config.tail_rule!r}): give the configuration the samples were built with"
        )
    tail_answers = set(answers[np.unique(codes[flags.tail])]) if len(codes) else set()
    counts["tail"] = counts.index.isin(sorted(tail_answers))
    counts["other"] = counts["val"] + counts["test"]
    counts = counts.reset_index().sort_values(
        ["train", "other", "answer"], ascending=[False, False, True], kind="stable"
    ).set_index("answer")  # fmt: skip
    n_test = int(test.sum())
    return GroupDistribution(
        shortcut=shortcut,
        concept=concept,
        counts=counts[[*COUNT_COLUMNS, "tail"]],
        threshold=tail_threshold(n_test, len(answers), config.tail_factor),
        entropy=float(flags.group_entropy[0]) if n_test else float("nan"),
        imbalanced=bool(flags.imbalanced[0]) if n_test else False,
        tail_factor=config.tail_factor,
        tail_rule=config.tail_rule,
        entropy_threshold=config.entropy_threshold,
    )


def parse_groups(texts: Iterable[str]) -> dict[str, str]:
    """``SHORTCUT=CONCEPT`` options (``QT=what sport is``, ``QT+KW=what color is + sky``) as a
    mapping; a shortcut named twice, or an unknown one, is an error."""
    groups: dict[str, str] = {}
    for text in texts:
        shortcut, sep, concept = text.partition("=")
        shortcut, concept = shortcut.strip(), concept.strip()
        if not sep or not shortcut or not concept:
            raise VQAError(f"--group {text!r} must look like SHORTCUT=CONCEPT, e.g. "
                           "'QT=what sport is' or 'KW=sky'")
        if shortcut not in SHORTCUTS:
            raise VQAError(unknown_choice("shortcut", shortcut, SHORTCUTS)
                           + f" (in --group {text!r})")  # fmt: skip
        if shortcut in groups:
            raise VQAError(f"--group names {shortcut} twice ({groups[shortcut]!r} and "
                           f"{concept!r}); give one group per shortcut")
        groups[shortcut] = concept
    return groups


def default_groups(samples: pd.DataFrame) -> dict[str, str]:
    """For each shortcut, the group drawn in Figs. 4 and 10: the largest (all splits) of its
    groups that have OOD test questions; for a shortcut without an OOD test set the largest
    group with IID test questions; shortcuts without groups are left out."""
    chosen: dict[str, str] = {}
    test = samples["split"].to_numpy() == "test"
    for s in SHORTCUTS:
        sizes = group_sizes(samples, s)
        if sizes.empty:
            continue
        concepts = samples[s].astype(str)
        with_ood = set(concepts[test & samples[f"tail:{s}"].to_numpy(dtype=bool)])
        with_test = set(concepts[test])
        for pool in (with_ood, with_test, set(sizes.index)):
            candidates = [c for c in sizes.index if c in pool]
            if candidates:
                chosen[s] = candidates[0]
                break
    return chosen


def fig8_groups(
    samples: pd.DataFrame, preferred: Mapping[str, str] = FIG8_GROUPS
) -> dict[str, str]:
    """The groups of Fig. 8: per shortcut of ``preferred`` its group there if the build's
    training split has it, else the shortcut's largest training group (none: left out)."""
    chosen: dict[str, str] = {}
    for s, concept in preferred.items():
        sizes = group_sizes(samples, s, split="train")
        if concept in sizes.index:
            chosen[s] = concept
        elif not sizes.empty:
            chosen[s] = str(sizes.index[0])
    return chosen


def figure_groups(
    samples: pd.DataFrame, groups: Mapping[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """The groups each figure draws, ``{"4": {S: concept}, "8": {...}, "10": {...}}``:
    :func:`default_groups` for Fig. 10, :func:`fig8_groups` for Fig. 8, each replaced by the
    group ``groups`` names for its shortcut (checked: an unknown shortcut or group is a
    :class:`VQAError` naming the valid choices). Fig. 4 draws one of Fig. 10's groups: the
    first (in the order of ``SHORTCUTS``) with OOD test questions, else the first."""
    groups = dict(groups or {})
    for s, concept in groups.items():
        _check_shortcut(samples, s)
        concepts = samples[s].astype(str)
        if not ((concepts == concept).to_numpy() & _defined(concepts)).any():
            raise _unknown_group(samples, s, concept)
    fig10 = {**default_groups(samples), **groups}
    fig10 = {s: fig10[s] for s in SHORTCUTS if s in fig10}
    fig8 = {**fig8_groups(samples), **{s: c for s, c in groups.items() if s in FIG8_GROUPS}}
    test = samples["split"].to_numpy() == "test"
    with_ood = [
        s for s, c in fig10.items()
        if (test & samples[f"tail:{s}"].to_numpy(dtype=bool)
            & (samples[s].astype(str) == c).to_numpy()).any()
    ]  # fmt: skip
    first = with_ood[:1] or list(fig10)[:1]
    return {"4": {s: fig10[s] for s in first}, "8": fig8, "10": fig10}


def distribution_table(dists: Iterable[GroupDistribution]) -> pd.DataFrame:
    """The counts of several groups in one long table: ``shortcut``, ``concept``, ``rank``
    (position by training count, from 1), ``answer``, the four counts and ``tail``."""
    frames = [
        d.counts.reset_index().assign(shortcut=d.shortcut, concept=d.concept,
                                      rank=np.arange(1, len(d.counts) + 1))
        for d in dists
    ]  # fmt: skip
    columns = ["shortcut", "concept", "rank", "answer", *COUNT_COLUMNS, "tail"]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def groups_table(dists: Iterable[GroupDistribution],
                 figures: Mapping[tuple[str, str], str] | None = None) -> pd.DataFrame:
    """One row per group (:meth:`GroupDistribution.summary`), with the figures that draw it."""
    rows = []
    for d in dists:
        row = d.summary()
        if figures is not None:
            row = {"figures": figures.get((d.shortcut, d.concept), ""), **row}
        rows.append(row)
    return pd.DataFrame(rows)
