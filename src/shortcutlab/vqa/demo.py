"""Demo stage for VQA-VS: build the splits on easy-VQA, score the baselines, write a report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console

from shortcutlab.report.html import HtmlReport
from shortcutlab.utils.io import write_json
from shortcutlab.vqa.baselines import (
    PRIORS,
    CnnBowConfig,
    inject_correlation,
    prior_predictions,
    train_cnn_bow,
)
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.evaluate import score_splits
from shortcutlab.vqa.figures import accuracy_bars, heatmap, imbalance_bars
from shortcutlab.vqa.loaders import load_easy_vqa
from shortcutlab.vqa.splits import build_splits
from shortcutlab.vqa.store import write_splits

__all__ = ["run_demo"]


def run_demo(
    out_dir: Path, console: Console, epochs: int = 2, max_questions: int | None = None
) -> list[str]:
    """Build VQA-VS splits for easy-VQA and score the priors and a small CNN + bag of words,
    once on the natural training split and once with colour <-> shape correlated (p = 0.9).

    ``max_questions`` keeps a prefix of easy-VQA (for quick checks)."""
    out_dir = Path(out_dir)
    console.print("loading easy-VQA and building VQA-VS splits")
    table = load_easy_vqa(max_questions)
    splits = build_splits(table)
    write_splits(splits, out_dir / "splits")
    samples = splits.samples
    train_ids, test_ids = splits.ids("train"), splits.ids("test")
    runs: dict[str, dict[str, str]] = {}
    for name in PRIORS:
        runs[name] = prior_predictions(samples, name)
    console.print(f"training cnn-bow ({epochs} epoch(s)) on {len(train_ids):,} questions")
    runs["cnn-bow"] = train_cnn_bow(table, train_ids, test_ids, CnnBowConfig(epochs=epochs))
    console.print("training cnn-bow with an injected colour <-> shape correlation (p = 0.9)")
    biased = inject_correlation(table, train_ids, "color", "shape", 0.9, seed=0)
    runs["cnn-bow+color~shape"] = train_cnn_bow(
        table, biased, test_ids, CnnBowConfig(epochs=epochs)
    )
    scores = {name: score_splits(samples, preds) for name, preds in runs.items()}
    write_json(out_dir / "scores.json", scores)
    rows = []
    for name, r in scores.items():
        rows.append({"model": name, "IID": r["iid"], **r["ood"], "OOD mean": r["ood_mean"],
                     "gap": r["gap"]})  # fmt: skip
    table_df = pd.DataFrame(rows).set_index("model")
    report = HtmlReport("VQA-VS on easy-VQA")
    report.paragraph(
        "Nine shortcut-specific OOD test sets built with the VQA-VS procedure (concepts by "
        "pointwise mutual information, imbalanced groups below normalised entropy 0.9, tail "
        "answers below 1.2 x the mean count). Accuracies are the official VQA accuracy in %."
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
    bars = {m: {"IID": r["iid"], **r["ood"]} for m, r in scores.items()}
    report.figure(accuracy_bars(bars), "IID and OOD accuracy per baseline")
    plain, biased_r = scores["cnn-bow"], scores["cnn-bow+color~shape"]
    report.paragraph(
        f"The planted colour-shape correlation changes cnn-bow's IID accuracy by "
        f"{biased_r['iid'] - plain['iid']:+.1f} points, its OOD mean by "
        f"{biased_r['ood_mean'] - plain['ood_mean']:+.1f} and its KO OOD accuracy by "
        f"{biased_r['ood']['KO'] - plain['ood']['KO']:+.1f}. On the question-type OOD set "
        f"(QT: rare answers of a question type) cnn-bow scores {plain['ood']['QT']:.1f} % "
        f"against {plain['iid']:.1f} % IID"
        + (": it answers many questions from their type, not from the image (language prior)."
           if plain["ood"]["QT"] < plain["iid"] / 2 else ".")
    )  # fmt: skip
    report.heading("acc-head and acc-tail (cnn-bow)", level=3)
    head_tail = pd.DataFrame(
        {
            f"{col} {part}": scores[m][part]
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
    report.write(out_dir / "report.html")
    best = max(scores, key=lambda m: scores[m]["iid"])
    console.print(table_df.round(2).to_string())
    return [
        f"VQA-VS splits for easy-VQA ({len(samples):,} questions, "
        f"{len(SHORTCUTS)} OOD sets) in {out_dir / 'splits'}",
        f"baseline scores in {out_dir / 'scores.json'}; best IID: {best} "
        f"{scores[best]['iid']:.1f} % (OOD mean {scores[best]['ood_mean']:.1f} %)",
        f"report: {out_dir / 'report.html'}",
    ]
