"""The VQA-VS release as published: its layout (folders, zips, the packed test_annotations.json),
IID + OOD scoring by question-id subset, the two metrics, prediction forms, missing files."""

import json
import zipfile

import pandas as pd
import pytest
from typer.testing import CliRunner

import shortcutlab.vqa as vqa
from shortcutlab.cli.main import app
from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.vqa import (
    ENGLISH_STOP_WORDS,
    SHORTCUTS,
    ConceptConfig,
    compute_concepts,
    make_table,
    parse_predictions,
    read_release,
    read_test_annotations,
    score_release,
    score_table,
    training_vocabulary,
    vqa_accuracy,
    vqa_vs_accuracy,
)

# Six IID test questions (ids as integers, as in the release) with ten human answers each.
TEST = {
    1: ("yes/no", ["yes"] * 10),
    2: ("yes/no", ["no"] * 7 + ["yes"] * 3),
    3: ("number", ["2"] * 2 + ["two"] * 2 + ["3"] * 6),
    4: ("other", ["red"] + ["Red"] * 2 + ["blue"] * 7),
    5: ("other", ["tennis"] * 10),
    6: ("other", ["dog"] * 2 + ["cat"] * 8),
}
PREDICTIONS = {1: "yes", 2: "yes", 3: "2", 4: "red", 5: "Tennis", 6: "dog"}
OOD = {
    "QT": [2, 4], "KW": [3], "KWP": [6], "QT+KW": [1, 2], "KO": [5], "KOP": [4, 6],
    "QT+KO": [2], "KW+KO": [3, 5], "QT+KW+KO": [1],
}  # fmt: skip
# Training multiple-choice answers: "yes" (8 + "Yes!" normalised), "red", "2" and "tennis" reach
# the authors' nine questions; "dog" (5) does not.
TRAIN_MC = ["yes"] * 8 + ["Yes!"] + ["red"] * 9 + ["2"] * 10 + ["tennis"] * 9 + ["dog"] * 5
VOCAB = {"yes", "red", "2", "tennis"}

# Hand-computed per-question scores.
# vqa-vs, raw strings, min(1, count/3): 1, 1 (3 "yes"), 2/3 (2 raw "2"), 1/3 (one raw "red"),
# 0 ("Tennis" is not "tennis"), 2/3; the vocabulary also zeroes "dog".
VS = {1: 1.0, 2: 1.0, 3: 2 / 3, 4: 1 / 3, 5: 0.0, 6: 2 / 3}
VS_VOCAB = {**VS, 6: 0.0}
# official: leave-one-out over ten; answers normalised only where they differ ("two" -> "2",
# "Red" -> "red"); identical answers are not normalised, so "Tennis" scores 0 there too.
OFFICIAL = {1: 1.0, 2: 0.9, 3: 1.0, 4: 0.9, 5: 0.0, 6: 0.6}


def _mean(scores, ids):
    return sum(scores[i] for i in ids) / len(ids)


def _annotation(qid):
    kind, answers = TEST[qid]
    return {
        "question_id": qid, "image_id": 100 + qid, "question_type": "what is",
        "answer_type": kind, "multiple_choice_answer": max(set(answers), key=answers.count),
        "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": k}
                    for k, a in enumerate(answers, 1)],
    }  # fmt: skip


def _question(qid):
    return {"image_id": 100 + qid, "question": f"What is {qid}?", "question_id": qid}


def _files(subset=SHORTCUTS, training=True):
    """Release files: relative path -> JSON document."""
    files = {
        "IID-Test/IID-Test-Ques.json": [_question(q) for q in TEST],
        "IID-Test/IID-Test-Ans.json": [_annotation(q) for q in TEST],
    }
    for s in subset:
        files[f"OOD-Test/{s}/OOD-Test-{s}-Ques.json"] = [_question(q) for q in OOD[s]]
        files[f"OOD-Test/{s}/OOD-Test-{s}-Ans.json"] = [_annotation(q) for q in OOD[s]]
    if training:
        files["Training/Training-Ans.json"] = [
            {"question_id": 1000 + k, "multiple_choice_answer": a, "answers": [{"answer": a}]}
            for k, a in enumerate(TRAIN_MC)
        ]
    return files


def _write(root, files):
    for rel, doc in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
    return root


