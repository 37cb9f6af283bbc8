"""The ``ray`` and ``slurm`` backends: jobs on a Ray cluster (a local one unless the run names an
address) or in a SLURM job array submitted through submitit.

Both packages are optional (``shortcutlab[ray]``, ``shortcutlab[slurm]``) and imported only by a
run that uses them; the backends' checks (:func:`ray_unavailable`, :func:`slurm_unavailable`) say
when one, or SLURM itself, is missing. Each job runs :func:`~shortcutlab.runner.jobs.run_one` in
its task, which notes in the run's notes folder that it did the job; a task that dies is reported
as its job's files and those notes show (:func:`~shortcutlab.runner.backend_api.job_lost`).
The output folder must be on a file system every worker node sees. On GPUs Ray chooses each
task's GPU, so a task runs on ``cuda`` and ``cuda:N`` is refused (:func:`check_ray_device`).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

from shortcutlab.errors import RunnerError
from shortcutlab.runner import backend_api
from shortcutlab.runner.backend_api import BackendContext, SlurmOptions, job_function, job_lost
from shortcutlab.runner.jobs import Job, Outcome, run_one

_RAY_MISSING = "backend ray needs the ray package: pip install 'shortcutlab[ray]'"


def ray_unavailable(context: BackendContext) -> str | None:
    """The check of ``ray``: the package is importable (found, not imported: Ray is slow to
    import)."""
    return _RAY_MISSING if importlib.util.find_spec("ray") is None else None


def check_ray_device(device: str) -> None:
    """Refuse ``cuda:N`` for the Ray backend with one line: Ray chooses each task's GPU and pins
    the task to it (``CUDA_VISIBLE_DEVICES`` of that one device), so no task can honour an
    index; each is handed ``cuda``, the GPU Ray gave it."""
    if device.split(":")[0] == "cuda" and device != "cuda":
        raise RunnerError(f"backend ray: --device {device} names one GPU, but Ray chooses each "
                          "task's GPU: use --device cuda (or auto, cpu)")


def ray_backend(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
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
        # only auto and cuda become GPU tasks (mps, xpu, cpu: the task keeps the run's device)
        on_gpu = (device.split(":")[0] in ("auto", "cuda")
                  and ray.cluster_resources().get("GPU", 0) >= 1)
        # Ray pins each task to its GPU share (CUDA_VISIBLE_DEVICES); jobs_per_gpu share one.
        # The task sees that GPU alone, as cuda (run_jobs refuses cuda:N: see check_ray_device)
        gpus = 1.0 / jobs_per_gpu if on_gpu else 0
        task_device = "cuda" if on_gpu else device
        remote = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=0)(run_one)
        refs = {remote.remote(job, str(out), task_device,  # type: ignore[call-arg]
                              job_function(job), notes=context.notes): job for job in jobs}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                try:
                    yield ray.get(ready[0])
                except Exception as exc:  # the Ray worker died
                    yield job_lost(out, refs[ready[0]], f"ray task failed: {exc!r}",
                                   context.notes)
        except BaseException:  # interrupted: cancel the rest (a KeyboardInterrupt in each task)
            for ref in pending:
                with suppress(Exception):
                    ray.cancel(ref)
            with suppress(Exception):
                ray.wait(pending, num_returns=len(pending),
                         timeout=backend_api.STOP_GRACE_SECONDS)
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


def slurm_unavailable(context: BackendContext) -> str | None:
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


def slurm_backend(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    device = context.device
    reason = slurm_unavailable(context)
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
    submitted = executor.map_array(partial(run_one, notes=context.notes), jobs,
                                   [str(out)] * len(jobs), [device] * len(jobs),
                                   [job_function(job) for job in jobs])
    pending = dict(zip(submitted, jobs, strict=True))
    while pending:
        for sjob in [s for s in pending if s.done()]:
            job = pending.pop(sjob)
            try:
                yield sjob.result()
            except Exception as exc:  # killed by SLURM (time limit, preemption, memory)
                yield job_lost(out, job, f"slurm job {sjob.job_id} failed: {exc}",
                               context.notes)
        if pending:
            time.sleep(opts.poll_seconds)
