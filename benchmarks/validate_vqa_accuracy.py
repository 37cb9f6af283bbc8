"""Validate both VQA metrics against known figures on real data (VQA-VS ``Val.zip``).

Over all 32,723 questions of the VQA-VS validation split (../shared/data/vqa-vs/Val.zip), three
kinds of clean predictions and one unnormalised one are scored with the ``official`` metric and
with the authors' ``vqa-vs`` scorer (no vocabulary: the release's training split is not at hand):

* each question's ``multiple_choice_answer`` (official evaluation code: 96.3384 %);
* always "yes";
* the question-type prior: the most frequent multiple-choice answer of the question's
  ``question_type`` on Val itself (ties to the answer seen first in the file);
* the multiple-choice answer upper-cased with "!" appended (unnormalised output).

Expected, to four decimals (the issue's figures; official 96.3384 from the official code):
vqa-vs 97.3556 / 24.6178 / 33.3466, official 96.3384 / 24.1974 / 32.7977; unnormalised
0.0010 (vqa-vs) vs 63.4960 (official). Also times the loader and the scoring.

    .venv/bin/python benchmarks/validate_vqa_accuracy.py [--zip PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "vqa-vs" / "Val.zip"
# prediction -> (official %, vqa-vs %)
EXPECTED = {
    "multiple-choice answer": (96.3384, 97.3556),
    'always "yes"': (24.1974, 24.6178),
    "question-type prior": (32.7977, 33.3466),
    'upper case + "!"': (63.4960, 0.0010),
}


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
    from shortcutlab.vqa import load_table, score_table

    t0 = time.perf_counter()
    table = load_table(args.zip)
    t1 = time.perf_counter()
    ids = table["question_id"].tolist()
    mc = table["answer"].tolist()
    prior = {
        qt: Counter(answers).most_common(1)[0][0]
        for qt, answers in table.groupby("question_type", sort=False)["answer"]
    }
    predictions = {
        "multiple-choice answer": mc,
        'always "yes"': ["yes"] * len(ids),
        "question-type prior": [prior[qt] for qt in table["question_type"]],
        'upper case + "!"': [a.upper() + "!" for a in mc],
    }
    print(f"questions      : {len(ids):,}")
    print(f"load           : {t1 - t0:.2f} s")
    ok = len(ids) == 32_723
    print(f"{'prediction':<24} {'official %':>11} {'expected':>9} {'vqa-vs %':>9} {'expected':>9}")
    for name, answers in predictions.items():
        preds = dict(zip(ids, answers, strict=True))
        t2 = time.perf_counter()
        got = tuple(100 * score_table(table, preds, metric=m)["overall"]
                    for m in ("official", "vqa-vs"))  # fmt: skip
        t3 = time.perf_counter()
        want = EXPECTED[name]
        match = all(round(g, 4) == w for g, w in zip(got, want, strict=True))
        ok &= match
        print(
            f"{name:<24} {got[0]:>11.4f} {want[0]:>9.4f} {got[1]:>9.4f} {want[1]:>9.4f}  "
            f"{'MATCH' if match else 'MISMATCH'} ({t3 - t2:.2f} s for both metrics)"
        )
    r = score_table(table, dict(zip(ids, mc, strict=True)), metric="vqa-vs")
    print("per answer type, vqa-vs, multiple-choice answer: "
          + ", ".join(f"{k} {100 * v:.4f} %" for k, v in r["per_answer_type"].items()))  # fmt: skip
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
