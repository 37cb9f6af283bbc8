"""Process pool, Ray (one local instance, 1 CPU) and SLURM through submitit's local executor."""

from __future__ import annotations

import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner.backends import SlurmOptions, run_jobs
from shortcutlab.runner.collect import collect
from shortcutlab.runner.jobs import Job


def _jobs(tag: str) -> list[Job]:
    return [Job(experiment=f"noop/{tag}-x/{i}", kind="noop") for i in range(3)] + [
        Job(experiment=f"noop/fail-{tag}/0", kind="noop")
    ]


def _check(tmp_path, summary, jobs: list[Job]) -> None:  # noqa: ANN001
    assert len(summary.done) == 3 and len(summary.failed) == 1
    assert "failed on purpose" in summary.failed[0].error
    table = collect(tmp_path).set_index("job_id")
    assert table.loc[[j.job_id for j in jobs[:3]], "status"].tolist() == ["done"] * 3
    assert table.loc[jobs[3].job_id, "status"] == "failed"


def test_process_pool(tmp_path) -> None:
    jobs = _jobs("proc")
    summary = run_jobs(jobs, tmp_path, backend="processes", workers=2, progress=False)
    _check(tmp_path, summary, jobs)


def test_ray_local_instance(tmp_path) -> None:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        jobs = _jobs("ray")
        summary = run_jobs(jobs, tmp_path, backend="ray", progress=False)
        _check(tmp_path, summary, jobs)
    finally:
        ray.shutdown()


def test_slurm_via_submitit_debug_executor(tmp_path) -> None:
    """submitit's debug executor runs the submitted array in-process: same code path as SLURM
    (AutoExecutor, parameters, map_array, polling) without starting interpreters."""
    pytest.importorskip("submitit")
    jobs = _jobs("slurm")
    opts = SlurmOptions(cluster="debug", partition="gpu", timeout_min=5, poll_seconds=0.05)
    summary = run_jobs(jobs, tmp_path, backend="slurm", slurm=opts, progress=False)
    _check(tmp_path, summary, jobs)
    assert (tmp_path / ".submitit").is_dir()


def test_slurm_without_slurm_is_a_clear_error(tmp_path) -> None:
    submitit = pytest.importorskip("submitit")
    if submitit.SlurmExecutor.affinity() >= 0:
        pytest.skip("this machine has SLURM")
    with pytest.raises(RunnerError, match="no SLURM found"):
        run_jobs(_jobs("x"), tmp_path, backend="slurm", progress=False)
