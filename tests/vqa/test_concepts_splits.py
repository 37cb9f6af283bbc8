"""Concepts by mutual information, the seeded split, grouping, head/tail and relations."""

import math

import numpy as np
import pandas as pd
import pytest

from shortcutlab.errors import VQAError
from shortcutlab.vqa.concepts import (
    ENGLISH_STOP_WORDS,
    NONE,
    SHORTCUTS,
    ConceptConfig,
    assign_question_types,
    compute_concepts,
    tokenize,
    top_two,
)
from shortcutlab.vqa.splits import (
    BuildConfig,
    build_splits,
    coincidence_matrix,
    group_flags,
    imbalance_degree,
    jaccard_matrix,
    normalized_entropy,
    split_questions,
)
from shortcutlab.vqa.table import make_table


def _table(rows):
    return make_table(pd.DataFrame(rows, columns=["question_id", "image_id", "question",
                                                  "question_type", "answer", "objects"]))


def test_pmi_picks_the_word_most_tied_to_the_answer():
    # "banana" always comes with "yellow"; "table" with every answer
    rows = [
        (1, 1, "What color is the banana on the table?", "what color is the", "yellow", ["banana"]),
        (2, 2, "What color is the banana?", "what color is the", "yellow", ["banana"]),
        (3, 3, "What color is the table?", "what color is the", "brown", ["table"]),
        (4, 4, "What color is the cup on the table?", "what color is the", "white", ["cup"]),
    ]
    # function words dropped so that the pair is the two content words
    c = compute_concepts(_table(rows), ConceptConfig(stop_words=ENGLISH_STOP_WORDS))
    # sample 1: PMI(banana, yellow) = log(2*4/(2*2)) > PMI(table, yellow) = log(1*4/(3*2))
    assert c.loc[0, "KW"] == "banana"
    assert c.loc[0, "KWP"] == "banana + table"  # ordered by PMI
    assert c.loc[2, "KW"] == "table"
    assert c.loc[0, "QT"] == "what color is the"  # prefix excluded from the keywords
    assert c.loc[0, "QT+KW"] == "what color is the + banana"
    assert c.loc[0, "KO"] == "banana"
    assert c.loc[0, "QT+KW+KO"] == "what color is the + banana + banana"


def test_top_two_scores_and_ties():
    items = [["a", "b"], ["b", "a"], ["c"], []]
    answers = np.array([0, 0, 1, 1])
    best, second = top_two(items, answers, "pmi")
    # a and b have equal PMI with answer 0: ties go to the first word of the sample
    assert best.tolist() == ["a", "b", "c", NONE]
    assert second.tolist() == ["b", "a", NONE, NONE]


def test_agnostic_mode_does_not_depend_on_the_sample_answer():
    rows = [(i, i, f"is the {w} {v}?", "is the", a, [])
            for i, (w, v, a) in enumerate([("dog", "big", "yes"), ("dog", "big", "no"),
                                           ("cat", "big", "yes"), ("cat", "big", "yes")])]
    t = _table(rows)
    agn = compute_concepts(t, ConceptConfig(mode="agnostic"))
    assert agn.loc[0, "KW"] == agn.loc[1, "KW"]  # same question words -> same concept
    # "big" is in every question: zero mutual information, never chosen over dog/cat
    assert set(agn["KW"]) <= {"dog", "cat"}
    with pytest.raises(VQAError, match="valid choices: pmi, agnostic"):
        ConceptConfig(mode="bogus")


def test_stop_words_drop_but_negations_stay():
    rows = [(1, 1, "Is there not a dog?", "", "yes", []), (2, 2, "Is the dog here?", "", "no", [])]
    cfg = ConceptConfig(question_types=("is the",), stop_words=ENGLISH_STOP_WORDS)
    c = compute_concepts(_table(rows), cfg)
    assert c.loc[0, "QT"] == "none of the above"
    assert c.loc[0, "KWP"] == "not + dog" or c.loc[0, "KWP"] == "dog + not"
    assert c.loc[1, "KW"] in {"dog", "here"}
    assert tokenize(["Isn't it RED?"]) == [["isn't", "it", "red"]]


def test_longest_question_type_prefix():
    toks = tokenize(["what color is the cat", "what is it", "why"])
    assert assign_question_types(toks, ["what", "what color", "what color is the"]) == [
        "what color is the", "what", "none of the above",
    ]


