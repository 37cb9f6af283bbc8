"""Interrupts with real signals: the first SIGINT (Ctrl-C) or SIGTERM stops a run within a few
seconds, claims no new job, abandons the running ones (claims released, nothing half-written)
and says in one line what finished; a second one exits at once; the next run resumes to the
same bytes as an uninterrupted run.

The runs are fresh ``python -c`` processes (a signal to pytest itself would end the session)
running 12 jobs of a slow, deterministic fake kind registered from this module.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from shortcutlab.runner.jobs import (
    EPOCHS_FILE,
    ERROR_FILE,
    RESULT_FILE,
    Job,
    JobOutput,
    register_job_kind,
)
from shortcutlab.runner.runs import run_jobs
from tests.runner.fake_jobs import append_line, process_alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="POSIX signals, reads /proc")

KIND = "slow_deterministic"
#: seconds each job sleeps (not part of the job, so a fast rerun has the same ids)
SECONDS = "SHORTCUTLAB_TEST_JOB_SECONDS"
#: a file every job start appends ``<experiment> <pid> <time>`` to
STARTS = "SHORTCUTLAB_TEST_STARTS"
N_JOBS = 12
#: the stop grace of the run that tests it (the product's 3 s default would only make it slower)
GRACE = 0.5
ROOT = Path(__file__).resolve().parents[2]


def slow_job(job: Job, device: str) -> JobOutput:
    """Sleep, then return numbers that depend on the job alone. ``stubborn`` jobs block
    SIGTERM, as a job stuck in a long native call would ignore it."""
    log = os.environ.get(STARTS)
    if log:
        append_line(log, f"{job.experiment} {os.getpid()} {time.time()}")
    if "stubborn" in job.experiment:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    time.sleep(float(os.environ.get(SECONDS, "0")))
    i = int(job.experiment.rsplit("/", 1)[1])
    epochs = pd.DataFrame({"epoch": [0, 1], "train_loss": [1 / (i + 1), 0.5 / (i + 1)],
                           "val_loss": [0.3, 0.2], "val_acc": [0.5, i / N_JOBS],
                           "test_set": ["test", "test"], "tag": ["all", "all"],
                           "acc": [0.25, 0.75], "n": [10, 10]})
    result = {"best_epoch": 1, "epochs_run": 2, "val_loss": 0.2, "val_acc": i / N_JOBS,
              "test_acc": 0.75, "train_seconds": 0.0}
    return JobOutput(result, epochs)


def register() -> None:
    register_job_kind(KIND, slow_job)


@pytest.fixture(autouse=True)
def _kind() -> None:
    register()


def jobs_of(tag: str = "run") -> list[Job]:
    return [Job(experiment=f"slow/{tag}/{i}", kind=KIND) for i in range(N_JOBS)]


_MAIN = """
import sys
from shortcutlab.runner import backend_api
from shortcutlab.runner.runs import RunInterrupted, run_jobs
from tests.runner.test_interrupts import jobs_of, register
register()
backend, out, workers, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if sys.argv[5]:
    backend_api.STOP_GRACE_SECONDS = float(sys.argv[5])
try:
    run_jobs(jobs_of(tag), out, backend=backend, workers=workers, device="cpu", progress=False)
