"""The ``processes`` backend: jobs in a pool of local worker processes.

Worker processes die with the run that started them, even when it is killed
(:func:`_die_with_parent`); without a GPU they are forked from a server that imported torch once
(:func:`_pool`), on GPUs spawned fresh. On GPUs, ``jobs_per_gpu`` jobs share one device and, on a
machine with several, each worker process is pinned to one of them (:func:`device_slots`). A
worker that dies breaks the pool: the job it ran is reported failed and the others run again in a
fresh pool. When the run stops, each worker abandons its job on SIGTERM (its claim released) and
ends; those still alive after :data:`~shortcutlab.runner.backend_api.STOP_GRACE_SECONDS` are
killed (:func:`_stop_workers`). Each worker also leaves its job's outcome in the run's notes
folder (:func:`_note_reply`), so that a job whose reply is lost (a pool that broke just after it,
a reply that cannot be read) is counted as it ended, once: a job finished meanwhile by another
run is that run's, not done twice.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from dataclasses import asdict
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from shortcutlab.runner import backend_api
from shortcutlab.runner.backend_api import BackendContext, job_function, job_lost
from shortcutlab.runner.claims import is_stale, pid_alive, read_claim
from shortcutlab.runner.jobs import (
    Job,
    JobFunction,
    Outcome,
    is_done,
    job_dir,
    ran_in,
    run_one,
)
from shortcutlab.runner.mps import daemon_running
from shortcutlab.utils.io import write_json
from shortcutlab.utils.malloc import keep_freed_memory


def _die_with_parent(main: int) -> None:
    """End this worker when the main process that started it ends, even by SIGKILL: the
    kernel's parent-death signal on Linux for a spawned worker, and a watch thread on the main
    process everywhere (a forked worker's parent, the fork server, outlives it while any of
    its workers lives)."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    main_ended = _end_watch(main)
    if os.getppid() != parent or main_ended(0.0):  # it died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while not main_ended(1.0) and os.getppid() == parent:
            pass
        os._exit(1)

    threading.Thread(target=watch, name="shortcutlab-parent-watch", daemon=True).start()


def _end_watch(pid: int) -> Callable[[float], bool]:
    """A function that waits up to ``timeout`` seconds for process ``pid`` to end and says
    whether it has (a zombie, not yet reaped, has ended): a pidfd on Linux, polling
    elsewhere."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd here, or no such process
        def poll(timeout: float) -> bool:
            if not pid_alive(pid):
                return True
            time.sleep(timeout)
            return not pid_alive(pid)

        return poll
    return lambda timeout: bool(select.select([fd], [], [], timeout)[0])


class _Stop(BaseException):
    """Raised in a worker's running job by SIGTERM: not an ``Exception``, so the job is not
    reported failed; :func:`run_one` releases its claim on the way out."""


_in_job = False


def _end_by_sigterm() -> None:
    """End this worker as SIGTERM's default action would (the pool counts that exit code as
    its own stop, not as a crash)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    os._exit(128 + signal.SIGTERM)  # pragma: no cover - not reached


def _on_sigterm(signum: int, frame: Any) -> None:
    if _in_job:
        raise _Stop
    _end_by_sigterm()


def _run_in_worker(job: Job, out: Path, device: str, run: JobFunction, *,
                   record_device: str | None = None, notes: str | None = None) -> Outcome:
    """:func:`run_one` in a pool worker (``record_device``: the run's name of ``device``, see
    :func:`run_one`; ``notes``: the run's notes folder, see :func:`run_one`), its outcome also
    noted in ``notes`` (:func:`_note_reply`):
    SIGTERM abandons the job (claim released) and ends the worker, which so never takes
    another job of a stopping run."""
    global _in_job
    _in_job = True
    try:
        outcome = run_one(job, out, device, run, record_device=record_device, notes=notes)
        if notes is not None:
            _note_reply(Path(notes), outcome)
        return outcome
    except _Stop:
        _end_by_sigterm()
        raise  # pragma: no cover - not reached
    finally:
        _in_job = False


#: suffix of a worker's outcome note in the run's notes folder (:func:`_note_reply`)
_REPLY = ".json"


def _note_reply(notes: Path, outcome: Outcome) -> None:
    """Keep a worker's outcome in the run's notes folder ``notes`` (``<job_id>.json``), in
    case its reply is lost (a worker that dies just after, a reply that cannot be read):
    written before the reply is sent, it survives the worker."""
    with suppress(OSError):
        write_json(notes / f"{outcome.job_id}{_REPLY}", asdict(outcome))


