"""Process pool, Ray (one local instance) and SLURM through submitit's local executor; GPU
sharing and pinning with a faked device count."""

from __future__ import annotations

import json
import os

import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner import backend_api
from shortcutlab.runner.backend_api import SlurmOptions, slurm_options
from shortcutlab.runner.collect import collect
from shortcutlab.runner.jobs import Job
from shortcutlab.runner.local_processes import device_slots
from shortcutlab.runner.runs import run_jobs
from tests.runner import fake_jobs


def _jobs(tag: str, n: int = 3) -> list[Job]:
    """``n`` jobs that succeed, then one that fails."""
    return [Job(experiment=f"noop/{tag}-x/{i}", kind="noop") for i in range(n)] + [
        Job(experiment=f"noop/fail-{tag}/0", kind="noop")
    ]


def _check(tmp_path, summary, jobs: list[Job]) -> None:
    """All jobs but the last done, the last failed: in the summary and in the job table."""
    n = len(jobs) - 1
    assert len(summary.done) == n and len(summary.failed) == 1
    assert "failed on purpose" in summary.failed[0].error
    table = collect(tmp_path).set_index("job_id")
    assert table.loc[[j.job_id for j in jobs[:n]], "status"].tolist() == ["done"] * n
    assert table.loc[jobs[n].job_id, "status"] == "failed"


def _results(out, jobs: list[Job]) -> list[dict]:
    return [json.loads((out / job.job_id / "result.json").read_text()) for job in jobs]


