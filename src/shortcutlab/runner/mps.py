"""CUDA MPS for jobs that share a GPU, and ``--jobs-per-gpu auto``.

Several processes on one GPU without MPS time-slice: the GPU runs one process's kernels at a
time, so jobs sharing it finish together about as fast as one after the other. Under CUDA MPS
(Multi-Process Service) their kernels run side by side. :func:`mps_for` starts an MPS control
daemon for the run when ``jobs_per_gpu`` > 1 on local CUDA workers and
``nvidia-cuda-mps-control`` exists, with a private pipe and log folder that the workers find
through ``CUDA_MPS_PIPE_DIRECTORY``/``CUDA_MPS_LOG_DIRECTORY``, and stops it when the run ends,
also when it is interrupted. A daemon already running (its pipe in ``CUDA_MPS_PIPE_DIRECTORY``
or the default ``/tmp/nvidia-mps``) is used and left alone; where the user may not start one
the run says so and goes on time-sliced.

Measured (NVIDIA H200, 2026-11-27, full-scale DiagViB-6 resnet18 epochs, fp32): one job alone
6.8-7.3 s per epoch; five jobs under MPS 15.3-16.8 s each, i.e. 3.2 s per job-epoch in
aggregate, within 2 % of what a plain resnet18 step at batch 256 reaches on that GPU (3.15 s):
five jobs already fill it. The H100 (80 GB, 2026-11-25) ran six: 3.6 s per job-epoch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from shortcutlab.errors import RunnerError

MPS_MODES = ("auto", "off")
CONTROL = "nvidia-cuda-mps-control"
PIPE_ENV, LOG_ENV = "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"
#: Where a system MPS daemon keeps its pipe unless ``CUDA_MPS_PIPE_DIRECTORY`` says otherwise.
DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps"

#: ``--jobs-per-gpu auto``: at most this many jobs share one GPU. Five resnet18 jobs reached the
#: H200's fp32 ceiling (3.2 s per job-epoch against 3.15 s): more add memory, not speed.
AUTO_JOBS_CAP = 5
#: GiB of GPU memory one job may use (CUDA context, weights, optimiser state, activations of a
#: batch-64 training step and of a batch-1,024 evaluation forward) for models of up to this many
#: million parameters; larger models get :data:`LARGE_MODEL_JOB_GIB`. Measured by
#: benchmarks/gpu_check.py on an H200 (2026-11-27): a resnet18 job peaks at 2.69 GiB allocated
#: in fp32 (1.63 GiB in bf16 + channels_last); with the CUDA context (~0.5 GiB) and the caching
#: allocator's slack, 4 GiB. The larger models' figure is still an unmeasured estimate.
SMALL_MODEL_JOB_GIB, SMALL_MODEL_MAX_MPARAMS = 4.0, 15.0
LARGE_MODEL_JOB_GIB = 12.0
#: Memory left free for the driver, fragmentation and other users of the GPU.
MEMORY_RESERVE = 0.1

TIME_SLICE_NOTE = ("jobs sharing a GPU will time-slice (no CUDA MPS): one job's kernels at a "
                   "time, so together they run about as fast as one alone (H200: ~7 s per "
                   "job-epoch time-sliced at best, 3.2 s for 5 jobs under MPS)")


def check_mps_mode(mode: str) -> str:
    if mode not in MPS_MODES:
        raise RunnerError(f"unknown --mps mode {mode!r}; valid choices: {', '.join(MPS_MODES)}")
    return mode


def parse_jobs_per_gpu(value: int | str) -> int | str:
    """``--jobs-per-gpu`` as a whole number >= 1 or ``auto``; a RunnerError otherwise."""
    if value == "auto":
        return value
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if isinstance(value, bool) or number < 1 or str(number) != str(value).strip():
        raise RunnerError(f"jobs per GPU must be >= 1 (a whole number) or auto (got {value!r})")
    return number


def auto_jobs_per_gpu(memory_gib: float, model_mparams: Iterable[float]) -> int:
    """Jobs per GPU for ``auto``: as many as fit in the GPU's memory (less
    :data:`MEMORY_RESERVE`) at the per-job estimate of the largest model, at most
    :data:`AUTO_JOBS_CAP`, at least 1."""
    largest = max(model_mparams, default=0.0)
    per_job = SMALL_MODEL_JOB_GIB if largest <= SMALL_MODEL_MAX_MPARAMS else LARGE_MODEL_JOB_GIB
    return max(1, min(AUTO_JOBS_CAP, int(memory_gib * (1 - MEMORY_RESERVE) // per_job)))


def gpu_memory_gib() -> float:
    """Total memory of the first visible CUDA device in GiB (0 without one)."""
    import torch

    if not torch.cuda.is_available():
        return 0.0
    return torch.cuda.get_device_properties(0).total_memory / 2**30


def model_mparams(models: Iterable[str]) -> list[float]:
    """Million parameters of each registered model (3 outputs; the head hardly counts)."""
    from shortcutlab.train.models import create_model

    return [sum(p.numel() for p in create_model(m, 3).parameters()) / 1e6 for m in set(models)]


def resolve_jobs_per_gpu(value: int | str, device: str, models: Iterable[str]) -> int:
    """``value`` as a number; ``auto`` picks :func:`auto_jobs_per_gpu` from the GPU's memory and
    the models (1 on a CPU or without a GPU)."""
    value = parse_jobs_per_gpu(value)
    if value != "auto":
        return int(value)
    memory = 0.0 if device.split(":")[0] == "cpu" else gpu_memory_gib()
    return auto_jobs_per_gpu(memory, model_mparams(models)) if memory else 1


def daemon_running() -> bool:
    """Whether an MPS control daemon answers on this process's pipe folder (the CUDA processes
    started from here are then its clients)."""
    pipe = Path(os.environ.get(PIPE_ENV) or DEFAULT_PIPE_DIRECTORY)
    return (pipe / "control").exists()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def mps_for(mode: str, jobs_per_gpu: int, *, on_cuda: bool, local: bool = True,
            say: Callable[[str], None] = _say) -> Iterator[bool]:
    """Run the block with CUDA MPS for ``jobs_per_gpu`` jobs per GPU; yields whether jobs run
    under MPS. Nothing to do (yields False, says nothing) unless ``on_cuda`` (the jobs run on
    CUDA), ``local`` (their workers start on this machine and inherit its environment) and
    ``jobs_per_gpu`` > 1. ``mode`` ``off`` or no control program: one line saying the jobs will
    time-slice. A daemon started here is stopped at the end (also on an exception or Ctrl-C)
    and its folder removed; the environment is restored."""
    check_mps_mode(mode)
    if not (on_cuda and local and jobs_per_gpu > 1):
        yield False
        return
    control = shutil.which(CONTROL)
    if mode == "off" or control is None:
        why = "--mps off" if mode == "off" else f"{CONTROL} not found"
        say(f"{TIME_SLICE_NOTE} [{why}]")
        yield False
        return
    if daemon_running():
        say(f"CUDA MPS: using the daemon already running (pipe "
            f"{os.environ.get(PIPE_ENV) or DEFAULT_PIPE_DIRECTORY}); this run leaves it alone")
        yield True
        return
    folder = Path(tempfile.mkdtemp(prefix="shortcutlab-mps-"))
    env = {PIPE_ENV: str(folder / "pipe"), LOG_ENV: str(folder / "log")}
    for path in env.values():
        Path(path).mkdir()
    started = subprocess.run([control, "-d"], env={**os.environ, **env}, capture_output=True,
                             text=True, check=False)
    if started.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        reason = (started.stderr or started.stdout).strip().splitlines()
        say(f"CUDA MPS could not be started here ({reason[-1] if reason else 'exit status '}"
            f"{'' if reason else started.returncode}); {TIME_SLICE_NOTE}")
        yield False
        return
    before = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    say(f"CUDA MPS started for {jobs_per_gpu} jobs per GPU (pipe {env[PIPE_ENV]}); it stops "
        "when the run ends")
    try:
        yield True
    finally:
        subprocess.run([control], input="quit\n", text=True, env={**os.environ, **env},
                       capture_output=True, check=False, timeout=60)
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(folder, ignore_errors=True)
