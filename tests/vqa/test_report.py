"""The VQA-VS baseline report (``shortcutlab demo``'s VQA stage): its tables in percent, the
acc-head and acc-tail columns each from their own scores."""

from __future__ import annotations

import math

import pytest

from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.report import baseline_table, write_baseline_report
from shortcutlab.vqa.splits import build_splits
from shortcutlab.vqa.table import make_table
from tests.vqa.colour_questions import colour_questions


def _scores(iid: float, ood: float, head: float, tail: float) -> dict[str, object]:
    """score_splits-shaped results (fractions), one value per kind of set."""
    return {"iid": iid, "ood": dict.fromkeys(SHORTCUTS, ood), "ood_mean": ood, "gap": iid - ood,
            "head": dict.fromkeys(SHORTCUTS, head), "tail": dict.fromkeys(SHORTCUTS, tail)}


def test_baseline_table_is_in_percent_one_row_per_model():
    table = baseline_table({"a": _scores(0.625, 0.25, 0.5, 0.25),
                            "b": _scores(0.5, 0.125, 0.5, 0.125)})
    assert list(table.index) == ["a", "b"]
    assert list(table.columns) == ["IID", *SHORTCUTS, "OOD mean", "gap"]
    assert table.loc["a", "IID"] == pytest.approx(62.5)
    assert table.loc["a", "OOD mean"] == pytest.approx(25.0)
    assert table.loc["a", "gap"] == pytest.approx(62.5 - 25.0)
    assert table.loc["b", list(SHORTCUTS)].tolist() == pytest.approx([12.5] * len(SHORTCUTS))


def test_an_empty_ood_set_is_blank_in_the_table_not_zero_percent():
    # score_splits gives an empty OOD set None; 0 % would read as a model that failed on it
    scores = _scores(0.5, 0.25, 0.5, 0.25)
    scores["ood"] = {**scores["ood"], "KO": None}
    row = baseline_table({"a": scores}).loc["a"]
    assert math.isnan(row["KO"]) and row["KW"] == pytest.approx(25.0)


def test_head_and_tail_columns_each_show_their_own_accuracy(tmp_path):
    splits = build_splits(make_table(colour_questions(300, lambda ans: [ans] * 10)))
    # values found nowhere else in the page: 0.4321 -> "43.21", ...
    scores = {"cnn-bow": _scores(0.9, 0.3, 0.4321, 0.1234),
              "cnn-bow+color~shape": _scores(0.8, 0.2, 0.5678, 0.0876)}
    html = write_baseline_report(splits, scores, tmp_path / "index.html").read_text()
    section = html.split("acc-head and acc-tail")[1].split("Relations between shortcuts")[0]
    for value in ("43.21", "12.34", "56.78", "8.76"):
        assert section.count(value) == len(SHORTCUTS), value