def test_process_pool(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs without a GPU run in workers forked from a fork server (not children of this
    process), and each pool's workers have this process's environment as it is when the pool
    starts, not the one the server started with."""
    for run in ("first", "second"):
        monkeypatch.setenv(fake_jobs.MARK, run)
        jobs = _jobs(f"proc-{run}")
        summary = run_jobs(jobs, tmp_path / run, backend="processes", workers=2, device="cpu",
                           progress=False)
        _check(tmp_path / run, summary, jobs)
        results = _results(tmp_path / run, jobs[:-1])
        assert {r["mark"] for r in results} == {run}
        assert {r["parent_pid"] for r in results} != {os.getpid()}


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance (2 CPUs, 1 faked GPU) for this module's Ray tests: a start costs
    seconds, and run_jobs uses an instance it finds running (the Ray runs of test_interrupts,
    test_faults and tests/train/test_model_paths start their own)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_ray_local_instance(tmp_path, ray_instance) -> None:
    jobs = _jobs("ray")
    summary = run_jobs(jobs, tmp_path, backend="ray", device="cpu", progress=False)
    _check(tmp_path, summary, jobs)
    assert ray_instance.is_initialized()  # the caller's instance is left running


def _record_submitted(submitit, monkeypatch) -> dict:
    """The parameters the runner hands submitit's executor, recorded as they are passed on."""
    given: dict = {}
    original = submitit.AutoExecutor.update_parameters

    def record(self, **kwargs):
        given.update(kwargs)
        return original(self, **kwargs)

    monkeypatch.setattr(submitit.AutoExecutor, "update_parameters", record)
    return given


def test_slurm_via_submitit_debug_executor(tmp_path, monkeypatch) -> None:
    """submitit's *debug* executor runs the submitted array in-process: same code path as SLURM
    (AutoExecutor, parameters, map_array, polling) without starting interpreters. Every
    setting of the run reaches the submission, under submitit's names."""
    submitit = pytest.importorskip("submitit")
    given = _record_submitted(submitit, monkeypatch)
    jobs = _jobs("slurm")
    opts = SlurmOptions(cluster="debug", partition="gpu", timeout_min=5, gpus_per_node=2,
                        cpus_per_task=3, array_parallelism=7, poll_seconds=0.05, mem_gb=6,
                        account="lab", qos="low")
    summary = run_jobs(jobs, tmp_path, backend="slurm", slurm=opts, progress=False)
    _check(tmp_path, summary, jobs)
    assert (tmp_path / ".submitit").is_dir()
    assert given == {"slurm_partition": "gpu", "timeout_min": 5, "gpus_per_node": 2,
                     "cpus_per_task": 3, "slurm_array_parallelism": 7, "mem_gb": 6,
                     "slurm_account": "lab", "slurm_qos": "low"}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_slurm_via_submitit_local_executor_spawns_processes(tmp_path, monkeypatch) -> None:
    """``--slurm-executor local``: the same submission through submitit's *local* executor,
    each job in a fresh interpreter (its pid is not ours), with memory/account/qos passed on
    under the names submitit's SLURM executor takes. Two jobs (one fails): each interpreter
    costs seconds."""
    import os

    submitit = pytest.importorskip("submitit")
    given = _record_submitted(submitit, monkeypatch)
    jobs = _jobs("local", n=1)
    opts = slurm_options("local", timeout_min=5, mem_gb=2, account="lab", qos="low")
    opts.poll_seconds = 0.2
    summary = run_jobs(jobs, tmp_path, backend="slurm", slurm=opts, progress=False)
    _check(tmp_path, summary, jobs)
    pids = {json.loads((tmp_path / j.job_id / "result.json").read_text())["pid"]
            for j in jobs[:1]}
    assert os.getpid() not in pids
    assert given["mem_gb"] == 2 and given["slurm_account"] == "lab" and given["slurm_qos"] == "low"
    assert {"account", "qos", "mem"} <= set(submitit.SlurmExecutor._valid_parameters())
    with pytest.raises(RunnerError, match="unknown SLURM executor 'lsf'; valid choices: slurm, "
                       "local"):
        slurm_options("lsf")


@pytest.mark.parametrize("key", ["mem_gb", "timeout_min", "cpus_per_task"])
def test_slurm_settings_below_one_are_refused(key: str) -> None:
    """0 GB of memory, a 0-minute limit or 0 CPUs would be no request at all (``--mem 0``
    is SLURM's "all the node's memory"; mem_gb 0 would silently fall back to the default)."""
    for bad in (0, -1):
        with pytest.raises(RunnerError, match=f"SLURM {key} must be >= 1 \\(got {bad}\\)"):
            slurm_options("local", **{key: bad})
    assert getattr(slurm_options("local", **{key: 1}), key) == 1


def test_slurm_without_slurm_is_a_clear_error(tmp_path) -> None:
    submitit = pytest.importorskip("submitit")
    if submitit.SlurmExecutor.affinity() >= 0:
        pytest.skip("this machine has SLURM")
    with pytest.raises(RunnerError, match="no SLURM found.*--slurm-executor local"):
        run_jobs(_jobs("x"), tmp_path, backend="slurm", progress=False)


# ----------------------------------------------------------------------------- GPUs


def test_device_slots_share_and_pin_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 2)
    assert device_slots("cpu", 3) == []
    assert device_slots("auto", 2) == ["0", "0", "1", "1"]
    assert device_slots("cuda", 1) == ["0", "1"]
    assert device_slots("cuda:1", 3) == ["1", "1", "1"]
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 0)
    assert device_slots("auto", 2) == []