def test_split_is_seeded_order_free_and_70_5_25():
    ids = np.array([str(i) for i in range(1000)])
    a = split_questions(ids, seed=3)
    b = split_questions(ids[::-1], seed=3)[::-1]
    assert (a == b).all()
    assert {k: int((a == k).sum()) for k in ("train", "val", "test")} == {
        "train": 700, "val": 50, "test": 250,
    }
    assert (split_questions(ids, seed=4) != a).any()


def test_normalised_entropy():
    assert normalized_entropy(np.array([5, 5])) == pytest.approx(1.0)
    assert normalized_entropy(np.array([7])) == 1.0  # one answer: balanced
    p = np.array([0.9, 0.1])
    assert normalized_entropy(np.array([9, 1])) == pytest.approx(
        -(p * np.log(p)).sum() / math.log(2)
    )


def test_group_flags_head_tail_rule():
    # group 0: answers 0 x8, 1 x1, 2 x1 -> entropy 0.58 < 0.9; mean 10/3, tail < 4
    # group 1: answers 0 x5, 1 x5 -> balanced; group 2: one answer -> balanced
    concept = np.array([0] * 10 + [1] * 10 + [2] * 3)
    answer = np.array([0] * 8 + [1, 2] + [0] * 5 + [1] * 5 + [0] * 3)
    f = group_flags(concept, answer)
    assert f.tail.tolist() == [False] * 8 + [True, True] + [False] * 13
    assert f.head.tolist() == [True] * 8 + [False] * 15
    assert f.imbalanced.tolist() == [True, False, False]
    # exact boundary: counts 6,4,4,1 -> mean 3.75, 1.2 x mean = 4.5 ... counts 6 > 4.5 head
    c2 = np.zeros(15, dtype=int)
    a2 = np.array([0] * 12 + [1] * 2 + [2])  # mean 5, 1.2 x 5 = 6: count 6 would be head
    f2 = group_flags(c2, a2)
    assert f2.tail.sum() == 3 and f2.head.sum() == 12
    a3 = np.array([0] * 6 + [1] * 3 + [2] * 1 + [3] * 10)  # mean 5: 6 is not < 6
    f3 = group_flags(np.zeros(20, dtype=int), a3, entropy_threshold=1.0)
    assert f3.head[:6].all() and f3.tail[6:10].all()
    assert imbalance_degree(f) == pytest.approx(
        (f.group_entropy[0] * 10 + 1.0 * 10 + 1.0 * 3) / 23
    )


def test_a_perfectly_balanced_group_is_not_imbalanced_even_at_threshold_one():
    # The paper: a group is imbalanced when its normalised entropy is *below* the threshold.
    # Two answers 3 and 3 have entropy log 2 / log 2 = 1 exactly (halves are exact), so at the
    # largest allowed threshold 1.0 the group is balanced and has no head and no tail; with
    # "<=" every sample (count 3 < 1.2 x 3) would be held out as OOD.
    concept = np.zeros(6, dtype=int)
    answer = np.array([0, 0, 0, 1, 1, 1])
    f = group_flags(concept, answer, entropy_threshold=1.0)
    assert f.group_entropy[0] == 1.0
    assert not f.imbalanced.any()
    assert not f.head.any() and not f.tail.any()
    # a slightly uneven group (entropy < 1) is imbalanced at threshold 1.0: counts 4 and 3,
    # mean 3.5, both below 1.2 x 3.5 = 4.2, so all seven are tail
    g = group_flags(np.zeros(7, dtype=int), np.array([0] * 4 + [1] * 3), entropy_threshold=1.0)
    assert g.imbalanced.tolist() == [True] and g.tail.sum() == 7


def test_jaccard_and_coincidence():
    a = np.array([1, 1, 0, 0], bool)
    b = np.array([1, 0, 1, 0], bool)
    j = jaccard_matrix({"A": a, "B": b})
    assert j.loc["A", "B"] == pytest.approx(1 / 3)
    c = coincidence_matrix({"A": a, "B": np.array([1, 0, 0, 0], bool)})
    assert c.loc["A", "B"] == pytest.approx(0.5) and c.loc["B", "A"] == pytest.approx(1.0)


def _synthetic(n=3000, seed=0):
    r = np.random.default_rng(seed)
    colors = np.array(["red", "blue", "green", "white"])
    objs = np.array(["banana", "sky", "grass", "cup"])
    rows = []
    for i in range(n):
        o = r.integers(4)
        skewed = r.random() < 0.8
        ans = ["yellow", "blue", "green", "white"][o] if skewed else colors[r.integers(4)]
        rows.append({"question_id": i, "image_id": i // 3,
                     "question": f"What color is the {objs[o]} near the {objs[r.integers(4)]}?",
                     "answers": [ans] * 7 + [colors[r.integers(4)]] * 3, "answer": ans,
                     "objects": [objs[o], objs[(o + 1) % 4]]})  # fmt: skip
    return make_table(pd.DataFrame(rows))


