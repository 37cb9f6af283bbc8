"""What a run hands a backend, and what every backend may use.

A backend is a function ``fn(jobs, out, context) -> Iterator[Outcome]`` (:data:`BackendFunction`)
that yields one outcome per job, as :func:`~shortcutlab.runner.jobs.run_one` returns it; the
run's settings come in a :class:`BackendContext` (SLURM's in :class:`SlurmOptions`), and an
optional :data:`BackendCheck` says when it cannot run here. The backends share what is here: the
job's function resolved in the run's process (:func:`job_function`), the outcome of a job whose
worker died (:func:`job_lost`), the GPUs this process sees (:func:`gpu_count`) and how long the
workers of a stopping run get (:data:`STOP_GRACE_SECONDS`). The registry (:mod:`.backends`), the
built-in backends (:mod:`.local_processes`, :mod:`.cluster_backends`) and the run (:mod:`.runs`)
build on this module, which imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shortcutlab.errors import RunnerError, unknown_choice
from shortcutlab.runner.claims import claim_run, drop_if_stale, is_stale, read_claim, release
from shortcutlab.runner.jobs import (
    ERROR_FILE,
    Job,
    JobFunction,
    Outcome,
    is_done,
    job_dir,
    job_kind,
    ran_in,
    run_name,
)
from shortcutlab.utils.io import write_text

#: Seconds the workers of an interrupted run get to abandon their jobs and release their
#: claims before they are killed (a job stops at once unless it is inside a long native call).
#: Read (as ``backend_api.STOP_GRACE_SECONDS``) when a run stops, so that setting it here
#: (tests: a short grace) takes effect at once.
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


def slurm_options(executor: str = "slurm", **settings: Any) -> SlurmOptions:
    """SlurmOptions of the command line: ``executor`` one of :data:`SLURM_EXECUTORS`."""
    if executor not in SLURM_EXECUTORS:
        raise RunnerError(unknown_choice("SLURM executor", executor, SLURM_EXECUTORS))
    for key in ("mem_gb", "timeout_min", "cpus_per_task"):
        if settings.get(key) is not None and settings[key] < 1:
            raise RunnerError(f"SLURM {key} must be >= 1 (got {settings[key]})")
    return SlurmOptions(cluster=None if executor == "slurm" else executor, **settings)


@dataclass(frozen=True)
class BackendContext:
    """What :func:`~shortcutlab.runner.runs.run_jobs` tells every backend besides the jobs and
    the output folder: ``device`` of the jobs (``auto``, ``cpu``, ``cuda``, ``cuda:1``),
    ``workers`` (jobs at a time), ``jobs_per_gpu`` (jobs sharing one GPU), ``ray_address`` (a
    Ray cluster to join; None starts a local one), ``slurm`` (the SLURM settings; None: the
    defaults) and ``notes`` (the run's notes folder, on the output folder's file system, to
    hand each job's :func:`~shortcutlab.runner.jobs.run_one`: it shows which jobs this run's
    workers did, see :func:`job_lost`; None: nothing shows it). A backend reads what it needs
    and ignores the rest."""

    device: str = "auto"
    workers: int = 1
    jobs_per_gpu: int = 1
    ray_address: str | None = None
    slurm: SlurmOptions | None = None
    notes: str | None = None


#: ``fn(jobs, out, context)``: run ``jobs`` (none done yet) under the folder ``out``, yielding
#: one :class:`Outcome` per job as it settles, each from ``run_one(job, out, device, run)``
#: with ``run = job_kind(job.kind).run`` resolved in this process; ``busy`` outcomes (a job
#: claimed by another run) are waited for by run_jobs.
BackendFunction = Callable[[list[Job], Path, BackendContext], Iterator[Outcome]]


#: ``check(context) -> reason``: None when the backend can run here with the run's settings
#: (``context``'s device, ray_address and slurm; workers and jobs_per_gpu are left at their
#: defaults), else one line saying why not and what to do (a missing package, no scheduler).
#: Cheap and side-effect free: commands call it before they write anything (:mod:`.preflight`),
#: and :func:`~shortcutlab.runner.runs.run_jobs` before it writes a job folder.
BackendCheck = Callable[[BackendContext], str | None]


def job_function(job: Job) -> JobFunction:
    """The job's function, resolved in the run's process so that workers receive it with the
    job."""
    return job_kind(job.kind).run


def job_lost(out: Path, job: Job, reason: str, notes: str | None = None) -> Outcome:
    """The outcome of a job whose worker failed outside
    :func:`~shortcutlab.runner.jobs.run_one` (``notes``: the run's notes folder, see
    :class:`BackendContext`): the dead worker's claim is removed and the job is failed, its
    ``error.txt`` holding ``reason`` (so the failure line's traceback path exists), unless

    - its results are complete: done when a worker of this run did it (the worker ended after
      writing them, its reply lost; ``reason`` in the outcome's note), else skipped, "done by
      another run" (that run counts it; with no notes nothing shows it was this run's, so it
      is not counted twice); its folder left as it is either way;
    - another live run holds its claim (the task died before it could claim the job): busy,
      to be waited for, its folder left as it is. A claim of this run's own dead task (on
      another node it stays fresh for minutes) is removed and the job failed.

    The outcome holds the first line of ``reason`` (SLURM's append the job's error stream),
    ``error.txt`` all of it."""
    path = job_dir(out, job)
    line = next(iter(reason.strip().splitlines()), "")
    with suppress(OSError):
        drop_if_stale(path)
        if is_done(path):
            if ran_in(notes, job):
                return Outcome(job.job_id, "done", note=f"its reply was lost ({line})")
            return Outcome(job.job_id, "skipped", note="done by another run")
        claim = read_claim(path)
        if claim is not None and not is_stale(path):
            ours = run_name(notes)
            if not ours or claim_run(path) != ours:
                return Outcome(job.job_id, "busy", f"claimed by another run ({line})")
            token = claim.get("token")
            if isinstance(token, str):  # our dead task's: no other worker runs the job
                release(path, token)
        write_text(path / ERROR_FILE, f"{reason.rstrip()}\n")
    return Outcome(job.job_id, "failed", line)


def gpu_count() -> int:
    """CUDA devices this process sees (0 without torch's CUDA). Its callers read it as
    ``backend_api.gpu_count``, so that a test replacing it here reaches them all."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
