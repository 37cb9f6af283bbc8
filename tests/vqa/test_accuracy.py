"""Official VQA accuracy: hand-computed cases from the official evaluation rules."""

import pytest

from shortcutlab.vqa.accuracy import (
    normalize_answer,
    process_digit_article,
    process_punctuation,
    vocabulary_answer,
    vqa_accuracies,
    vqa_accuracy,
)
from shortcutlab.vqa.evaluate import accuracies


@pytest.mark.parametrize(
    ("matches", "expected"),
    # leave-one-out over 10 answers: k matches -> (10-k) subsets see k, k subsets see k-1
    [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0), (10, 1.0)],
)
def test_leave_one_out_average(matches, expected):
    answers = ["cat"] * matches + ["dog"] * (10 - matches)
    assert vqa_accuracy("cat", answers) == pytest.approx(expected)


def test_no_normalisation_when_all_answers_agree():
    # identical human answers: the official script compares raw (stripped) strings
    assert vqa_accuracy("yes", ["yes"] * 10) == 1.0
    assert vqa_accuracy("Yes", ["yes"] * 10) == 0.0
    assert vqa_accuracy("two", ["2"] * 10) == 0.0
    assert vqa_accuracy(" yes\n", ["yes"] * 10) == 1.0  # whitespace cleaning always applies


def test_normalisation_when_answers_differ():
    answers = ["2"] * 2 + ["two"] * 2 + ["3"] * 6
    # normalised: four "2" -> every subset of nine keeps >= 3 matches
    assert vqa_accuracy("Two", answers) == pytest.approx(1.0)
    assert vqa_accuracy("the dog", ["dog"] * 3 + ["a dog"] + ["cat"] * 6) == pytest.approx(1.0)
    assert vqa_accuracy("Yes!", ["yes"] * 9 + ["no"]) == pytest.approx(1.0)


def test_single_reference_answer_is_exact_match():
    assert vqa_accuracy("red", ["red"]) == 1.0
    assert vqa_accuracy("Red", ["red"]) == 0.0


def test_single_reference_answer_is_exact_match_under_the_vqa_vs_metric_too():
    # the documented rule of both metrics (metric_info's "single_answer"): a hit on a
    # one-answer question scores 1, not the authors' min(1, 1/3)
    got = accuracies(["red", "Red", "red"], [["red"], ["red"], ["red"] * 3], metric="vqa-vs")
    assert got.tolist() == [1.0, 0.0, 1.0]
    assert accuracies(["red"], [["red"]], "vqa-vs", frozenset({"blue"})).tolist() == [0.0]


def test_punctuation_rules():
    assert process_punctuation("hi-there") == "hi there"  # replaced by a space
    assert process_punctuation("hi - there") == "hi  there"  # touches a space: deleted
    assert process_punctuation("1,000-ish") == "1000ish"  # digit,digit: all deleted
    assert process_punctuation("dr. who") == "dr who"  # period not before a digit: deleted
    assert process_punctuation("2.5") == "2.5"
    assert process_punctuation("yes.") == "yes"


def test_at_most_32_periods_are_deleted_as_the_official_script_passes_re_unicode_as_count():
    # vqaEval.py calls periodStrip.sub("", text, re.UNICODE): re.UNICODE (32) is the count
    assert process_punctuation("." * 40) == "." * 8
    assert process_punctuation("x." * 33) == "x" * 32 + "x."


def test_vocabulary_answers_hold_no_comma():
    # the authors' vocabulary: official punctuation, digits and articles; no comma survives
    assert vocabulary_answer("1,000") == "1000"
    assert vocabulary_answer("red, white") == "red white"
    assert vocabulary_answer("red,white") == "red white"
    assert vocabulary_answer("The Two Dogs!") == "2 dogs"


def test_digits_articles_contractions():
    assert process_digit_article("The Two dogs") == "2 dogs"
    assert process_digit_article("none") == "0"
    assert process_digit_article("dont know") == "don't know"
    assert process_digit_article("an apple a day") == "apple day"
    assert normalize_answer("  A Cat!\t") == "cat"


def test_vectorised_matches_scalar_and_checks_lengths():
    preds = ["yes", "2", "blue"]
    answers = [["yes"] * 10, ["two"] * 5 + ["3"] * 5, ["red"]]
    out = vqa_accuracies(preds, answers)
    assert out.tolist() == [vqa_accuracy(p, a) for p, a in zip(preds, answers, strict=True)]
    assert out.tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="align"):
        vqa_accuracies(["yes"], [])