def test_build_splits_end_to_end_invariants():
    t = _synthetic()
    sp = build_splits(t, BuildConfig(seed=1))
    s = sp.samples
    assert list(sp.statistics["shortcut"]) == list(SHORTCUTS)
    for k in SHORTCUTS:
        assert not (s[f"head:{k}"] & s[f"tail:{k}"]).any()
        ood = sp.ids("test", k)
        assert set(ood) <= set(sp.ids("test"))
    assert sp.statistics["test_tail"].sum() > 0
    diag = np.diag(sp.jaccard.to_numpy())
    assert ((diag == 1) | np.isnan(diag)).all()  # NaN: a shortcut without head samples
    # same input, shuffled rows -> same splits and concepts
    sp2 = build_splits(t.sample(frac=1, random_state=0), BuildConfig(seed=1))
    a = s.set_index("question_id").sort_index()
    b = sp2.samples.set_index("question_id").sort_index()
    pd.testing.assert_frame_equal(a.drop(columns="answers"), b.drop(columns="answers"))


def test_samples_without_objects_stay_ungrouped_for_visual_shortcuts():
    t = _synthetic(n=600)
    t["objects"] = [[] for _ in range(len(t))]
    stats = build_splits(t).statistics.set_index("shortcut")
    assert stats.loc[["KO", "KOP", "QT+KO", "KW+KO", "QT+KW+KO"], "test_tail"].eq(0).all()
    assert stats.loc["QT", "test_groups"] == 1


def test_agnostic_score_is_the_mutual_information_of_word_presence_and_answer():
    from shortcutlab.vqa.concepts import _scores

    items = [["a", "b"], ["a"], ["b"], ["a", "c"], ["c"], ["b"]]
    answers = np.array([0, 0, 1, 2, 2, 1])
    sample = np.array([0, 0, 1, 2, 3, 3, 4, 5])
    item = np.array([0, 1, 0, 1, 0, 2, 2, 1])  # a=0, b=1, c=2
    got = _scores(sample, item, answers, 3, "agnostic")

    def mi(word):
        x = np.array([word in it for it in items])
        total = 0.0
        for xv in (True, False):
            for a in np.unique(answers):
                p = np.mean((x == xv) & (answers == a))
                if p > 0:
                    total += p * np.log(p / (np.mean(x == xv) * np.mean(answers == a)))
        return total

    expected = [mi("abc"[i]) for i in item]
    assert got == pytest.approx(expected)
    pmi = _scores(sample, item, answers, 3, "pmi")
    # PMI(a, answer 0) for sample 0: f(a,0)=2, f(a)=3, f(0)=2, K=6
    assert pmi[0] == pytest.approx(np.log(2 * 6 / (3 * 2)))


def test_open_choices_pair_order_and_single_item_pairs():
    # "banana" (always "yellow") outscores "ripe"; it comes second in the question
    rows = [(i, i, "is the ripe banana?", "is the", "yellow", ["bowl", "banana"])
            for i in range(4)]
    rows += [(10 + i, 10 + i, "is the ripe apple?", "is the", "red", ["apple"]) for i in range(4)]
    rows += [(20, 20, "is the?", "is the", "no", [])]
    t = _table(rows)
    by_score = compute_concepts(t)
    assert by_score.loc[0, "KW"] == "banana" and by_score.loc[0, "KWP"] == "banana + ripe"
    by_pos = compute_concepts(t, ConceptConfig(pair_order="position"))
    assert by_pos.loc[0, "KW"] == "banana"  # the key word itself does not change
    assert by_pos.loc[0, "KWP"] == "ripe + banana" and by_pos.loc[0, "KOP"] == "bowl + banana"
    single = compute_concepts(t).loc[4]
    assert single["KOP"] == "apple"  # one object: the pair concept is that object alone
    dropped = compute_concepts(t, ConceptConfig(single_pairs="drop"))
    assert dropped.loc[4, "KOP"] == NONE and dropped.loc[0, "KWP"] == "banana + ripe"
    with pytest.raises(VQAError, match="unknown pair order 'alpha'.*score, position"):
        ConceptConfig(pair_order="alpha")


