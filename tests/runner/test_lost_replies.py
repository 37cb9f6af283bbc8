"""A job whose worker's reply never reaches the run is counted once, in the state its files and
this run's workers show: done when a worker of this run finished it (its reply lost as the pool
broke, or unreadable), skipped when another run finished it meanwhile (it is that run's
``done``), failed only when nobody finished it. Nothing of a job's result files changes.

The worker pool runs its jobs in this process (``tests.runner.fake_pools``) and breaks, or
loses a reply, at a chosen job; "another run" is ``run_one`` called outside this run's pool,
as a second run in another process would."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from shortcutlab.runner import local_processes
from shortcutlab.runner.backend_api import BackendContext, job_lost
from shortcutlab.runner.claims import CLAIM_FILE
from shortcutlab.runner.jobs import (
    ERROR_FILE,
    Job,
    JobOutput,
    Outcome,
    job_dir,
    job_status,
    run_one,
)
from shortcutlab.runner.runs import NOTES_FOLDER, RunSummary, run_jobs
from tests.runner.fake_jobs import noop_job
from tests.runner.fake_pools import InProcessPool

Reply = Callable[[str, Future, Callable[[], Any]], None]


def _jobs(n: int) -> list[Job]:
    return [Job(experiment=f"noop/lost-{i}/0", kind="noop") for i in range(n)]


def _run(out: Path, jobs: list[Job], reply: Reply, monkeypatch: pytest.MonkeyPatch
         ) -> RunSummary:
    pools: list[InProcessPool] = []

    def pool(*args: Any) -> InProcessPool:
        pools.append(InProcessPool(reply if not pools else None))  # a fresh pool replies
        return pools[-1]

    monkeypatch.setattr(local_processes, "_pool", pool)
    return run_jobs(jobs, out, backend="processes", workers=2, progress=False,
                    wait_seconds=0.05)


def _counts(summary: RunSummary) -> dict[str, list[str]]:
    """Job ids by status; each job must appear once."""
    ids = [o.job_id for o in summary.outcomes]
    assert len(ids) == len(set(ids)), summary.outcomes
    return {status: sorted(o.job_id for o in summary.outcomes if o.status == status)
            for status in ("done", "skipped", "failed")}


def test_a_job_another_run_finished_while_queued_in_a_broken_pool_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool breaks with one job's reply outstanding; its results are complete, but another
    run wrote them while it was queued here: it is that run's done, skipped here (a job this
    run's worker finished as the pool broke is done: ``test_dead_workers``)."""
    jobs = _jobs(3)
    lost = jobs[1]

    def reply(job_id: str, future: Future, call: Callable[[], Any]) -> None:
        if job_id != lost.job_id:
            future.set_result(call())
            return
        # another run takes it while it is queued here; here it never starts
        assert run_one(lost, tmp_path, "cpu", noop_job).status == "done"
        future.set_exception(BrokenProcessPool("a worker died"))

    summary = _run(tmp_path, jobs, reply, monkeypatch)
    others = sorted(j.job_id for j in jobs if j is not lost)
    assert _counts(summary) == {"done": others, "skipped": [lost.job_id], "failed": []}
    [outcome] = [o for o in summary.outcomes if o.job_id == lost.job_id]
    assert "another run" in outcome.note
    for job in jobs:
        assert job_status(job_dir(tmp_path, job)) == "done"
        assert not (job_dir(tmp_path, job) / ERROR_FILE).exists()


def test_a_finished_job_whose_reply_cannot_be_read_is_done(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The worker finished the job but its reply fails (e.g. cannot be unpickled): the job is
    done, not failed, and gets no error.txt beside its results."""
    jobs = _jobs(2)
    lost = jobs[0]

    def reply(job_id: str, future: Future, call: Callable[[], Any]) -> None:
        outcome = call()
        if job_id == lost.job_id:
            future.set_exception(RuntimeError("the reply could not be unpickled"))
        else:
            future.set_result(outcome)

    summary = _run(tmp_path, jobs, reply, monkeypatch)
    assert _counts(summary) == {"done": sorted(j.job_id for j in jobs), "skipped": [],
                                "failed": []}
    assert not (job_dir(tmp_path, lost) / ERROR_FILE).exists()


def test_a_job_another_run_holds_when_the_pool_breaks_at_start_is_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool breaks before any job ran here while another live run is running one of them:
    that one is waited for and counted as the other run's (skipped), not failed, and the other
    run's folder gets no error.txt; the job nobody ran is failed."""
    jobs = _jobs(2)
    held, free = jobs
    finish = threading.Event()

    def held_job(job: Job, device: str) -> JobOutput:
        finish.wait(10)
        return noop_job(job, device)

    other: list[Outcome] = []
    thread = threading.Thread(target=lambda: other.append(run_one(held, tmp_path, "cpu",
                                                                  held_job)))
    thread.start()
    deadline = time.monotonic() + 5
    while not (job_dir(tmp_path, held) / CLAIM_FILE).exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)

    def reply(job_id: str, future: Future, call: Callable[[], Any]) -> None:
        future.set_exception(BrokenProcessPool("a worker died at start"))
        if job_id == held.job_id:
            threading.Timer(0.2, finish.set).start()

    try:
        summary = _run(tmp_path, jobs, reply, monkeypatch)
    finally:
        finish.set()
        thread.join()
    assert [o.status for o in other] == ["done"]
    assert _counts(summary) == {"done": [], "skipped": [held.job_id], "failed": [free.job_id]}
    assert job_status(job_dir(tmp_path, held)) == "done"
    assert not (job_dir(tmp_path, held) / ERROR_FILE).exists()


