"""The paper's Figs. 4, 8 and 10 from a build (`vqa figures`): the counts drawn equal counts
taken independently from the build's files, the tail drawn is the build's OOD test set of the
group, the files are written, and bad input is one error line with nothing written."""

import functools
import json
from dataclasses import replace

import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import VQAError
from shortcutlab.vqa.concepts import NONE, SHORTCUTS
from shortcutlab.vqa.distributions import (
    default_groups,
    fig8_groups,
    figure_groups,
    group_distribution,
    group_sizes,
)
from shortcutlab.vqa.figures import answer_distributions
from shortcutlab.vqa.splits import build_splits
from shortcutlab.vqa.store import read_build_config, read_samples, write_splits
from tests.vqa.test_analysis import _table

runner = CliRunner()


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A build of the analysis tests' table (800 questions; no QT group has a tail, KW has a
    group 'sky'), and `vqa figures` run on it once."""
    root = tmp_path_factory.mktemp("answer-figures")
    write_splits(build_splits(_table()), root / "b", figures=False)
    res = runner.invoke(app, ["vqa", "figures", str(root / "b"), "--out", str(root / "f"),
                              "--group", "KWP=sky", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return root, json.loads(res.stdout)


@functools.cache
def _files(root):
    return (pd.read_parquet(root / "b" / "samples.parquet"),
            json.loads((root / "b" / "splits.json").read_text()))  # fmt: skip


def _independent(root, shortcut, concept):
    """Counts per answer and split, and the OOD test questions of the group, from
    samples.parquet and splits.json with pandas alone."""
    s, index = _files(root)
    rows = s[s[shortcut] == concept]
    counts = rows.groupby(["answer", "split"]).size().unstack(fill_value=0)
    ood_ids = set(index["ood"][shortcut])
    ood = rows[rows["question_id"].isin(ood_ids)]
    counts["ood"] = ood["answer"].value_counts()
    return counts.fillna(0).astype(int), ood


def test_counts_drawn_equal_counts_from_the_build_files(build):
    root, result = build
    samples, config = read_samples(root / "b"), read_build_config(root / "b")
    drawn = pd.read_csv(root / "f" / "answer_distributions.csv", keep_default_na=False)
    groups = {(g["shortcut"], g["concept"]) for g in result["groups"]}
    assert ("KWP", "sky") in groups and ("KW", "sky") in groups and len(groups) >= 9
    for shortcut, concept in groups:
        dist = group_distribution(samples, shortcut, concept, config)
        expected, _ = _independent(root, shortcut, concept)
        for col in ("train", "val", "test", "ood"):
            want = expected[col] if col in expected else 0
            got = dist.counts[col].reindex(expected.index)
            assert (got == want).all(), (shortcut, concept, col)
        assert sorted(dist.counts.index) == sorted(expected.index)
        assert dist.counts["train"].is_monotonic_decreasing  # the paper's abscissa
        rows = drawn[(drawn["shortcut"] == shortcut) & (drawn["concept"] == concept)]
        assert rows["answer"].tolist() == dist.counts.index.tolist()
        assert rows["test"].tolist() == dist.counts["test"].tolist()


def test_tail_drawn_is_the_build_ood_set_of_the_group(build):
    root, _ = build
    samples, config = read_samples(root / "b"), read_build_config(root / "b")
    seen_tail, defaults = 0, default_groups(samples)
    for shortcut, concept in defaults.items():
        dist = group_distribution(samples, shortcut, concept, config)
        _, ood = _independent(root, shortcut, concept)
        c = dist.counts
        assert set(c.index[c["tail"]]) == set(ood["answer"]), (shortcut, concept)
        assert (c.loc[c["tail"], "test"] == c.loc[c["tail"], "ood"]).all()
        n_test, n_answers = int(c["test"].sum()), int((c["test"] > 0).sum())
        assert dist.threshold == pytest.approx(1.2 * n_test / n_answers)
        sel = dist.selection()  # the tail is the run of counts below the threshold
        assert sel["test"].is_monotonic_decreasing
        if dist.imbalanced:
            assert ((sel["test"] < dist.threshold) == sel["tail"]).all()
        seen_tail += int(c["tail"].sum())
    assert seen_tail > 0
    with pytest.raises(VQAError, match="differ from the build's rule"):  # not its config
        group_distribution(samples, "KO", defaults["KO"], replace(config, tail_factor=0.5))


def test_proportions_are_shares_of_each_split(build):
    """The figures draw each split's answer shares: a column's counts over that column's
    total (taken from the build's files), so every non-empty column sums to 1."""
    root, _ = build
    samples, config = read_samples(root / "b"), read_build_config(root / "b")
    for shortcut, concept in default_groups(samples).items():
        dist = group_distribution(samples, shortcut, concept, config)
        expected, _ = _independent(root, shortcut, concept)
        shares = dist.proportions()
        for col in ("train", "val", "test", "ood"):
            counts = (expected[col] if col in expected else pd.Series(dtype=int)).reindex(
                shares.index, fill_value=0)
            total = counts.sum()
            want = counts / total if total else counts * 0.0
            assert shares[col].to_numpy() == pytest.approx(want.to_numpy()), (shortcut, col)
            assert shares[col].sum() == pytest.approx(1.0 if total else 0.0)


def test_left_panel_draws_the_most_frequent_ood_answers_as_shares(build):
    """Figs. 4 / 10, left panel: at most ``max_answers`` answers, the OOD answers first (the
    most frequent when they are more), and the bars are each split's shares of the group,
    counted from the build's files with pandas alone."""
    root, _ = build
    samples, config = read_samples(root / "b"), read_build_config(root / "b")
    checked = 0
    for shortcut, concept in default_groups(samples).items():
        dist = group_distribution(samples, shortcut, concept, config)
        expected, _ = _independent(root, shortcut, concept)
        ood = expected["ood"][expected["ood"] > 0] if "ood" in expected else expected["ood"]
        for k in sorted({1, 2, len(expected)}):
            fig = answer_distributions([dist], max_answers=k)
            left = fig.axes[0]
            shown = [t.get_text() for t in left.get_xticklabels()]
            assert len(shown) == k, (shortcut, k)
            if len(ood) <= k:
                assert set(ood.index) <= set(shown), (shortcut, k)
            else:  # the k most frequent OOD answers (ties either way)
                assert set(shown) <= set(ood.index), (shortcut, k)
                hidden = ood.drop(shown)
                assert ood[shown].min() >= hidden.max(), (shortcut, k)
                checked += 1
            heights = [p.get_height() for p in left.patches]
            for col, drawn in (("train", heights[:k]), ("ood", heights[k:])):
                total = expected[col].sum()  # an empty column: shares 0
                share = expected[col] / total if total else expected[col] * 0.0
                assert drawn == pytest.approx(share[shown].tolist()), (shortcut, k, col)
    assert checked > 0  # some group had more OOD answers than shown


def test_default_groups_are_the_largest_with_an_ood_set(build):
    root, result = build
    s = read_samples(root / "b")
    chosen = figure_groups(s, {"KWP": "sky"})
    assert chosen["8"] == {"QT": "which", "KW": "sky"}  # no 'what sport is': the largest QT
    assert chosen["10"]["KWP"] == "sky"
    for shortcut, concept in default_groups(s).items():
        test = s[(s["split"] == "test") & ~s[shortcut].str.contains(NONE, regex=False)]
        with_ood = set(test.loc[test[f"tail:{shortcut}"], shortcut])
        sizes = s[shortcut].value_counts()
        if with_ood:
            assert sizes[concept] == max(sizes[c] for c in with_ood), shortcut
        else:  # QT here: both groups balanced, the largest drawn without a tail
            assert shortcut == "QT" and sizes[concept] == sizes.max()
    assert list(chosen["4"].values()) == [chosen["10"]["KW"]]  # the first with a tail
    assert {g["figures"] for g in result["groups"]} >= {"4 10", "8 10", "10", "8"}


def test_files_written(build):
    root, result = build
    names = sorted(p.name for p in (root / "f").iterdir())
    assert names == result["files"] == ["answer_distributions.csv", "fig10.png", "fig4.png",
                                        "fig8.png", "figure_groups.csv"]
    for name in ("fig4.png", "fig8.png", "fig10.png"):
        assert (root / "f" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(root / "f" / "figure_groups.csv", keep_default_na=False)
    keys = ["figures", "shortcut", "concept", "train", "ood", "tail_answers"]
    assert table[keys].to_dict(orient="records") == [{k: g[k] for k in keys}
                                                     for g in result["groups"]]
    assert set(table["shortcut"]) == set(SHORTCUTS)
    drawn = pd.read_csv(root / "f" / "answer_distributions.csv", keep_default_na=False)
    sums = drawn.groupby(["shortcut", "concept"])[["train", "ood"]].sum()
    for g in result["groups"]:  # every group drawn has its rows
        assert sums.loc[(g["shortcut"], g["concept"])].tolist() == [g["train"], g["ood"]]
    assert (drawn["tail"] == (drawn["ood"] > 0)).all()  # the tail answers are the OOD ones
    # per group: its IID test questions and the distinct answers among them, recounted
    fewer = 0
    for g in result["groups"]:
        expected, _ = _independent(root, g["shortcut"], g["concept"])
        test = expected["test"] if "test" in expected else pd.Series(0, index=expected.index)
        assert (g["test"], g["test_answers"]) == (int(test.sum()), int((test > 0).sum())), g
        fewer += int((test > 0).sum()) < len(expected)
    assert fewer > 0  # some group has answers outside IID test: the count tells them apart


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--group", "XX=sky"], "unknown shortcut 'XX'; valid choices: QT, KW"),
        (["--group", "KW=skyy"], "KW has no group 'skyy' in this build; close: 'sky'"),
        (["--group", f"KW={NONE}"], "valid choices (the largest of"),
        (["--group", "KW"], "must look like SHORTCUT=CONCEPT"),
        (["--group", "KW=sky", "--group", "KW=dog"], "names KW twice"),
        (["--not-a-build"], "is not a complete VQA-VS split folder"),
    ],
)
def test_bad_input_is_one_error_line_and_writes_nothing(build, args, fragment):
    root, _ = build
    source = root if args == ["--not-a-build"] else root / "b"
    args = [] if args == ["--not-a-build"] else args
    out = root / "refused"
    res = runner.invoke(app, ["vqa", "figures", str(source), "--out", str(out), *args])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0], res.output
    assert "Traceback" not in res.output and not out.exists()