def test_open_choices_one_answer_groups_and_tail_rule():
    # group 0: answers 6, 4 of 10 -> mean 5, 1.2 x mean = 6; group 1: one answer (10 samples)
    concept = np.array([0] * 10 + [1] * 10)
    answer = np.array([0] * 6 + [1] * 4 + [2] * 10)
    strict = group_flags(concept, answer, entropy_threshold=1.0)
    assert strict.tail[:10].sum() == 4  # 6 is not < 6: head
    inclusive = group_flags(concept, answer, entropy_threshold=1.0, tail_inclusive=True)
    assert inclusive.tail[:10].sum() == 10
    balanced = imbalance_degree(strict)
    zero = imbalance_degree(group_flags(concept, answer, one_answer_entropy=0.0))
    assert balanced == pytest.approx((strict.group_entropy[0] * 10 + 10) / 20)
    assert zero == pytest.approx(strict.group_entropy[0] * 10 / 20)
    assert not group_flags(concept, answer, one_answer_entropy=0.0).tail[10:].any()
    with pytest.raises(VQAError, match="unknown tail rule '<<'"):
        BuildConfig(tail_rule="<<")
    with pytest.raises(VQAError, match="unknown one-answer group rule"):
        BuildConfig(one_answer_groups="zero")


def test_cli_build_takes_the_open_choices(tmp_path):
    import json

    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    rows = [{"question_id": i, "image_id": i, "question": f"is the {w} big?",
             "answers": json.dumps([a] * 10), "question_type": "is the"}
            for i, (w, a) in enumerate([("dog", "yes")] * 30 + [("cat", "no")] * 30)]
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    runner = CliRunner()
    out = {}
    for flag in ("balanced", "imbalanced"):
        res = runner.invoke(app, ["vqa", "build", "--data", str(tmp_path / "t.csv"), "--out",
                                  str(tmp_path / flag), "--no-figures", "--one-answer-groups",
                                  flag, "--pair-order", "position", "--single-pairs", "drop",
                                  "--tail-rule", "<="])  # fmt: skip
        assert res.exit_code == 0, res.output
        out[flag] = pd.read_csv(tmp_path / flag / "imbalance.csv").set_index("shortcut")
        cfg = json.loads((tmp_path / flag / "build.json").read_text())["config"]
        assert cfg["tail_rule"] == "<=" and cfg["concepts"]["pair_order"] == "position"
    # KW groups (dog, cat) have one answer each: E is 1 when balanced, 0 when imbalanced
    assert out["balanced"].loc["KW", "E_train"] == 1.0
    assert out["imbalanced"].loc["KW", "E_train"] == 0.0
    res = runner.invoke(app, ["vqa", "build", "--data", str(tmp_path / "t.csv"), "--out",
                              str(tmp_path / "x"), "--pair-order", "alpha"])  # fmt: skip
    assert res.exit_code == 2 and "valid choices: score, position" in res.output


def test_build_config_refuses_non_finite_numbers():
    # an infinite tail factor or a NaN fraction passed the checks, then crashed the build with
    # a ValueError traceback (Fraction('inf'), round(nan))
    with pytest.raises(VQAError, match="tail factor inf must be a positive finite number"):
        BuildConfig(tail_factor=float("inf"))
    with pytest.raises(VQAError, match="tail factor nan must be a positive finite number"):
        BuildConfig(tail_factor=float("nan"))
    with pytest.raises(VQAError, match="fractions .* must be three non-negative numbers"):
        BuildConfig(fractions=(float("nan"), 0.5, 0.5))


def test_question_type_prefix_is_excluded_whatever_its_case():
    # a question_type written with capitals ("What color is the") was not recognised as the
    # question's prefix, so its words became keyword candidates ("what" as the keyword)
    rows = [(1, 1, "What color is the sky?", "What color is the", "blue", []),
            (2, 2, "What color is the grass?", "what color is the", "green", [])]
    c = compute_concepts(_table(rows))
    assert c["KW"].tolist() == ["sky", "grass"]
    assert c["KWP"].tolist() == ["sky", "grass"]


@pytest.mark.parametrize("text", ["", "\n\n", "# a comment only\n"])
def test_cli_build_refuses_an_empty_question_types_file(tmp_path, text):
    # an empty file was taken as no prefixes: every question typed "none of the above"
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    pd.DataFrame({"question_id": range(20), "image_id": range(20), "question": "is it?",
                  "answers": '["yes"]'}).to_csv(tmp_path / "t.csv", index=False)  # fmt: skip
    qts = tmp_path / "qt.txt"
    qts.write_text(text)
    res = CliRunner().invoke(app, ["vqa", "build", "--data", str(tmp_path / "t.csv"), "--out",
                                   str(tmp_path / "s"), "--question-types", str(qts)])  # fmt: skip
    assert res.exit_code == 2, res.output
    message = " ".join(res.output.split())
    assert f"--question-types {qts}" in message and "one question-type prefix per line" in message
    assert not (tmp_path / "s").exists()


