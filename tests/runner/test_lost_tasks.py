"""Ray and SLURM: a task that dies (its reply lost) is counted once across runs, as the files
and this run's own notes show: done when a task of this run finished the job, skipped when
another run finished it ("done by another run", that run's ``done``), busy when another live
run holds it (its folder untouched: no error.txt in a job another run is running), failed
otherwise. An interrupted run counts as done here only the jobs a worker of this run finished.

``ray`` is a stand-in (no Ray instance starts): each task runs ``run_one`` here, at once, or
not, and then reports the task lost; "another run" is ``run_one`` called outside this run."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shortcutlab.runner import cluster_backends
from shortcutlab.runner.backend_api import BackendContext, job_function, job_lost
from shortcutlab.runner.backends import BACKENDS, register_backend
from shortcutlab.runner.claims import CLAIM_FILE, release, try_claim
from shortcutlab.runner.jobs import (
    ERROR_FILE,
    Job,
    Outcome,
    job_dir,
    job_status,
    run_one,
)
from shortcutlab.runner.runs import RunInterrupted, run_jobs
from tests.runner.fake_jobs import noop_job

Task = Callable[[Job, Callable[[], Outcome]], None]


class _Lost(Exception):
    """What ray.get raises for a task whose worker died."""


def _fake_ray(task: Task) -> types.ModuleType:
    """A ``ray`` whose every task calls ``task(job, run)`` (``run``: the task's own call of
    ``run_one``, with what the backend handed it) and then dies: its reply is lost."""
    ray = types.ModuleType("ray")
    ray.__spec__ = importlib.machinery.ModuleSpec("ray", None)  # found: the backend's check
    ray.is_initialized = lambda: True  # type: ignore[attr-defined]
    ray.cluster_resources = lambda: {"CPU": 2.0}  # type: ignore[attr-defined]

    def remote(**options: object):
        def wrap(fn):
            def submit(job: Job, *args: Any, **kwargs: Any) -> object:
                task(job, lambda: fn(job, *args, **kwargs))
                return object()  # an object reference
            return types.SimpleNamespace(remote=submit)
        return wrap

    def get(ref: object) -> Outcome:
        raise _Lost("the worker died")

    ray.remote = remote  # type: ignore[attr-defined]
    ray.wait = lambda pending, num_returns=1, **kw: (pending[:1], pending[1:])  # type: ignore
    ray.get = get  # type: ignore[attr-defined]
    return ray


def _job(name: str) -> Job:
    return Job(experiment=f"noop/lost-task-{name}/0", kind="noop")


def _register_ray(monkeypatch: pytest.MonkeyPatch, task: Task) -> None:
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(task))


def test_a_lost_task_whose_job_another_run_finished_is_skipped_not_done(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours, theirs = _job("ours"), _job("theirs")

    def task(job: Job, run: Callable[[], Outcome]) -> None:
        if job.job_id == ours.job_id:
            assert run().status == "done"  # this run's task finished it, then died
        else:  # another run finished it while it was queued here; this task died at start
            assert run_one(job, tmp_path, "cpu", noop_job).status == "done"

    _register_ray(monkeypatch, task)
    summary = run_jobs([ours, theirs], tmp_path, backend="ray", device="cpu", progress=False)
    got = {o.job_id: (o.status, o.note) for o in summary.outcomes}
    assert got[ours.job_id][0] == "done" and "reply was lost" in got[ours.job_id][1]
    assert got[theirs.job_id] == ("skipped", "done by another run")
    assert not (job_dir(tmp_path, theirs) / ERROR_FILE).exists()


def test_a_task_lost_at_start_while_another_live_run_holds_its_job_leaves_it_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _job("held")
    path = job_dir(tmp_path, job)
    path.mkdir(parents=True)
    token = try_claim(path)  # another run, alive (this process), is running it
    assert token is not None
    claim = (path / CLAIM_FILE).read_bytes()
    _register_ray(monkeypatch, lambda job, run: None)  # the task dies before it starts
    context = BackendContext(device="cpu")
    outcomes = list(cluster_backends.ray_backend([job], tmp_path, context))
    assert [(o.job_id, o.status) for o in outcomes] == [(job.job_id, "busy")]
    assert (path / CLAIM_FILE).read_bytes() == claim
    assert not (path / ERROR_FILE).exists() and job_status(path) == "pending"
    release(path, token)


def test_a_task_of_this_run_that_died_holding_its_claim_fails_the_job(tmp_path: Path) -> None:
    """The claim of this run's own dead task (on another node it stays fresh for minutes) is
    no other run's: the job fails here, as before, instead of being waited for."""
    job = _job("own")
    path = job_dir(tmp_path, job)
    path.mkdir(parents=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    assert try_claim(path, run=notes.name) is not None  # as this run's task claimed it
    outcome = job_lost(tmp_path, job, "ray task failed: the node died", str(notes))
    assert (outcome.status, outcome.error) == ("failed", "ray task failed: the node died")
    assert not (path / CLAIM_FILE).exists() and job_status(path) == "failed"


def test_an_interrupted_run_counts_as_its_own_only_the_jobs_it_finished(
        tmp_path: Path) -> None:
    ours, theirs, left = _job("i-ours"), _job("i-theirs"), _job("i-left")

    def stopping(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
        # this run's worker finishes one job (its reply never comes), another run another
        run_one(ours, out, context.device, job_function(ours), notes=context.notes)
        run_one(theirs, out, "cpu", noop_job)
        raise KeyboardInterrupt
        yield  # pragma: no cover - a generator

    with BACKENDS.scratch():
        register_backend("stopping", stopping)
        with pytest.raises(RunInterrupted) as info:
            run_jobs([ours, theirs, left], tmp_path, backend="stopping", device="cpu",
                     progress=False)
    got = {o.job_id: (o.status, o.note) for o in info.value.summary.outcomes}
    assert got == {ours.job_id: ("done", "finished as the run stopped"),
                   theirs.job_id: ("skipped", "done by another run")}
    assert "2 of 3 jobs done (1 in this run)" in str(info.value)


def test_an_interrupted_runs_line_counts_each_job_once(tmp_path: Path) -> None:
    """Three jobs, one done and one failed before the stop: the line's counts add up to the
    three jobs (1 done + 1 failed + 1 not done), the failed one is not also 'not done'."""
    ok, bad, left = _job("c-ok"), Job(experiment="noop/fail-lost-task/0", kind="noop"), _job(
        "c-left")

    def stopping(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
        for job in (ok, bad):
            yield run_one(job, out, context.device, job_function(job), notes=context.notes)
        raise KeyboardInterrupt

    with BACKENDS.scratch():
        register_backend("stopping", stopping)
        with pytest.raises(RunInterrupted) as info:
            run_jobs([ok, bad, left], tmp_path, backend="stopping", device="cpu",
                     progress=False)
    assert sorted(o.status for o in info.value.summary.outcomes) == ["done", "failed"]
    assert "1 of 3 jobs done (1 in this run), 1 failed, 1 not done" in str(info.value)
