"""Validate the VQA accuracy against the official evaluation code's figure on real data.

Scores each question's ``multiple_choice_answer`` as the prediction over all 32,723 questions of
the VQA-VS validation split (../shared/data/vqa-vs/Val.zip). The official VQA evaluation code
gives 96.3384 %. Also times the loader and the scoring.

    .venv/bin/python benchmarks/validate_vqa_accuracy.py [--zip PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

EXPECTED = 96.3384
DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "vqa-vs" / "Val.zip"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zip", type=Path, default=DEFAULT, help="path to VQA-VS Val.zip")
    args = ap.parse_args()
    if not args.zip.exists():
        print(
            f"SKIPPED: reference data {args.zip} is absent. Place the VQA-VS Val.zip there "
            "(from the VQA-VS authors' repository, PhoebusSi/VQA-VS) or pass --zip PATH."
        )
        return 0
    from shortcutlab.vqa.evaluate import score_table
    from shortcutlab.vqa.loaders import load_table

    t0 = time.perf_counter()
    table = load_table(args.zip)
    t1 = time.perf_counter()
    preds = dict(zip(table["question_id"], table["answer"], strict=True))
    result = score_table(table, preds)
    t2 = time.perf_counter()
    acc = result["overall"]
    print(f"questions      : {result['count']:,}")
    print(f"load           : {t1 - t0:.2f} s")
    print(f"score          : {t2 - t1:.2f} s")
    print(f"accuracy       : {acc:.4f} %  (official evaluation code: {EXPECTED:.4f} %)")
    ok = result["count"] == 32_723 and round(acc, 4) == EXPECTED
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
