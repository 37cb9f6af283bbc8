"""One run of jobs: :func:`run_jobs` hands the jobs not yet done under an output folder to a
backend and returns what happened (:class:`RunSummary`).

Jobs already done are skipped before anything is scheduled; the rest go to the backend named
(:mod:`.backends`), a round at a time under a time budget; the job table
(``jobs.csv``/``jobs.parquet``) is rewritten at the end (:class:`JobTableError` when it cannot
be). :func:`describe_failures` words the failures of a run for the commands.

Several runs may share one output folder: each job is claimed by the process that runs it, a run
that finds a job claimed by another live run waits for it (and takes it over if its owner dies),
so every job runs once and each run ends with the whole table. While it runs, a run keeps a notes
folder, ``<out>/.runs/<host>-<pid>-<random>``, where its workers (on any node) note the jobs they
did: a job whose worker's reply is lost counts as this run's only when a note shows it is, and
as another run's ("done by another run") otherwise, never as both.

Interrupts: the first SIGINT (Ctrl-C) or SIGTERM stops the run at once: no new job is claimed,
the running ones are abandoned (their claims released; workers that do not stop within
:data:`~shortcutlab.runner.backend_api.STOP_GRACE_SECONDS` are killed) and :func:`run_jobs` raises
:class:`RunInterrupted`, whose message says what finished and what did not. A second signal ends
the process at once. Abandoned jobs are simply not done: the next run does them.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortcutlab.errors import RunnerError
from shortcutlab.runner import backend_api
from shortcutlab.runner.backend_api import BackendContext, BackendFunction, SlurmOptions
from shortcutlab.runner.backends import BACKENDS, Backend, backend_unavailable
from shortcutlab.runner.claims import (
    describe_claim,
    describe_wait,
    drop_if_stale,
    is_stale,
    pid_alive,
    read_claim,
)
from shortcutlab.runner.cluster_backends import check_ray_device
from shortcutlab.runner.jobs import (
    ERROR_FILE,
    Job,
    Outcome,
    is_done,
    job_dir,
    job_kind,
    last_error_line,
    os_reason,
    ran_in,
    write_job_file,
)
from shortcutlab.runner.local_processes import device_slots
from shortcutlab.runner.mps import (
    check_mps_mode,
    mps_for,
    parse_jobs_per_gpu,
    resolve_jobs_per_gpu,
)
from shortcutlab.utils.progress import progress_bar

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """Outcomes of one :func:`run_jobs` call."""

    outcomes: list[Outcome]
    seconds: float = 0.0
    #: ids of jobs not started because the time budget was spent (see :func:`run_jobs`)
    remaining: list[str] = field(default_factory=list)

    #: the signal that interrupted the run (``SIGINT``, ``SIGTERM``), "" when it ran to the end
    interrupted: str = ""

    def _with(self, status: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status]

    @property
    def done(self) -> list[Outcome]:
        return self._with("done")

    @property
    def failed(self) -> list[Outcome]:
        return self._with("failed")

    @property
    def skipped(self) -> list[Outcome]:
        return self._with("skipped")

    @property
    def notes(self) -> list[Outcome]:
        """Outcomes with a repair to report (unreadable files moved aside, a job run
        elsewhere)."""
        return [o for o in self.outcomes if o.note]


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by SIGINT or SIGTERM (see the module's docstring). The message is one line
    saying what finished and what did not; ``summary`` holds the outcomes that settled. A
    ``KeyboardInterrupt``, so that code catching Ctrl-C keeps working."""

    def __init__(self, message: str, summary: RunSummary) -> None:
        super().__init__(message)
        self.summary = summary


class JobTableError(RunnerError):
    """The jobs ran but the job table could not be written (a full disk); ``summary`` holds
    their outcomes, so that the caller can still report every failure."""

    def __init__(self, message: str, summary: RunSummary) -> None:
        super().__init__(message)
        self.summary = summary


