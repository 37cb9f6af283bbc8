"""Demo stage for VQA-VS: build the splits on easy-VQA, score the baselines, write a report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console

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
from shortcutlab.vqa.loaders import load_easy_vqa
from shortcutlab.vqa.planted import planted_study
from shortcutlab.vqa.report import baseline_table, write_baseline_report
from shortcutlab.vqa.splits import build_splits
from shortcutlab.vqa.store import write_splits

__all__ = ["run_demo", "terminal_table"]

TERMINAL_WIDTH = 80


def terminal_table(frame: pd.DataFrame, width: int = TERMINAL_WIDTH) -> str:
    """``frame`` (percentages) with one decimal, its columns wrapped into blocks that fit
    ``width`` columns (a terminal's 80 by default), instead of lines the terminal folds."""
    return frame.to_string(float_format="{:.1f}".format, line_width=width - 1)


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
    console.print("planted shortcuts: synthetic VQA, one population per shortcut, nine priors")
    planted = planted_study(per_population=1280)
    coi = planted["splits"].coincidence.to_numpy()
    overlap = float(np.nanmax(np.where(np.eye(len(coi), dtype=bool), np.nan, coi)))
    write_json(out_dir / "planted.json", {
        "population": planted["population"].to_dict(orient="index"),
        "accuracy": planted["accuracy"].to_dict(orient="index"),
        "max_overlap": overlap,
    })  # fmt: skip
    html = write_baseline_report(splits, scores, out_dir / "index.html", planted)
    table_df = baseline_table(scores)
    best = max(scores, key=lambda m: scores[m]["iid"])
    console.print(terminal_table(table_df))
    return [
        f"VQA-VS splits for easy-VQA ({len(samples):,} questions, "
        f"{len(SHORTCUTS)} OOD sets) in {out_dir / 'splits'}",
        f"baseline scores in {out_dir / 'scores.json'}; best IID: {best} "
        f"{table_df.loc[best, 'IID']:.1f} % (OOD mean {table_df.loc[best, 'OOD mean']:.1f} %)",
        f"planted shortcuts: nine OOD sets with at most {overlap:.0%} overlap; each shortcut's "
        f"prior scores 0 on its own set only ({out_dir / 'planted.json'})",
        f"report: {html}",
    ]