def _samples(rows, shortcut="KW"):
    """Hand-made built samples: (concept, split, answer) rows of one shortcut, no tail flags
    (every group here is balanced on IID test or has no IID test questions)."""
    s = pd.DataFrame(rows, columns=[shortcut, "split", "answer"])
    for k in SHORTCUTS:
        if k != shortcut:
            s[k] = NONE
        s[f"tail:{k}"] = False
    return s


def test_answers_absent_from_training_follow_by_their_val_plus_test_count():
    """The abscissa (module docstring): training count first; answers without training samples
    after, by val + test count. Here green (1 val + 3 test = 4) precedes red (2 val + 0 test),
    although red has more val questions."""
    rows = [("sky", "train", "blue")] * 3 + [("sky", "test", "blue")] * 3
    rows += [("sky", "val", "green")] + [("sky", "test", "green")] * 3
    rows += [("sky", "val", "red")] * 2
    dist = group_distribution(_samples(rows), "KW", "sky")
    assert dist.counts.index.tolist() == ["blue", "green", "red"]
    assert dist.counts[["train", "val", "test"]].to_numpy().tolist() == [[3, 0, 3], [0, 1, 3],
                                                                         [0, 2, 0]]
    assert not dist.imbalanced and not dist.counts["tail"].any()  # 3 and 3: balanced


