"""The Ray backend on GPUs: Ray chooses each task's GPU and pins the task to it
(``CUDA_VISIBLE_DEVICES`` of that one device), so each task is handed ``cuda``, the device Ray
gave it; ``--device cuda:N`` cannot be honoured (the task sees one GPU, whichever Ray chose) and
is refused with one line before anything runs, from run_jobs and from the CLI (exit 2).

``ray`` is a stand-in here (no Ray instance starts): its tasks record what they were handed."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import RunnerError
from shortcutlab.runner import cluster_backends
from shortcutlab.runner.backend_api import BackendContext
from shortcutlab.runner.jobs import Job, Outcome
from shortcutlab.runner.runs import run_jobs

REFUSED = ("backend ray: --device cuda:1 names one GPU, but Ray chooses each task's GPU: "
           "use --device cuda (or auto, cpu)")


def _fake_ray(gpus: int, tasks: list[dict[str, object]]) -> types.ModuleType:
    """A ``ray`` whose cluster has ``gpus`` GPUs; each task notes its resources and arguments
    in ``tasks`` and reports its job done without running it."""
    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: True  # type: ignore[attr-defined]  # the caller's instance
    ray.cluster_resources = lambda: {"CPU": 4.0, "GPU": float(gpus)}  # type: ignore

    class Ref:  # an object reference: the task ran at once, here
        def __init__(self, value: Outcome) -> None:
            self.value = value

    def remote(**options: object):  # ray.remote(num_cpus=..)(fn)
        def wrap(fn):
            def submit(job: Job, out: str, device: str, *rest: object, **kw: object) -> Ref:
                tasks.append({"device": device, **options})
                return Ref(Outcome(job.job_id, "done"))
            return types.SimpleNamespace(remote=submit)
        return wrap

    ray.remote = remote  # type: ignore[attr-defined]
    ray.wait = lambda pending, num_returns=1, **kw: (pending[:1], pending[1:])  # type: ignore
    ray.get = lambda ref: ref.value  # type: ignore[attr-defined]
    return ray


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpus: int, device: str,
         jobs_per_gpu: int = 1) -> list[dict[str, object]]:
    tasks: list[dict[str, object]] = []
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(gpus, tasks))
    jobs = [Job(experiment=f"noop/ray-device/{i}", kind="noop") for i in range(2)]
    context = BackendContext(device=device, workers=2, jobs_per_gpu=jobs_per_gpu)
    outcomes = list(cluster_backends.ray_backend(jobs, tmp_path, context))
    assert [o.status for o in outcomes] == ["done", "done"]
    return tasks


@pytest.mark.parametrize("device", ["auto", "cuda", "cuda:1"])  # cuda:1: run_jobs refuses it
def test_a_task_on_a_gpu_is_handed_the_gpu_ray_gave_it(tmp_path, monkeypatch,
                                                       device: str) -> None:
    tasks = _run(tmp_path, monkeypatch, gpus=2, device=device, jobs_per_gpu=2)
    assert tasks == [{"device": "cuda", "num_cpus": 1, "num_gpus": 0.5, "max_retries": 0}] * 2


@pytest.mark.parametrize(("gpus", "device"), [(0, "auto"), (0, "cpu"), (2, "cpu")])
def test_a_task_without_a_gpu_keeps_the_runs_device(tmp_path, monkeypatch, gpus: int,
                                                    device: str) -> None:
    tasks = _run(tmp_path, monkeypatch, gpus=gpus, device=device)
    assert [(t["device"], t["num_gpus"]) for t in tasks] == [(device, 0)] * 2


@pytest.mark.parametrize("installed", [True, False], ids=["ray", "no-ray"])
def test_run_jobs_refuses_a_numbered_gpu_before_anything_runs(tmp_path, monkeypatch,
                                                              installed: bool) -> None:
    tasks: list[dict[str, object]] = []
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(2, tasks) if installed else None)
    jobs = [Job(experiment="noop/ray-device/0", kind="noop")]
    with pytest.raises(RunnerError) as refused:
        run_jobs(jobs, tmp_path / "runs", backend="ray", device="cuda:1", progress=False)
    assert str(refused.value) == REFUSED
    assert tasks == [] and not (tmp_path / "runs").exists()


def test_other_backends_still_take_a_numbered_gpu(tmp_path, monkeypatch) -> None:
    # only the Ray backend refuses cuda:N: the serial one runs its jobs with it
    jobs = [Job(experiment="noop/ray-device/0", kind="noop")]
    summary = run_jobs(jobs, tmp_path / "runs", backend="serial", device="cuda:1",
                       progress=False)
    assert len(summary.done) == 1


COMMANDS = {
    "diagvib run": ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--pairs",
                    "hue-shape", "--samples", "0", "--scale", "0.001", "--epochs", "1"],
    "biasbed run": ["biasbed", "run", "--algorithm", "erm", "--dataset", "diagvib:ZSO/hue/0",
                    "--scale", "0.001", "--epochs", "1", "--seeds", "0"],
}


@pytest.mark.parametrize("address", [[], ["--ray-address", "auto"]], ids=["local", "cluster"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_cli_refuses_a_numbered_gpu_with_ray_and_exits_2(tmp_path, monkeypatch,
                                                             command: str,
                                                             address: list[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # refused whether or not ray is installed
    out = tmp_path / "out"
    res = CliRunner().invoke(app, [*COMMANDS[command], "--backend", "ray", *address,
                                   "--device", "cuda:1", "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0] == f"Error: {REFUSED}", res.output
    assert not out.exists()


@pytest.mark.parametrize("device", ["mps", "xpu"])
def test_a_device_that_is_no_cuda_stays_off_the_clusters_gpus(tmp_path, monkeypatch,
                                                              device: str) -> None:
    """Only ``auto`` and ``cuda`` become GPU tasks: ``--device mps`` on a cluster with GPUs
    is handed to each task as it is, and asks Ray for no GPU."""
    tasks = _run(tmp_path, monkeypatch, gpus=2, device=device)
    assert [(t["device"], t["num_gpus"]) for t in tasks] == [(device, 0)] * 2


def test_a_cluster_with_one_gpu_runs_the_tasks_on_it(tmp_path, monkeypatch) -> None:
    """One GPU is a GPU: two jobs per GPU each ask Ray for half of it and run on ``cuda``."""
    tasks = _run(tmp_path, monkeypatch, gpus=1, device="auto", jobs_per_gpu=2)
    assert [(t["device"], t["num_gpus"]) for t in tasks] == [("cuda", 0.5)] * 2


@pytest.mark.parametrize("address", [None, "ray://head:10001"])
def test_a_local_ray_instance_gets_the_runs_workers_as_its_cpus(tmp_path, monkeypatch,
                                                                address) -> None:
    """Ray is started here (none running): a local instance has ``workers`` CPUs, so at most
    that many one-CPU tasks run at once; joining a cluster names no CPU count (the cluster's
    own); the instance started here is shut down after."""
    tasks: list[dict[str, object]] = []
    ray = _fake_ray(0, tasks)
    started: list[dict[str, object]] = []
    ray.is_initialized = lambda: bool(started) and not started[-1].get("shut")  # type: ignore
    ray.init = lambda **kw: started.append(kw)  # type: ignore[attr-defined]
    ray.shutdown = lambda: started[-1].update(shut=True)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setattr(cluster_backends, "_reap_local_ray", lambda: None)
    jobs = [Job(experiment=f"noop/ray-cpus/{i}", kind="noop") for i in range(2)]
    context = BackendContext(device="cpu", workers=3, ray_address=address)
    outcomes = list(cluster_backends.ray_backend(jobs, tmp_path, context))
    assert [o.status for o in outcomes] == ["done", "done"]
    [init] = started
    assert init["address"] == address and init.pop("shut") is True
    assert init.get("num_cpus") == (3 if address is None else None)
