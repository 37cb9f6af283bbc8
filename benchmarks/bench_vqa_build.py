"""Benchmark: build VQA-VS splits for a VQA v2-sized synthetic table (658,111 questions).

Target (issue 6): under 60 s and 4 GB peak memory on the project machine. The table is generated
first (not timed); the build then runs in a fresh child process so its peak RSS is its own.

    .venv/bin/python benchmarks/bench_vqa_build.py [--questions 658111] [--write]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def synthetic_table(n: int, seed: int = 0) -> pd.DataFrame:
    """A VQA-like table: 65 question types, Zipf words/answers, 1-6 of 80 objects per image."""
    r = np.random.default_rng(seed)
    n_img = max(n // 5, 1)
    qtypes = [f"qt{i} what is" for i in range(65)]
    vocab = np.array([f"w{i}" for i in range(15000)])
    answers = np.array([f"a{i}" for i in range(3000)])
    objects = np.array([f"obj{i}" for i in range(80)])
    qt = r.integers(0, 65, n)
    n_words = r.integers(1, 6, n)
    words = np.minimum(r.zipf(1.3, n_words.sum()) - 1, len(vocab) - 1)
    splits = np.split(vocab[words], np.cumsum(n_words)[:-1])
    question = [f"{qtypes[q]} {' '.join(w)}?" for q, w in zip(qt, splits, strict=True)]
    # answers depend on question type and first word, so shortcuts exist
    base = (qt * 31 + words[np.cumsum(n_words) - n_words] * 7) % 200
    noisy = np.minimum(r.zipf(1.5, n) - 1, len(answers) - 1)
    ans = np.where(r.random(n) < 0.6, base, noisy)
    img = r.integers(0, n_img, n)
    n_obj = r.integers(1, 7, n_img)
    obj_ids = r.integers(0, 80, n_obj.sum())
    img_objects = [list(o) for o in np.split(objects[obj_ids], np.cumsum(n_obj)[:-1])]
    agree = r.random((n, 10)) < 0.8
    alt = np.minimum(r.zipf(1.5, (n, 10)) - 1, len(answers) - 1)
    ten = np.where(agree, ans[:, None], alt)
    return pd.DataFrame(
        {
            "question_id": np.arange(n) * 10 + 1,
            "image_id": img,
            "question": question,
            "question_type": [qtypes[q] for q in qt],
            "answer": answers[ans],
            "answers": [list(row) for row in answers[ten]],
            "objects": [img_objects[i] for i in img],
        }
    )


def _child(path: str, out: str | None, queue: mp.Queue) -> None:
    from shortcutlab.vqa.splits import build_splits
    from shortcutlab.vqa.store import write_splits
    from shortcutlab.vqa.table import make_table

    raw = pd.read_parquet(path)
    t0, c0 = time.perf_counter(), time.process_time()
    table = make_table(raw)
    t1, c1 = time.perf_counter(), time.process_time()
    splits = build_splits(table)
    t2, c2 = time.perf_counter(), time.process_time()
    if out:
        write_splits(splits, out)
    t3, c3 = time.perf_counter(), time.process_time()
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    wall = (t1 - t0, t2 - t1, t3 - t2)
    cpu = (c1 - c0, c2 - c1, c3 - c2)
    queue.put((wall, cpu, rss_gb, splits.statistics))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=658_111)
    ap.add_argument("--write", action="store_true", help="also time writing the split folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        table = synthetic_table(args.questions)
        path = str(Path(tmp) / "table.parquet")
        table.to_parquet(path)
        print(f"generated {len(table):,} questions in {time.perf_counter() - t:.1f} s (untimed)")
        del table
        ctx = mp.get_context("spawn")
        queue: mp.Queue = ctx.Queue()
        out = str(Path(tmp) / "splits") if args.write else None
        proc = ctx.Process(target=_child, args=(path, out, queue))
        proc.start()
        wall, cpu, rss_gb, stats = queue.get()
        proc.join()
    print(stats.to_string(index=False))
    rows = [("validate table", wall[0], cpu[0]), ("build splits", wall[1], cpu[1]),
            ("validate + build", wall[0] + wall[1], cpu[0] + cpu[1])]  # fmt: skip
    if args.write:
        rows.append(("write folder", wall[2], cpu[2]))
    print(f"{'':<17}{'wall':>8}{'CPU':>8}   (CPU time: less sensitive to a busy machine)")
    for name, w, c in rows:
        print(f"{name:<17}{w:6.1f} s{c:6.1f} s")
    print("target: validate + build < 60 s")
    print(f"peak RSS         {rss_gb:6.2f} GB (child process; target < 4 GB)")


if __name__ == "__main__":
    main()