except RunInterrupted as exc:
    print(exc, flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def _starts(log: Path) -> list[tuple[str, int, float]]:
    if not log.exists():
        return []
    rows = [line.split() for line in log.read_text().splitlines()]
    return [(name, int(pid), float(when)) for name, pid, when in rows]


def _interrupt(tmp_path: Path, backend: str, *, workers: int = 2, seconds: float = 0.5,
               started: int = 3, signals: tuple[signal.Signals, ...] = (signal.SIGINT,),
               group: bool = False, tag: str = "run", gap: float = 0.0,
               grace: float | None = None,
               ) -> tuple[subprocess.CompletedProcess[str], float, float, Path]:
    """Start a 12-job run, send ``signals`` (``gap`` seconds apart; to its whole process group,
    as a terminal's Ctrl-C does, with ``group``) once ``started`` jobs have started; returns
    the finished process, the signal's time, the seconds to exit after the last signal and the
    start log. ``grace``: the run's stop grace (None: the product's default)."""
    out, log = tmp_path / "run", tmp_path / "starts.txt"
    env = {**os.environ, SECONDS: str(seconds), STARTS: str(log)}
    env.pop("RAY_AUTH_MODE", None)  # Ray's default: it would log its token notice (issue 34)
    proc = subprocess.Popen([sys.executable, "-c", _MAIN, backend, str(out), str(workers), tag,
                             "" if grace is None else str(grace)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and len(_starts(log)) < started:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        sent = time.time()
        for k, sig in enumerate(signals):
            if k:
                time.sleep(gap)
            os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
        last = time.time()
        stdout, stderr = proc.communicate(timeout=60)
        elapsed = time.time() - last
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), sent, \
        elapsed, log


def _folders(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir())


def _check_stopped(res: subprocess.CompletedProcess[str], sent: float, elapsed: float,
                   log: Path, out: Path, what: str, bound: float = 5.0) -> int:
    """The run exited 130 within ``bound`` seconds, said what it did in one line, started no
    job after the signal, left no worker, claim or error file; returns the jobs done."""
    print(f"{what}: exited {elapsed:.2f} s after the signal")
    assert res.returncode == 130, (res.stdout, res.stderr)
    assert elapsed < bound, f"{what}: {elapsed:.2f} s after the signal"
    [line] = res.stdout.splitlines()
    assert line.startswith("interrupted by SIG") and "not done" in line, line
    starts = _starts(log)
    assert [s for s in starts if s[2] > sent + 1.0] == [], "jobs started after the interrupt"
    assert [pid for _, pid, _ in starts if process_alive(pid)] == []
    folders = _folders(out)
    assert len(folders) == N_JOBS
    assert [p for p in folders if (p / "claim.json").exists()] == []
    assert [p for p in folders if (p / ERROR_FILE).exists()] == []  # abandoned, not failed
    done = sum((p / "done").is_file() for p in folders)
    assert 0 < done < N_JOBS, done
    assert f"{done} of {N_JOBS} jobs done" in line, line
    return done


def _job_files(out: Path) -> dict[str, bytes]:
    return {f"{p.name}/{name}": (p / name).read_bytes() for p in _folders(out)
            for name in (RESULT_FILE, EPOCHS_FILE, "done")}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_ctrl_c_stops_a_processes_run_at_once_and_the_rerun_gives_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res, sent, elapsed, log = _interrupt(tmp_path, "processes")
    out = tmp_path / "run"
    _check_stopped(res, sent, elapsed, log, out, "processes, SIGINT to the main process")
    monkeypatch.setenv(SECONDS, "0")
    clean = tmp_path / "clean"
    assert len(run_jobs(jobs_of(), clean, backend="serial", device="cpu",
                        progress=False).done) == N_JOBS
    resumed = run_jobs(jobs_of(), out, backend="serial", device="cpu", progress=False)
    assert len(resumed.done) + len(resumed.skipped) == N_JOBS and not resumed.failed
    assert _job_files(out) == _job_files(clean)


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "group"), [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c-in-a-terminal", "sigterm"])
def test_a_terminal_ctrl_c_or_sigterm_stops_a_processes_run(
        tmp_path: Path, sig: signal.Signals, group: bool) -> None:
    # one worker (each costs an interpreter and torch): the signal's path is what differs here
    res, sent, elapsed, log = _interrupt(tmp_path, "processes", workers=1, started=2,
                                         signals=(sig,), group=group)
    _check_stopped(res, sent, elapsed, log, tmp_path / "run", f"processes, {sig.name}")
    assert f"interrupted by {sig.name}" in res.stdout
    assert f"{sig.name}: starting no new job" in res.stderr


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_ctrl_c_stops_a_serial_run_at_once(tmp_path: Path) -> None:
    res, sent, elapsed, log = _interrupt(tmp_path, "serial", started=2)
    _check_stopped(res, sent, elapsed, log, tmp_path / "run", "serial")


@pytest.mark.slow
def test_a_worker_that_ignores_the_stop_is_killed_after_the_grace_period(
        tmp_path: Path) -> None:
    res, sent, elapsed, log = _interrupt(tmp_path, "processes", workers=1, tag="stubborn",
                                         seconds=30, started=1, grace=GRACE)
    print(f"stubborn workers: exited {elapsed:.2f} s after the signal")
    assert res.returncode == 130, (res.stdout, res.stderr)
    assert GRACE <= elapsed < GRACE + 3
    assert f"after {GRACE:g} s are killed" in res.stderr  # the grace, said at once
    assert "0 of 12 jobs done" in res.stdout
    assert [pid for _, pid, _ in _starts(log) if process_alive(pid)] == []
    assert [p for p in _folders(tmp_path / "run") if (p / "claim.json").exists()] == []


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_a_second_ctrl_c_exits_immediately(tmp_path: Path) -> None:
    res, sent, elapsed, log = _interrupt(tmp_path, "processes", workers=1, tag="stubborn",
                                         seconds=30, started=1,
                                         signals=(signal.SIGINT, signal.SIGINT),
                                         gap=0.5, grace=20)
    print(f"second Ctrl-C: exited {elapsed:.2f} s after it")
    # not after the 20 s grace the first one gave the stubborn worker (a margin for load)
    assert res.returncode == 130 and elapsed < 5, (elapsed, res.stderr)
    assert "SIGINT again: exiting now" in res.stderr and res.stdout == ""
    deadline = time.time() + 10  # the workers die with the main process (parent-death signal)
    while time.time() < deadline and any(process_alive(pid) for _, pid, _ in _starts(log)):
        time.sleep(0.1)
    assert [pid for _, pid, _ in _starts(log) if process_alive(pid)] == []


@pytest.mark.slow
def test_ctrl_c_cancels_the_outstanding_ray_tasks(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    # one Ray worker: its running task and the 11 queued ones are cancelled
    res, sent, elapsed, log = _interrupt(tmp_path, "ray", workers=1, seconds=3.0, started=1)
    print(f"ray: exited {elapsed:.2f} s after the signal")  # ray.shutdown included
    assert res.returncode == 130, (res.stdout, res.stderr)
    # the local instance starts without Ray's token-authentication notice (issue 34)
    assert "Token authentication" not in res.stderr, res.stderr
    assert elapsed < 30
    [line] = res.stdout.splitlines()
    assert line.startswith("interrupted by SIGINT") and "0 of 12 jobs done" in line, line
    assert [s for s in _starts(log) if s[2] > sent + 1.0] == [], "tasks started after it"
    folders = _folders(tmp_path / "run")
    assert [p for p in folders if (p / "claim.json").exists()] == []  # cancelled, released
    assert [p for p in folders if (p / ERROR_FILE).exists()] == []
