"""Scoring rules the paper's table rests on, checked against hand computations: empty OOD sets
are left out of the means (not scored 0), untyped questions form no answer type, score_table
groups by question type, and inputs that would give a silent wrong number are refused."""

import numpy as np
import pandas as pd
import pytest

from shortcutlab.errors import VQAError
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.evaluate import accuracies, parse_predictions, score_sets, score_table
from shortcutlab.vqa.table import make_table

# four questions, ten identical human answers each: a prediction scores 1 or 0 under both
# metrics; the predictions get questions 0, 2 and 3 right, question 1 wrong
RIGHT = {0: 1.0, 1: 0.0, 2: 1.0, 3: 1.0}
SETS = {"QT": [0, 1], "KW": [2], "KWP": [], "QT+KW": [0], "KO": [1], "KOP": [0, 1, 2, 3],
        "QT+KO": [3], "KW+KO": [1, 2], "QT+KW+KO": [0]}  # fmt: skip


def _frame() -> pd.DataFrame:
    return make_table(pd.DataFrame({
        "question_id": [0, 1, 2, 3], "image_id": [0, 1, 2, 3],
        "question": ["Is it red?", "How many?", "Is it big?", "What is it?"],
        "answers": [["yes"] * 10, ["2"] * 10, ["no"] * 10, ["cat"] * 10],
        "question_type": ["is it", "how many", "is it", "what is"],
        "answer_type": ["yes/no", "number", "yes/no", None],  # question 3 has no answer type
    }))  # fmt: skip


def _predictions() -> dict[int, str]:
    return {0: "yes", 1: "3", 2: "no", 3: "cat"}


@pytest.mark.parametrize("metric", ["official", "vqa-vs"])
def test_an_empty_ood_set_is_none_and_left_out_of_the_group_and_ood_means(metric):
    frame = _frame()
    sets = {s: np.isin(np.arange(4), SETS[s]) for s in SHORTCUTS}
    r = score_sets(frame, _predictions(), sets, metric=metric)
    per_set = {s: (np.mean([RIGHT[i] for i in SETS[s]]) if SETS[s] else None) for s in SHORTCUTS}
    assert r["ood"]["KWP"] is None and r["counts"]["ood"]["KWP"] == 0
    assert r["ood"] == pytest.approx(per_set)
    # language: QT, KW, QT+KW (KWP has no question) = (1/2 + 1 + 1) / 3
    assert r["language"] == pytest.approx(2.5 / 3)
    assert r["visual"] == pytest.approx((0.0 + 0.75) / 2)
    assert r["multimodal"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    eight = [v for v in per_set.values() if v is not None]
    assert len(eight) == 8 and r["ood_mean"] == pytest.approx(sum(eight) / 8)
    assert r["iid"] == pytest.approx(3 / 4)
    assert r["gap"] == pytest.approx(3 / 4 - sum(eight) / 8)


def test_untyped_questions_form_no_answer_type_and_score_table_groups_by_question_type():
    r = score_table(_frame(), _predictions())
    assert r["overall"] == pytest.approx(3 / 4)
    # question 3 has no answer type: it counts in overall, in no answer type
    assert r["per_answer_type"] == pytest.approx({"yes/no": 1.0, "number": 0.0})
    assert r["per_question_type"] == pytest.approx({"is it": 1.0, "how many": 0.0,
                                                     "what is": 1.0})
    sets = {s: np.ones(4, dtype=bool) for s in SHORTCUTS}
    rs = score_sets(_frame(), _predictions(), sets)
    assert rs["per_answer_type"] == pytest.approx({"yes/no": 1.0, "number": 0.0})
    assert rs["ood_per_answer_type"]["QT"] == pytest.approx({"yes/no": 1.0, "number": 0.0})


def test_a_vocabulary_filter_under_the_official_metric_is_refused_not_ignored():
    # the filter is the authors' (vqa-vs) rule; under the official metric it would be dropped
    # silently and "cat" (outside the vocabulary) would still score 1
    with pytest.raises(VQAError, match="vocabulary filter belongs to the vqa-vs metric only"):
        accuracies(["cat"], [["cat"] * 10], "official", frozenset({"dog"}))
    with pytest.raises(VQAError, match="vocabulary filter belongs to the vqa-vs metric only"):
        score_table(_frame(), _predictions(), vocabulary=frozenset({"yes"}))
    assert accuracies(["cat"], [["cat"] * 10], "vqa-vs", frozenset({"dog"})).tolist() == [0.0]


@pytest.mark.parametrize("record", [{"question_id": 1, "answer": True},
                                    {"question_id": 1, "answer": np.bool_(False)},
                                    {"question_id": True, "answer": "1"}])
def test_boolean_answers_and_ids_are_refused_not_read_as_digits(record):
    # bool is an int in Python: True would become the answer "1" (right for "how many" = 1)
    with pytest.raises(VQAError, match="entry 0 .*must be a string"):
        parse_predictions([record])