def _packed():
    """The authors' test_annotations.json for the same data."""
    annotations = []
    for qid, (kind, answers) in TEST.items():
        counts = {a: answers.count(a) for a in dict.fromkeys(answers)}
        words = [a for a in counts if a in VOCAB]
        annotations.append({"question_id": qid, "answer_type": kind, "answers_word": words,
                            "answers_count": [counts[a] for a in words], "answer_count": counts})
    doc = {"annotations": annotations}
    doc.update({s.replace("+", "") + "_qid": OOD[s] for s in SHORTCUTS})
    return doc


@pytest.fixture
def release_dir(tmp_path):
    return _write(tmp_path / "VQA-VS", _files())


def test_release_scores_iid_and_each_ood_subset_with_the_authors_metric(release_dir):
    release = read_release(release_dir)
    assert sorted(release.test["question_id"]) == ["1", "2", "3", "4", "5", "6"]
    assert release.vocabulary == VOCAB  # normalised "Yes!" counts toward "yes"
    r = score_release(release, PREDICTIONS, metric="vqa-vs", vocabulary=False)
    assert r["iid"] == pytest.approx(_mean(VS, TEST))
    for s in SHORTCUTS:
        assert r["ood"][s] == pytest.approx(_mean(VS, OOD[s])), s
        assert r["counts"]["ood"][s] == len(OOD[s])
    assert r["language"] == pytest.approx(3 / 4)  # (2/3 + 2/3 + 2/3 + 1) / 4
    assert r["visual"] == pytest.approx(1 / 4)  # (0 + 1/2) / 2
    assert r["multimodal"] == pytest.approx(7 / 9)  # (1 + 1/3 + 1) / 3
    assert r["ood_mean"] == pytest.approx(sum(r["ood"].values()) / 9)
    assert r["gap"] == pytest.approx(r["iid"] - r["ood_mean"])
    assert r["per_answer_type"] == pytest.approx({"yes/no": 1.0, "number": 2 / 3, "other": 1 / 3})
    assert r["ood_per_answer_type"]["KOP"] == pytest.approx({"other": 0.5})
    assert r["metric"]["name"] == "vqa-vs" and r["metric"]["vocabulary"] is None
    assert "no vocabulary filter" in r["metric"]["rule"]
    # with the release's training vocabulary "dog" no longer counts
    rv = score_release(release, PREDICTIONS, metric="vqa-vs")
    assert rv["iid"] == pytest.approx(_mean(VS_VOCAB, TEST))
    assert rv["ood"]["KWP"] == 0.0
    assert rv["metric"]["vocabulary"] == 4 and "Training" in rv["metric"]["vocabulary_source"]


def test_release_official_metric_and_statement(release_dir):
    r = score_release(read_release(release_dir), PREDICTIONS)
    assert r["iid"] == pytest.approx(_mean(OFFICIAL, TEST))
    for s in SHORTCUTS:
        assert r["ood"][s] == pytest.approx(_mean(OFFICIAL, OOD[s])), s
    assert r["metric"]["name"] == "official" and r["metric"]["vocabulary"] is None
    assert "leave-one-out" in r["metric"]["rule"]
    assert r["metric"]["single_answer_questions"] == 0
    assert "exact match" in r["metric"]["single_answer"]


def test_hand_values_agree_with_the_metric_functions():
    for q, (_, answers) in TEST.items():
        assert vqa_accuracy(PREDICTIONS[q], answers) == pytest.approx(OFFICIAL[q])
        assert vqa_vs_accuracy(PREDICTIONS[q], answers) == pytest.approx(VS[q])
        assert vqa_vs_accuracy(PREDICTIONS[q], answers, VOCAB) == pytest.approx(VS_VOCAB[q])
    # unnormalised answers: the official metric forgives case and punctuation, the authors' not
    assert vqa_accuracy("YES!", ["yes", "no"] * 5) > 0
    assert vqa_vs_accuracy("YES!", ["yes", "no"] * 5) == 0.0
    assert training_vocabulary(range(len(TRAIN_MC)), TRAIN_MC) == VOCAB


