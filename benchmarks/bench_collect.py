"""Reading a DiagViB-6 run folder in a fresh process: ``diagvib collect``, ``metrics``, ``report``.

Issue 31's targets: a 2-job folder in < 1 s and < 200 MB, the 1,230-job benchmark folder in
< 10 s, without importing torch or the trainer (and the HTML report of that folder, which
a user of the full benchmark draws next). Builds synthetic run folders (the benchmark's
real jobs, from ``build_jobs``: 2, and all 1,230 of resnet18 for one training seed; results and
30-epoch tables written by the runner's own ``run_one`` with a fake training function), then
runs each command in a fresh interpreter and prints its wall time, its CPU time, its peak RSS
and whether ``torch`` was imported. On a loaded machine wall time exceeds CPU time; compare CPU.

    .venv/bin/python benchmarks/bench_collect.py                 # 2 and 1,230 jobs
    .venv/bin/python benchmarks/bench_collect.py --jobs 2        # the small folder only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EPOCHS = 30

# Runs the command in this child and reports its own peak RSS and imports at exit. The parent
# has imported torch to plan the jobs: Linux carries ru_maxrss over fork and exec, so the child
# reads its own VmHWM instead.
CHILD = """
import atexit, json, sys
def peak_mb():
    # VmHWM: this process image's own peak (ru_maxrss would carry the forking parent's over exec)
    with open("/proc/self/status") as status:
        return next(int(ln.split()[1]) for ln in status if ln.startswith("VmHWM:")) / 1024
def report():
    print("BENCH " + json.dumps({
        "rss_mb": peak_mb(),
        "torch": "torch" in sys.modules,
        "trainer": "shortcutlab.train.trainer" in sys.modules}), file=sys.stderr)
atexit.register(report)
sys.argv = ["shortcutlab", *sys.argv[1:]]
from shortcutlab.cli.main import main
main()
"""


def build_folder(out: Path, n_jobs: int) -> int:
    """``n_jobs`` of the full resnet18 benchmark (all studies and pairs, samples 0-4, seed 0)
    written as done jobs under ``out``, each with a result and a 30-epoch table of 3 tags."""
    import numpy as np
    import pandas as pd

    from shortcutlab.diagvib.jobs import build_jobs
    from shortcutlab.diagvib.metrics import STUDIES
    from shortcutlab.runner.jobs import JobOutput, run_one

    jobs = build_jobs("resnet18", list(STUDIES), None, [0, 1, 2, 3, 4], [0], 1.0)[:n_jobs]

    def fake(job, device):
        g = np.random.default_rng(len(job.job_id) + int(job.job_id[:8], 16))
        tags = ("all", "00-id", "01-ood")
        rows = [{"epoch": e, "train_loss": 1 / (e + 1), "val_loss": 1 / (e + 1), "val_acc": 0.9,
                 "test_set": "test", "tag": t, "acc": float(g.random()), "n": 100}
                for e in range(EPOCHS) for t in tags]
        result = {"best_epoch": EPOCHS - 1, "epochs_run": EPOCHS, "val_loss": 0.03,
                  "val_acc": 0.9, "test_acc": float(g.random()), "train_seconds": 200.0,
                  "test_acc@00-id": 0.9, "test_acc@01-ood": 0.2, "step_mode": "graph"}
        return JobOutput(result, pd.DataFrame(rows))

    for job in jobs:
        run_one(job, out, "cpu", fake)
    return len(jobs)


def measure(args: list[str]) -> dict:
    """Wall and CPU seconds, peak RSS and imports of ``shortcutlab ARGS`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("BENCH ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"shortcutlab {' '.join(args)} failed: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, **json.loads(lines[-1][len("BENCH "):])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2, 1230],
                    help="folder sizes to measure (default 2 and 1,230)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    results: dict = {}
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    for n in args.jobs:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-collect-{n}-"))
        try:
            t0 = time.perf_counter()
            made = build_folder(folder, n)
            print(f"{made} synthetic jobs written in {time.perf_counter() - t0:.1f} s", flush=True)
            for command in (["diagvib", "collect", str(folder)],
                            ["diagvib", "metrics", str(folder), "--json"],
                            ["diagvib", "report", str(folder), "--out", str(folder / "report")]):
                if command[1] == "metrics":
                    (folder / "jobs.csv").unlink(missing_ok=True)  # read the folder itself
                    (folder / "jobs.parquet").unlink(missing_ok=True)
                res = measure(command)
                results[f"{command[1]}_{made}"] = res
                print(f"diagvib {command[1]:8s} {made:5d} jobs: {res['wall_s']:6.2f} s wall, "
                      f"{res['cpu_s']:6.2f} s CPU, peak RSS {res['rss_mb']:6.0f} MB, torch "
                      f"imported: {res['torch']}, trainer imported: {res['trainer']}", flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
