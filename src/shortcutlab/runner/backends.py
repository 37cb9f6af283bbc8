"""Run jobs in-process, in a local process pool, on Ray, or on SLURM through submitit.

Backends are a registry like models and job kinds (:func:`register_backend`, the
``shortcutlab.backends`` entry-point group); the four above are registered here. A backend is a
function ``fn(jobs, out, context) -> Iterator[Outcome]`` (:data:`BackendFunction`, settings in a
:class:`BackendContext`) that yields one outcome per job, as :func:`run_one` returns it. Every
built-in backend runs :func:`shortcutlab.runner.jobs.run_one` per job, so the run directories,
``done`` markers and error files are the same whatever runs them. Jobs already done are skipped
before anything is scheduled; the job table (``jobs.csv``/``jobs.parquet``) is rewritten at the end.
For Ray and SLURM the output folder must be on a file system every worker node sees.

Several runs may share one output folder: each job is claimed by the process that runs it, a run
that finds a job claimed by another live run waits for it (and takes it over if its owner dies),
so every job runs once and each run ends with the whole table. Worker processes of the
``processes`` backend die with the run that started them; without a GPU they are forked from a
server that imported torch once (:func:`_pool`), on GPUs spawned fresh. On GPUs,
``jobs_per_gpu`` jobs share one device and, on a machine with several, each worker process is
pinned to one of them.

Interrupts: the first SIGINT (Ctrl-C) or SIGTERM stops the run at once: no new job is claimed,
the running ones are abandoned (their claims released; workers that do not stop within
:data:`STOP_GRACE_SECONDS` are killed) and :func:`run_jobs` raises :class:`RunInterrupted`,
whose message says what finished and what did not. A second signal ends the process at once.
Abandoned jobs are simply not done: the next run does them.
"""

from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from shortcutlab.errors import RunnerError, unknown_choice
from shortcutlab.runner.claims import (
    describe_claim,
    describe_wait,
    drop_if_stale,
    is_stale,
    pid_alive,
    read_claim,
)
from shortcutlab.runner.jobs import (
    ERROR_FILE,
    Job,
    JobFunction,
    Outcome,
    is_done,
    job_dir,
    job_kind,
    last_error_line,
    os_reason,
    run_one,
    write_job_file,
)
from shortcutlab.runner.mps import (
    check_mps_mode,
    mps_for,
    parse_jobs_per_gpu,
    resolve_jobs_per_gpu,
)
from shortcutlab.utils.io import write_text
from shortcutlab.utils.malloc import keep_freed_memory
from shortcutlab.utils.progress import progress_bar
from shortcutlab.utils.registry import Registry

#: A backend's name: one of :func:`list_backends` (annotations only; run_jobs checks it).
Backend = str
log = logging.getLogger(__name__)


#: Seconds the workers of an interrupted run get to abandon their jobs and release their
#: claims before they are killed (a job stops at once unless it is inside a long native call).
#: Read when a run stops, so that setting it (tests: a short grace) takes effect at once.
STOP_GRACE_SECONDS = 3.0


#: ``--slurm-executor``: ``slurm`` submits with sbatch; ``local`` runs the same submission
#: through submitit's local executor (one fresh process per job, no SLURM needed).
SLURM_EXECUTORS = ("slurm", "local")


@dataclass
class SlurmOptions:
    """submitit/SLURM settings. ``cluster``: None = real SLURM (an error if there is none),
    ``"local"`` = submitit's local executor (fresh processes, no SLURM: tests, dry runs on a
    laptop), ``"debug"`` = submitit's in-process debug executor. ``mem_gb``, ``account`` and
    ``qos``: sbatch's ``--mem``, ``--account`` and ``--qos`` (None: the cluster's default)."""

    partition: str | None = None
    timeout_min: int = 240
    gpus_per_node: int = 0
    cpus_per_task: int = 4
    mem_gb: int | None = None
    account: str | None = None
    qos: str | None = None
    array_parallelism: int = 256
    cluster: str | None = None
    folder: str | None = None
    poll_seconds: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)


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


# ----------------------------------------------------------------------------- backends


@dataclass(frozen=True)
class BackendContext:
    """What :func:`run_jobs` tells every backend besides the jobs and the output folder:
    ``device`` of the jobs (``auto``, ``cpu``, ``cuda``, ``cuda:1``), ``workers`` (jobs at a
    time), ``jobs_per_gpu`` (jobs sharing one GPU), ``ray_address`` (a Ray cluster to join;
    None starts a local one) and ``slurm`` (the SLURM settings; None: the defaults). A backend
    reads what it needs and ignores the rest."""

    device: str = "auto"
    workers: int = 1
    jobs_per_gpu: int = 1
    ray_address: str | None = None
    slurm: SlurmOptions | None = None