def test_zipped_folders_and_the_packed_file_give_the_same_row(release_dir, tmp_path):
    zipped = tmp_path / "zipped"
    zipped.mkdir()
    for top in ("IID-Test", "OOD-Test", "Training"):
        with zipfile.ZipFile(zipped / f"{top}.zip", "w") as zf:
            for rel, doc in _files().items():
                if rel.startswith(top + "/"):
                    zf.writestr(rel, json.dumps(doc))
            zf.writestr(f"__MACOSX/{top}/._x.json", "junk")
    want = score_release(read_release(release_dir), PREDICTIONS, metric="vqa-vs")
    got = score_release(read_release(zipped), PREDICTIONS, metric="vqa-vs")
    assert got["iid"] == pytest.approx(want["iid"]) and got["ood"] == pytest.approx(want["ood"])
    packed = tmp_path / "packed"
    _write(packed, {"test_annotations.json": _packed()})
    for source in (packed, packed / "test_annotations.json"):
        rel = read_release(source)
        assert rel.vocabulary == VOCAB  # the union of answers_word
        for metric in ("official", "vqa-vs"):
            a = score_release(rel, PREDICTIONS, metric=metric)
            b = score_release(read_release(release_dir), PREDICTIONS, metric=metric)
            assert a["iid"] == pytest.approx(b["iid"]), metric
            assert a["ood"] == pytest.approx(b["ood"]), metric
            assert a["per_answer_type"] == pytest.approx(b["per_answer_type"]), metric
    assert read_test_annotations(packed / "test_annotations.json").ood["QT+KW"] == {"1", "2"}


def test_missing_release_files_name_the_file_and_the_layout(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist; expected IID-Test/"):
        read_release(tmp_path / "nowhere")
    (tmp_path / "VQA-VS.zip").write_bytes(b"PK")
    with pytest.raises(VQAError, match="is a file; give the release folder"):
        read_release(tmp_path / "VQA-VS.zip")
    no_ood = _write(tmp_path / "a", _files(subset=("QT", "KW")))
    with pytest.raises(DataNotFoundError,
                       match=r"missing OOD-Test/KWP/OOD-Test-KWP-Ques\.json.*\(7 of 9 OOD sets\)"
                             r".*expected IID-Test/IID-Test-Ans\.json"):  # fmt: skip
        read_release(no_ood)
    files = _files()
    del files["IID-Test/IID-Test-Ans.json"]
    with pytest.raises(DataNotFoundError, match="neither IID-Test/IID-Test-Ans.json.*nor test_"):
        read_release(_write(tmp_path / "b", files))
    files = _files()
    files["OOD-Test/KO/OOD-Test-KO-Ques.json"].append(_question(99))
    with pytest.raises(VQAError, match="OOD set KO: 1 question id.*99.*subsets of the IID test"):
        read_release(_write(tmp_path / "c", files))
    packed = _packed()
    del packed["KOP_qid"]
    with pytest.raises(VQAError, match="missing OOD id list\\(s\\) KOP_qid"):
        read_release(_write(tmp_path / "d", {"test_annotations.json": packed}))
    rel = read_release(_write(tmp_path / "e", _files(training=False)))
    assert rel.vocabulary is None
    with pytest.raises(DataNotFoundError, match="has none .*--no-vocabulary"):
        score_release(rel, PREDICTIONS, metric="vqa-vs")
    r = score_release(rel, PREDICTIONS, metric="vqa-vs", vocabulary=False)
    assert r["metric"]["vocabulary"] is None and r["iid"] == pytest.approx(_mean(VS, TEST))


def test_release_predictions_must_cover_the_iid_test_set(release_dir):
    release = read_release(release_dir)
    partial = {q: a for q, a in PREDICTIONS.items() if q != 6}
    with pytest.raises(VQAError, match="1 of 6 questions have no prediction: '6'"):
        score_release(release, partial)
    r = score_release(release, partial, count_missing_wrong=True)
    assert r["missing"] == 1 and r["ood"]["KWP"] == 0.0
    with pytest.raises(VQAError, match="unknown question ids: '7'"):
        score_release(release, {**PREDICTIONS, 7: "x"})
    with pytest.raises(VQAError, match="unknown metric 'bleu'; valid choices: official, vqa-vs"):
        score_release(release, PREDICTIONS, metric="bleu")


def test_every_prediction_form_gives_the_same_score(release_dir):
    release = read_release(release_dir)
    records = [{"question_id": q, "answer": a} for q, a in PREDICTIONS.items()]
    forms = [
        PREDICTIONS,  # int ids
        {str(q): a for q, a in PREDICTIONS.items()},  # str ids
        records,  # the CLI's file format
        pd.DataFrame(records),
        pd.DataFrame(records).astype({"question_id": float}),  # pandas' integer-as-float ids
        pd.Series(PREDICTIONS),
    ]
    want = score_release(release, PREDICTIONS)["iid"]
    for form in forms:
        assert parse_predictions(form) == {str(q): a for q, a in PREDICTIONS.items()}
        assert score_release(release, form)["iid"] == pytest.approx(want)
    with pytest.raises(VQAError, match="lacks column\\(s\\) answer \\(has: question_id, pred"):
        parse_predictions(pd.DataFrame({"question_id": [1], "pred": ["a"]}))
    with pytest.raises(VQAError, match="entry 0 has question_id \\[1\\]; an id must be"):
        parse_predictions([{"question_id": [1], "answer": "a"}])


def test_cli_scores_a_release_in_one_command(release_dir, tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([{"question_id": q, "answer": a} for q, a in PREDICTIONS.items()]))
    runner = CliRunner()
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(release_dir),
                              "--metric", "vqa-vs", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) >= {"iid", "ood", "language", "visual", "multimodal", "ood_mean", "gap",
                        "per_answer_type", "counts", "metric"}  # fmt: skip
    assert out["iid"] == pytest.approx(_mean(VS_VOCAB, TEST))  # a fraction, with the vocabulary
    assert out["metric"]["vocabulary"] == 4
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(release_dir)])
    assert res.exit_code == 0, res.output
    for text in ("OOD QT+KW+KO", "language mean", "visual mean", "multimodal mean", "OOD mean",
                 "IID yes/no", f"{100 * _mean(OFFICIAL, TEST):.2f}", "metric: official"):
        assert text in res.output, text  # fmt: skip
    ood = [_mean(OFFICIAL, OOD[s]) for s in SHORTCUTS]
    row = [*ood, sum(ood) / 9, _mean(OFFICIAL, TEST)]
    assert " & ".join(f"{100 * v:.2f}" for v in row) in res.output  # the paper's column order
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(tmp_path / "none")])
    assert res.exit_code == 2 and "expected IID-Test/IID-Test-Ans.json" in res.output
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(release_dir),
                              "--metric", "exact"])  # fmt: skip
    assert res.exit_code == 2 and "valid choices: official, vqa-vs" in res.output