def run_jobs(
    jobs: Iterable[Job],
    out: str | Path,
    *,
    backend: Backend = "processes",
    workers: int | None = None,
    device: str = "auto",
    progress: bool = True,
    ray_address: str | None = None,
    slurm: SlurmOptions | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    collect_table: bool = True,
    jobs_per_gpu: int | str = 1,
    wait_seconds: float = 2.0,
    budget_seconds: float | None = None,
    mps: str = "auto",
) -> RunSummary:
    """Run every job of ``jobs`` not yet done under ``out``; returns what happened.

    ``workers``: parallel jobs for processes (default: the CPU count, or GPUs x
    ``jobs_per_gpu`` when the jobs run on CUDA) and the CPUs of a local Ray instance.
    ``jobs_per_gpu``: jobs sharing one GPU (processes and Ray). A failed job is reported (and
    left to be retried by the next call); it never stops the others. Jobs claimed by another
    live run are waited for (polling every ``wait_seconds``) and taken over if that run dies.
    With ``collect_table`` the job table is rewritten under ``out`` at the end.
    ``budget_seconds``: start no new job once this many seconds have passed (jobs are then
    handed to the backend a round of ``workers`` at a time, one for serial); the summary's
    ``remaining`` lists those left, for the next call. ``backend``: one of
    :func:`.backends.list_backends` (built in: serial, processes, ray, slurm; see
    :func:`.backends.register_backend`). Ray chooses each task's GPU: with ray, ``device``
    ``cuda:N`` is refused (use ``cuda``).
    ``jobs_per_gpu="auto"`` and ``mps`` (CUDA MPS for jobs sharing a GPU): see
    :mod:`shortcutlab.runner.mps`. SIGINT/SIGTERM stop the run: :class:`RunInterrupted` (see
    the module's docstring). A job table that cannot be written raises :class:`JobTableError`
    after every job ran, with their outcomes.
    """
    run_backend = BACKENDS.get(backend)
    if backend == "ray":
        check_ray_device(device)  # Ray chooses each task's GPU: cuda:N cannot be honoured
    reason = backend_unavailable(backend, BackendContext(device=device, ray_address=ray_address,
                                                         slurm=slurm))
    if reason is not None:
        raise RunnerError(reason)
    if workers is not None and workers < 1:
        raise RunnerError(f"workers must be >= 1 (got {workers})")
    jobs_per_gpu = parse_jobs_per_gpu(jobs_per_gpu)
    check_mps_mode(mps)
    if budget_seconds is not None and not budget_seconds >= 0:  # nan too: never reached
        raise RunnerError(f"the time budget must be >= 0 seconds (got {budget_seconds})")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunnerError(f"output folder {out} is a file; give a folder for the run")
    unique: dict[str, Job] = {}
    for job in jobs:
        unique.setdefault(job.job_id, job)
    for kind in sorted({job.kind for job in unique.values()}):
        job_kind(kind)  # an unregistered kind fails here, before anything runs
    from shortcutlab.train.model_paths import check_models_reach_workers

    check_models_reach_workers({job.train.model for job in unique.values()}, backend)
    outcomes: list[Outcome] = []
    todo: list[Job] = []
    for job in unique.values():
        try:
            write_job_file(out, job)
        except OSError as exc:
            raise RunnerError(f"cannot write the job folder {job_dir(out, job)}: "
                              f"{os_reason(exc)}") from None
        if is_done(job_dir(out, job)):
            outcomes.append(Outcome(job.job_id, "skipped"))
            drop_if_stale(job_dir(out, job))
        else:
            todo.append(job)
    jobs_per_gpu = resolve_jobs_per_gpu(jobs_per_gpu, device, {j.train.model for j in todo})
    slots = device_slots(device, jobs_per_gpu) if backend == "processes" and todo else []
    n_workers = workers or min(max(len(todo), 1), len(slots) or os.cpu_count() or 1)
    notes = _make_notes(out) if todo else None
    context = BackendContext(device=device, workers=n_workers, jobs_per_gpu=jobs_per_gpu,
                             ray_address=ray_address, slurm=slurm,
                             notes=None if notes is None else str(notes))
    start = time.perf_counter()
    remaining: list[str] = []
    try:
        with _stop_on_signals(backend):
            if todo:
                remaining = _run_todo(todo, out, run_backend, backend, context, unique,
                                      outcomes, progress=progress, on_outcome=on_outcome,
                                      wait_seconds=wait_seconds, budget_seconds=budget_seconds,
                                      mps=mps, start=start)
    except KeyboardInterrupt as exc:
        summary = RunSummary(outcomes, time.perf_counter() - start, interrupted=getattr(
            exc, "signal_name", "SIGINT"))
        raise RunInterrupted(_interrupted_line(summary, unique, out, notes), summary) from None
    finally:
        if notes is not None:
            _remove_notes(notes)
    summary = RunSummary(outcomes, time.perf_counter() - start, remaining)
    _remove_stale_temporaries(out)
    if collect_table and unique:
        from shortcutlab.runner.collect import write_table

        try:
            write_table(out)
        except OSError as exc:
            raise JobTableError(f"cannot write the job table in {out}: {os_reason(exc)}",
                                summary) from None
    return summary