def test_each_new_worker_takes_the_next_device_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool of 2 GPUs x 2 jobs per GPU: its four workers, started one after the other, are
    pinned to GPUs 0, 0, 1, 1 (a replacement worker wraps round to the first slot). The
    worker start runs here, with its process-wide effects (parent watch, signals) faked."""
    import multiprocessing

    from shortcutlab.runner import local_processes

    monkeypatch.setattr(local_processes, "_die_with_parent", lambda main: None)
    monkeypatch.setattr(local_processes, "keep_freed_memory", lambda: None)
    monkeypatch.setattr(local_processes.signal, "signal", lambda *args: None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    slots = multiprocessing.get_context("spawn").Value("i", 0)
    devices = ["0", "0", "1", "1"]
    pinned = []
    for _ in range(5):
        local_processes._init_worker(os.getpid(), slots, devices, dict(os.environ))
        pinned.append(os.environ["CUDA_VISIBLE_DEVICES"])
    assert pinned == ["0", "0", "1", "1", "0"]


def test_jobs_per_gpu_must_be_positive(tmp_path) -> None:
    with pytest.raises(RunnerError, match="jobs per GPU must be >= 1"):
        run_jobs(_jobs("x"), tmp_path, backend="serial", jobs_per_gpu=0, progress=False)


@pytest.mark.slow
def test_process_workers_are_pinned_to_one_fake_gpu_each(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two (faked) GPUs, one job per GPU: two workers, each seeing only its own device."""
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 2)
    jobs = [Job(experiment=f"noop/slow-gpu/{i}", kind="noop") for i in range(4)]
    summary = run_jobs(jobs, tmp_path, backend="processes", device="auto", progress=False)
    assert len(summary.done) == 4
    assert {r["parent_pid"] for r in _results(tmp_path, jobs)} == {os.getpid()}  # spawned
    seen = {}
    for job in jobs:
        result = json.loads((tmp_path / job.job_id / "result.json").read_text())
        assert seen.setdefault(result["pid"], result["visible_devices"]) == (
            result["visible_devices"])  # a worker keeps its device
    assert len(seen) <= 2 and set(seen.values()) <= {"0", "1"}
    assert len(set(seen.values())) == len(seen)  # one worker per GPU slot


@pytest.mark.slow
def test_ray_tasks_share_a_fake_gpu(tmp_path, ray_instance) -> None:
    # two jobs, each on a fresh Ray worker (Ray ends a GPU task's worker after it)
    jobs = [Job(experiment=f"noop/ray-gpu/{i}", kind="noop") for i in range(2)]
    summary = run_jobs(jobs, tmp_path, backend="ray", jobs_per_gpu=2, progress=False)
    assert len(summary.done) == 2
    devices = {json.loads((tmp_path / j.job_id / "result.json").read_text())[
        "visible_devices"] for j in jobs}
    assert devices == {"0"}


def test_a_registered_backend_runs_the_jobs_with_the_run_settings(tmp_path) -> None:
    """A user backend, registered like a model: run_jobs hands it the not-yet-done jobs and one
    BackendContext, and writes the table of what it yields; the CLI option names it."""
    from shortcutlab.cli.options import BackendOptions
    from shortcutlab.runner.backend_api import BackendContext
    from shortcutlab.runner.backends import BACKENDS, list_backends, register_backend
    from shortcutlab.runner.jobs import job_kind, run_one

    seen: list[tuple[list[str], BackendContext]] = []

    def reversed_order(jobs, out, context):
        seen.append(([j.job_id for j in jobs], context))
        for job in reversed(jobs):
            yield run_one(job, out, context.device, job_kind(job.kind).run)

    jobs = _jobs("mine")
    with BACKENDS.scratch():
        register_backend("reversed", reversed_order)
        assert list_backends() == ["processes", "ray", "reversed", "serial", "slurm"]
        with pytest.raises(RunnerError, match="backend name 'serial' is already registered"):
            register_backend("serial", reversed_order)
        kwargs = BackendOptions(backend="reversed", workers=2, jobs_per_gpu=3).run_kwargs()
        summary = run_jobs(jobs, tmp_path, device="cpu", progress=False, **kwargs)
        _check(tmp_path, summary, jobs)
        assert [o.job_id for o in summary.outcomes] == [j.job_id for j in reversed(jobs)]
        again = run_jobs(jobs, tmp_path, device="cpu", progress=False, **kwargs)
    assert len(again.skipped) == 3 and len(seen) == 2  # the failed job only, the second time
    assert seen[1][0] == [jobs[3].job_id] and seen[0][0] == [j.job_id for j in jobs]
    context = seen[0][1]
    assert (context.device, context.workers, context.jobs_per_gpu) == ("cpu", 2, 3)
    assert context.slurm is not None and context.ray_address is None
    assert "reversed" not in list_backends()
    with pytest.raises(RunnerError, match=r"unknown backend 'reversed'; valid choices: "
                                          r"processes, ray, serial, slurm"):
        run_jobs(jobs, tmp_path, backend="reversed", progress=False)
    with pytest.raises(RunnerError, match=r"unknown backend 'reversed'"):
        BackendOptions(backend="reversed").check()  # what the commands call before writing
