"""Loaders, table validation, scoring and its errors, and the CLI on small synthetic data."""

import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.vqa.evaluate import parse_predictions, score_splits, score_table
from shortcutlab.vqa.loaders import load_easy_vqa, load_table
from shortcutlab.vqa.splits import build_splits
from shortcutlab.vqa.store import read_samples, write_splits
from shortcutlab.vqa.table import make_table
from tests.vqa.colour_questions import colour_questions

QUESTIONS = [
    {"image_id": 10, "question": "What color is the cat?", "question_id": 100},
    {"image_id": 11, "question": "How many dogs?", "question_id": 101},
]
ANSWERS = [
    {"question_id": 100, "image_id": 10, "question_type": "what color is the",
     "multiple_choice_answer": "black", "answer_type": "other",
     "answers": [{"answer": "black", "answer_confidence": "yes", "answer_id": i}
                 for i in range(1, 11)]},
    {"question_id": 101, "image_id": 11, "question_type": "how many",
     "multiple_choice_answer": "2", "answer_type": "number",
     "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": i}
                 for i, a in enumerate(["2"] * 6 + ["two"] * 2 + ["3"] * 2, 1)]},
]  # fmt: skip


def test_vqa_v2_json_with_coco_objects(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps({"questions": QUESTIONS}))
    (tmp_path / "a.json").write_text(json.dumps({"annotations": ANSWERS}))
    coco = {"categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
            "annotations": [{"image_id": 10, "category_id": 1}, {"image_id": 11, "category_id": 2},
                            {"image_id": 11, "category_id": 2}]}  # fmt: skip
    (tmp_path / "inst.json").write_text(json.dumps(coco))
    t = load_table([tmp_path / "q.json", tmp_path / "a.json", tmp_path / "inst.json"])
    assert t["question_id"].tolist() == ["100", "101"]
    assert t["objects"].tolist() == [["cat"], ["dog"]]
    assert t.loc[1, "answers"][-1] == "3" and t.loc[1, "answer"] == "2"
    assert t.loc[0, "question_type"] == "what color is the"


def test_vqa_vs_zip_bare_lists(tmp_path):
    z = tmp_path / "Val.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("Val/Val-Ques.json", json.dumps(QUESTIONS))
        zf.writestr("Val/Val-Ans.json", json.dumps(ANSWERS))
        zf.writestr("__MACOSX/Val/._Val-Ans.json", "junk")
    t = load_table(z)
    assert len(t) == 2 and t.loc[0, "answers"] == ["black"] * 10