def _noted_reply(notes: str | None, job: Job) -> Outcome | None:
    """The outcome a worker of this run noted for ``job`` (:func:`_note_reply`), None when no
    worker of this run finished it (or the run has no notes folder)."""
    if notes is None:
        return None
    try:
        data = json.loads((Path(notes) / f"{job.job_id}{_REPLY}").read_text(encoding="utf-8"))
        return Outcome(**data)
    except (OSError, ValueError, TypeError):
        return None


def _unreplied(out: Path, job: Job, notes: str | None, died: dict[int, int | None]
               ) -> Outcome | None:
    """How ``job``, whose reply never came, ended: as its worker noted in the run's notes
    folder ``notes`` (the reply was lost), done when a worker of this run wrote its results
    but ended before noting its outcome (the ``.ran`` note of :func:`run_one`, see
    :func:`~shortcutlab.runner.jobs.ran_in`), skipped when its results are there although no
    worker of this run ran it (another run did, while it was queued here; without notes
    nothing shows it was this run's), failed when its worker died running it (``died``: the
    pool's dead workers, pid to exit code); None when it did not run here (run it again)."""
    noted = _noted_reply(notes, job)
    if noted is not None:
        return noted
    path = job_dir(out, job)
    if is_done(path):
        if ran_in(notes, job):
            # its worker wrote the results and ended before it could note them
            return Outcome(job.job_id, "done", note="its reply was lost")
        return Outcome(job.job_id, "skipped", note="done by another run")
    claim = read_claim(path) or {}
    pid = claim.get("pid")
    if isinstance(pid, int) and pid in died and claim.get("host") == socket.gethostname():
        return job_lost(out, job, f"its worker process (pid {pid}) died "
                                  f"({_exit_reason(died[pid])}) while running it")
    return None


def _init_worker(main: int, slots: Any, devices: list[str], environ: dict[str, str]) -> None:
    """Worker start: die with the main process; take its environment as it is now (a fork
    server's is the one it started with); ignore SIGINT (a Ctrl-C reaches the whole process
    group: the main process decides) and stop on SIGTERM; take the next device slot
    (``CUDA_VISIBLE_DEVICES`` set before CUDA starts in this fresh process); keep freed memory
    for reuse (:func:`~shortcutlab.utils.malloc.keep_freed_memory`: ~10 % of a small CNN's
    CPU job)."""
    _die_with_parent(main)
    if environ != os.environ:
        os.environ.clear()
        os.environ.update(environ)
    keep_freed_memory()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    if devices:
        with slots.get_lock():
            index = slots.value
            slots.value += 1
        os.environ["CUDA_VISIBLE_DEVICES"] = devices[index % len(devices)]


def device_slots(device: str, jobs_per_gpu: int) -> list[str]:
    """One entry per concurrent job slot, the ``CUDA_VISIBLE_DEVICES`` of its worker: GPU
    ``i`` repeated ``jobs_per_gpu`` times per GPU when the jobs run on CUDA; empty on CPU.
    GPU ``i`` is this process's ``cuda:i``: the ``i``-th entry of its own
    ``CUDA_VISIBLE_DEVICES`` when that is set (a run given GPUs 2,3 pins its ``cuda:1``
    worker to GPU 3, not to GPU 1, which it was not given), ``i`` itself under an MPS daemon
    (:func:`~shortcutlab.runner.mps.daemon_running`), which numbers the GPUs it was given
    0, 1, ... for its clients."""
    if device.split(":")[0] == "cpu":
        return []
    count = backend_api.gpu_count()
    visible = [] if daemon_running() else _visible_gpus()
    if device.startswith("cuda:"):  # one named device: every slot on it
        return [_slot(device.split(":", 1)[1], visible)] * jobs_per_gpu if count else []
    return [_slot(str(i), visible) for i in range(count) for _ in range(jobs_per_gpu)]


def _visible_gpus() -> list[str]:
    """This process's ``CUDA_VISIBLE_DEVICES`` entries ([] when unset)."""
    return [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]


def _slot(index: str, visible: list[str]) -> str:
    """The entry of ``visible`` of this process's GPU ``index`` (``index`` itself when there is
    no such entry)."""
    if index.isdigit() and int(index) < len(visible) and visible[int(index)]:
        return visible[int(index)]
    return index


