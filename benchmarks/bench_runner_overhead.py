"""The runner's own cost per job: 1,000 no-op jobs scheduled, written and collected.

Phases: build (Job objects and their hashes), run (serial backend: job.json, result.json,
epochs.parquet, done marker, all atomic), rerun (everything already done: the resume check),
collect (job table) and write_table (CSV + Parquet). Baseline in the same process: calling the
no-op job function directly, with no files. Also the process-pool backend on 200 jobs, and the
start of a pool of two workers running two jobs: spawned fresh (the baseline, as GPU workers
are) against forked from the fork server of CPU runs, its first pool (the server's start
included) and the next one. Run: .venv/bin/python benchmarks/bench_runner_overhead.py [--quick]
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from shortcutlab.runner import local_processes
from shortcutlab.runner.collect import collect, collect_epochs, write_table
from shortcutlab.runner.jobs import Job, JobOutput, register_job_kind
from shortcutlab.runner.runs import run_jobs


def noop_job(job: Job, device: str) -> JobOutput:
    """A job that trains nothing: what remains is the runner's own overhead."""
    epochs = pd.DataFrame({"epoch": [0], "train_loss": [0.0], "val_loss": [0.0], "val_acc": [1.0],
                           "test_set": ["test"], "tag": ["all"], "acc": [1.0], "n": [1]})
    return JobOutput({"best_epoch": 0, "epochs_run": 1, "val_loss": 0.0, "val_acc": 1.0,
                      "test_acc": 1.0, "train_seconds": 0.0}, epochs)


def pool_start(out: Path, make_pool) -> tuple[float, float]:
    """Wall and CPU seconds (this process and its children, the fork server's included) for a
    fresh pool of two workers to run two no-op jobs, each in its own worker."""
    jobs = [Job(experiment=f"noop/pool-{out.name}/{i}", kind="noop") for i in range(2)]
    cpu = _cpu_seconds()
    start = time.perf_counter()
    with make_pool() as pool:
        futures = [pool.submit(local_processes._run_in_worker, job, out, "cpu", noop_job)
                   for job in jobs]
        assert {f.result().status for f in futures} == {"done"}
    wall = time.perf_counter() - start
    time.sleep(0.2)  # let the workers' exit be counted
    return wall, _cpu_seconds() - cpu


def _cpu_seconds() -> float:
    """CPU time of this process tree: its own, its children's and the fork server's children
    (read from /proc: the workers a fork server forks are not this process's children)."""
    from shortcutlab.runner.reaper import descendants

    total = sum(os.times()[:4])
    tick = os.sysconf("SC_CLK_TCK")
    for pid in descendants(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15]) / tick
    return total


def spawned_pool() -> ProcessPoolExecutor:
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(2, mp_context=ctx, initializer=local_processes._init_worker,
                               initargs=(os.getpid(), ctx.Value("i", 0), [], dict(os.environ)))


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def main() -> None:
    register_job_kind("noop", noop_job)
    n = 200 if "--quick" in sys.argv else 1000
    with tempfile.TemporaryDirectory() as tmp:
        starts = {"spawned (baseline)": pool_start(Path(tmp) / "spawned", spawned_pool)}
        for name in ("forked, first pool", "forked, next pool"):
            starts[name] = pool_start(Path(tmp) / name.split()[-2],
                                      lambda: local_processes._pool(2, []))
        out = Path(tmp) / "runs"
        jobs, t_build = timed(lambda: [Job(experiment=f"noop/a-b/{i}", kind="noop")
                                       for i in range(n)])
        _, t_ids = timed(lambda: [j.job_id for j in jobs])
        _, t_base = timed(lambda: [noop_job(j, "cpu") for j in jobs])
        summary, t_run = timed(run_jobs, jobs, out, backend="serial", progress=False,
                               collect_table=False)
        assert len(summary.done) == n
        summary, t_rerun = timed(run_jobs, jobs, out, backend="serial", progress=False,
                                 collect_table=False)
        assert len(summary.skipped) == n
        table, t_collect = timed(collect, out)
        assert len(table) == n and (table["status"] == "done").all()
        _, t_epochs = timed(collect_epochs, out)
        _, t_write = timed(write_table, out)
        m = n // 5
        pool_out = Path(tmp) / "pool"
        summary, t_pool = timed(run_jobs, jobs[:m], pool_out, backend="processes", workers=2,
                                progress=False, collect_table=False)
        assert len(summary.done) == m
    ms = 1000 / n
    print(f"runner overhead, {n} no-op jobs (per job, milliseconds)")
    print(f"  build Job + hash       {t_build * ms:7.3f} + {t_ids * ms:.3f}")
    print(f"  baseline (no files)    {t_base * ms:7.3f}")
    print(f"  run, serial (writes)   {t_run * ms:7.3f}   ratio to baseline "
          f"{t_run / max(t_base, 1e-9):.0f}x")
    print(f"  rerun (all done)       {t_rerun * ms:7.3f}")
    print(f"  collect job table      {t_collect * ms:7.3f}")
    print(f"  collect_epochs         {t_epochs * ms:7.3f}")
    print(f"  write_table csv+pq     {t_write * ms:7.3f}")
    total = t_build + t_ids + t_run + t_collect + t_write
    print(f"  total schedule+write+collect: {total * ms:.3f} ms/job ({total:.1f} s for {n})")
    print(f"  processes backend, {m} jobs, 2 workers: {t_pool * 1000 / m:.1f} ms/job "
          f"({t_pool:.1f} s incl. worker start-up)")
    base_wall, base_cpu = starts["spawned (baseline)"]
    print("  a pool of 2 workers running 2 jobs (wall s, CPU s incl. workers, ratio to spawned):")
    for name, (wall, cpu) in starts.items():
        print(f"    {name:20s} {wall:6.2f} s {cpu:6.2f} CPU s   {wall / base_wall:5.2f}x "
              f"{cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()
