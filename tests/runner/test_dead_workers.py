"""A worker process that dies (``os._exit`` in native code, SIGKILL from the out-of-memory
killer) fails only the job it ran, with an ``error.txt`` that exists and says so; the jobs that
were pending, or running in the pool's other workers, finish in a fresh pool.

Not in the suite's serial group (``tests/conftest.py``): these runs start no Ray instance and
kill only their own workers, on no clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shortcutlab.runner.jobs import Job
from shortcutlab.runner.runs import describe_failures, run_jobs

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_a_dead_worker_fails_only_its_own_job(tmp_path: Path) -> None:
    """Both ways to die in one run: each breaks the pool it is in, and is reported with its
    own reason; every other job finishes."""
    others = [Job(experiment=f"noop/sleep-{i}/0", kind="noop") for i in range(4)]
    reasons = {"die": "exit code 3", "sigkill": "killed by SIGKILL"}
    dying = {Job(experiment=f"noop/{word}-x/0", kind="noop").job_id: reason
             for word, reason in reasons.items()}
    jobs = [others[0], Job(experiment="noop/die-x/0", kind="noop"), *others[1:3],
            Job(experiment="noop/sigkill-x/0", kind="noop"), others[3]]
    summary = run_jobs(jobs, tmp_path, backend="processes", workers=2, progress=False)
    assert sorted(o.job_id for o in summary.failed) == sorted(dying)
    assert sorted(o.job_id for o in summary.done) == sorted(j.job_id for j in others)
    lines = describe_failures(summary, tmp_path)
    assert len(lines) == 2
    for outcome in summary.failed:
        error = outcome.error
        assert "worker process" in error and "died" in error, error
        assert dying[outcome.job_id] in error, error
        [line] = [x for x in lines if x.startswith(f"{outcome.job_id}: ")]
        trace = Path(line.rsplit("(traceback: ", 1)[1].rstrip(")"))
        assert trace == tmp_path / outcome.job_id / "error.txt"
        assert trace.is_file() and error in trace.read_text()
        assert not (tmp_path / outcome.job_id / "claim.json").exists()  # the next run retries


def test_failure_lines_name_no_traceback_file_that_does_not_exist(tmp_path: Path) -> None:
    from shortcutlab.runner.jobs import Outcome
    from shortcutlab.runner.runs import RunSummary

    summary = RunSummary([Outcome("abc", "failed", "cannot write the job folder")])
    assert describe_failures(summary, tmp_path) == ["abc: cannot write the job folder"]


class _PoolThatBreaksAfter:
    """A stand-in for the worker pool: runs each job in this process; for ``finished`` the
    job completes (its ``done`` written) and then the pool breaks before the reply arrives,
    as when a worker is stopped between the two."""

    def __init__(self, finished: str, ran: list[str]) -> None:
        self.finished, self.ran = finished, ran

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, job, out, device, run, **settings):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        future: Future = Future()
        self.ran.append(job.job_id)
        outcome = fn(job, out, device, run, **settings)  # what the pool's worker runs
        if job.job_id == self.finished:
            future.set_exception(BrokenProcessPool("a worker died"))
        else:
            future.set_result(outcome)
        return future


def test_a_job_that_finished_as_the_pool_broke_counts_as_done(tmp_path: Path,
                                                              monkeypatch) -> None:
    from shortcutlab.runner import local_processes

    jobs = [Job(experiment=f"noop/sleep-{i}/0", kind="noop") for i in range(3)]
    ran: list[str] = []
    monkeypatch.setattr(local_processes, "_pool", lambda workers, *_: _PoolThatBreaksAfter(
        jobs[1].job_id, ran))
    summary = run_jobs(jobs, tmp_path, backend="processes", workers=2, progress=False)
    assert sorted(o.job_id for o in summary.done) == sorted(j.job_id for j in jobs)
    assert not summary.skipped and not summary.failed
    assert sorted(ran) == sorted(j.job_id for j in jobs)  # nothing ran twice


class _BrokenPool:
    """A worker pool that breaks at once: each submitted job is left claimed by one of the
    pool's worker processes (``owners``: job id to pid; the pids are of no live process),
    and every reply is lost. ``_processes`` holds the workers' exit codes as a real pool's
    do once it is shut down."""

    def __init__(self, owners: dict[str, int], exitcodes: dict[int, int]) -> None:
        from types import SimpleNamespace

        self.owners = owners
        self._processes = {pid: SimpleNamespace(exitcode=code) for pid, code in exitcodes.items()}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, job, out, device, run, **settings):
        import json
        import socket
        import time
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        from shortcutlab.runner.claims import CLAIM_FILE
        from shortcutlab.runner.jobs import job_dir

        claim = {"pid": self.owners[job.job_id], "host": socket.gethostname(),
                 "time": time.time(), "token": f"token-{job.job_id}"}
        (job_dir(out, job) / CLAIM_FILE).write_text(json.dumps(claim))
        future: Future = Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future


def _gone_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_job_whose_worker_the_broken_pool_stopped_runs_again(tmp_path: Path,
                                                              monkeypatch) -> None:
    """When a worker dies the pool stops the others with SIGTERM. The job of the worker that
    died (SIGKILL) fails, with that reason; the job of a worker the pool stopped (exit by
    SIGTERM, its claim left behind) is no failure: it runs again in a fresh pool and is done."""
    import signal

    from shortcutlab.runner import local_processes
    from tests.runner.fake_pools import InProcessPool

    killed, stopped = (Job(experiment=f"noop/pool-{w}/0", kind="noop")
                       for w in ("killed", "stopped"))
    killed_pid, stopped_pid = _gone_pid(), _gone_pid()
    pools = [_BrokenPool({killed.job_id: killed_pid, stopped.job_id: stopped_pid},
                         {killed_pid: -signal.SIGKILL, stopped_pid: -signal.SIGTERM}),
             InProcessPool()]
    monkeypatch.setattr(local_processes, "_pool", lambda *args: pools.pop(0))
    summary = run_jobs([killed, stopped], tmp_path, backend="processes", workers=2,
                       device="cpu", progress=False)
    assert [o.job_id for o in summary.failed] == [killed.job_id]
    assert "killed by SIGKILL" in summary.failed[0].error
    assert [o.job_id for o in summary.done] == [stopped.job_id]
    assert pools == []  # the second pool ran the stopped worker's job
