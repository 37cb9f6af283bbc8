"""The official VQA accuracy, reproducing the official evaluation script's behaviour exactly.

Rules (VQA v1/v2 evaluation code, ``vqaEval.py``):

* newlines and tabs become spaces and surrounding whitespace is stripped, always;
* only when the human answers are *not all identical* are the human answers and the prediction
  normalised: punctuation (with the script's exact quirks: a punctuation mark is deleted when it
  touches a space or the text holds a ``digit,digit`` pattern, otherwise replaced by a space; a
  period not followed by a digit is deleted, at most 32 times), lower-casing, number words to
  digits, articles dropped, missing apostrophes restored in contractions;
* the accuracy is ``min(1, matches / 3)`` averaged over the leave-one-out subsets of the human
  answers (ten subsets of nine for VQA);
* with a single reference answer (datasets such as easy-VQA) it is an exact match.

The VQA-VS authors' scorer (``vqa-vs`` metric: :func:`vqa_vs_accuracy`) differs: it counts the
human answers equal to the raw prediction, ``min(1, count / 3)``, with no normalisation and no
leave-one-out averaging, and an answer outside the training vocabulary (normalised
multiple-choice answers of at least nine training questions, :func:`training_vocabulary`)
scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from functools import lru_cache
from typing import Literal, get_args

import numpy as np

__all__ = [
    "METRICS",
    "VOCABULARY_MIN_COUNT",
    "Metric",
    "normalize_answer",
    "process_digit_article",
    "process_punctuation",
    "training_vocabulary",
    "vocabulary_answer",
    "vqa_accuracy",
    "vqa_accuracies",
    "vqa_vs_accuracy",
]

Metric = Literal["official", "vqa-vs"]
METRICS: tuple[Metric, ...] = get_args(Metric)
# The authors' preprocessing keeps answers that are the multiple-choice answer of >= 9 questions.
VOCABULARY_MIN_COUNT = 9

# Data tables of the official evaluation script (the behaviour must match it byte for byte).
CONTRACTIONS: dict[str, str] = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've",
    "couldnt": "couldn't", "couldn'tve": "couldn't've", "couldnt've": "couldn't've",
    "didnt": "didn't", "doesnt": "doesn't", "dont": "don't", "hadnt": "hadn't",
    "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't", "havent": "haven't",
    "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm",
    "Ive": "I've", "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've",
    "itll": "it'll", "let's": "let's", "maam": "ma'am", "mightnt": "mightn't",
    "mightnt've": "mightn't've", "mightn'tve": "mightn't've", "mightve": "might've",
    "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at",
    "'ow'sat": "'ow's'at", "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've",
    "she's": "she's", "shouldve": "should've", "shouldnt": "shouldn't",
    "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've", "somebody'd": "somebodyd",
    "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd",
    "someoned've": "someone'd've", "someone'dve": "someone'd've", "someonell": "someone'll",
    "someones": "someone's", "somethingd": "something'd", "somethingd've": "something'd've",
    "something'dve": "something'd've", "somethingll": "something'll", "thats": "that's",
    "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've",
    "they'dve": "they'd've", "theyll": "they'll", "theyre": "they're", "theyve": "they've",
    "twas": "'twas", "wasnt": "wasn't", "wed've": "we'd've", "we'dve": "we'd've",
    "weve": "we've", "werent": "weren't", "whatll": "what'll", "whatre": "what're",
    "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've",
    "whyll": "why'll", "whyre": "why're", "whys": "why's", "wont": "won't",
    "wouldve": "would've", "wouldnt": "wouldn't", "wouldnt've": "wouldn't've",
    "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll",
    "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll",
    "youre": "you're", "youve": "you've",
}  # fmt: skip
NUMBER_WORDS: dict[str, str] = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
ARTICLES: frozenset[str] = frozenset({"a", "an", "the"})
PUNCTUATION: tuple[str, ...] = (
    ";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`",
    ",", "?", "!",
)  # fmt: skip
# The official pattern: "(?!<=\d)" is a (quirky) negative look-ahead, kept as is.
_PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
_COMMA_STRIP = re.compile(r"(\d)(\,)(\d)")
# The official script passes re.UNICODE (== 32) as the ``count`` argument of ``sub``.
_PERIOD_COUNT = int(re.UNICODE)


def process_punctuation(text: str) -> str:
    """Remove or space out punctuation exactly as the official script does."""
    out = text
    has_digit_comma = _COMMA_STRIP.search(text) is not None
    for p in PUNCTUATION:
        if (p + " " in text or " " + p in text) or has_digit_comma:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return _PERIOD_STRIP.sub("", out, count=_PERIOD_COUNT)


def process_digit_article(text: str) -> str:
    """Lower-case, map number words to digits, drop articles, restore contractions."""
    words = [NUMBER_WORDS.get(w, w) for w in text.lower().split()]
    words = [w for w in words if w not in ARTICLES]
    return " ".join(CONTRACTIONS.get(w, w) for w in words)


def _clean(text: str) -> str:
    return text.replace("\n", " ").replace("\t", " ").strip()


@lru_cache(maxsize=1 << 18)
def normalize_answer(text: str) -> str:
    """Full official normalisation of one answer (whitespace, punctuation, digits, articles)."""
    return process_digit_article(process_punctuation(_clean(text)))


def vqa_accuracy(prediction: str, answers: Sequence[str]) -> float:
    """Official VQA accuracy of one predicted answer against its human answers.

    Normalisation applies only when the human answers differ; with one reference answer the
    score is an exact match (after whitespace cleaning).
    """
    n = len(answers)
    if n == 0:
        raise ValueError("a question needs at least one reference answer")
    gts = [_clean(a) for a in answers]
    pred = _clean(prediction)
    if n == 1:
        return 1.0 if pred == gts[0] else 0.0
    if len(set(gts)) > 1:
        gts = [normalize_answer(a) for a in gts]
        pred = normalize_answer(pred)
    hits = [g == pred for g in gts]
    total = sum(hits)
    return sum(min(1.0, (total - h) / 3.0) for h in hits) / n


def vqa_accuracies(predictions: Sequence[str], answers: Sequence[Sequence[str]]) -> np.ndarray:
    """Per-question official VQA accuracies (float64) for aligned predictions and answers."""
    if len(predictions) != len(answers):
        raise ValueError(
            f"{len(predictions)} predictions but {len(answers)} answer lists; they must align"
        )
    return np.fromiter(
        (vqa_accuracy(p, a) for p, a in zip(predictions, answers, strict=True)),
        dtype=np.float64,
        count=len(predictions),
    )


def vqa_vs_accuracy(
    prediction: str, answers: Sequence[str], vocabulary: Set[str] | None = None
) -> float:
    """The VQA-VS authors' score: ``min(1, count / 3)`` of the raw prediction among the raw
    human answers; 0 when ``vocabulary`` is given and the prediction is not in it."""
    if not answers:
        raise ValueError("a question needs at least one reference answer")
    if vocabulary is not None and prediction not in vocabulary:
        return 0.0
    return min(1.0, sum(a == prediction for a in answers) / 3.0)


def vocabulary_answer(text: str) -> str:
    """An answer as the authors' preprocessing stores it in the vocabulary (punctuation, digits,
    articles, contractions as in the official script; its punctuation step leaves no comma)."""
    return process_digit_article(process_punctuation(text))


def training_vocabulary(
    question_ids: Iterable[object],
    multiple_choice_answers: Iterable[str],
    min_count: int = VOCABULARY_MIN_COUNT,
) -> frozenset[str]:
    """The answer vocabulary of a training split: normalised multiple-choice answers (see
    :func:`vocabulary_answer`) of at least ``min_count`` distinct training questions."""
    questions: dict[str, set[str]] = {}
    for qid, answer in zip(question_ids, multiple_choice_answers, strict=True):
        questions.setdefault(vocabulary_answer(answer), set()).add(str(qid))
    return frozenset(a for a, q in questions.items() if len(q) >= min_count)