def test_a_lost_task_whose_results_are_complete_is_not_failed(tmp_path: Path) -> None:
    """Ray and SLURM: a task that died after its job's results were written (its reply lost)
    leaves a done job, not a failed one with an error.txt beside its results: done when the
    run's notes show its task did the job, else skipped (nothing shows it was this run's)."""
    job = _jobs(1)[0]
    notes = tmp_path / "notes"
    notes.mkdir()
    assert run_one(job, tmp_path, "cpu", noop_job, notes=str(notes)).status == "done"
    before = {p.name: p.read_bytes() for p in job_dir(tmp_path, job).iterdir() if p.is_file()}
    outcome = job_lost(tmp_path, job, "ray task failed: the worker died", str(notes))
    assert (outcome.job_id, outcome.status) == (job.job_id, "done")
    unknown = job_lost(tmp_path, job, "ray task failed: the worker died")
    assert (unknown.status, unknown.note) == ("skipped", "done by another run")
    after = {p.name: p.read_bytes() for p in job_dir(tmp_path, job).iterdir() if p.is_file()}
    assert after == before


class _Ended(BaseException):
    """The worker process ended (e.g. the breaking pool's SIGTERM) at this point."""


def test_a_job_whose_worker_ended_after_its_results_before_noting_them_is_done(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another worker dies and the pool stops the rest (SIGTERM) just as one of them has
    written its job's results, before it could note its outcome or reply: this run did the job,
    so it is done here, not "done by another run" (skipped), and did not run twice."""
    jobs = _jobs(2)
    lost = jobs[0]

    def ending_run_one(job: Job, *args: Any, **kwargs: Any) -> Outcome:
        outcome = run_one(job, *args, **kwargs)
        if job.job_id == lost.job_id:
            raise _Ended  # results written, claim released; nothing noted, no reply
        return outcome

    def reply(job_id: str, future: Future, call: Callable[[], Any]) -> None:
        try:
            future.set_result(call())
        except _Ended:
            future.set_exception(BrokenProcessPool("a worker died"))

    monkeypatch.setattr(local_processes, "run_one", ending_run_one)
    summary = _run(tmp_path, jobs, reply, monkeypatch)
    assert _counts(summary) == {"done": sorted(j.job_id for j in jobs), "skipped": [],
                                "failed": []}
    [outcome] = [o for o in summary.outcomes if o.job_id == lost.job_id]
    assert "another run" not in outcome.note


def test_a_lost_task_with_a_reason_of_several_lines_is_reported_in_one(tmp_path: Path) -> None:
    """SLURM's reasons span lines (submitit appends the job's error stream): the outcome's
    failure, or a done job's note, is the reason's first line; error.txt keeps it whole."""
    reason = ("slurm job 7_0 failed: Job 7_0 has not produced any output (state: TIMEOUT)\n"
              "Error stream produced:\n----\nslurmstepd: error: *** JOB 7 CANCELLED ***\n")
    failed, done = _jobs(2)
    notes = tmp_path / "notes"
    notes.mkdir()
    assert run_one(done, tmp_path, "cpu", noop_job, notes=str(notes)).status == "done"
    lost = job_lost(tmp_path, failed, reason, str(notes))
    assert (lost.status, lost.error) == ("failed", reason.splitlines()[0])
    assert (job_dir(tmp_path, failed) / ERROR_FILE).read_text() == reason
    kept = job_lost(tmp_path, done, reason, str(notes))
    assert kept.status == "done" and "\n" not in kept.note and "TIMEOUT" in kept.note


def test_the_notes_folder_of_a_run_that_was_killed_is_removed_by_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's notes folder (its workers' outcome notes too) is removed as it ends, but a run
    that cannot clean up (a second Ctrl-C exits at once; SIGKILL) leaves it behind: the next
    run removes the folders of this host's runs that ended, and leaves a live run's alone."""
    import os
    import socket
    import subprocess

    out = tmp_path / "out"
    runs = out / NOTES_FOLDER
    runs.mkdir(parents=True)
    host = socket.gethostname()
    ended = subprocess.Popen(["true"])
    ended.wait()
    left = runs / f"{host}-{ended.pid}-x1y2"
    left.mkdir()
    (left / "0123456789abcdef.json").write_text("{}")
    (left / "0123456789abcdef.ran").touch()
    live = runs / f"{host}-{os.getppid()}-a3b4"
    live.mkdir()
    summary = _run(out, _jobs(1), lambda job_id, future, call: future.set_result(call()),
                   monkeypatch)
    assert len(summary.done) == 1
    assert sorted(p.name for p in runs.iterdir()) == [live.name]


def test_without_a_notes_folder_a_lost_reply_counts_as_its_files_show(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend called directly, with no notes folder: a job whose reply is lost after its
    results were written is counted from its files alone, skipped ("done by another run":
    nothing shows it was this run's, so it is never counted twice), not failed."""
    jobs = _jobs(2)
    lost = jobs[0]

    def reply(job_id: str, future: Future, call: Callable[[], Any]) -> None:
        outcome = call()
        if job_id == lost.job_id:
            future.set_exception(BrokenProcessPool("a worker died"))
        else:
            future.set_result(outcome)

    pools: list[InProcessPool] = []

    def pool(*args: Any) -> InProcessPool:
        pools.append(InProcessPool(reply if not pools else None))
        return pools[-1]

    monkeypatch.setattr(local_processes, "_pool", pool)
    outcomes = list(local_processes.processes_backend(
        jobs, tmp_path, BackendContext(device="cpu", workers=2)))
    assert sorted((o.job_id, o.status) for o in outcomes) == sorted(
        [(lost.job_id, "skipped"), (jobs[1].job_id, "done")])
    assert not (job_dir(tmp_path, lost) / ERROR_FILE).exists()
