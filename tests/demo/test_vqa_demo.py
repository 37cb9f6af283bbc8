"""The `shortcutlab demo` VQA stage, on a prefix of easy-VQA and one epoch (a smoke test)."""

import json

import pytest
from rich.console import Console

from shortcutlab.demo.vqa import run_demo
from shortcutlab.vqa.concepts import SHORTCUTS


@pytest.mark.slow
def test_demo_stage_writes_splits_scores_and_report(tmp_path):
    lines = run_demo(tmp_path, Console(quiet=True), epochs=1, max_questions=3000)
    assert len(lines) == 4 and "3,000 questions" in lines[0]
    assert (tmp_path / "splits" / "build.json").exists()
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert set(scores) == {"answer-prior", "question-type-prior", "keyword-prior", "cnn-bow",
                           "cnn-bow+color~shape"}  # fmt: skip
    for r in scores.values():
        assert 0.0 <= r["iid"] <= 1.0 and set(r["ood"]) == set(SHORTCUTS)  # fractions
        assert r["counts"]["iid"] == 750  # 25 % of 3,000
    # the question-type prior is at least as good as the global answer prior on IID data
    assert scores["question-type-prior"]["iid"] >= scores["answer-prior"]["iid"]
    # the summary names the model with the highest IID score, and that score in percent
    best = max(scores, key=lambda m: scores[m]["iid"])
    assert f"best IID: {best} {100 * scores[best]['iid']:.1f} %" in lines[1]
    html = (tmp_path / "index.html").read_text()
    for text in ("Statistics (cf. paper Table 1)", "Baselines", "acc-head and acc-tail",
                 "Relations between shortcuts", "<img", "Planted shortcuts"):  # fmt: skip
        assert text in html
    planted = json.loads((tmp_path / "planted.json").read_text())
    assert planted["max_overlap"] <= 0.05  # nine distinct OOD sets
    for k in SHORTCUTS:
        assert planted["accuracy"][f"{k} prior"][k] == 0.0
