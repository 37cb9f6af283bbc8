"""Run jobs in-process, in a local process pool, on Ray, or on SLURM through submitit.

Every backend runs :func:`shortcutlab.runner.jobs.run_one` per job, so the run directories,
``done`` markers and error files are the same whatever runs them. Jobs already done are skipped
before anything is scheduled; the job table (``jobs.csv``/``jobs.parquet``) is rewritten at the end.
For Ray and SLURM the output folder must be on a file system every worker node sees.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from shortcutlab.errors import RunnerError, unknown_choice
from shortcutlab.runner.jobs import (
    Job,
    JobFunction,
    Outcome,
    is_done,
    job_dir,
    job_kind,
    run_one,
    write_job_file,
)
from shortcutlab.utils.progress import progress_bar

Backend = Literal["serial", "processes", "ray", "slurm"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)


@dataclass
class SlurmOptions:
    """submitit/SLURM settings. ``cluster``: None = real SLURM (an error if there is none),
    ``"local"`` or ``"debug"`` = submitit's local executors (tests, dry runs)."""

    partition: str | None = None
    timeout_min: int = 240
    gpus_per_node: int = 0
    cpus_per_task: int = 4
    mem_gb: int | None = None
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


# ----------------------------------------------------------------------------- backends

Runner = Callable[[list[Job], Path, str, int], Iterator[Outcome]]


def _function(job: Job) -> JobFunction:
    """The job's function, resolved here so that workers receive it with the job."""
    return job_kind(job.kind).run


def _serial(jobs: list[Job], out: Path, device: str, workers: int, **_: Any) -> Iterator[Outcome]:
    for job in jobs:
        yield run_one(job, out, device, _function(job))


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)  # this worker process only: avoid oversubscribing cores


def _processes(
    jobs: list[Job], out: Path, device: str, workers: int, **_: Any
) -> Iterator[Outcome]:
    threads = max(1, (os.cpu_count() or 1) // workers)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(threads,)) as pool:
        futures = {pool.submit(run_one, job, out, device, _function(job)): job for job in jobs}
        try:
            for fut in as_completed(futures):
                try:
                    yield fut.result()
                except Exception as exc:  # worker died (killed, out of memory) or I/O error
                    yield Outcome(futures[fut].job_id, "failed", f"worker failed: {exc!r}")
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _ray(
    jobs: list[Job], out: Path, device: str, workers: int, *, ray_address: str | None = None,
    **_: Any,
) -> Iterator[Outcome]:
    try:
        import ray
    except ImportError:
        raise RunnerError(
            "backend ray needs the ray package: pip install 'shortcutlab[distributed]'"
        ) from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if ray_address is None:
            kwargs["num_cpus"] = workers
        ray.init(address=ray_address, **kwargs)
        started = True
    try:
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        remote = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=0)(run_one)
        refs = {remote.remote(job, str(out), device, _function(job)): job for job in jobs}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                yield ray.get(ready[0])
            except Exception as exc:  # the Ray worker died
                yield Outcome(refs[ready[0]].job_id, "failed", f"ray task failed: {exc!r}")
    finally:
        if started:
            ray.shutdown()


def _slurm(
    jobs: list[Job], out: Path, device: str, workers: int, *,
    slurm: SlurmOptions | None = None, **_: Any,
) -> Iterator[Outcome]:
    try:
        import submitit
    except ImportError:
        raise RunnerError(
            "backend slurm needs the submitit package: pip install 'shortcutlab[distributed]'"
        ) from None
    opts = slurm or SlurmOptions()
    if opts.cluster is None and submitit.SlurmExecutor.affinity() < 0:
        raise RunnerError(
            "backend slurm: no SLURM found on this machine (sbatch missing); run from a SLURM "
            "login node, or use --backend processes|ray"
        )
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
                yield Outcome(job.job_id, "failed", f"slurm job {sjob.job_id} failed: {exc}")
        if pending:
            time.sleep(opts.poll_seconds)


_BACKENDS: dict[str, Callable[..., Iterator[Outcome]]] = {
    "serial": _serial, "processes": _processes, "ray": _ray, "slurm": _slurm,
}


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
) -> RunSummary:
    """Run every job of ``jobs`` not yet done under ``out``; returns what happened.

    ``workers``: parallel jobs for processes (default: CPU count) and the CPUs of a local Ray
    instance. A failed job is reported (and left to be retried by the next call); it never stops
    the others. With ``collect_table`` the job table is rewritten under ``out`` at the end.
    """
    if backend not in _BACKENDS:
        raise RunnerError(unknown_choice("backend", backend, BACKENDS))
    if workers is not None and workers < 1:
        raise RunnerError(f"workers must be >= 1 (got {workers})")
    out = Path(out)
    unique: dict[str, Job] = {}
    for job in jobs:
        unique.setdefault(job.job_id, job)
    for kind in sorted({job.kind for job in unique.values()}):
        job_kind(kind)  # an unregistered kind fails here, before anything runs
    outcomes: list[Outcome] = []
    todo: list[Job] = []
    for job in unique.values():
        write_job_file(out, job)
        if is_done(job_dir(out, job)):
            outcomes.append(Outcome(job.job_id, "skipped"))
        else:
            todo.append(job)
    n_workers = workers or min(max(len(todo), 1), os.cpu_count() or 1)
    start = time.perf_counter()
    if todo:
        with progress_bar(disable=not progress) as bar:
            task = bar.add_task(f"{backend}: {len(todo)} jobs", total=len(todo))
            failed = 0
            for outcome in _BACKENDS[backend](
                todo, out, device, n_workers, ray_address=ray_address, slurm=slurm
            ):
                outcomes.append(outcome)
                failed += outcome.status == "failed"
                if failed:
                    bar.update(task, description=f"{backend}: {len(todo)} jobs, {failed} failed")
                bar.advance(task)
                if on_outcome is not None:
                    on_outcome(outcome)
    summary = RunSummary(outcomes, time.perf_counter() - start)
    if collect_table:
        from shortcutlab.runner.collect import write_table

        write_table(out)
    return summary


def describe_failures(summary: RunSummary, out: str | Path) -> Sequence[str]:
    """One line per failed job: id, error, where the traceback is."""
    return [
        f"{o.job_id}: {o.error} (traceback: {Path(out) / o.job_id / 'error.txt'})"
        for o in summary.failed
    ]