def test_score_table_reports_answer_types_and_single_answer_rule():
    table = make_table(pd.DataFrame({
        "question_id": [1, 2, 3], "image_id": [1, 2, 3], "question": ["a?", "b?", "c?"],
        "answers": [["red"], ["2"], ["yes"] * 10], "answer_type": ["other", "number", "yes/no"],
    }))  # fmt: skip
    r = score_table(table, {1: "red", 2: "two", 3: "yes"}, metric="vqa-vs")
    assert r["overall"] == pytest.approx(2 / 3)  # exact match on one answer: "two" != "2"
    assert r["per_answer_type"] == {"number": 0.0, "other": 1.0, "yes/no": 1.0}
    assert r["metric"]["single_answer_questions"] == 2


def test_keywords_follow_the_paper_without_stop_word_removal():
    questions = ["What is the man doing?", "What room is this?", "How many people are there?"]
    types = ["what is the man", "what room is", "how many people are"]
    table = make_table(pd.DataFrame({
        "question_id": [1, 2, 3], "image_id": [1, 2, 3], "question": questions,
        "question_type": types, "answer": ["surfing", "kitchen", "2"],
    }))  # fmt: skip
    paper = compute_concepts(table)
    assert paper["KW"].tolist() == ["doing", "this", "there"]
    assert paper["QT+KW"].tolist()[1] == "what room is + this"
    removed = compute_concepts(table, ConceptConfig(stop_words=ENGLISH_STOP_WORDS))
    assert removed["KW"].tolist() == ["<none>"] * 3  # the old behaviour, now an option


def test_public_exports():
    assert len(vqa.__all__) == len(set(vqa.__all__))
    for name in vqa.__all__:
        assert getattr(vqa, name) is not None, name
    assert {"score_release", "read_release", "parse_predictions", "score_splits"} <= set(
        vqa.__all__
    )


def test_columns_dict_is_a_prediction_form_too():
    cols = {"question_id": [1, 2], "answer": ["a", "b"]}
    assert parse_predictions(cols) == {"1": "a", "2": "b"}
    with pytest.raises(VQAError, match="differ in length \\(2 and 1\\)"):
        parse_predictions({"question_id": [1, 2], "answer": ["a"]})


