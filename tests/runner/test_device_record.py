"""The device a job's ``result.json`` records is the one it ran on, named as the run named it
(``--device cuda:1``), whichever backend ran it. A ``processes`` worker pinned to GPU 1 sees it
as ``cuda`` (``CUDA_VISIBLE_DEVICES=1``); that is still the run's ``cuda:1``.

No GPU needed: the GPU count is faked, the worker pool runs its jobs in this process, and the
jobs only report the device they were handed (as DiagViB-6's job reports its torch device)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shortcutlab.runner import backend_api, local_processes
from shortcutlab.runner.jobs import JOB_KINDS, Job, JobOutput, register_job_kind
from shortcutlab.runner.mps import PIPE_ENV
from shortcutlab.runner.runs import run_jobs
from tests.runner.fake_pools import InProcessPool

ECHO = "echo-device"


def echo_device(job: Job, device: str) -> JobOutput:
    """A job that reports, in its own result, the device it was handed."""
    return JobOutput({"best_epoch": 0, "epochs_run": 1, "val_loss": 0.0, "val_acc": 1.0,
                      "test_acc": 1.0, "train_seconds": 0.0, "device": device})


@pytest.mark.parametrize("kind", ["noop", ECHO])
@pytest.mark.parametrize("device", ["cuda:1", "cuda:0"])
def test_every_backend_records_the_named_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             kind: str, device: str) -> None:
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 2)
    pool = InProcessPool()
    monkeypatch.setattr(local_processes, "_pool", lambda *args: pool)
    job = Job(experiment="noop/gpu/0", kind=kind)
    recorded = {}
    with JOB_KINDS.scratch():
        register_job_kind(ECHO, echo_device)
        for backend in ("serial", "processes"):
            out = tmp_path / backend
            summary = run_jobs([job], out, backend=backend, device=device, progress=False)
            assert [(o.job_id, o.status) for o in summary.outcomes] == [(job.job_id, "done")]
            result = json.loads((out / job.job_id / "result.json").read_text())
            recorded[backend] = result["device"]
    assert len(pool.calls) == 1  # the processes backend ran it in its (fake) pool
    assert recorded == {"serial": device, "processes": device}


def test_gpu_slots_are_the_gpus_this_process_was_given(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run allowed GPUs 2 and 3 (``CUDA_VISIBLE_DEVICES=2,3``, as SLURM or a user sets it)
    sees them as cuda:0 and cuda:1; a worker for its ``cuda:1`` is pinned to GPU 3, and the
    workers of ``auto`` to 2 and 3, never to GPUs 0 and 1, which the run was not given."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setenv(PIPE_ENV, str(tmp_path / "no-mps-daemon"))
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 2)
    assert local_processes.device_slots("cuda:1", 2) == ["3", "3"]
    assert local_processes.device_slots("auto", 1) == ["2", "3"]
    pools: list[tuple] = []

    def pool(*args: object) -> InProcessPool:
        pools.append(args)
        return InProcessPool()

    monkeypatch.setattr(local_processes, "_pool", pool)
    job = Job(experiment="noop/gpu/0", kind=ECHO)
    with JOB_KINDS.scratch():
        register_job_kind(ECHO, echo_device)
        run_jobs([job], tmp_path, backend="processes", device="cuda:1", progress=False)
    [(_, devices, _)] = pools
    assert devices == ["3"]
    result = json.loads((tmp_path / job.job_id / "result.json").read_text())
    assert result["device"] == "cuda:1"


def test_under_mps_gpu_slots_are_the_daemons_numbering(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An MPS daemon started with ``CUDA_VISIBLE_DEVICES=2,3`` (the run's own, when the run
    starts it) numbers those GPUs 0 and 1 for its clients, which must use that numbering
    (GPU 3 would be an error): under MPS a worker's slot is the run's index."""
    pipe = tmp_path / "pipe"
    pipe.mkdir()
    (pipe / "control").touch()  # a daemon answers here
    monkeypatch.setenv(PIPE_ENV, str(pipe))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 2)
    assert local_processes.device_slots("cuda:1", 2) == ["1", "1"]
    assert local_processes.device_slots("auto", 1) == ["0", "1"]
