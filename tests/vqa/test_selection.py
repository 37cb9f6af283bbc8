"""Table 4: OOD val sets scored, checkpoints chosen by OOD test / OOD val / IID val means."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import VQAError
from shortcutlab.vqa.baselines import CnnBowConfig, train_cnn_bow_epochs
from shortcutlab.vqa.evaluate import score_splits
from shortcutlab.vqa.loaders import load_easy_vqa
from shortcutlab.vqa.selection import select_checkpoints
from shortcutlab.vqa.splits import BuildConfig, build_splits
from shortcutlab.vqa.store import read_samples, write_splits
from shortcutlab.vqa.table import make_table


@pytest.fixture(scope="module")
def samples():
    """1,000 colour questions, 80 % answered by the object's usual colour: imbalanced groups
    with tails in val and test (val is 20 % here so that the OOD val sets are not tiny)."""
    r = np.random.default_rng(3)
    rows = []
    for i in range(1000):
        o = int(r.integers(3))
        usual = ["yellow", "blue", "green"][o]
        ans = usual if r.random() < 0.8 else str(r.choice(["red", "white"]))
        obj = ["banana", "sky", "grass"][o]
        rows.append({"question_id": i, "image_id": i, "answers": [ans] * 10,
                     "question": f"What color is the {obj}?", "objects": [obj]})  # fmt: skip
    built = build_splits(make_table(pd.DataFrame(rows)), BuildConfig(fractions=(0.6, 0.2, 0.2)))
    return built.samples


def _answers(samples, split, part):
    """Truth for the rows of ``split`` whose tail membership (any shortcut) is ``part``."""
    rows = samples[samples["split"] == split]
    tail = rows[[c for c in rows.columns if c.startswith("tail:")]].any(axis=1)
    keep = rows[tail == part]
    return dict(zip(keep["question_id"], keep["answer"], strict=True))


def test_val_scoring_uses_the_val_split_and_its_tails(samples):
    val = samples[samples["split"] == "val"]
    truth = dict(zip(val["question_id"], val["answer"], strict=True))
    r = score_splits(samples, truth, on="val")
    assert r["split"] == "val" and r["iid"] == 1.0
    assert r["counts"]["iid"] == len(val)
    assert r["counts"]["ood"]["KO"] == int(val["tail:KO"].sum()) > 0
    with pytest.raises(VQAError, match="have no prediction"):  # test answers do not count
        score_splits(samples, truth, on="test")
    with pytest.raises(VQAError, match="unknown evaluation split 'train'.*test, val"):
        score_splits(samples, truth, on="train")


def test_each_strategy_picks_its_own_checkpoint(samples):
    wrong = {q: "nothing" for q in samples.loc[samples["split"] != "train", "question_id"]}
    a = {**wrong, **_answers(samples, "val", False), **_answers(samples, "test", False)}
    b = {**wrong, **_answers(samples, "val", True)}  # right on the OOD val questions only
    c = {**wrong, **_answers(samples, "test", True)}  # right on the OOD test questions only
    out = select_checkpoints(samples, [a, b, c])
    chosen = {k: v["epoch"] for k, v in out["selected"].items()}
    assert chosen == {"iid-val": 1, "ood-val": 2, "ood-test": 3}
    assert out["selected"]["ood-test"]["test"]["ood_mean"] == 1.0
    assert out["selected"]["iid-val"]["test"]["ood_mean"] == 0.0
    assert out["selected"]["ood-val"]["criterion"] == 1.0
    assert len(out["epochs"]) == 3 and out["epochs"][1]["val"]["ood_mean"] == 1.0
    assert select_checkpoints(samples, [a, a])["selected"]["iid-val"]["epoch"] == 1  # ties
    with pytest.raises(VQAError, match="at least one checkpoint"):
        select_checkpoints(samples, [])


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_cnn_bow_checkpoints_learn_and_cli_writes_table_4(tmp_path):
    table = load_easy_vqa(600)
    splits = build_splits(table)
    write_splits(splits, tmp_path / "s", figures=False)
    s = splits.samples
    train = s.loc[s["split"] == "train", "question_id"].tolist()
    evals = s.loc[s["split"] != "train", "question_id"].tolist()
    cfg = CnnBowConfig(epochs=2, batch_size=64)
    ck = train_cnn_bow_epochs(table, train, evals, cfg)
    assert len(ck) == 2 and all(set(p) == set(evals) for p in ck)
    # the optimiser moves the model: the checkpoints answer differently (no step: identical)
    assert ck[0] != ck[1]
    res = CliRunner().invoke(app, ["vqa", "baselines", "--splits", str(tmp_path / "s"),
                                   "--out", str(tmp_path / "b"), "--model", "cnn-bow",
                                   "--data", "easy-vqa", "--epochs", "2", "--select"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "model selection" in res.output and "ood-val" in res.output
    sel = json.loads((tmp_path / "b" / "selection-cnn-bow.json").read_text())
    assert set(sel["selected"]) == {"ood-test", "ood-val", "iid-val"} and len(sel["epochs"]) == 2
    for name, (on, key) in {"ood-test": ("test", "ood_mean"), "ood-val": ("val", "ood_mean"),
                            "iid-val": ("val", "iid")}.items():  # fmt: skip
        best = max(e[on][key] for e in sel["epochs"])
        assert sel["selected"][name]["criterion"] == pytest.approx(best)
    res = CliRunner().invoke(app, ["vqa", "score", str(tmp_path / "b" / "predictions-cnn-bow.json"),
                                   "--splits", str(tmp_path / "s"), "--on", "val",
                                   "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["split"] == "val"
    assert read_samples(tmp_path / "s")["split"].eq("val").sum() == json.loads(res.output)[
        "counts"]["iid"]  # fmt: skip