def _run_todo(todo: list[Job], out: Path, run_backend: BackendFunction, backend: str,
              context: BackendContext, unique: dict[str, Job], outcomes: list[Outcome], *,
              progress: bool, on_outcome: Callable[[Outcome], None] | None,
              wait_seconds: float, budget_seconds: float | None, mps: str,
              start: float) -> list[str]:
    """The scheduling loop of :func:`run_jobs`: hand ``todo`` to the backend (a round at a
    time under a time budget), wait for jobs other runs hold, append every outcome to
    ``outcomes``; returns the ids left when the budget was spent."""
    n_workers, jobs_per_gpu = context.workers, context.jobs_per_gpu
    on_cuda = (jobs_per_gpu > 1 and context.device.split(":")[0] != "cpu"
               and backend_api.gpu_count() > 0)
    local = backend == "processes" or (backend == "ray" and not context.ray_address)
    with mps_for(mps, jobs_per_gpu, on_cuda=on_cuda, local=local), progress_bar(
            disable=not progress) as bar:
        task = bar.add_task(f"{backend}: {len(todo)} jobs", total=len(todo))
        failed = 0
        warned: set[str] = set()
        chunk = 1 if backend == "serial" else n_workers
        while todo:
            later: list[Job] = []
            if budget_seconds is not None:
                if time.perf_counter() - start >= budget_seconds:
                    return [job.job_id for job in todo]
                todo, later = todo[:chunk], todo[chunk:]
            busy: list[Job] = []
            stream = run_backend(todo, out, context)
            try:
                for outcome in stream:
                    if outcome.status == "busy":
                        busy.append(unique[outcome.job_id])
                        continue
                    outcomes.append(outcome)
                    failed += outcome.status == "failed"
                    if failed:
                        bar.update(task, description=f"{backend}: {len(todo)} jobs, "
                                   f"{failed} failed")
                    bar.advance(task)
                    if on_outcome is not None:
                        on_outcome(outcome)
            finally:  # an interrupt here stops the backend's workers before it propagates
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            todo, settled = _wait_for_others(busy, out, wait_seconds, warned)
            todo += later
            for outcome in settled:
                outcomes.append(outcome)
                bar.advance(task)
                if on_outcome is not None:
                    on_outcome(outcome)
    return []