def processes_backend(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    """Run ``jobs`` in a pool of worker processes (:func:`_pool`). A worker that dies
    (killed, out of memory, ``os._exit``) breaks the whole pool: the job it ran is reported
    failed (with an ``error.txt`` saying so) and every other unfinished job is run again in a
    fresh pool. A job whose reply was lost counts as its worker noted it (:func:`_unreplied`):
    one that finished as the pool broke is done, one another run finished meanwhile is
    skipped, one another live run holds is ``busy`` (run_jobs waits for it). The workers note
    their outcomes in the run's notes folder (``context.notes``); without one, a lost reply's
    job counts as its files show (done ones as another run's, skipped)."""
    device, workers, jobs_per_gpu = context.device, context.workers, context.jobs_per_gpu
    notes = context.notes
    devices = device_slots(device, jobs_per_gpu)
    # a worker pinned to GPU N (CUDA_VISIBLE_DEVICES=N) sees it as "cuda"; the job's result
    # records the run's name of it, "cuda:N", as the other backends' do
    pinned = bool(devices) and device.startswith("cuda:")
    job_device = "cuda" if pinned else device
    record_device = device if pinned else None
    pending = list(jobs)
    while pending:
        broken: list[Job] = []
        progressed = False
        with _pool(workers, devices, {job_function(job).__module__ for job in pending}) as pool:
            futures = {pool.submit(_run_in_worker, job, out, job_device, job_function(job),
                                   record_device=record_device, notes=notes): job
                       for job in pending}
            workers_of_pool = dict(getattr(pool, "_processes", None) or {})
            try:
                for fut in as_completed(futures):
                    job = futures[fut]
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool:
                        broken.append(job)
                        continue
                    except Exception as exc:  # e.g. a result that cannot be sent back
                        noted = _unreplied(out, job, notes, {})
                        outcome = (noted if noted is not None
                                   else job_lost(out, job, f"worker failed: {exc!r}"))
                    progressed = True
                    yield outcome
            except BaseException:  # an interrupt, or the caller closed this generator
                _stop_workers(pool)
                raise
        # the pool is shut down: every worker has ended, the dead one with its own exit code
        died = {pid: proc.exitcode for pid, proc in workers_of_pool.items()
                if proc.exitcode not in (None, 0, -signal.SIGTERM)}  # SIGTERM: the pool's
        pending = []
        for job in broken:
            settled = _unreplied(out, job, notes, died)
            if settled is None:  # not started, or stopped by the pool when another worker died
                pending.append(job)
            else:  # (a job done here would be skipped by the next pool, as if not run here)
                progressed = True
                yield settled
        if pending and not progressed:  # no job settled: do not start pool after pool
            for job in pending:
                path = job_dir(out, job)
                if read_claim(path) is not None and not is_stale(path):  # another live run's
                    yield Outcome(job.job_id, "busy")
                else:
                    yield job_lost(out, job, "the worker pool broke before the job could run "
                                             "(a worker process died at start?)")
            return


def _pool(workers: int, devices: list[str], modules: Iterable[str] = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes that die with this one, each pinned to its device slot
    (``devices``; none: the jobs use no GPU). On Linux, workers without a GPU are forked from
    a server that imported torch and the shortcutlab ones of the jobs' ``modules`` once (a
    fresh interpreter costs ~3 s of CPU per worker; another package's module is imported by
    each worker, as its import might start a thread, which a fork must not copy). GPU workers
    are spawned fresh: CUDA must start after a worker's device is pinned, in a process no fork
    came from; so are all workers elsewhere (macOS: forking after its system frameworks are
    loaded is unsafe, which is why spawn is Python's default there)."""
    ctx: BaseContext = multiprocessing.get_context("spawn")
    if not devices and sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        ours = sorted(m for m in set(modules) if m.split(".")[0] == "shortcutlab")
        multiprocessing.set_forkserver_preload(["torch", *ours])
    slots = ctx.Value("i", 0)
    return ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                               initargs=(os.getpid(), slots, devices, dict(os.environ)))


def _stop_workers(pool: ProcessPoolExecutor, grace: float | None = None) -> None:
    """Cancel the queued jobs, send SIGTERM to every worker (each abandons its job and releases
    its claim) and SIGKILL those still alive after ``grace`` seconds (default
    :data:`~shortcutlab.runner.backend_api.STOP_GRACE_SECONDS`)."""
    grace = backend_api.STOP_GRACE_SECONDS if grace is None else grace
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with suppress(OSError, ValueError):
            proc.terminate()
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.join(max(deadline - time.monotonic(), 0.0))
    for proc in procs:
        if proc.exitcode is None:
            with suppress(OSError, ValueError):
                proc.kill()
            proc.join(1.0)


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