#: ``fn(jobs, out, context)``: run ``jobs`` (none done yet) under the folder ``out``, yielding
#: one :class:`Outcome` per job as it settles, each from ``run_one(job, out, device, run)``
#: with ``run = job_kind(job.kind).run`` resolved in this process; ``busy`` outcomes (a job
#: claimed by another run) are waited for by run_jobs.
BackendFunction = Callable[[list[Job], Path, BackendContext], Iterator[Outcome]]

ENTRY_POINT_GROUP = "shortcutlab.backends"

#: The registered backends; an entry point of the group is a backend function (registered
#: under its name) or a module whose import registers backends.
BACKENDS: Registry[BackendFunction] = Registry(
    "backend", error=RunnerError, group=ENTRY_POINT_GROUP, accepts=callable)


#: ``check(context) -> reason``: None when the backend can run here with the run's settings
#: (``context``'s device, ray_address and slurm; workers and jobs_per_gpu are left at their
#: defaults), else one line saying why not and what to do (a missing package, no scheduler).
#: Cheap and side-effect free: commands call it before they write anything (:mod:`.preflight`),
#: and :func:`run_jobs` before it writes a job folder.
BackendCheck = Callable[[BackendContext], str | None]


@dataclass(frozen=True)
class CheckedBackend:
    """A backend function registered with its availability check; called like the function,
    so that :data:`BACKENDS` holds backend functions either way."""

    run: BackendFunction
    check: BackendCheck

    def __call__(self, jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
        return self.run(jobs, out, context)


def register_backend(name: str, fn: BackendFunction, *, check: BackendCheck | None = None,
                     override: bool = False) -> BackendFunction:
    """Make ``run_jobs(..., backend=name)`` run jobs with ``fn`` (see :data:`BackendFunction`);
    ``check`` (see :data:`BackendCheck`) says when it cannot run here, in its own words. A taken
    name is refused (RunnerError) unless ``override=True``; returns what was registered."""
    return BACKENDS.register(name, fn if check is None else CheckedBackend(fn, check),
                             override=override)


def backend_unavailable(name: str, context: BackendContext | None = None) -> str | None:
    """Why the backend ``name`` cannot run here with ``context``'s settings (its registered
    check's one line), or None when it can or has no check; RunnerError listing the registered
    backends when ``name`` is none of them."""
    check = getattr(BACKENDS.get(name), "check", None)
    return check(context or BackendContext()) if check is not None else None


def list_backends() -> list[str]:
    """Sorted names of the registered backends."""
    return BACKENDS.names()


def _function(job: Job) -> JobFunction:
    """The job's function, resolved here so that workers receive it with the job."""
    return job_kind(job.kind).run


def gpu_count() -> int:
    """CUDA devices this process sees (0 without torch's CUDA); tests replace it."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _serial(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    for job in jobs:
        yield run_one(job, out, context.device, _function(job))


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


def _run_in_worker(job: Job, out: Path, device: str, run: JobFunction) -> Outcome:
    """:func:`run_one` in a pool worker: SIGTERM abandons the job (claim released) and ends
    the worker, which so never takes another job of a stopping run."""
    global _in_job
    _in_job = True
    try:
        return run_one(job, out, device, run)
    except _Stop:
        _end_by_sigterm()
        raise  # pragma: no cover - not reached
    finally:
        _in_job = False


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
    """One entry per concurrent job slot: GPU index ``i`` repeated ``jobs_per_gpu`` times per
    GPU when the jobs run on CUDA; empty on CPU."""
    if device.split(":")[0] == "cpu":
        return []
    count = gpu_count()
    if device.startswith("cuda:"):  # one named device: every slot on it
        return [device.split(":", 1)[1]] * jobs_per_gpu if count else []
    return [str(i) for i in range(count) for _ in range(jobs_per_gpu)]


def _processes(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    """Run ``jobs`` in a pool of worker processes (:func:`_pool`). A worker that dies
    (killed, out of memory, ``os._exit``) breaks the whole pool: the job it ran is reported
    failed (with an ``error.txt`` saying so) and every other unfinished job is run again in a
    fresh pool (one that finished as the pool broke, its reply lost, counts as done, not as
    skipped)."""
    device, workers, jobs_per_gpu = context.device, context.workers, context.jobs_per_gpu
    devices = device_slots(device, jobs_per_gpu)
    job_device = "cuda" if devices and device.startswith("cuda:") else device
    pending = list(jobs)
    while pending:
        broken: list[Job] = []
        progressed = False
        with _pool(workers, devices, {_function(job).__module__ for job in pending}) as pool:
            futures = {pool.submit(_run_in_worker, job, out, job_device, _function(job)): job
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
                        outcome = _job_lost(out, job, f"worker failed: {exc!r}")
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
            path = job_dir(out, job)
            if is_done(path):  # it finished as the pool broke: only its reply was lost
                progressed = True  # (the next pool would call it skipped)
                yield Outcome(job.job_id, "done")
                continue
            claim = read_claim(path) or {}
            pid = claim.get("pid")
            if isinstance(pid, int) and pid in died and claim.get("host") == socket.gethostname():
                progressed = True
                yield _job_lost(out, job, f"its worker process (pid {pid}) died "
                                          f"({_exit_reason(died[pid])}) while running it")
            else:  # not started, or stopped by the pool when another worker died
                pending.append(job)
        if pending and not progressed:  # no job settled: do not start pool after pool
            for job in pending:
                yield _job_lost(out, job, "the worker pool broke before the job could run "
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
    :data:`STOP_GRACE_SECONDS`)."""
    grace = STOP_GRACE_SECONDS if grace is None else grace
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


def _job_lost(out: Path, job: Job, reason: str) -> Outcome:
    """The outcome of a job whose worker failed outside :func:`run_one`: its ``error.txt``
    holds ``reason`` (so the failure line's traceback path exists) and the dead worker's
    claim is removed."""
    path = job_dir(out, job)
    with suppress(OSError):
        write_text(path / ERROR_FILE, f"{reason}\n")
        drop_if_stale(path)
    return Outcome(job.job_id, "failed", reason)


_RAY_MISSING = "backend ray needs the ray package: pip install 'shortcutlab[ray]'"


def _ray_unavailable(context: BackendContext) -> str | None:
    """The check of ``ray``: the package is importable (found, not imported: Ray is slow to
    import)."""
    return _RAY_MISSING if importlib.util.find_spec("ray") is None else None


def _ray(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    device, workers, jobs_per_gpu = context.device, context.workers, context.jobs_per_gpu
    ray_address = context.ray_address
    try:
        import ray
    except ImportError:
        raise RunnerError(_RAY_MISSING) from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if ray_address is None:
            kwargs["num_cpus"] = workers
        # Ray's notice that token authentication is on (its default for a local cluster) is
        # logged on every start: silenced here; the behaviour stays Ray's (RAY_AUTH_MODE)
        import logging

        notice = logging.getLogger("ray._private.authentication.authentication_token_setup")
        level = notice.level
        notice.setLevel(logging.ERROR)
        try:
            ray.init(address=ray_address, **kwargs)
        finally:
            notice.setLevel(level)
        started = True
    reaper = _reap_local_ray() if started else None
    try:
        on_gpu = device != "cpu" and ray.cluster_resources().get("GPU", 0) >= 1
        # Ray pins each task to its GPU share (CUDA_VISIBLE_DEVICES); jobs_per_gpu share one
        gpus = 1.0 / jobs_per_gpu if on_gpu else 0
        remote = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=0)(run_one)
        refs = {remote.remote(job, str(out), device, _function(job)): job  # type: ignore[call-arg]
                for job in jobs}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                try:
                    yield ray.get(ready[0])
                except Exception as exc:  # the Ray worker died
                    yield _job_lost(out, refs[ready[0]], f"ray task failed: {exc!r}")
        except BaseException:  # interrupted: cancel the rest (a KeyboardInterrupt in each task)
            for ref in pending:
                with suppress(Exception):
                    ray.cancel(ref)
            with suppress(Exception):
                ray.wait(pending, num_returns=len(pending), timeout=STOP_GRACE_SECONDS)
            raise
    finally:
        if started:
            ray.shutdown()
        if reaper is not None:
            reaper.kill()
            reaper.wait()


def _reap_local_ray() -> subprocess.Popen[bytes] | None:
    """Start a watcher that kills the local Ray instance's processes if this process dies
    without shutting it down (Ray's agents would outlive it). Linux only (reads /proc)."""
    if not sys.platform.startswith("linux"):
        return None
    from shortcutlab.runner import reaper

    targets = []
    for pid in reaper.descendants(os.getpid()):
        try:
            is_ray = b"ray" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        start = reaper.start_time(pid)
        if is_ray and start is not None:
            targets.append(f"{pid}:{start}")
    if not targets:
        return None
    return subprocess.Popen([sys.executable, reaper.__file__, str(os.getpid()), *targets],
                            start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def slurm_options(executor: str = "slurm", **settings: Any) -> SlurmOptions:
    """SlurmOptions of the command line: ``executor`` one of :data:`SLURM_EXECUTORS`."""
    if executor not in SLURM_EXECUTORS:
        raise RunnerError(unknown_choice("SLURM executor", executor, SLURM_EXECUTORS))
    for key in ("mem_gb", "timeout_min", "cpus_per_task"):
        if settings.get(key) is not None and settings[key] < 1:
            raise RunnerError(f"SLURM {key} must be >= 1 (got {settings[key]})")
    return SlurmOptions(cluster=None if executor == "slurm" else executor, **settings)


def _slurm_unavailable(context: BackendContext) -> str | None:
    """The check of ``slurm``: submitit importable and, for the real SLURM executor
    (``context.slurm.cluster`` None), SLURM on this machine (submitit's
    ``SlurmExecutor.affinity``)."""
    if importlib.util.find_spec("submitit") is None:
        return "backend slurm needs the submitit package: pip install 'shortcutlab[slurm]'"
    import submitit

    if (context.slurm or SlurmOptions()).cluster is None and submitit.SlurmExecutor.affinity() < 0:
        return ("backend slurm: no SLURM found on this machine (sbatch missing); run from a "
                "SLURM login node, try the same submission locally with --slurm-executor local, "
                "or use --backend processes|ray")
    return None


def _slurm(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    device = context.device
    reason = _slurm_unavailable(context)
    if reason is not None:
        raise RunnerError(reason)
    import submitit

    opts = context.slurm or SlurmOptions()
    executor = submitit.AutoExecutor(folder=opts.folder or out / ".submitit", cluster=opts.cluster)
    params: dict[str, Any] = {
        "timeout_min": opts.timeout_min, "gpus_per_node": opts.gpus_per_node,
        "cpus_per_task": opts.cpus_per_task, "slurm_array_parallelism": opts.array_parallelism,
        **opts.extra,
    }
    if opts.partition:
        params["slurm_partition"] = opts.partition
    if opts.mem_gb:
        params["mem_gb"] = opts.mem_gb
    if opts.account:
        params["slurm_account"] = opts.account
    if opts.qos:
        params["slurm_qos"] = opts.qos
    executor.update_parameters(**params)
    submitted = executor.map_array(run_one, jobs, [str(out)] * len(jobs), [device] * len(jobs),
                                   [_function(job) for job in jobs])
    pending = dict(zip(submitted, jobs, strict=True))
    while pending:
        for sjob in [s for s in pending if s.done()]:
            job = pending.pop(sjob)
            try:
                yield sjob.result()
            except Exception as exc:  # killed by SLURM (time limit, preemption, memory)
                yield _job_lost(out, job, f"slurm job {sjob.job_id} failed: {exc}")
        if pending:
            time.sleep(opts.poll_seconds)


register_backend("serial", _serial)
register_backend("processes", _processes)
register_backend("ray", _ray, check=_ray_unavailable)
register_backend("slurm", _slurm, check=_slurm_unavailable)


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
    :func:`list_backends` (built in: serial, processes, ray, slurm; see :func:`register_backend`).
    ``jobs_per_gpu="auto"`` and ``mps`` (CUDA MPS for jobs sharing a GPU): see
    :mod:`shortcutlab.runner.mps`. SIGINT/SIGTERM stop the run: :class:`RunInterrupted` (see
    the module's docstring). A job table that cannot be written raises :class:`JobTableError`
    after every job ran, with their outcomes.
    """
    run_backend = BACKENDS.get(backend)
    reason = backend_unavailable(backend, BackendContext(device=device, ray_address=ray_address,
                                                         slurm=slurm))
    if reason is not None:
        raise RunnerError(reason)
    if workers is not None and workers < 1:
        raise RunnerError(f"workers must be >= 1 (got {workers})")
    jobs_per_gpu = parse_jobs_per_gpu(jobs_per_gpu)
    check_mps_mode(mps)
    if budget_seconds is not None and budget_seconds < 0:
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
    context = BackendContext(device=device, workers=n_workers, jobs_per_gpu=jobs_per_gpu,
                             ray_address=ray_address, slurm=slurm)
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
        raise RunInterrupted(_interrupted_line(summary, unique, out), summary) from None
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
    on_cuda = jobs_per_gpu > 1 and context.device.split(":")[0] != "cpu" and gpu_count() > 0
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
                    f"{STOP_GRACE_SECONDS:g} s are killed)")
        log.warning("%s: starting no new job, %s; press Ctrl-C again to exit immediately",
                    name, stopping)
        raise _Signalled(name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, former in previous.items():
            signal.signal(sig, former if former is not None else signal.SIG_DFL)


def _interrupted_line(summary: RunSummary, unique: dict[str, Job], out: Path) -> str:
    """One line for an interrupted run: what finished, what failed, what is left. Jobs whose
    results were written as the run stopped count as done (their outcome never came back); the
    claims of workers killed meanwhile are removed."""
    settled = {o.job_id for o in summary.outcomes}
    for job in unique.values():
        if job.job_id not in settled:
            path = job_dir(out, job)
            with suppress(OSError):
                drop_if_stale(path)
                if is_done(path):
                    summary.outcomes.append(Outcome(job.job_id, "done",
                                                    note="finished as the run stopped"))
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
