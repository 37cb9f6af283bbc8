"""VQA scores that read well in a notebook (issue 34), still the documented plain dict."""

from __future__ import annotations

import json

import pytest

from shortcutlab.vqa import BuildConfig, build_splits, load_easy_vqa, score_splits
from shortcutlab.vqa.evaluate import VQAScores


def test_scores_print_their_headline_and_stay_a_dict() -> None:
    splits = build_splits(load_easy_vqa(max_questions=1200), BuildConfig(seed=0))
    test = splits.samples[splits.samples["split"] == "test"]
    result = score_splits(splits.samples, {q: "yes" for q in test["question_id"]})
    assert isinstance(result, VQAScores) and isinstance(result, dict)
    assert json.loads(json.dumps(result)) == dict(result)
    text = str(result)
    assert text.startswith("VQA accuracy on the test split (official metric")
    rows = {ln.rsplit(None, 1)[0]: ln.rsplit(None, 1)[1] for ln in text.splitlines()[2:-1]}
    assert float(rows["iid"]) == pytest.approx(result["iid"], abs=5e-4)
    assert float(rows["gap"]) == pytest.approx(result["gap"], abs=5e-4)
    assert [k.removeprefix("ood: ") for k in rows if k.startswith("ood: ")] == list(result["ood"])
    assert len(text.splitlines()) == 3 + 6 + 9  # title, header, 6 headline rows, 9 OOD sets
    assert "<table" in result._repr_html_()
