"""Benchmark: score one prediction file on a VQA-VS release of the published size.

The release has 461,124 training, 164,264 IID test questions and nine OOD test sets of 14,358 to
27,730 questions (paper, Table 1). This script writes a synthetic release of that size in the
published layout (``Training/Training-Ans.json``, ``IID-Test/IID-Test-Ans.json``,
``OOD-Test/<S>/OOD-Test-<S>-Ques.json``; VQA v2 annotation objects with ten answers), then, in
a fresh child process so that the peak RSS is its own, reads it with ``read_release`` and scores
one IID prediction file with both metrics (``vqa-vs`` with the training vocabulary). Writing the
release is not timed.

    .venv/bin/python benchmarks/bench_vqa_release.py [--scale 1.0]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

TRAIN, TEST = 461_124, 164_264
OOD_SIZES = {"QT": 23_816, "KW": 27_730, "KWP": 14_358, "QT+KW": 17_630, "KO": 19_000,
             "KOP": 21_000, "QT+KO": 18_000, "KW+KO": 16_000, "QT+KW+KO": 15_000}  # fmt: skip
TYPES = ("yes/no", "number", "other")


def _annotations(n: int, first_id: int, r: np.random.Generator) -> list[dict]:
    answers = np.array([f"answer {i}" for i in range(3000)] + ["yes", "no", "2"])
    main = np.minimum(r.zipf(1.4, n) - 1, len(answers) - 1)
    alt = np.minimum(r.zipf(1.4, (n, 10)) - 1, len(answers) - 1)
    ten = np.where(r.random((n, 10)) < 0.7, main[:, None], alt)
    kinds = r.integers(0, 3, n)
    return [
        {"question_id": first_id + i, "image_id": i // 5, "question_type": f"qt {i % 65}",
         "answer_type": TYPES[kinds[i]], "multiple_choice_answer": str(answers[main[i]]),
         "answers": [{"answer": str(a), "answer_confidence": "yes", "answer_id": k + 1}
                     for k, a in enumerate(answers[ten[i]])]}
        for i in range(n)
    ]  # fmt: skip


def write_release(
    root: Path, scale: float, seed: int = 0, training: bool = True
) -> dict[str, str]:
    """Write the synthetic release; returns IID-test predictions (70 % the majority answer)."""
    r = np.random.default_rng(seed)
    n_train, n_test = int(TRAIN * scale), int(TEST * scale)
    parts = [("Training", "Training-Ans.json", n_train, 10_000_000)] if training else []
    for folder, name, n, first in [*parts, ("IID-Test", "IID-Test-Ans.json", n_test, 1)]:
        docs = _annotations(n, first, r)
        (root / folder).mkdir(parents=True)
        (root / folder / name).write_text(json.dumps(docs))
        if folder == "IID-Test":
            preds = {str(d["question_id"]): d["multiple_choice_answer"] if r.random() < 0.7
                     else "no" for d in docs}  # fmt: skip
    ids = np.arange(1, n_test + 1)
    for s, size in OOD_SIZES.items():
        chosen = r.choice(ids, size=min(int(size * scale), n_test), replace=False)
        (root / "OOD-Test" / s).mkdir(parents=True)
        questions = [{"question_id": int(q), "image_id": 0, "question": "?"} for q in chosen]
        (root / "OOD-Test" / s / f"OOD-Test-{s}-Ques.json").write_text(json.dumps(questions))
    return preds


def _child(root: str, preds_path: str, queue: mp.Queue) -> None:
    from shortcutlab.vqa import load_predictions, read_release, score_release

    t0, c0 = time.perf_counter(), time.process_time()
    release = read_release(root)
    preds = load_predictions(preds_path)
    t1, c1 = time.perf_counter(), time.process_time()
    official = score_release(release, preds)
    t2, c2 = time.perf_counter(), time.process_time()
    authors = score_release(release, preds, metric="vqa-vs")
    t3, c3 = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    queue.put({
        "read": (t1 - t0, c1 - c0), "official": (t2 - t1, c2 - c1), "vqa-vs": (t3 - t2, c3 - c2),
        "rss_gb": rss, "vocabulary": authors["metric"]["vocabulary"],
        "iid": (official["iid"], authors["iid"]), "ood_mean": (official["ood_mean"],
                                                               authors["ood_mean"]),
    })  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the published sizes")
    ap.add_argument("--no-training", action="store_true", help="leave out Training/")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "VQA-VS"
        t0 = time.perf_counter()
        preds = write_release(root, args.scale, training=not args.no_training)
        preds_path = Path(tmp) / "predictions.json"
        preds_path.write_text(json.dumps([{"question_id": int(q), "answer": a}
                                          for q, a in preds.items()]))  # fmt: skip
        size = sum(p.stat().st_size for p in root.rglob("*.json")) / 1024**2
        print(f"synthetic release, scale {args.scale}: {len(preds):,} IID test questions, "
              f"{size:,.0f} MiB of JSON, written in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(str(root), str(preds_path), queue))
        proc.start()
        out = queue.get()
        proc.join()
    for step in ("read", "official", "vqa-vs"):
        wall, cpu = out[step]
        label = {"read": "read release + predictions", "official": "score, official",
                 "vqa-vs": "score, vqa-vs"}[step]  # fmt: skip
        print(f"{label:<28} {wall:6.2f} s wall  {cpu:6.2f} s CPU")
    print(f"peak RSS of the scoring process: {out['rss_gb']:.2f} GB")
    print(f"vocabulary: {out['vocabulary'] or 0:,} answers; IID {100 * out['iid'][0]:.2f} / "
          f"{100 * out['iid'][1]:.2f} %, OOD mean {100 * out['ood_mean'][0]:.2f} / "
          f"{100 * out['ood_mean'][1]:.2f} % (official / vqa-vs)")  # fmt: skip


if __name__ == "__main__":
    main()