def test_a_word_repeated_in_a_question_counts_once():
    """Paper footnote 5: a word that appears several times in a sample's question is not counted
    repeatedly. PMI(a, 0) = log(f(a,0) K / (f(a) f(0))) = log(2 * 4 / (2 * 2)) = log 2 >
    PMI(b, 0) = log(1 * 4 / (3 * 2)), so sample 0's pair is a + b, never a + a, and repeating
    "a" changes no concept."""
    once = [["a", "b"], ["a"], ["b"], ["b"]]
    twice = [["a", "a", "b"], ["a", "a"], ["b"], ["b", "b"]]
    answers = np.array([0, 0, 1, 1])
    for items in (once, twice):
        best, second = top_two(items, answers, "pmi")
        assert best.tolist() == ["a", "a", "b", "b"]
        assert second.tolist() == ["b", NONE, NONE, NONE]
    rows = [(1, 1, "is the red red car fast?", "is the", "yes", ["car", "car"]),
            (2, 2, "is the red car fast?", "is the", "yes", ["car"]),
            (3, 3, "is the blue car fast?", "is the", "no", ["car", "road"])]
    c = compute_concepts(_table(rows))
    assert c.loc[0, "KWP"] == c.loc[1, "KWP"] == "red + car"
    assert c.loc[0, "KOP"] == "car"  # one distinct object: the pair is that object alone


def test_split_sizes_are_the_nearest_whole_numbers_of_70_5_25():
    # 34 questions: 23.8 / 1.7 / 8.5 -> 24 / 2 / 8 (floored: 23 / 1 / 10)
    labels = split_questions(np.array([str(i) for i in range(34)]), seed=0)
    assert {k: int((labels == k).sum()) for k in ("train", "val", "test")} == {
        "train": 24, "val": 2, "test": 8}


def _normalised_entropy(answers: pd.Series) -> float:
    """scipy's Shannon entropy of the answer counts over log(M); 1 for one answer."""
    from scipy.stats import entropy

    m = answers.nunique()
    return 1.0 if m == 1 else float(entropy(answers.value_counts()) / np.log(m))


def test_table1_jaccard_and_e_match_a_recount_from_the_samples():
    """Table 1, Fig. 5a and E recomputed with pandas and scipy from the built samples' concept
    columns: groups per split, imbalanced test groups (normalised entropy < 0.9), head and
    tail sizes, the Jaccard of the *training* head splits and E of the *training* split."""
    sp = build_splits(_synthetic(), BuildConfig(seed=1))
    s = sp.samples
    stats = sp.statistics.set_index("shortcut")
    for k in SHORTCUTS:
        grouped = s[~s[k].str.contains(NONE, regex=False)]
        by_split = {name: part.groupby(k)["answer"] for name, part in grouped.groupby("split")}
        e_hat = by_split["test"].agg(_normalised_entropy)
        assert stats.loc[k, "train_groups"] == by_split["train"].ngroups
        assert stats.loc[k, "test_groups"] == by_split["test"].ngroups
        assert stats.loc[k, "test_imbalanced_groups"] == int((e_hat < 0.9).sum())
        test = s[s["split"] == "test"]
        assert stats.loc[k, "test_head"] == int(test[f"head:{k}"].sum())
        # a head sample lies in an imbalanced group; balanced groups have neither head nor tail
        imbalanced = set(e_hat.index[e_hat < 0.9])
        assert set(test.loc[test[f"head:{k}"] | test[f"tail:{k}"], k]) <= imbalanced
        train_e = by_split["train"].agg(_normalised_entropy)
        sizes = by_split["train"].size()
        assert sp.imbalance.set_index("shortcut").loc[k, "E_train"] == pytest.approx(
            float((train_e * sizes).sum() / sizes.sum()))
    assert stats["test_imbalanced_groups"].sum() > 0 and stats["test_head"].sum() > 0
    train = s[s["split"] == "train"]
    heads = {k: set(train.loc[train[f"head:{k}"], "question_id"]) for k in SHORTCUTS}
    assert 0 < len(heads["KW"] & heads["KO"]) < len(heads["KW"] | heads["KO"])
    for a in SHORTCUTS:
        for b in SHORTCUTS:
            union = heads[a] | heads[b]
            expected = len(heads[a] & heads[b]) / len(union) if union else float("nan")
            assert sp.jaccard.loc[a, b] == pytest.approx(expected, nan_ok=True), (a, b)
