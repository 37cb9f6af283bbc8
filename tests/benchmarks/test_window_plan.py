"""benchmarks/window_plan.py and its use by gpu_window.sh: the chunk after the GPU check takes
only jobs that finish in the time left, at any --scale (the check's epoch times are full-scale
equivalents), and no chunk runs when not even one job fits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]

# The H200 check of 2026-11-27 (seconds per full-scale epoch) and a CPU one at scale 0.003.
GPU = {"epoch_alone": {"epoch_s_each": 7.0},
       "epoch_shared": {"jobs": 4, "epoch_s_each": 13.8, "job_epoch_s_aggregate": 3.45}}
CPU = {"epoch_alone": {"epoch_s_each": 1980.0},
       "epoch_shared": {"jobs": 2, "epoch_s_each": 1991.0, "job_epoch_s_aggregate": 995.5}}


@pytest.fixture(scope="module")
def window_plan():
    return load_script("window_plan")


def _job_seconds(per_epoch: float, scale: float) -> float:
    """A chunk job's estimated seconds, as validate_diagvib_paper.py computes it."""
    return per_epoch * scale * 30


@pytest.mark.parametrize(("summary", "scale"), [(GPU, 1.0), (CPU, 0.003), (CPU, 0.01)])
def test_the_estimate_covers_a_jobs_epochs_and_fixed_costs_at_any_scale(window_plan, summary,
                                                                          scale) -> None:
    jobs, per_epoch = window_plan.plan(summary, left=1e9, scale=scale)
    measured = summary["epoch_shared"]["epoch_s_each"] * scale * 30 + window_plan.FIXED_SECONDS
    assert jobs == summary["epoch_shared"]["jobs"]
    assert measured <= _job_seconds(per_epoch, scale) <= 1.2 * measured


def test_most_jobs_at_a_time_that_fit_else_fewer_else_none(window_plan) -> None:
    assert window_plan.plan(GPU, left=500, scale=1.0)[0] == 4    # 30 x 16.5 s = 496 s
    assert window_plan.plan(GPU, left=300, scale=1.0)[0] == 2    # two at one's pace: 271 s
    assert window_plan.plan(GPU, left=200, scale=1.0) == (0, 0.0)
    jobs, per_epoch = window_plan.plan(CPU, left=250, scale=0.003)  # 237 s, two at a time
    assert jobs == 2 and 236 < _job_seconds(per_epoch, 0.003) <= 250
    assert window_plan.plan(CPU, left=200, scale=0.003) == (0, 0.0)
    assert window_plan.plan({}, left=1e9, scale=1.0) == (0, 0.0)   # nothing measured


FAKE_PYTHON = """#!/usr/bin/env bash
case "$1" in
  benchmarks/gpu_check.py)
    while [ "$1" != --out ]; do shift; done
    printf '%s' "$SUMMARY" > "$2";;
  benchmarks/window_plan.py) exec "$REAL_PYTHON" "$@";;
  benchmarks/validate_diagvib_paper.py) echo "VALIDATE $*";;
  *) exit 3;;
esac
"""


# records the deadline the chunk runs under, then runs it
FAKE_TIMEOUT = """#!/usr/bin/env bash
echo "TIMEOUT $1 $2 $3 $4 $5"
shift 5
exec "$@"
"""


@pytest.mark.parametrize(("window", "runs"), [(1000, True), (200, False)])
def test_the_window_runs_the_planned_chunk_or_none(tmp_path: Path, window: int,
                                                   runs: bool) -> None:
    """...under a deadline: the time left (its budget), then SIGINT, then a kill."""
    fake, fake_timeout = tmp_path / "python", tmp_path / "bin" / "timeout"
    fake_timeout.parent.mkdir()
    for path, text in ((fake, FAKE_PYTHON), (fake_timeout, FAKE_TIMEOUT)):
        path.write_text(text)
        path.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "REAL_PYTHON": sys.executable,
           "SUMMARY": json.dumps({"summary": GPU}),
           "PATH": f"{fake_timeout.parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "benchmarks/gpu_window.sh", str(tmp_path / "out"),
                           str(window), "abc1234"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = [line for line in proc.stdout.splitlines() if line.startswith("VALIDATE ")]
    if runs:
        assert len(calls) == 1
        args = calls[0].split()
        assert args[args.index("--jobs-per-gpu") + 1] == "4"
        assert float(args[args.index("--seconds-per-epoch") + 1]) >= 13.8 * 1.1
        assert args[args.index("--commit") + 1] == "abc1234"
        (deadline,) = [line.split() for line in proc.stdout.splitlines()
                       if line.startswith("TIMEOUT ")]
        left = args[args.index("--budget-seconds") + 1]
        assert deadline[1:5] == ["-s", "INT", "-k", "30"] and deadline[5] == left
        assert window - 20 <= int(left) <= window - 15
    else:
        assert calls == []
        assert "no chunk run" in proc.stdout
