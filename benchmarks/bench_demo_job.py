"""What a demo job costs on the CPU, and what the demo preset's channels_last and the workers'
allocator setting (utils.malloc.keep_freed_memory) each take off it.

Two of the demo's DiagViB-6 jobs (ZGO hue-shape and shape-scale, small_cnn, scale 0.01, the
``demo`` preset) are trained one after the other on one thread, each variant in a fresh
process (the allocator setting is process-wide): NCHW with glibc's default allocator (the demo
before 2026-11-27), channels_last (the demo preset now), and channels_last with freed memory
kept (what a runner worker does now). Prints wall and CPU seconds, page faults, the ratios to
the first variant and each variant's test accuracies (channels_last changes them by float
rounding; the allocator must not). Run: .venv/bin/python benchmarks/bench_demo_job.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

VARIANTS = {  # name: (channels_last, keep freed memory)
    "nchw, default allocator": (False, False),
    "channels_last (demo preset)": (True, False),
    "channels_last + kept memory (runner worker)": (True, True),
}

CHILD = r"""
import json, resource, sys, tempfile, time
import torch
from shortcutlab.demo.benchmark import DEMO_CONFIG, DEMO_SCALE
from shortcutlab.diagvib.jobs import build_jobs, collect_jobs
from shortcutlab.runner.runs import run_jobs
from shortcutlab.utils.malloc import keep_freed_memory

channels_last, keep = json.loads(sys.argv[1])
if keep:
    keep_freed_memory()
torch.set_num_threads(1)
config = DEMO_CONFIG.replace(channels_last=channels_last)
jobs = build_jobs("small_cnn", ["ZGO"], ["hue-shape", "shape-scale"], samples=[0], seeds=[0],
                  scale=DEMO_SCALE, train_config=config)
with tempfile.TemporaryDirectory(prefix="bench_demo_job-") as out:  # removed on exit
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    run_jobs(jobs, out, backend="serial", device="cpu", progress=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    table = collect_jobs(out).sort_values("experiment")
print(json.dumps({"wall": wall, "user": after.ru_utime - before.ru_utime,
                  "sys": after.ru_stime - before.ru_stime,
                  "faults": after.ru_minflt - before.ru_minflt,
                  "test_acc": [round(float(a), 4) for a in table["test_acc"]]}))
"""


def main() -> int:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    rows = {}
    for name, flags in VARIANTS.items():
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(flags)], env=env,
                              capture_output=True, text=True, check=True)
        rows[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    base = next(iter(rows.values()))
    print(f"{'variant':45} {'wall s':>7} {'user s':>7} {'sys s':>6} {'faults':>9} "
          f"{'wall/base':>9}  test accuracies")
    for name, r in rows.items():
        print(f"{name:45} {r['wall']:7.1f} {r['user']:7.1f} {r['sys']:6.1f} {r['faults']:9,d} "
              f"{r['wall'] / base['wall']:9.2f}  {r['test_acc']}")
    kept = list(rows.values())
    same = kept[1]["test_acc"] == kept[2]["test_acc"]
    print(f"kept memory leaves the numbers unchanged: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
