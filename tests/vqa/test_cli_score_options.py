"""``vqa score`` / ``vqa baselines`` options: each reaches what it names or is refused (exit 2,
nothing written), and the printed paper row is in the order its header names."""

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.vqa.accuracy import VOCABULARY_MIN_COUNT
from shortcutlab.vqa.splits import build_splits
from shortcutlab.vqa.store import read_samples, write_splits
from shortcutlab.vqa.table import make_table

runner = CliRunner()
OBJECTS = ["banana", "sky", "grass"]
COMMON = ["yellow", "blue", "green"]
# the columns of the paper's Table 2: language, visual, multimodal shortcuts
PAPER_ORDER = ["QT", "KW", "KWP", "QT+KW", "KO", "KOP", "QT+KO", "KW+KO", "QT+KW+KO"]
RARE = [f"rare{a}{b}" for a in "abcdef" for b in "abcde"]  # 30 answers of 12 questions each


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    r = np.random.default_rng(0)
    rows = []
    answers = [COMMON[i % 3] for i in range(300)] + [a for a in RARE for _ in range(12)]
    for i, ans in enumerate(answers):
        o = int(r.integers(3))
        rows.append({"question_id": i, "image_id": i, "answers": [ans] * 10,
                     "question": f"What color is the {OBJECTS[o]}?", "objects": [OBJECTS[o]]})
    out = tmp_path_factory.mktemp("splits")
    write_splits(build_splits(make_table(pd.DataFrame(rows))), out, figures=False)
    return out


def _preds(tmp_path, samples, answer="yellow"):
    path = tmp_path / "preds.json"
    test = samples[samples["split"].isin(["val", "test"])]
    path.write_text(json.dumps([{"question_id": q, "answer": answer} for q in test["question_id"]]))
    return path


def test_vqa_vs_vocabulary_of_built_splits_is_the_training_split_only(splits, tmp_path):
    samples = read_samples(splits)
    # the authors' rule by hand: answers of >= 9 training questions (val is not training data)
    by_split = {s: Counter(samples.loc[samples["split"] == s, "answer"]) for s in ("train", "val")}
    train_vocab = {a for a, n in by_split["train"].items() if n >= VOCABULARY_MIN_COUNT}
    with_val = {a for a, n in (by_split["train"] + by_split["val"]).items()
                if n >= VOCABULARY_MIN_COUNT}
    assert train_vocab < with_val  # the data tells the two apart
    res = runner.invoke(app, ["vqa", "score", str(_preds(tmp_path, samples)), "--splits",
                              str(splits), "--metric", "vqa-vs", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["metric"]["vocabulary"] == len(train_vocab)


def test_printed_paper_row_is_ood_sets_then_ood_mean_then_iid(splits, tmp_path):
    samples = read_samples(splits)
    preds = _preds(tmp_path, samples)
    res = runner.invoke(app, ["vqa", "score", str(preds), "--splits", str(splits), "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)
    assert row["iid"] != pytest.approx(row["ood_mean"])  # the order is visible
    res = runner.invoke(app, ["vqa", "score", str(preds), "--splits", str(splits)])
    assert res.exit_code == 0, res.output
    header = "as in the paper's Table 2 (" + " ".join([*PAPER_ORDER, "mean", "IID"]) + "):"
    values = [*(row["ood"][s] for s in PAPER_ORDER), row["ood_mean"], row["iid"]]
    lines = res.stdout.splitlines()
    assert lines[lines.index(header) + 1] == " & ".join(f"{100 * v:.2f}" for v in values)


def test_on_val_without_built_splits_is_refused(splits, tmp_path):
    samples = read_samples(splits)
    preds = _preds(tmp_path, samples)
    table = tmp_path / "t.csv"
    samples[["question_id", "question", "answer"]].head(50).to_csv(table, index=False)
    for source in (["--data", str(table)], ["--release", str(tmp_path / "release")]):
        res = runner.invoke(app, ["vqa", "score", str(preds), *source, "--on", "val",
                                  "--out", str(tmp_path / "r.json")])
        assert res.exit_code == 2, res.output
        assert "--on val scores the OOD val sets of built splits: add --splits DIR" in res.output
    assert not (tmp_path / "r.json").exists()


def test_select_without_cnn_bow_is_refused_before_writing(splits, tmp_path):
    out = tmp_path / "b"
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(splits), "--out", str(out),
                              "--select"])
    assert res.exit_code == 2, res.output
    assert "--select chooses among cnn-bow's epoch checkpoints: add --model cnn-bow" in res.output
    assert not out.exists()


@pytest.mark.parametrize("option", [["--epochs", "5"], ["--data", "other.csv"],
                                    ["--seeds", "1"], ["--seeds", "0", "--seeds", "1"]])
def test_a_cnn_bow_option_without_cnn_bow_is_refused_before_writing(splits, tmp_path, option):
    """--epochs, --data and --seeds set cnn-bow's training only: with the priors alone they
    would be ignored (the priors read no images, train no epochs, draw no seed)."""
    out = tmp_path / "b"
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(splits), "--out", str(out),
                              "--model", "answer-prior", *option])
    assert res.exit_code == 2, res.output
    assert f"{option[0]} applies to cnn-bow only: add --model cnn-bow" in res.output
    assert not out.exists()


def test_the_priors_alone_run_with_cnn_bows_options_left_out(splits, tmp_path):
    out = tmp_path / "b"
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(splits), "--out", str(out),
                              "--model", "answer-prior", "--json"])
    assert res.exit_code == 0, res.output
    assert list(json.loads(res.stdout)) == ["answer-prior"]
