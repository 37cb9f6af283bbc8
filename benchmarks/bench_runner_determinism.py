"""Same job id, same numbers, whatever --workers: the runner fixes each job's thread count.

Trains two tiny DiagViB-6 jobs (small_cnn, ZGO/hue-shape/0 and ZSO/hue/0 at scale 0.005, demo
protocol, 2 epochs) three times through :func:`run_jobs` on CPU: processes backend with 1 worker,
with 2 workers (before, the worker's thread count was CPUs / workers, so these two differed under
one job id), and once more with ``threads=2`` (another job id). Prints the largest difference of
train loss, validation loss and test accuracy between the runs, and the wall time of each.
Run: .venv/bin/python benchmarks/bench_runner_determinism.py
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from shortcutlab.diagvib.jobs import build_jobs
from shortcutlab.runner.jobs import Job
from shortcutlab.runner.runs import run_jobs
from shortcutlab.train.config import TrainConfig


def _numbers(out: Path, jobs: list[Job]) -> pd.DataFrame:
    rows = []
    for job in jobs:
        epochs = pd.read_parquet(out / job.job_id / "epochs.parquet")
        result = json.loads((out / job.job_id / "result.json").read_text())
        rows.append({"experiment": job.experiment, "threads": result["threads"],
                     "train_loss": epochs["train_loss"].iloc[-1],
                     "val_loss": epochs["val_loss"].iloc[-1], "test_acc": result["test_acc"]})
    return pd.DataFrame(rows).set_index("experiment")


def _diff(a: pd.DataFrame, b: pd.DataFrame) -> str:
    cols = ["train_loss", "val_loss", "test_acc"]
    return ", ".join(f"{c} {float((a[c] - b[c]).abs().max()):.2e}" for c in cols)


def main() -> None:
    config = TrainConfig(preset="demo").replace(model="small_cnn", epochs=2, batch_size=16)
    jobs = build_jobs("small_cnn", ["ZGO", "ZSO"], ["hue-shape"], [0], [0], 0.005, config)
    two_threads = [job.model_copy(update={"threads": 2}) for job in jobs]
    print(f"{len(jobs)} jobs; CPUs {os.cpu_count()}; ids {[j.job_id for j in jobs]}, "
          f"with threads=2 {[j.job_id for j in two_threads]}")
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, batch, workers in (("workers=1", jobs, 1), ("workers=2", jobs, 2),
                                     ("threads=2", two_threads, 1)):
            out = Path(tmp) / name
            start = time.perf_counter()
            summary = run_jobs(batch, out, backend="processes", workers=workers, device="cpu",
                               progress=False)
            assert len(summary.done) == len(batch), summary.failed
            runs[name] = _numbers(out, batch)
            print(f"  {name:10s} {time.perf_counter() - start:6.1f} s wall")
    print("largest |difference| under the same job id, workers=1 vs workers=2: "
          + _diff(runs["workers=1"], runs["workers=2"]))
    print("for comparison, threads=1 vs threads=2 (different job ids): "
          + _diff(runs["workers=1"], runs["threads=2"]))


if __name__ == "__main__":
    main()
