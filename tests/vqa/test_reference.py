"""Checks against independent, literal reference implementations and end-to-end determinism.

The references follow the paper's and the official evaluation script's rules step by step with
plain Python loops; the library's vectorised code must agree with them exactly.
"""

import hashlib
import itertools
import json
import math
import re
from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from shortcutlab.vqa.accuracy import (
    ARTICLES,
    CONTRACTIONS,
    NUMBER_WORDS,
    PUNCTUATION,
    vqa_accuracy,
)
from shortcutlab.vqa.concepts import NONE, SHORTCUTS
from shortcutlab.vqa.splits import BuildConfig, build_splits
from shortcutlab.vqa.store import write_splits
from shortcutlab.vqa.table import make_table


# ------------------------------------------------------------------ official accuracy, literal
def _official_punct(text):
    out = text
    digit_comma = re.search(r"(\d)(\,)(\d)", text) is not None
    for p in PUNCTUATION:
        if (p + " " in text or " " + p in text) or digit_comma:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return re.compile(r"(?!<=\d)(\.)(?!\d)").sub("", out, 32)


def _official_digit_article(text):
    words = []
    for w in text.lower().split():
        w = NUMBER_WORDS.get(w, w)
        if w not in ARTICLES:
            words.append(w)
    return " ".join(CONTRACTIONS.get(w, w) for w in words)


def _official(prediction, answers):
    """The official script's loop for one question (answer dicts, leave-one-out by identity)."""
    gts = [{"answer": a, "answer_id": i} for i, a in enumerate(answers)]
    for d in gts:
        d["answer"] = d["answer"].replace("\n", " ").replace("\t", " ").strip()
    res = prediction.replace("\n", " ").replace("\t", " ").strip()
    if len({d["answer"] for d in gts}) > 1:
        for d in gts:
            d["answer"] = _official_digit_article(_official_punct(d["answer"]))
        res = _official_digit_article(_official_punct(res))
    accs = []
    for d in gts:
        others = [o for o in gts if o is not d]
        accs.append(min(1, len([o for o in others if o["answer"] == res]) / 3))
    return sum(accs) / len(accs)


POOL = ["2", "two", "Two", " 2", "the dog", "dog", "a dog.", "dog!", "yes", "Yes", "yes.",
        "dont", "don't", "1,000", "1000", "3.5", "no ", "an apple", "apple", "hi-fi", "hi - fi",
        "hi fi", "none", "0", "its", "it's", "red/white", "red white", "Mr. Smith",
        "mr smith"]  # fmt: skip


def test_accuracy_matches_a_literal_port_of_the_official_loop():
    r = np.random.default_rng(0)
    for _ in range(3000):
        k = int(r.integers(1, 5))
        pool = r.choice(POOL, size=k, replace=False).tolist()
        answers = r.choice(pool, size=10).tolist()
        pred = str(r.choice(POOL))
        assert vqa_accuracy(pred, answers) == pytest.approx(_official(pred, answers)), (
            pred, answers,
        )  # fmt: skip


# ------------------------------------------------------------------- grouping, literal reference
def _reference_head_tail(concepts, answers, threshold=0.9, factor=Fraction(6, 5)):
    """Group by concept; normalised entropy over M distinct answers; rare answers are the tail."""
    groups = defaultdict(list)
    for i, c in enumerate(concepts):
        if NONE not in c:
            groups[c].append(i)
    head, tail, imbalanced = set(), set(), 0
    for idx in groups.values():
        counts = Counter(answers[i] for i in idx)
        m, n = len(counts), len(idx)
        if m <= 1:
            continue  # one answer: balanced
        e = -sum(c / n * math.log(c / n) for c in counts.values()) / math.log(m)
        if e >= threshold:
            continue
        imbalanced += 1
        for i in idx:
            (tail if counts[answers[i]] < factor * Fraction(n, m) else head).add(i)
    return head, tail, len(groups), imbalanced


def _synthetic(n=2400, seed=0):
    r = np.random.default_rng(seed)
    objs = ["banana", "sky", "grass", "cup", "dog"]
    colours = ["yellow", "blue", "green", "white", "brown"]
    rows = []
    for i in range(n):
        o = int(r.integers(5))
        ans = colours[o] if r.random() < 0.75 else colours[int(r.integers(5))]
        other = objs[int(r.integers(5))]
        verb = ["near", "not near", "under"][int(r.integers(3))]
        rows.append({"question_id": f"q{i}", "image_id": f"i{i // 2}",
                     "question": f"What color is the {objs[o]} {verb} the {other}?",
                     "answers": [ans] * 6 + [colours[int(r.integers(5))]] * 4, "answer": ans,
                     "objects": [objs[o], other] if i % 7 else []})  # fmt: skip
    return make_table(pd.DataFrame(rows))


