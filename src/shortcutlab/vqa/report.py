"""The VQA-VS report: split statistics, baseline accuracies IID and per OOD set, relations
between the shortcuts (cf. the paper's Tables 1-2 and Figures 3-4)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from shortcutlab.utils.html import HtmlReport
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.figures import accuracy_bars, heatmap, imbalance_bars
from shortcutlab.vqa.splits import VQASplits

__all__ = ["baseline_table", "write_baseline_report"]


def _pct(value: float | None) -> float:
    return float("nan") if value is None else 100.0 * value


def baseline_table(scores: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per model, in percent for display: IID, each OOD set, the OOD mean and the gap
    (``score_splits`` results, which hold fractions)."""
    rows = []
    for name, r in scores.items():
        row = {"IID": r["iid"], **r["ood"], "OOD mean": r["ood_mean"], "gap": r["gap"]}
        rows.append({"model": name, **{k: _pct(v) for k, v in row.items()}})
    return pd.DataFrame(rows).set_index("model")


def _planted_section(report: HtmlReport, study: Mapping[str, Any]) -> None:
    """The planted-shortcut study (:func:`shortcutlab.vqa.planted.planted_study`)."""
    report.heading("Planted shortcuts: nine OOD sets, nine populations")
    report.paragraph(
        "easy-VQA cannot show nine different shortcuts: its key-object set is all colour "
        "questions, its keyword set all shape questions, three sets are all yes/no questions, "
        "and a yes/no question's key object is decided by its answer (see the coincidence "
        "matrix above). This synthetic VQA plants each shortcut in its own population (only "
        "that shortcut's concept predicts the answer, 80 % majority; composite shortcuts as "
        "Latin squares, so their parts alone are balanced), with answer-independent concepts. "
        "Rows: OOD test set; columns: the planted population of its questions (share)."
    )
    report.table(study["population"], float_format="{:.2f}")
    splits = study["splits"]
    report.figure(heatmap(splits.coincidence, "Coincidence of planted OOD sets", "ratio"),
                  "Row A, column B: |A ∩ B| / |A| (off-diagonal: overlap)")  # fmt: skip
    report.paragraph(
        "Each 'S prior' answers with the majority training answer of the question's S concept "
        "(a model that learnt shortcut S and nothing else). Accuracy in %: it scores 0 on its "
        "own OOD set (which holds exactly the answers S does not predict) and its usual level "
        "on the other sets, where S carries no information."
    )
    report.table(100.0 * study["accuracy"], float_format="{:.1f}")


def write_baseline_report(
    splits: VQASplits,
    scores: Mapping[str, Mapping[str, Any]],
    path: str | Path,
    planted: Mapping[str, Any] | None = None,
) -> Path:
    """The HTML report of the easy-VQA baselines ``cnn-bow`` and ``cnn-bow+color~shape`` (plus
    any priors) on ``splits``, and of the planted-shortcut study when given; returns its
    path."""
    table_df = baseline_table(scores)
    report = HtmlReport("VQA-VS on easy-VQA")
    report.paragraph(
        "Nine shortcut-specific OOD test sets built with the VQA-VS procedure (concepts by "
        "pointwise mutual information, imbalanced groups below normalised entropy 0.9, tail "
        "answers below 1.2 x the mean count). Accuracies are the official VQA accuracy, shown in %."
    )
    report.heading("Statistics (cf. paper Table 1)")
    report.table(splits.statistics.set_index("shortcut"), float_format="{:.0f}")
    report.heading("Baselines")
    report.paragraph(
        "answer-prior: the most frequent training answer; question-type-prior: the most "
        "frequent training answer of the question type; keyword-prior: the majority answer of "
        "the question's most telling word within its type; cnn-bow: a small CNN on the image "
        "plus a bag of words of the question, trained on CPU; cnn-bow+color~shape: the same, "
        "trained on a training split resampled (seeded) so that 90 % of its questions show a "
        "matched colour-shape pair, a planted visual shortcut. Columns QT ... QT+KW+KO are the "
        "nine OOD test sets; gap = IID - OOD mean."
    )
    report.table(table_df, float_format="{:.2f}")
    bars = {m: {"IID": _pct(r["iid"]), **{s: _pct(v) for s, v in r["ood"].items()}}
            for m, r in scores.items()}  # fmt: skip
    report.figure(accuracy_bars(bars), "IID and OOD accuracy per baseline")
    plain, biased_r = table_df.loc["cnn-bow"], table_df.loc["cnn-bow+color~shape"]
    report.paragraph(
        f"The planted colour-shape correlation changes cnn-bow's IID accuracy by "
        f"{biased_r['IID'] - plain['IID']:+.1f} points, its OOD mean by "
        f"{biased_r['OOD mean'] - plain['OOD mean']:+.1f} and its KO OOD accuracy by "
        f"{biased_r['KO'] - plain['KO']:+.1f}. On the question-type OOD set "
        f"(QT: rare answers of a question type) cnn-bow scores {plain['QT']:.1f} % "
        f"against {plain['IID']:.1f} % IID"
        + (": it answers many questions from their type, not from the image (language prior)."
           if plain["QT"] < plain["IID"] / 2 else ".")
    )  # fmt: skip
    report.heading("acc-head and acc-tail (cnn-bow)", level=3)
    head_tail = pd.DataFrame(
        {
            f"{col} {part}": {s: _pct(v) for s, v in scores[m][part].items()}
            for m, col in (("cnn-bow", "plain"), ("cnn-bow+color~shape", "injected"))
            for part in ("head", "tail")
        }
    ).reindex(list(SHORTCUTS))
    report.table(head_tail, float_format="{:.2f}")
    report.heading("Relations between shortcuts")
    report.figure(heatmap(splits.jaccard, "Jaccard of head splits (train)", "Jaccard"),
                  "Jaccard similarity of the head splits on train")  # fmt: skip
    report.figure(heatmap(splits.coincidence, "Coincidence of OOD sets", "ratio"),
                  "Row A, column B: |A ∩ B| / |A|")  # fmt: skip
    report.figure(imbalance_bars(splits.imbalance), "Imbalance degree E per shortcut")
    if planted is not None:
        _planted_section(report, planted)
    return report.write(path)