def test_fig8_groups_are_chosen_among_training_groups():
    """Fig. 8 draws training distributions: the paper's group where the training split has it,
    else the largest *training* group; a group seen only in val / test is not drawn."""
    rows = [("which", "train", "a")] * 3 + [("what is", "train", "a")]
    rows += [("what is", "test", "a")] * 5 + [("what sport is", "test", "tennis")] * 9
    qt = _samples(rows, "QT")
    assert group_sizes(qt, "QT").index[0] == "what sport is"  # largest over all splits
    assert fig8_groups(qt) == {"QT": "which"}
    kw = _samples([("sky", "test", "blue")] * 4 + [("grass", "train", "green")] * 2)
    assert fig8_groups(kw) == {"KW": "grass"}


def test_a_composite_concept_with_a_missing_part_is_no_group():
    """As in build_splits, a sample whose keyword or object is missing has no concept for the
    shortcuts built on it ('what is + <none>' included): it is in no group, and is neither
    counted nor drawn however many such samples there are."""
    missing = f"what is + {NONE}"
    rows = [(missing, "train", "a")] * 5 + [(missing, "test", "a")] * 5
    rows += [("what is + sky", "train", "blue"), ("what is + sky", "test", "blue")]
    s = _samples(rows, "QT+KW")
    assert group_sizes(s, "QT+KW").to_dict() == {"what is + sky": 2}
    assert default_groups(s) == {"QT+KW": "what is + sky"}
    with pytest.raises(VQAError, match="no group"):
        group_distribution(s, "QT+KW", missing)