def _val_like(tmp_path, n=120):
    """A VQA-VS-style Val.zip: bare lists, ten answers, answer types, question types."""
    questions, annotations = [], []
    for i in range(n):
        kind, answer, qt = [("yes/no", "yes", "is the"), ("number", "2", "how many"),
                            ("other", "red", "what color is the")][i % 3]  # fmt: skip
        if i % 10 == 0:
            answer = {"yes": "no", "2": "3", "red": "Blue"}[answer]  # rare answers
        questions.append({"image_id": i, "question": f"{qt} thing {i % 4}?", "question_id": i})
        annotations.append({"question_id": i, "image_id": i, "question_type": qt,
                            "answer_type": kind, "multiple_choice_answer": answer,
                            "answers": [{"answer": answer}] * 10})  # fmt: skip
    z = tmp_path / "Val.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("Val/Val-Ques.json", json.dumps(questions))
        zf.writestr("Val/Val-Ans.json", json.dumps(annotations))
    return z, annotations


def test_cli_metric_and_vocabulary_options_on_data_and_splits(tmp_path):
    z, annotations = _val_like(tmp_path)
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({str(a["question_id"]): a["multiple_choice_answer"]
                                 for a in annotations}))  # fmt: skip
    runner = CliRunner()
    # --data: vqa-vs needs --train or an explicit --no-vocabulary; the rare answers (4
    # questions each) drop out with the vocabulary
    res = runner.invoke(app, ["vqa", "score", str(preds), "--data", str(z), "--metric", "vqa-vs"])
    assert res.exit_code == 2 and "--no-vocabulary" in res.output
    res = runner.invoke(app, ["vqa", "score", str(preds), "--data", str(z), "--metric", "vqa-vs",
                              "--no-vocabulary", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["overall"] == 1.0 and out["metric"]["vocabulary"] is None
    assert set(out["per_answer_type"]) == {"yes/no", "number", "other"}
    train = tmp_path / "Training-Ans.json"
    train.write_text(json.dumps(annotations))
    res = runner.invoke(app, ["vqa", "score", str(preds), "--data", str(z), "--metric", "vqa-vs",
                              "--train", str(train), "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["metric"]["vocabulary"] == 3  # yes, 2, red; no, 3, Blue are on 4 questions each
    assert out["overall"] == pytest.approx(1 - 12 / 120)
    res = runner.invoke(app, ["vqa", "score", str(preds), "--data", str(z), "--train",
                              str(train)])  # fmt: skip
    assert res.exit_code == 2 and "add --metric vqa-vs" in res.output
    # --no-vocabulary and --train contradict each other: neither may silently win
    res = runner.invoke(app, ["vqa", "score", str(preds), "--data", str(z), "--metric", "vqa-vs",
                              "--train", str(train), "--no-vocabulary"])  # fmt: skip
    assert res.exit_code == 2
    assert "--no-vocabulary goes with --metric vqa-vs and without --train" in res.output
    # --splits: built from the VQA-VS files, answer types kept, vocabulary from the train rows
    res = runner.invoke(app, ["vqa", "build", "--data", str(z), "--out", str(tmp_path / "s"),
                              "--no-figures", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    built = json.loads(res.stdout)  # the no-objects note goes to stderr
    assert sum(built["sizes"].values()) == 120 and len(built["statistics"]) == 9
    test_ids = json.loads((tmp_path / "s" / "splits.json").read_text())["test"]
    by_id = {str(a["question_id"]): a["multiple_choice_answer"] for a in annotations}
    preds.write_text(json.dumps([{"question_id": int(q), "answer": by_id[q]} for q in test_ids]))
    res = runner.invoke(app, ["vqa", "score", str(preds), "--splits", str(tmp_path / "s"),
                              "--metric", "vqa-vs", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["metric"]["vocabulary"] is not None and out["metric"]["vocabulary"] >= 3
    assert out["metric"]["vocabulary_source"] == "training split"
    assert set(out["per_answer_type"]) <= {"yes/no", "number", "other"} and out["per_answer_type"]
    assert {"language", "visual", "multimodal", "head", "tail"} <= set(out)
    res = runner.invoke(app, ["vqa", "build", "--data", str(z), "--out", str(tmp_path / "t"),
                              "--remove-stop-words", "--stop-words", str(train)])  # fmt: skip
    assert res.exit_code == 2 and "not both" in res.output


def test_answers_written_as_numbers_score_zero_unless_told_text(release_dir):
    """The authors' scorer compares a JSON number with string answers: 0. ``numbers="text"``
    scores it as its text; both are stated and counted in the metric entry."""
    preds = [{"question_id": q, "answer": a} for q, a in PREDICTIONS.items()]
    preds[2]["answer"] = 2  # question 3: "2" is right for 2 of 10 humans (vqa-vs 2/3)
    release = read_release(release_dir)
    for metric, scores in (("vqa-vs", VS_VOCAB), ("official", OFFICIAL)):
        wrong = score_release(release, preds, metric=metric)
        assert wrong["iid"] == pytest.approx((sum(scores.values()) - scores[3]) / 6), metric
        assert wrong["ood"]["KW"] == 0.0  # KW holds question 3 only
        assert wrong["metric"]["numbers"] == "wrong" and wrong["metric"]["numeric_answers"] == 1
        text = score_release(release, preds, metric=metric, numbers="text")
        assert text["iid"] == pytest.approx(_mean(scores, TEST)), metric
        assert text["metric"]["numeric_answers"] == 1
    assert parse_predictions(preds).numeric == {"3"}
    with pytest.raises(VQAError, match="unknown numbers rule 'zero'.*wrong, text"):
        score_release(release, preds, numbers="zero")


def test_cli_numbers_option_and_count(release_dir, tmp_path):
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"question_id": q, "answer": 2 if q == 3 else a}
                                 for q, a in PREDICTIONS.items()]))  # fmt: skip
    runner = CliRunner()
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(release_dir),
                              "--metric", "vqa-vs"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "1 answer(s) written as JSON numbers scored 0" in " ".join(res.output.split())
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(release_dir),
                              "--metric", "vqa-vs", "--numbers", "text", "--json"])  # fmt: skip
    assert json.loads(res.output)["iid"] == pytest.approx(_mean(VS_VOCAB, TEST))
    res = runner.invoke(app, ["vqa", "score", str(preds), "--release", str(release_dir),
                              "--numbers", "str"])  # fmt: skip
    assert res.exit_code == 2 and "wrong, text" in res.output


def test_the_authors_zipped_training_answers_and_packed_zip_are_read(release_dir, tmp_path):
    """``Training/Training-Ans.json.zip`` gives the vocabulary; ``test_annotations.json.zip``
    the answers and OOD sets; without any vocabulary vqa-vs is an error unless opted out."""
    root = tmp_path / "authors"
    files = _files()
    training = files.pop("Training/Training-Ans.json")
    _write(root, files)
    (root / "Training").mkdir()
    with zipfile.ZipFile(root / "Training" / "Training-Ans.json.zip", "w") as zf:
        zf.writestr("Training-Ans.json", json.dumps(training))
    rel = read_release(root)
    assert rel.vocabulary == VOCAB and "Training-Ans.json.zip" in rel.vocabulary_source
    got = score_release(rel, PREDICTIONS, metric="vqa-vs")
    assert got["iid"] == pytest.approx(_mean(VS_VOCAB, TEST))
    packed = tmp_path / "packed"
    packed.mkdir()
    with zipfile.ZipFile(packed / "test_annotations.json.zip", "w") as zf:
        zf.writestr("test_annotations.json", json.dumps(_packed()))
    for source in (packed, packed / "test_annotations.json.zip"):
        rel = read_release(source)
        assert rel.vocabulary == VOCAB and rel.ood["QT+KW"] == {"1", "2"}
        assert score_release(rel, PREDICTIONS, metric="vqa-vs")["ood"] == pytest.approx(
            got["ood"]
        )
    runner = CliRunner()
    bare = _write(tmp_path / "bare", _files(training=False))
    p = tmp_path / "p.json"
    p.write_text(json.dumps({str(q): a for q, a in PREDICTIONS.items()}))
    res = runner.invoke(app, ["vqa", "score", str(p), "--release", str(bare), "--metric", "vqa-vs"])
    assert res.exit_code == 2 and "--no-vocabulary" in res.output
    res = runner.invoke(app, ["vqa", "score", str(p), "--release", str(bare), "--metric", "vqa-vs",
                              "--no-vocabulary", "--json"])  # fmt: skip
    assert res.exit_code == 0 and json.loads(res.output)["iid"] == pytest.approx(_mean(VS, TEST))


def test_cli_accuracy_summary_keeps_each_item_whole_at_80_columns(tmp_path):
    # the one-line summary was wrapped by rich inside an item ("yes/no" then "100.00 %")
    z, annotations = _val_like(tmp_path)
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({str(a["question_id"]): a["multiple_choice_answer"]
                                 for a in annotations}))  # fmt: skip
    res = CliRunner().invoke(app, ["vqa", "score", str(preds), "--data", str(z)],
                             env={"COLUMNS": "80"})  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    for item in ("accuracy 100.00 % over 120 questions", "yes/no 100.00 %", "number 100.00 %",
                 "other 100.00 %"):  # fmt: skip
        assert any(item in line for line in lines), (item, lines)


def test_packed_answer_counts_below_zero_are_refused(tmp_path):
    # a count of -1 would silently drop the answer (range(-1) is empty) and change the score
    packed = _packed()
    packed["annotations"][1]["answer_count"] = {"no": 7, "yes": -1}
    with pytest.raises(VQAError, match="question 2 has an answer_count that is not a whole"):
        read_release(_write(tmp_path / "p", {"test_annotations.json": packed}))


def test_release_vocabulary_keeps_answers_of_at_least_nine_training_questions(tmp_path):
    # the authors' preprocessing keeps a multiple-choice answer of >= 9 training questions:
    # "cat" on exactly 9 is in, "cow" on 8 is out
    files = _files()
    extra = ["cat"] * 9 + ["cow"] * 8
    files["Training/Training-Ans.json"] += [
        {"question_id": 5000 + k, "multiple_choice_answer": a, "answers": [{"answer": a}]}
        for k, a in enumerate(extra)
    ]
    assert read_release(_write(tmp_path / "r", files)).vocabulary == VOCAB | {"cat"}


def test_training_answers_win_over_the_packed_answers_word(tmp_path):
    # both present: the vocabulary is the training one (the module docstring; the packed
    # answers_word is only the fallback), here with "dog" on nine training questions
    files = _files()
    files["Training/Training-Ans.json"] += [
        {"question_id": 5000 + k, "multiple_choice_answer": "dog", "answers": [{"answer": "dog"}]}
        for k in range(9)
    ]
    files["test_annotations.json"] = _packed()  # answers_word: VOCAB, no "dog"
    release = read_release(_write(tmp_path / "r", files))
    assert release.vocabulary == VOCAB | {"dog"}
    assert "Training-Ans.json" in release.vocabulary_source
    r = score_release(release, PREDICTIONS, metric="vqa-vs")
    assert r["ood"]["KWP"] == pytest.approx(VS[6])  # "dog" scores 2/3 again


def test_iid_test_answers_with_a_repeated_question_or_a_null_answer_are_refused(tmp_path):
    files = _files()
    files["IID-Test/IID-Test-Ans.json"].append(_annotation(3))
    with pytest.raises(VQAError, match="IID-Test-Ans.json: 1 duplicate question id.*: 3"):
        read_release(_write(tmp_path / "dup", files))
    files = _files()
    files["IID-Test/IID-Test-Ans.json"][0]["answers"][4]["answer"] = None
    with pytest.raises(VQAError, match="question 1 has the answer null; every answer must be"):
        read_release(_write(tmp_path / "null", files))


@pytest.mark.parametrize("bad", [2.7, True, "02", None])
def test_an_ood_id_that_is_no_question_id_is_refused_not_rounded(tmp_path, bad):
    # int(2.7) made 2.7 question 2 and int(True) question 1: another question in the OOD set
    packed = _packed()
    packed["QT_qid"] = [bad, 4]
    with pytest.raises(VQAError, match="QT"):
        read_release(_write(tmp_path / "p", {"test_annotations.json": packed}))


def test_ood_ids_as_integral_numbers_or_digit_strings_are_the_same_questions(tmp_path):
    packed = _packed()
    packed["QT_qid"] = [2.0, "4"]
    packed["KW_qid"] = [{"question_id": 3.0}]
    release = read_release(_write(tmp_path / "p", {"test_annotations.json": packed}))
    assert release.ood["QT"] == {"2", "4"} and release.ood["KW"] == {"3"}


def test_packed_answer_counts_of_zero_only_are_a_question_without_answers(tmp_path):
    packed = _packed()
    packed["annotations"][1]["answer_count"] = {"no": 0, "yes": 0}
    with pytest.raises(VQAError, match="question 2 has no answer_count"):
        read_release(_write(tmp_path / "p", {"test_annotations.json": packed}))