@pytest.fixture(scope="module")
def synthetic_splits():
    return build_splits(_synthetic(), BuildConfig(seed=2))


def test_head_tail_and_statistics_match_the_literal_reference(synthetic_splits):
    s = synthetic_splits.samples
    stats = synthetic_splits.statistics.set_index("shortcut")
    checked_tail = 0
    for split in ("train", "test"):
        sub = s[s["split"] == split].reset_index(drop=True)
        for k in SHORTCUTS:
            head, tail, n_groups, n_imb = _reference_head_tail(sub[k].tolist(), sub["answer"])
            assert set(np.flatnonzero(sub[f"head:{k}"])) == head, (split, k)
            assert set(np.flatnonzero(sub[f"tail:{k}"])) == tail, (split, k)
            assert stats.loc[k, f"{split}_groups"] == n_groups
            assert stats.loc[k, f"{split}_head"] == len(head)
            assert stats.loc[k, f"{split}_tail"] == len(tail)
            if split == "test":
                assert stats.loc[k, "test_imbalanced_groups"] == n_imb
                checked_tail += len(tail)
    assert checked_tail > 0  # the data does produce OOD samples


def test_relations_and_imbalance_degree_match_their_definitions(synthetic_splits):
    sp = synthetic_splits
    s = sp.samples
    train, test = s[s["split"] == "train"], s[s["split"] == "test"]
    for a, b in itertools.combinations(SHORTCUTS, 2):
        ha = set(train.loc[train[f"head:{a}"], "question_id"])
        hb = set(train.loc[train[f"head:{b}"], "question_id"])
        if ha | hb:
            assert sp.jaccard.loc[a, b] == pytest.approx(len(ha & hb) / len(ha | hb))
        ta = set(test.loc[test[f"tail:{a}"], "question_id"])
        tb = set(test.loc[test[f"tail:{b}"], "question_id"])
        if ta:
            assert sp.coincidence.loc[a, b] == pytest.approx(len(ta & tb) / len(ta))
    # E = sum over groups of normalised entropy x share of the (grouped) training samples
    for k in SHORTCUTS:
        defined = train[~train[k].str.contains(NONE, regex=False)]
        total = 0.0
        for _, g in defined.groupby(k):
            counts = np.array(list(Counter(g["answer"]).values()), dtype=float)
            p = counts / counts.sum()
            e = 1.0 if len(p) == 1 else float(-(p * np.log(p)).sum() / np.log(len(p)))
            total += e * len(g) / len(defined)
        got = sp.imbalance.set_index("shortcut").loc[k, "E_train"]
        assert got == pytest.approx(total)


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_same_seed_gives_the_same_bytes(tmp_path):
    table = _synthetic(n=500, seed=1)
    write_splits(build_splits(table, BuildConfig(seed=5)), tmp_path / "a")
    shuffled = table.sample(frac=1, random_state=3).reset_index(drop=True)
    write_splits(build_splits(shuffled, BuildConfig(seed=5)), tmp_path / "b")
    write_splits(build_splits(table, BuildConfig(seed=6)), tmp_path / "c")
    a, c = _digests(tmp_path / "a"), _digests(tmp_path / "c")
    assert {"jaccard.png", "coincidence.png", "imbalance.png", "samples.parquet"} <= set(a)
    assert a["splits.json"] != c["splits.json"]  # another seed, another split
    b = _digests(tmp_path / "b")
    # the input's row order changes only the order of rows and ids, never the splits
    ordered = {"samples.parquet", "splits.json"}
    assert {k: v for k, v in a.items() if k not in ordered} == {
        k: v for k, v in b.items() if k not in ordered
    }
    ia, ib = (json.loads((tmp_path / d / "splits.json").read_text()) for d in "ab")
    assert {k: set(v) for k, v in ia["ood"].items()} == {k: set(v) for k, v in ib["ood"].items()}
    assert set(ia["test"]) == set(ib["test"])
    write_splits(build_splits(table, BuildConfig(seed=5)), tmp_path / "a2")
    assert _digests(tmp_path / "a2") == a
