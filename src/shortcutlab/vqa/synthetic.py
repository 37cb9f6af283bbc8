"""A synthetic VQA table whose nine VQA-VS shortcuts are planted, each in its own population.

Every question belongs to one population, named after a shortcut S. In that population only
S's concept predicts the answer (the majority answer of its value with probability
``majority``, else one of the other answers); every other concept of the question is a token
of its own (a group of one: never imbalanced, so never head or tail). Composite shortcuts are
planted as Latin squares: for QT+KW the question type alone and the keyword alone are balanced
over the answers, only the pair predicts it (likewise KWP, KOP, QT+KO, KW+KO, and QT+KW+KO
with a 3-way square). Vocabularies (question types, words, objects) are disjoint between
populations; a second word (object) is present only where a pair is planted. So the nine OOD
sets are disjoint populations by construction with :data:`CONCEPTS` (answer-agnostic concepts,
pairs in question order, no pair concept for a single word), under which no key object or
keyword depends on the sample's answer.
"""

from __future__ import annotations

import itertools
from typing import Any

import pandas as pd

from shortcutlab.errors import VQAError
from shortcutlab.utils.rng import rng
from shortcutlab.vqa.concepts import SHORTCUTS, ConceptConfig
from shortcutlab.vqa.table import make_table

__all__ = ["ANSWERS", "CONCEPTS", "synthetic_vqa"]

CONCEPTS = ConceptConfig(mode="agnostic", pair_order="position", single_pairs="drop")

ANSWERS: tuple[str, ...] = ("red", "green", "blue", "yellow")
# which slots (question type, first word, second word, first object, second object) carry the
# planted concept of each population; the others get tokens of their own
_SLOTS: dict[str, tuple[str, ...]] = {
    "QT": ("qt",), "KW": ("w1",), "KWP": ("w1", "w2"), "QT+KW": ("qt", "w1"),
    "KO": ("o1",), "KOP": ("o1", "o2"), "QT+KO": ("qt", "o1"), "KW+KO": ("w1", "o1"),
    "QT+KW+KO": ("qt", "w1", "o1"),
}  # fmt: skip


def synthetic_vqa(
    per_population: int = 2560, seed: int = 0, majority: float = 0.8
) -> pd.DataFrame:
    """The VQA table (see the module docstring); column ``population`` names the shortcut
    planted in each question. The ``4 ** len(slots)`` combinations of planted values of a
    population share its ``per_population`` questions equally (a multiple of 64); in each,
    ``round(majority * per_cell)`` questions have the planted answer and the rest are spread
    evenly over the other answers, so each planted slot alone is exactly balanced over the
    answers. ``seed`` shuffles the rows."""
    k = len(ANSWERS)
    if per_population < 1 or per_population % k**3 or not 1 / k < majority <= 1.0:
        raise VQAError(
            f"per_population must be a positive multiple of {k**3} (got {per_population}) and "
            f"majority in ({1 / k}, 1] (got {majority})"
        )
    rows: list[dict[str, Any]] = []
    unique = 0
    for p, slots in _SLOTS.items():
        tag = p.replace("+", "").lower()
        per_cell = per_population // k ** len(slots)
        n_major = int(round(majority * per_cell))
        for cell in itertools.product(range(k), repeat=len(slots)):
            planted = sum(cell) % k  # Latin square: each slot alone is balanced
            for j in range(per_cell):
                answer = planted if j < n_major else (planted + 1 + (j - n_major) % (k - 1)) % k
                token = {}
                for slot in ("qt", "w1", "w2", "o1", "o2"):
                    if slot in slots:
                        token[slot] = f"{tag}{slot}{cell[slots.index(slot)]}"
                    elif slot in ("qt", "w1", "o1"):
                        unique += 1
                        token[slot] = f"u{slot}{unique}"
                words = [token[w] for w in ("w1", "w2") if w in token]
                qid = f"{tag}-{len(rows)}"
                rows.append({
                    "question_id": qid, "image_id": qid,
                    "question": " ".join([token["qt"], *words]) + "?",
                    "question_type": token["qt"], "answer": ANSWERS[answer],
                    "answers": [ANSWERS[answer]] * 10,
                    "objects": [token[o] for o in ("o1", "o2") if o in token], "population": p,
                })  # fmt: skip
    order = rng(seed, "vqa-synthetic").permutation(len(rows))
    table = make_table(pd.DataFrame([rows[i] for i in order]))
    assert set(table["population"]) == set(SHORTCUTS)
    return table
