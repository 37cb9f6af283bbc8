"""The paper's analyses run from a release layout: a small synthetic release written from a
build, so that every recomputed quantity has a known answer."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import VQAError
from shortcutlab.vqa.analysis import analyze_release
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.loaders import load_table
from shortcutlab.vqa.release import read_release
from shortcutlab.vqa.splits import BuildConfig, build_splits
from shortcutlab.vqa.table import make_table

OBJECTS = ["banana", "sky", "grass", "dog"]


def _table():
    r = np.random.default_rng(7)
    rows = []
    for i in range(800):
        o = int(r.integers(4))
        usual = ["yellow", "blue", "green", "brown"][o]
        ans = usual if r.random() < 0.75 else str(r.choice(["red", "white", "black"]))
        extra = OBJECTS[int(r.integers(4))]
        verb = ["What color is the", "Which colour has the"][int(r.integers(2))]
        rows.append({"question_id": 1000 + i, "image_id": 5000 + i, "answers": [ans] * 10,
                     "question": f"{verb} {OBJECTS[o]}?", "objects": [OBJECTS[o], extra],
                     "answer_type": "other"})  # fmt: skip
    return make_table(pd.DataFrame(rows))


def _write_release(root, built):
    """Training/, IID-Test/ and OOD-Test/<S>/ as the authors lay them out, plus COCO instances
    holding the image objects."""
    s = built.samples
    names = {n: k for k, n in enumerate(OBJECTS, 1)}
    files = {}
    for split, folder in (("train", "Training"), ("test", "IID-Test")):
        rows = s[s["split"] == split]
        files[f"{folder}/{folder}-Ques.json"] = [
            {"image_id": int(i), "question": q, "question_id": int(qid)}
            for qid, i, q in zip(rows["question_id"], rows["image_id"], rows["question"],
                                 strict=True)
        ]  # fmt: skip
        files[f"{folder}/{folder}-Ans.json"] = [
            {"question_id": int(qid), "image_id": int(i), "question_type": qt,
             "answer_type": "other", "multiple_choice_answer": a,
             "answers": [{"answer": x, "answer_confidence": "yes", "answer_id": k}
                         for k, x in enumerate(ans, 1)]}
            for qid, i, a, ans, qt in zip(rows["question_id"], rows["image_id"], rows["answer"],
                                          rows["answers"], rows["QT"], strict=True)
        ]  # fmt: skip
    test = s[s["split"] == "test"]
    for k in SHORTCUTS:
        files[f"OOD-Test/{k}/OOD-Test-{k}-Ques.json"] = [
            {"question_id": int(q)} for q in test.loc[test[f"tail:{k}"], "question_id"]
        ]
    table = _table().set_index("question_id")
    files["instances.json"] = {
        "categories": [{"id": v, "name": n} for n, v in names.items()],
        "annotations": [{"image_id": int(table.loc[q, "image_id"]), "category_id": names[o]}
                        for q in table.index for o in table.loc[q, "objects"]],
    }  # fmt: skip
    for rel, doc in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(doc))
    return root


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    built = build_splits(_table(), BuildConfig(fractions=(0.75, 0.0, 0.25)))
    root = _write_release(tmp_path_factory.mktemp("rel"), built)
    data = [str(root / p) for p in ("Training/Training-Ques.json", "Training/Training-Ans.json",
                                    "IID-Test/IID-Test-Ques.json", "IID-Test/IID-Test-Ans.json",
                                    "instances.json")]  # fmt: skip
    return built, root, data


def test_analyses_of_a_release_recover_its_construction(release):
    built, root, data = release
    rel = read_release(root)
    out = analyze_release(load_table(data), rel)
    assert out["sizes"] == {"train": 600, "test": 200}
    pd.testing.assert_frame_equal(out["statistics"], built.statistics)
    pd.testing.assert_frame_equal(out["jaccard"], built.jaccard)
    pd.testing.assert_frame_equal(out["coincidence"], built.coincidence)  # released sets
    np.testing.assert_allclose(out["imbalance"]["E_train"], built.imbalance["E_train"])
    agree = out["agreement"].set_index("shortcut")
    nonempty = agree["released"] > 0
    assert nonempty["KO"] and nonempty.sum() >= 3
    assert (agree.loc[nonempty, "jaccard"] == 1.0).all()
    assert out["ood_sizes"].to_dict() == {k: int(v) for k, v in agree["released"].items()}


def test_agreement_jaccard_is_over_the_union_of_released_and_recomputed(release, tmp_path):
    built, root, data = release
    shutil.copytree(root, tmp_path / "rel")
    s = built.samples
    test = s[s["split"] == "test"]
    tail = test.loc[test["tail:KO"], "question_id"].tolist()
    head = test.loc[test["head:KO"], "question_id"].tolist()
    assert len(tail) > 3 and len(head) >= 2
    released = tail[3:] + head[:2]  # 3 recomputed ones missing, 2 others added
    (tmp_path / "rel" / "OOD-Test/KO/OOD-Test-KO-Ques.json").write_text(
        json.dumps([{"question_id": int(q)} for q in released]))
    out = analyze_release(load_table(data), read_release(tmp_path / "rel"))
    ko = out["agreement"].set_index("shortcut").loc["KO"]
    n = len(tail)
    assert (ko["released"], ko["recomputed"], ko["both"]) == (n - 1, n, n - 3)
    assert ko["jaccard"] == pytest.approx((n - 3) / (n + 2))  # |A n B| / |A u B|
    # Fig. 5b is over the *released* sets: |A n B| / |A| of the id lists as published
    released_sets = read_release(tmp_path / "rel").ood
    for a in SHORTCUTS:
        for b in SHORTCUTS:
            A, B = released_sets[a], released_sets[b]
            expected = len(A & B) / len(A) if A else float("nan")
            assert out["coincidence"].loc[a, b] == pytest.approx(expected, nan_ok=True), (a, b)
    assert not np.allclose(out["coincidence"].loc["KO"], built.coincidence.loc["KO"],
                           equal_nan=True)  # the recomputed sets would give other ratios


def test_predictions_add_fig6_and_head_tail(release):
    built, root, data = release
    s = built.samples
    test = s[s["split"] == "test"]
    always = dict.fromkeys(test["question_id"], "yellow")
    out = analyze_release(load_table(data), read_release(root), always)
    ht = out["head_tail"]
    for k in SHORTCUTS:
        for part in ("head", "tail"):
            rows = test[test[f"{part}:{k}"]]
            want = (rows["answer"] == "yellow").mean() if len(rows) else None
            got = ht.loc[k, part]
            assert (pd.isna(got) and want is None) or got == pytest.approx(want), (k, part)
    assert ht.loc["KO", "tail"] == pytest.approx(ht.loc["KO", "released_ood"])
    fig6 = out["imbalance_vs_accuracy"].set_index("shortcut")
    assert fig6.loc["KO", "ood"] == pytest.approx(100 * out["row"]["ood"]["KO"])
    assert fig6.loc["KO", "E_train"] == pytest.approx(
        built.imbalance.set_index("shortcut").loc["KO", "E_train"]
    )


def test_cli_analyze_writes_tables_and_figures(release, tmp_path):
    built, root, data = release
    s = built.samples
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"question_id": int(q), "answer": a} for q, a in
                                 zip(s["question_id"], s["answer"], strict=True)
                                 if q in set(s.loc[s["split"] == "test", "question_id"])]))
    args = ["vqa", "analyze", "--release", str(root), "--out", str(tmp_path / "a"),
            "--predictions", str(preds)]  # fmt: skip
    for d in data:
        args += ["--data", d]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    for name in ("statistics.csv", "coincidence.csv", "jaccard.png", "head_tail.csv",
                 "imbalance_vs_accuracy.png", "agreement.csv"):  # fmt: skip
        assert (tmp_path / "a" / name).stat().st_size > 0, name
    fig6 = pd.read_csv(tmp_path / "a" / "imbalance_vs_accuracy.csv").set_index("shortcut")
    assert fig6.loc["KO", "ood"] == pytest.approx(100.0)  # perfect predictions
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["sizes"] == {"train": 600, "test": 200} and "coincidence" in doc
    res = CliRunner().invoke(app, ["vqa", "analyze", "--release", str(root), "--out",
                                   str(tmp_path / "b"), "--data", data[0], "--data",
                                   data[1]])  # fmt: skip
    assert res.exit_code == 2 and "IID test question(s) of the release are not in the data" in (
        " ".join(res.output.split())
    )


def test_given_split_is_checked():
    t = _table()
    with pytest.raises(VQAError, match="one of train, val, test per row"):
        build_splits(t, split=np.array(["train"] * 10))


def test_score_options_are_checked_without_predictions(release, tmp_path):
    # without --predictions an unknown --metric was ignored and the analysis written (exit 0)
    built, root, data = release
    with pytest.raises(VQAError, match="unknown metric 'bogus'; valid choices: official, vqa-vs"):
        analyze_release(load_table(data), read_release(root), metric="bogus")
    args = ["vqa", "analyze", "--release", str(root), "--out", str(tmp_path / "c"),
            "--metric", "bogus"]  # fmt: skip
    for d in data:
        args += ["--data", d]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "unknown metric 'bogus'" in res.output
    assert not (tmp_path / "c").exists()


def test_no_vocabulary_with_the_official_metric_is_refused_as_score_refuses_it(release,
                                                                               tmp_path):
    # analyze accepted --no-vocabulary with --metric official and ignored it; score refuses it
    built, root, data = release
    args = ["vqa", "analyze", "--release", str(root), "--out", str(tmp_path / "d"),
            "--no-vocabulary"]  # fmt: skip
    for d in data:
        args += ["--data", d]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "--no-vocabulary goes with --metric vqa-vs" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()


def test_data_without_image_objects_gets_the_note_build_gives(release, tmp_path):
    # without COCO instances the five visual and multi-modal sets came out empty (agreement 0)
    # without a word, where `vqa build` warns
    built, root, data = release
    no_objects = [d for d in data if not d.endswith("instances.json")]
    args = ["vqa", "analyze", "--release", str(root), "--out", str(tmp_path / "a")]
    for d in no_objects:
        args += ["--data", d]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    note = " ".join(res.output.split())
    assert "note: the data has no image objects" in note and "add COCO instances" in note
    build = CliRunner().invoke(app, ["vqa", "build", "--out", str(tmp_path / "b"),
                                     "--no-figures", *(x for d in no_objects
                                                       for x in ("--data", d))])  # fmt: skip
    assert build.exit_code == 0, build.output
    line = next(ln for ln in res.output.splitlines() if ln.startswith("note:"))
    assert line in build.output.splitlines()  # the same words as build's
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0 and "no image objects" in res.stderr
    assert json.loads(res.stdout)["sizes"] == {"train": 600, "test": 200}
    with_objects = CliRunner().invoke(app, [*args, "--data", data[-1]])
    assert with_objects.exit_code == 0 and "no image objects" not in with_objects.output


def test_head_tail_count_missing_predictions_wrong_as_the_released_row_does(release):
    """With count_missing_wrong, a test question without a prediction scores 0 in the head and
    tail accuracies as in the released row: perfect answers for every other question give
    head accuracy = predicted share of the head; the KO tail equals the released KO set."""
    built, root, data = release
    s = built.samples
    test = s[s["split"] == "test"]
    dropped = set(test["question_id"].iloc[::4])
    preds = {q: a for q, a in zip(test["question_id"], test["answer"], strict=True)
             if q not in dropped}
    out = analyze_release(load_table(data), read_release(root), preds, count_missing_wrong=True)
    ht = out["head_tail"]
    heads = [k for k in SHORTCUTS if test[f"head:{k}"].any()]
    assert "KO" in heads and len(heads) >= 3
    for k in heads:
        head = test[test[f"head:{k}"]]
        assert ht.loc[k, "head"] == pytest.approx(1 - head["question_id"].isin(dropped).mean())
    assert ht.loc["KO", "tail"] == pytest.approx(ht.loc["KO", "released_ood"])
    assert out["row"]["iid"] == pytest.approx(1 - len(dropped) / len(test))


def test_a_release_analysis_without_training_questions_is_refused(release):
    """E_train, the head splits of the training set (Fig. 5a) and Table 1's groups all need the
    training questions: data with the IID test questions alone is refused, not analysed."""
    _, root, data = release
    test_only = [d for d in data if "IID-Test" in d or d.endswith("instances.json")]
    with pytest.raises(VQAError, match="no training questions"):
        analyze_release(load_table(test_only), read_release(root))


@pytest.mark.parametrize("option", [["--metric", "vqa-vs"], ["--metric", "official"],
                                    ["--metric", "vqa-vs", "--no-vocabulary"]])
def test_a_scoring_option_without_predictions_is_refused(release, tmp_path, option):
    # without --predictions nothing is scored: --metric and --no-vocabulary were ignored (exit 0)
    built, root, data = release
    args = ["vqa", "analyze", "--release", str(root), "--out", str(tmp_path / "e"), *option]
    for d in data:
        args += ["--data", d]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "--metric scores the --predictions" in " ".join(res.output.split()), res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "e").exists()