def test_csv_and_jsonl(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text('question_id,image_id,question,answers,objects\n'
                   '1,a,Is it red?,"[""yes"",""no""]",cat|dog\n')  # fmt: skip
    t = load_table(csv)
    assert t.loc[0, "answers"] == ["yes", "no"] and t.loc[0, "objects"] == ["cat", "dog"]
    jl = tmp_path / "t.jsonl"
    jl.write_text(json.dumps({"question_id": 5, "image_id": 1, "question": "q?",
                              "answers": ["x"]}) + "\n")  # fmt: skip
    assert load_table(jl).loc[0, "answer"] == "x"


def test_majority_answer_tie_goes_to_the_alphabetically_first_answer():
    # docs/vqa-vs.md: "a majority-answer tie goes to the alphabetically first answer", so the
    # label (and the groups built on it) does not depend on the order of the human answers
    rows = pd.DataFrame({"question_id": [1, 2], "image_id": [1, 1], "question": ["q?", "q?"],
                         "answers": [["b", "a", "c"], ["a", "b", "b", "a"]]})  # fmt: skip
    assert make_table(rows)["answer"].tolist() == ["a", "a"]


def test_a_missing_answer_label_or_question_type_is_filled_not_turned_into_text():
    # a partly filled answer column (a CSV with empty cells, a merged frame): the missing
    # label is the majority human answer, a missing question type is "" (unknown), never the
    # text "nan" or "None" that would become a group of its own
    rows = pd.DataFrame({"question_id": [1, 2, 3], "image_id": [1, 1, 1],
                         "question": ["q?", "q?", "q?"],
                         "answers": [["b", "c", "b"], ["x"], ["y", "z", "z"]],
                         "answer": [np.nan, "x", None],
                         "question_type": [None, "what is", np.nan]})  # fmt: skip
    table = make_table(rows)
    assert table["answer"].tolist() == ["b", "x", "z"]
    assert table["question_type"].tolist() == ["", "what is", ""]


def test_answers_that_are_not_text_are_refused(tmp_path):
    # VQA-style answer objects in a JSONL table were turned into the text of the dict
    # ("{'answer': 'yes', ...}"), so every prediction would have scored 0 without a word
    jl = tmp_path / "t.jsonl"
    jl.write_text(json.dumps({"question_id": 7, "image_id": 1, "question": "q?",
                              "answers": [{"answer": "yes", "answer_id": 1}]}) + "\n")
    with pytest.raises(VQAError, match="question '7' has an answers entry that is not text"):
        load_table(jl)
    csv = tmp_path / "t.csv"  # the same in a CSV cell, and a null answer
    for cell in ('"[{""answer"": ""yes""}]"', '"[""yes"", null]"'):
        csv.write_text(f"question_id,image_id,question,answers\n8,1,q?,{cell}\n")
        with pytest.raises(VQAError, match="question '8' has an answers entry that is not"):
            load_table(csv)
    nested = pd.DataFrame({"question_id": [1], "image_id": [1], "question": ["q?"],
                           "answers": [["a"]], "objects": [[["cat"]]]})  # fmt: skip
    with pytest.raises(VQAError, match="question '1' has an objects entry that is not text"):
        make_table(nested)


def test_bad_tables_and_data():
    with pytest.raises(VQAError, match="missing field.*question"):
        make_table(pd.DataFrame({"question_id": [1], "image_id": [1], "answers": [["a"]]}))
    dup = pd.DataFrame({"question_id": [1, 1], "image_id": [1, 2], "question": ["a", "b"],
                        "answers": [["x"], ["y"]]})  # fmt: skip
    with pytest.raises(VQAError, match="1 duplicate question id.*'1'"):
        make_table(dup)
    with pytest.raises(VQAError, match="valid choices: easy-vqa"):
        load_table("data.parquet")
    with pytest.raises(DataNotFoundError, match="'missing.csv' does not exist"):
        load_table("missing.csv")


def test_easy_vqa_ids_namespaced_and_attributes_consistent():
    t = load_easy_vqa()
    assert t["question_id"].is_unique
    assert {i.split("/")[0] for i in t["image_id"]} == {"train", "test"}
    assert "train/0" in set(t["image_id"]) and "test/0" in set(t["image_id"])
    # the recovered shape/colour must agree with every open question's answer
    shape_q = t["answer"].isin(["circle", "rectangle", "triangle"])
    assert (t.loc[shape_q, "answer"] == t.loc[shape_q, "shape"]).all()
    color_q = ~shape_q & ~t["answer"].isin(["yes", "no"])
    assert (t.loc[color_q, "answer"] == t.loc[color_q, "color"]).all()


def test_easy_vqa_is_read_once_per_process_and_callers_cannot_change_it(monkeypatch):
    import copy

    first = load_easy_vqa(50)
    expected = copy.deepcopy(first.to_dict("list"))

    def no_second_read(path: str) -> None:
        raise AssertionError(f"image read again: {path}")

    monkeypatch.setattr("shortcutlab.vqa.loaders._pixel_features", no_second_read)
    first["answers"].iloc[0].append("changed")  # a caller changes its own copy in place
    first["objects"].iloc[1].clear()
    first.loc[0, "answer"] = "changed"
    again = load_easy_vqa(50)
    assert again.to_dict("list") == expected
    assert len(load_easy_vqa(60)) == 60 and load_easy_vqa(60).iloc[:50].equals(again)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    table = make_table(colour_questions(600, lambda ans: [ans] * 8 + ["red"] * 2,
                                        objects=True))
    out = tmp_path_factory.mktemp("splits")
    write_splits(build_splits(table), out, figures=False)
    return table, out


def test_score_splits_values_and_errors(built):
    table, out = built
    s = read_samples(out)
    test = s[s["split"] == "test"]
    truth = dict(zip(test["question_id"], test["answer"], strict=True))
    r = score_splits(s, truth)
    assert r["iid"] == pytest.approx(1.0)  # the majority answer has 8 of 10 votes: a fraction
    assert set(r) >= {"iid", "ood", "ood_mean", "head", "tail", "gap", "counts"}
    wrong = dict.fromkeys(truth, "nothing")
    assert score_splits(s, wrong)["iid"] == 0.0
    partial = dict(list(truth.items())[:-3])
    with pytest.raises(VQAError, match="3 of .* have no prediction.*count-missing-wrong"):
        score_splits(s, partial)
    r2 = score_splits(s, partial, count_missing_wrong=True)
    assert r2["missing"] == 3
    assert r2["iid"] == pytest.approx((len(truth) - 3) / len(truth))
    with pytest.raises(VQAError, match="1 prediction.*unknown question ids: 'zzz'"):
        score_splits(s, {**truth, "zzz": "a"})
    with pytest.raises(VQAError, match="duplicate question id"):
        parse_predictions([{"question_id": 1, "answer": "a"}, {"question_id": 1, "answer": "b"}])
    with pytest.raises(VQAError, match="lacks question_id or answer"):
        parse_predictions([{"question_id": 1}])


def test_score_table_any_question_set(built):
    table, _ = built
    preds = dict(zip(table["question_id"], table["answer"], strict=True))
    r = score_table(table, preds)
    assert r["overall"] == pytest.approx(1.0) and r["count"] == len(table)


def test_cli_build_and_score(tmp_path):
    rows = [{"question_id": i, "image_id": i % 50, "question": f"is the {w} big?",
             "answers": json.dumps([a] * 10)}
            for i, (w, a) in enumerate((["dog", "cat"][i % 2], ["yes", "no"][i % 7 == 0])
                                       for i in range(400))]  # fmt: skip
    csv = tmp_path / "d.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    runner = CliRunner()
    res = runner.invoke(app, ["vqa", "build", "--data", str(csv), "--out", str(tmp_path / "o"),
                              "--no-figures"])  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o" / "build.json").read_text())
    preds = [{"question_id": q, "answer": "yes"}
             for q in json.loads((tmp_path / "o" / "splits.json").read_text())["test"]]
    (tmp_path / "p.json").write_text(json.dumps(preds))
    res = runner.invoke(app, ["vqa", "score", str(tmp_path / "p.json"), "--splits",
                              str(tmp_path / "o"), "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) >= {"iid", "ood", "ood_mean", "head", "tail"}
    assert summary["sizes"]["test"] == out["counts"]["iid"] == 100
    res = runner.invoke(app, ["vqa", "score", str(tmp_path / "p.json"), "--data", str(csv)])
    assert res.exit_code == 2 and "have no prediction" in res.output
    res = runner.invoke(app, ["vqa", "build", "--data", str(csv), "--out", str(tmp_path / "x"),
                              "--mode", "nope"])  # fmt: skip
    assert res.exit_code == 2 and "valid choices: pmi, agnostic" in res.output


def test_split_folder_files_and_incomplete_folder(built, tmp_path):
    _, out = built
    names = {p.name for p in out.iterdir()}
    assert {"samples.parquet", "splits.json", "statistics.csv", "jaccard.csv",
            "coincidence.csv", "imbalance.csv", "build.json"} <= names  # fmt: skip
    index = json.loads((out / "splits.json").read_text())
    assert set(index["ood"]) == set(index["head"]) and len(index["ood"]) == 9
    assert not set(index["train"]) & set(index["test"])
    with pytest.raises(DataNotFoundError, match="not a complete VQA-VS split folder"):
        read_samples(tmp_path)


def test_vqa_json_bad_inputs_name_the_problem(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps({"questions": QUESTIONS}))
    (tmp_path / "a1.json").write_text(json.dumps({"annotations": ANSWERS[:1]}))
    with pytest.raises(VQAError, match="1 question\\(s\\) have no annotation: 101"):
        load_table([tmp_path / "q.json", tmp_path / "a1.json"])
    (tmp_path / "dup.json").write_text(json.dumps({"annotations": ANSWERS + ANSWERS[:1]}))
    with pytest.raises(VQAError, match="annotations: 1 duplicate question id.*100"):
        load_table([tmp_path / "q.json", tmp_path / "dup.json"])
    (tmp_path / "other.json").write_text(json.dumps({"images": []}))
    with pytest.raises(VQAError, match="unrecognised JSON content; valid choices: VQA questions"):
        load_table([tmp_path / "q.json", tmp_path / "other.json"])
    with pytest.raises(VQAError, match="no annotations file"):
        load_table(tmp_path / "q.json")
    noq = [{k: v for k, v in q.items() if k != "question"} for q in QUESTIONS]
    (tmp_path / "noq.json").write_text(json.dumps({"questions": noq}))
    (tmp_path / "a.json").write_text(json.dumps({"annotations": ANSWERS}))
    with pytest.raises(VQAError, match="missing field\\(s\\) question;"):
        load_table([tmp_path / "noq.json", tmp_path / "a.json"])


def test_vqa_json_answer_objects_without_text_are_refused(tmp_path):
    # an answer object without "answer" raised a KeyError traceback; one whose answer is
    # null became the answer "None"
    (tmp_path / "q.json").write_text(json.dumps({"questions": QUESTIONS}))
    for name, bad in (("nokey", {"answer_id": 1}), ("null", {"answer": None, "answer_id": 1})):
        ann = [dict(ANSWERS[0]), ANSWERS[1]]
        ann[0]["answers"] = [bad] + ANSWERS[0]["answers"][1:]
        (tmp_path / f"{name}.json").write_text(json.dumps({"annotations": ann}))
        with pytest.raises(VQAError, match="question 100 has an answer that is not text"):
            load_table([tmp_path / "q.json", tmp_path / f"{name}.json"])


def test_coco_instances_with_an_unknown_category_are_refused(tmp_path):
    # an instance whose category_id is not among the categories raised a KeyError traceback
    (tmp_path / "q.json").write_text(json.dumps({"questions": QUESTIONS}))
    (tmp_path / "a.json").write_text(json.dumps({"annotations": ANSWERS}))
    (tmp_path / "i.json").write_text(json.dumps({
        "categories": [{"id": 1, "name": "cat"}],
        "annotations": [{"image_id": 10, "category_id": 1}, {"image_id": 11, "category_id": 99}],
    }))  # fmt: skip
    with pytest.raises(VQAError, match="i.json: instance 1 has category_id 99, which is not "
                                       "among the 1 categories"):
        load_table([tmp_path / "q.json", tmp_path / "a.json", tmp_path / "i.json"])


def test_easy_vqa_pixels_recover_hidden_shape_and_colour():
    import easy_vqa

    from shortcutlab.vqa.loaders import _fill_from_pixels, _mine_attributes

    texts, answers, images = easy_vqa.get_train_questions()
    mined = _mine_attributes(texts, answers, images)
    full = sorted(k for k, v in mined.items() if len(v) == 2)[:400]
    paths = easy_vqa.get_train_image_paths()
    hidden = set(full[::4])
    known = {k: ({} if k in hidden else dict(mined[k])) for k in full}
    filled = _fill_from_pixels(known, {k: paths[k] for k in full})
    for attr in ("shape", "color"):
        hits = sum(filled[k][attr] == mined[k][attr] for k in hidden)
        assert hits >= 0.97 * len(hidden), attr  # measured on all 4,000 images: >= 99.6 %


def test_predictions_must_have_usable_answers():
    with pytest.raises(VQAError, match="entry 1 \\(question_id 2\\) has answer None"):
        parse_predictions([{"question_id": 1, "answer": "a"}, {"question_id": 2, "answer": None}])
    assert parse_predictions({"5": 2}) == {"5": "2"}
    with pytest.raises(VQAError, match="expected a dict .*, a list of .* records, a DataFrame"):
        parse_predictions("yes")


def test_ood_head_and_tail_scores_are_means_over_their_sets(built):
    _, out = built
    s = read_samples(out)
    test = s[s["split"] == "test"]
    preds = dict.fromkeys(test["question_id"], "yellow")
    r = score_splits(s, preds)
    for k in ("QT", "KW", "KO"):
        for part, key in (("tail", "ood"), ("head", "head")):
            rows = test[test[f"{part}:{k}"]]
            if len(rows):
                # eight of the ten human answers are the label: all or nothing per question
                expected = np.mean([a.count("yellow") == 8 for a in rows["answers"]])
                assert r[key][k] == pytest.approx(expected)
                assert r["counts"][key][k] == len(rows)
    valid = [v for v in r["ood"].values() if v is not None]
    assert r["ood_mean"] == pytest.approx(np.mean(valid))
    assert r["gap"] == pytest.approx(r["iid"] - r["ood_mean"])


def test_cli_baselines_and_score_on_any_question_set(built, tmp_path):
    table, out = built
    runner = CliRunner()
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(out), "--out",
                              str(tmp_path / "b")])  # fmt: skip
    assert res.exit_code == 0, res.output
    preds = json.loads((tmp_path / "b" / "predictions-question-type-prior.json").read_text())
    scores = json.loads((tmp_path / "b" / "scores.json").read_text())
    assert set(scores) == {"answer-prior", "question-type-prior", "keyword-prior"}
    s = read_samples(out)
    mine = score_splits(s, {p["question_id"]: p["answer"] for p in preds})
    assert scores["question-type-prior"]["iid"] == pytest.approx(mine["iid"])
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(out), "--out",
                              str(tmp_path / "j"), "--model", "answer-prior",
                              "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["answer-prior"] == scores["answer-prior"]  # fractions
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(out), "--out",
                              str(tmp_path / "c"), "--inject", "color:shape"])  # fmt: skip
    assert res.exit_code == 2 and "must look like ATTR_A:ATTR_B:STRENGTH" in res.output
    res = runner.invoke(app, ["vqa", "baselines", "--splits", str(out), "--out",
                              str(tmp_path / "c"), "--inject", "color:shape:0.9"])  # fmt: skip
    assert res.exit_code == 2 and "add --model cnn-bow" in res.output
    # --data: score any annotated question set (here the whole table, answered perfectly)
    csv = tmp_path / "all.csv"
    t = table.assign(answers=[json.dumps(a) for a in table["answers"]],
                     objects=[json.dumps(o) for o in table["objects"]])  # fmt: skip
    t.to_csv(csv, index=False)
    perfect = [{"question_id": q, "answer": a}
               for q, a in zip(table["question_id"], table["answer"], strict=True)]  # fmt: skip
    (tmp_path / "perfect.json").write_text(json.dumps(perfect))
    res = runner.invoke(app, ["vqa", "score", str(tmp_path / "perfect.json"), "--data", str(csv),
                              "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["overall"] == pytest.approx(1.0)
    res = runner.invoke(app, ["vqa", "score", str(tmp_path / "perfect.json"), "--splits",
                              str(out), "--data", str(csv)])  # fmt: skip
    assert res.exit_code == 2
    assert "exactly one of --release DIR, --splits DIR or --data" in res.output


def test_a_rebuild_that_fails_midway_is_not_read_as_a_complete_folder(built, tmp_path,
                                                                        monkeypatch):
    """build.json marks a complete folder: a rebuild into an existing folder that fails after
    samples.parquet (a full disk) must not leave the old marker beside the new samples."""
    import shortcutlab.vqa.store as store

    table, _ = built
    splits = build_splits(table)
    out = tmp_path / "splits"
    write_splits(splits, out, figures=False)
    assert len(read_samples(out)) == len(table)

    def full_disk(path, *args, **kwargs):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(store, "write_json", full_disk)  # splits.json, after samples.parquet
    with pytest.raises(OSError, match="No space left"):
        write_splits(splits, out, figures=False)
    with pytest.raises(DataNotFoundError, match="not a complete VQA-VS split folder"):
        read_samples(out)


@pytest.mark.parametrize("text, match", [
    # pandas pads a short row: here its objects would become an empty list, silently (a
    # partial table)
    ("question_id,image_id,question,answers,objects\n1,a,Is it red?,yes,cat\n2,b,Is it?,no\n",
     "row 3 has 4 field\\(s\\), the header 5"),
    # rows all one field longer: pandas reads them without a word, the first column becoming
    # the index, every value shifted one column left (question_id <- image_id, ...)
    ("question_id,image_id,question,answers\n1,a,Is it red?,yes,extra\n2,b,Is it?,no,more\n",
     "row 2 has 5 field\\(s\\), the header 4"),
])
def test_a_csv_row_whose_fields_do_not_match_the_header_is_refused(tmp_path, text, match):
    """Refused, naming the row, instead of counted."""
    csv = tmp_path / "t.csv"
    csv.write_text(text)
    with pytest.raises(VQAError, match=match):
        load_table(csv)


def test_an_empty_csv_objects_cell_is_no_object_and_empty_items_are_dropped(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("question_id,image_id,question,answers,objects\n"
                   "1,a,Is it red?,yes,\n2,b,Is it?,no|no,cat||dog\n")
    t = load_table(csv)
    assert t["objects"].tolist() == [[], ["cat", "dog"]]  # not [''] nor an object ''
    assert t["answers"].tolist() == [["yes"], ["no", "no"]]


def test_vqa_json_boolean_answers_are_refused_not_turned_into_true(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps({"questions": QUESTIONS}))
    ann = [dict(ANSWERS[0]), ANSWERS[1]]
    ann[0]["answers"] = [{"answer": True, "answer_id": 1}] + ANSWERS[0]["answers"][1:]
    (tmp_path / "a.json").write_text(json.dumps({"annotations": ann}))
    with pytest.raises(VQAError, match="question 100 has an answer that is not text"):
        load_table([tmp_path / "q.json", tmp_path / "a.json"])


def test_split_index_ood_and_head_sets_are_the_test_rows_of_each_part(built):
    """splits.json's OOD test sets (what a user scores on, Table 2) hold test questions only,
    exactly the test rows flagged tail (head likewise); build.json's ood_sizes are their
    sizes. The train and val splits have tails of their own, which must not leak in."""
    _, out = built
    s = read_samples(out)
    index = json.loads((out / "splits.json").read_text())
    summary = json.loads((out / "build.json").read_text())
    test = s["split"] == "test"
    other_tails = 0
    for k in index["ood"]:
        for part in ("ood", "head"):
            flag = s[f"{'tail' if part == 'ood' else 'head'}:{k}"]
            assert index[part][k] == s.loc[test & flag, "question_id"].tolist(), (part, k)
            assert set(index[part][k]) <= set(index["test"])
        assert summary["ood_sizes"][k] == len(index["ood"][k])
        other_tails += int((~test & s[f"tail:{k}"]).sum())
    assert other_tails > 0  # the check has something to leave out