class _Signalled(KeyboardInterrupt):
    """The first SIGINT or SIGTERM of a run, named."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


@contextmanager
def _stop_on_signals(backend: str) -> Iterator[None]:
    """While the block runs (in the main thread), the first SIGINT or SIGTERM raises
    a ``KeyboardInterrupt`` naming it after saying so in one warning, and a second one ends
    the process at once (exit code 128 + the signal). The former handlers are put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[str] = []

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if seen:
            with suppress(OSError):
                os.write(2, f"{name} again: exiting now; the next run takes over the jobs "
                            "that were running\n".encode())
            os._exit(128 + signum)
        seen.append(name)
        stopping = ("the running job stops at once" if backend == "serial" else
                    f"running jobs stop at once (workers still busy after "
                    f"{backend_api.STOP_GRACE_SECONDS:g} s are killed)")
        log.warning("%s: starting no new job, %s; press Ctrl-C again to exit immediately",
                    name, stopping)
        raise _Signalled(name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, former in previous.items():
            signal.signal(sig, former if former is not None else signal.SIG_DFL)


def _interrupted_line(summary: RunSummary, unique: dict[str, Job], out: Path,
                      notes: Path | None = None) -> str:
    """One line for an interrupted run: what finished, what failed, what is left. Jobs whose
    results a worker of this run wrote as the run stopped (its note in ``notes``, see
    :func:`~shortcutlab.runner.jobs.run_one`) count as done (their outcome never came back),
    those another run finished meanwhile as skipped ("done by another run"); the claims of
    workers killed meanwhile are removed."""
    settled = {o.job_id for o in summary.outcomes}
    for job in unique.values():
        if job.job_id not in settled:
            path = job_dir(out, job)
            with suppress(OSError):
                drop_if_stale(path)
                if is_done(path):
                    summary.outcomes.append(
                        Outcome(job.job_id, "done", note="finished as the run stopped")
                        if ran_in(notes, job) else
                        Outcome(job.job_id, "skipped", note="done by another run"))
    done, before, failed = len(summary.done), len(summary.skipped), len(summary.failed)
    left = len(unique) - done - before - failed
    return (f"interrupted by {summary.interrupted} after {summary.seconds:.1f} s: "
            f"{done + before} of {len(unique)} jobs done ({done} in this run), {failed} failed, "
            f"{left} not done (nothing half-written counts); run the same command again to "
            "go on")


def _wait_for_others(busy: list[Job], out: Path, wait_seconds: float,
                     warned: set[str] | None = None) -> tuple[list[Job], list[Outcome]]:
    """Wait until each job another run holds is released: done there (skipped here, with a
    note), failed there (reported), or abandoned (returned, to be run here). Each claim waited
    on is named once in a warning (its holder, how long the wait may last); ``warned`` keeps
    the claims already named across calls."""
    rerun: list[Job] = []
    settled: list[Outcome] = []
    waiting = list(busy)
    warned = set() if warned is None else warned
    while waiting:
        still = []
        for job in waiting:
            path = job_dir(out, job)
            if is_done(path):
                settled.append(Outcome(job.job_id, "skipped", note="done by another run"))
            elif read_claim(path) is None:
                if (path / ERROR_FILE).is_file():
                    settled.append(Outcome(job.job_id, "failed",
                                           f"in another run: {last_error_line(path)}"))
                else:
                    rerun.append(job)
            elif is_stale(path):
                rerun.append(job)
            else:
                _warn_waiting(job, path, warned)
                still.append(job)
        waiting = still
        if waiting:
            time.sleep(wait_seconds)
    return rerun, settled


def _warn_waiting(job: Job, path: Path, warned: set[str]) -> None:
    """Warn, once per claim, that ``job`` waits for the run holding it."""
    claim = read_claim(path) or {}
    key = f"{job.job_id} {claim.get('token')}"
    if key not in warned:
        warned.add(key)
        log.warning("job %s (%s) is claimed by another run, %s; waiting for it %s",
                    job.job_id, job.experiment, describe_claim(path), describe_wait(path))


#: the folder of the output folder that holds each run's notes folder while it runs
NOTES_FOLDER = ".runs"


def _make_notes(out: Path) -> Path:
    """This run's notes folder, ``<out>/.runs/<host>-<pid>-<random>`` (on the output folder's
    file system, which every worker sees): its workers note there the jobs they did (see
    :func:`~shortcutlab.runner.jobs.run_one`; the processes backend's, their outcomes too:
    :mod:`~shortcutlab.runner.local_processes`); the folder name is the run's name in its
    claims. The notes folders that ended runs of this host left (a run killed) are removed."""
    host = socket.gethostname()
    with suppress(OSError):
        for folder in (out / NOTES_FOLDER).glob(f"{host}-*-*"):
            pid = folder.name[len(host) + 1:].split("-", 1)[0]
            if pid.isdigit() and not pid_alive(int(pid)) and folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
    notes = out / NOTES_FOLDER / f"{host}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    for _attempt in range(3):  # another run may remove the empty .runs at that moment
        try:
            notes.mkdir(parents=True)
            return notes
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise RunnerError(f"cannot write the run's notes folder {notes}: "
                              f"{os_reason(exc)}") from None
    raise RunnerError(f"cannot write the run's notes folder {notes}")


def _remove_notes(notes: Path) -> None:
    """Remove this run's notes folder, and ``.runs`` when no other run's is left in it."""
    shutil.rmtree(notes, ignore_errors=True)
    with suppress(OSError):
        notes.parent.rmdir()


def _remove_stale_temporaries(out: Path, older_than: float = 600.0) -> None:
    """Delete temporary job-table files that killed runs left in ``out`` (only old ones: a
    concurrent run may be writing its table now)."""
    now = time.time()
    for tmp in [*out.glob(".jobs.csv.*"), *out.glob(".jobs.parquet.*")]:
        try:
            if now - tmp.stat().st_mtime > older_than:
                tmp.unlink()
        except OSError:
            pass


def describe_failures(summary: RunSummary, out: str | Path) -> Sequence[str]:
    """One line per failed job: id, error and, when there is one, where its traceback is (a
    job that failed before its folder could be written has none)."""
    lines = []
    for o in summary.failed:
        trace = Path(out) / o.job_id / ERROR_FILE
        lines.append(f"{o.job_id}: {o.error}" + (f" (traceback: {trace})" if trace.is_file()
                                                  else ""))
    return lines
