"""Shortcut-specific concepts per sample (VQA-VS, section 3.3 and appendix B.3).

For every question we pick the concept of each of the nine shortcuts: QT (question type), KW
(the question word with the highest pointwise mutual information (PMI) with the answer,
question-type prefix excluded; every other word counts, as in the paper, unless stop words are
configured), KWP (the top two words, ordered), KO / KOP (the
same for the image's objects) and the combinations QT+KW, QT+KO, KW+KO, QT+KW+KO.

``mode="pmi"`` is the paper's rule: a word is scored against the *sample's own answer*,
``PMI(w, a) = log(f(w, a) K / (f(w) f(a)))``. The concept then depends on the label, which
makes groups purer (less balanced) than anything a model could condition on. ``mode="agnostic"``
scores each word by the mutual information between its presence and the answer variable,
a per-word score, so the concept depends on the question (or image) alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError, unknown_choice

__all__ = [
    "DEFAULT_QUESTION_TYPES",
    "ENGLISH_STOP_WORDS",
    "MODES",
    "NONE",
    "PAIR_ORDERS",
    "SHORTCUTS",
    "SINGLE_PAIRS",
    "SHORTCUT_GROUPS",
    "ConceptConfig",
    "assign_question_types",
    "compute_concepts",
    "tokenize",
    "top_two",
]

SHORTCUTS: tuple[str, ...] = (
    "QT", "KW", "KWP", "QT+KW", "KO", "KOP", "QT+KO", "KW+KO", "QT+KW+KO",
)  # fmt: skip
# The authors' sub-metrics: means over the language-based, visual-based and multi-modal sets.
SHORTCUT_GROUPS: dict[str, tuple[str, ...]] = {
    "language": ("QT", "KW", "KWP", "QT+KW"),
    "visual": ("KO", "KOP"),
    "multimodal": ("QT+KO", "KW+KO", "QT+KW+KO"),
}
Mode = Literal["pmi", "agnostic"]
MODES: tuple[Mode, ...] = get_args(Mode)
NONE = "<none>"
SEP = " + "

# Common English function words, removed only when configured (ConceptConfig(stop_words=...),
# `vqa build --remove-stop-words`): the paper removes none. Negations (no, not, nor, never,
# none, nothing, nobody, nowhere, neither, without and "n't" forms) are deliberately absent:
# they carry shortcuts.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """a an the this that these those is are was were be been being am do does did doing
    have has had having i me my we our you your he him his she her it its they them their
    what which who whom whose where when why how of in on at by for with about against
    between into through during before after above below to from up down out off over under
    again further then once here there all any both each few more most other some such
    only own same so than too very s t can will just should now and or but if because as
    until while image picture photo shown present contain contains""".split()
)

# Longest-prefix question types used when the data has no question_type field: the common
# VQA openings plus easy-VQA's templates. Questions matching none get "none of the above".
DEFAULT_QUESTION_TYPES: tuple[str, ...] = tuple(
    " ".join(p.split())
    for p in
    """what color is the|what is the color of the|what color are the|what color is|what color
    |what shape is|what shape does|what shape|what is the man|what is the woman|what is the
    person|what is the name|what is on the|what is in the|what is the|what is this|what is
    |what are the|what are|what kind of|what type of|what sport is|what room is|what animal is
    |what brand|what time|what number is|what does the|what|is there not a|is there a|is there
    |is there no|is no|is a|is the man|is the woman|is the person|is this a|is this an|is this
    |is the|is it|is that a|is he|is she|is|are there any|are there|are the|are these|are they
    |are|does the image not contain|does the image contain|does the|does this|does|do you|do
    |how many people are|how many|how|where is the|where are the|where|who is|who|which|why
    |can you|can|could|has|was|none of the above""".split("|")
)


# Choices the paper leaves open (named options; the first is the default):
# the order of a keyword/object pair: by score rank (best first) or by position in the question
# (objects: in the image's object list); a question with a single keyword (an image with a
# single object): its pair concept is that item alone ("keep") or it has none ("drop").
PAIR_ORDERS: tuple[str, ...] = ("score", "position")
SINGLE_PAIRS: tuple[str, ...] = ("keep", "drop")


@dataclass(frozen=True)
class ConceptConfig:
    """How concepts are chosen: scoring mode, stop words, question-type prefixes, and the open
    choices for KWP/KOP (``pair_order`` in :data:`PAIR_ORDERS`, ``single_pairs`` in
    :data:`SINGLE_PAIRS`).

    ``stop_words`` is empty by default, as in the paper (``ENGLISH_STOP_WORDS`` is the built-in
    list to drop instead)."""

    mode: Mode = "pmi"
    stop_words: frozenset[str] = frozenset()
    question_types: tuple[str, ...] = DEFAULT_QUESTION_TYPES
    pair_order: str = "score"
    single_pairs: str = "keep"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise VQAError(unknown_choice("concept mode", self.mode, MODES))
        if self.pair_order not in PAIR_ORDERS:
            raise VQAError(unknown_choice("pair order", self.pair_order, PAIR_ORDERS))
        if self.single_pairs not in SINGLE_PAIRS:
            raise VQAError(unknown_choice("single-item pair rule", self.single_pairs,
                                          SINGLE_PAIRS))  # fmt: skip


def tokenize(texts: Iterable[str]) -> list[list[str]]:
    """Lower-case word tokens (letters, digits, apostrophes) of each text."""
    series = pd.Series(list(texts), dtype=object).astype(str)
    return series.str.lower().str.replace(r"[^a-z0-9']+", " ", regex=True).str.split().tolist()


def assign_question_types(
    tokens: Sequence[list[str]], prefixes: Sequence[str] = DEFAULT_QUESTION_TYPES
) -> list[str]:
    """The longest prefix (in words) of each tokenised question; "none of the above" if none."""
    by_len: dict[int, set[tuple[str, ...]]] = {}
    for p in prefixes:
        words = tuple(p.lower().split())
        if words:
            by_len.setdefault(len(words), set()).add(words)
    lengths = sorted(by_len, reverse=True)
    out = []
    for toks in tokens:
        found = "none of the above"
        for n in lengths:
            head = tuple(toks[:n])
            if len(head) == n and head in by_len[n]:
                found = " ".join(head)
                break
        out.append(found)
    return out


def _pairs(items: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flatten per-sample item lists into (sample, item id, position) with duplicates removed."""
    lengths = np.fromiter((len(x) for x in items), dtype=np.int64, count=len(items))
    flat = [w for x in items for w in x]
    sample = np.repeat(np.arange(len(items), dtype=np.int64), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(items) else lengths
    position = np.arange(len(flat), dtype=np.int64) - np.repeat(starts, lengths)
    codes, uniques = pd.factorize(pd.Series(flat, dtype=object), sort=True)
    codes = codes.astype(np.int64)
    key = sample * max(len(uniques), 1) + codes
    _, first = np.unique(key, return_index=True)  # a repeated word counts once per sample
    first.sort()
    return sample[first], codes[first], position[first], np.asarray(uniques, dtype=object)


def _scores(
    sample: np.ndarray, item: np.ndarray, answer: np.ndarray, n_items: int, mode: Mode
) -> np.ndarray:
    """Score each (sample, item) pair: PMI with the sample's answer, or the item's MI."""
    k = float(len(answer))
    ans = answer[sample]
    n_ans = int(answer.max()) + 1 if len(answer) else 1
    f_a = np.bincount(answer, minlength=n_ans).astype(np.float64)
    f_w = np.bincount(item, minlength=n_items).astype(np.float64)
    key = item * n_ans + ans
    uniq, inv, f_wa = np.unique(key, return_inverse=True, return_counts=True)
    if mode == "pmi":
        return np.log(f_wa[inv] * k / (f_w[item] * f_a[ans]))
    # Mutual information I(1[w in sample]; A) per item w, from the (w, a) contingency counts.
    w_u, a_u, c = uniq // n_ans, uniq % n_ans, f_wa.astype(np.float64)
    present = c / k * np.log(c * k / (f_w[w_u] * f_a[a_u]))
    rest = f_a[a_u] - c
    not_w = k - f_w[w_u]
    with np.errstate(divide="ignore", invalid="ignore"):
        absent = np.where(rest > 0, rest / k * np.log(rest * k / (not_w * f_a[a_u])), 0.0)
    mass_seen = np.bincount(w_u, weights=f_a[a_u] / k, minlength=n_items)
    with np.errstate(divide="ignore"):
        unseen_log = np.where(f_w < k, np.log(k / np.maximum(k - f_w, 1e-300)), 0.0)
    mi = (
        np.bincount(w_u, weights=present + absent, minlength=n_items)
        + (1.0 - mass_seen) * unseen_log
    )
    return mi[item]


def top_two(
    items: Sequence[Sequence[str]], answer_codes: np.ndarray, mode: Mode = "pmi"
) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, the best and second-best item (``NONE`` where missing) by score.

    Ties go to the item that comes first in the sample (question word order, object order).
    """
    best, second, _ = _top_two(items, answer_codes, mode)
    return best, second


def _top_two(
    items: Sequence[Sequence[str]], answer_codes: np.ndarray, mode: Mode
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`top_two` plus, per sample, whether the second item comes first in the sample."""
    n = len(items)
    best = np.full(n, NONE, dtype=object)
    second = np.full(n, NONE, dtype=object)
    earlier = np.zeros(n, dtype=bool)
    sample, item, pos, names = _pairs(items)
    if len(sample) == 0:
        return best, second, earlier
    score = _scores(sample, item, answer_codes, len(names), mode)
    order = np.lexsort((pos, -score, sample))
    s_sorted, i_sorted = sample[order], item[order]
    is_first = np.ones(len(order), dtype=bool)
    is_first[1:] = s_sorted[1:] != s_sorted[:-1]
    first_idx = np.flatnonzero(is_first)
    best[s_sorted[first_idx]] = names[i_sorted[first_idx]]
    nxt = first_idx + 1
    has_second = nxt < len(order)
    has_second[has_second] = s_sorted[nxt[has_second]] == s_sorted[first_idx[has_second]]
    second[s_sorted[first_idx[has_second]]] = names[i_sorted[nxt[has_second]]]
    a, b = first_idx[has_second], nxt[has_second]
    earlier[s_sorted[a]] = pos[order][b] < pos[order][a]
    return best, second, earlier


def _pair(first: np.ndarray, second: np.ndarray, earlier: np.ndarray, config: ConceptConfig):
    """The KWP/KOP concept from the top two items under the configured open choices."""
    if config.pair_order == "position":
        first, second = np.where(earlier, second, first), np.where(earlier, first, second)
    alone = first if config.single_pairs == "keep" else np.full(len(first), NONE, dtype=object)
    return np.where(second == NONE, alone, _join(first, second))


def _join(*cols: np.ndarray) -> np.ndarray:
    return np.array([SEP.join(parts) for parts in zip(*cols, strict=True)], dtype=object)


def compute_concepts(table: pd.DataFrame, config: ConceptConfig | None = None) -> pd.DataFrame:
    """The nine shortcut concepts of every row of a VQA table (columns named as SHORTCUTS).

    Counts for the mutual information come from the whole table, as in the paper. A question
    type comes from the ``question_type`` column or, where empty, the longest listed prefix.
    """
    config = config or ConceptConfig()
    tokens = tokenize(table["question"])
    qt = table["question_type"].to_numpy(dtype=object).copy()
    missing = np.flatnonzero(qt == "")
    if len(missing):
        found = assign_question_types([tokens[i] for i in missing], config.question_types)
        qt[missing] = found
    stop = config.stop_words
    words = []
    qt_tokens = tokenize(qt)  # as the question is tokenised: case and punctuation alike
    for toks, qtoks in zip(tokens, qt_tokens, strict=True):
        if toks[: len(qtoks)] == qtoks:
            toks = toks[len(qtoks) :]
        words.append([w for w in toks if w not in stop])
    answer_codes, _ = pd.factorize(table["answer"], sort=True)
    answer_codes = answer_codes.astype(np.int64)
    kw, kw2, kw_swap = _top_two(words, answer_codes, config.mode)
    ko, ko2, ko_swap = _top_two(table["objects"].tolist(), answer_codes, config.mode)
    kwp = _pair(kw, kw2, kw_swap, config)
    kop = _pair(ko, ko2, ko_swap, config)
    qt = qt.astype(object)
    return pd.DataFrame(
        {
            "QT": qt,
            "KW": kw,
            "KWP": kwp,
            "QT+KW": _join(qt, kw),
            "KO": ko,
            "KOP": kop,
            "QT+KO": _join(qt, ko),
            "KW+KO": _join(kw, ko),
            "QT+KW+KO": _join(qt, kw, ko),
        },
        index=table.index,
    )
