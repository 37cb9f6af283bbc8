"""Availability checks registered with each backend: preflight and run_jobs ask the backend.

A user backend registered with ``check=`` refuses in its own words (one line, exit 2 from the
CLI, nothing written); the built-in ray and slurm checks keep their messages.
"""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import RunnerError
from shortcutlab.runner.backend_api import BackendContext, SlurmOptions
from shortcutlab.runner.backends import BACKENDS, backend_unavailable, register_backend
from shortcutlab.runner.jobs import Job, job_kind, run_one
from shortcutlab.runner.preflight import check_backend
from shortcutlab.runner.runs import run_jobs

REASON = ("backend farm: the lab's GPU farm is down for maintenance until Monday; "
          "use --backend processes")
DIAGVIB_RUN = ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--pairs", "hue-shape",
               "--samples", "0", "--scale", "0.001", "--epochs", "1", "--device", "cpu"]


def _farm(jobs, out, context):
    for job in jobs:
        yield run_one(job, out, context.device, job_kind(job.kind).run)


def _farm_check(up: list[bool], seen: list[BackendContext]):
    def check(context: BackendContext) -> str | None:
        seen.append(context)
        return None if up[0] else REASON
    return check


def test_a_user_backend_refuses_with_its_own_reason(tmp_path) -> None:
    up, seen = [False], []
    jobs = [Job(experiment=f"noop/farm-x/{i}", kind="noop") for i in range(2)]
    with BACKENDS.scratch():
        register_backend("farm", _farm, check=_farm_check(up, seen))
        with pytest.raises(RunnerError) as refused:
            check_backend("farm")
        assert str(refused.value) == REASON
        with pytest.raises(RunnerError, match="GPU farm is down"):
            run_jobs(jobs, tmp_path / "runs", backend="farm", device="cpu", progress=False)
        assert not (tmp_path / "runs").exists()  # refused before a job folder was written
        assert seen[-1].device == "cpu"  # run_jobs asked with the run's device
        slurm = SlurmOptions(cluster="local")
        assert backend_unavailable("farm", BackendContext(slurm=slurm)) == REASON
        assert seen[-1].slurm is slurm  # the check sees the run's settings
        up[0] = True  # the farm is back: the same backend runs
        check_backend("farm")
        summary = run_jobs(jobs, tmp_path / "runs", backend="farm", device="cpu", progress=False)
        assert len(summary.done) == 2
    assert "farm" not in BACKENDS


def test_the_cli_prints_the_backends_reason_and_exits_2(tmp_path) -> None:
    out = tmp_path / "out"
    with BACKENDS.scratch():
        register_backend("farm", _farm, check=_farm_check([False], []))
        res = CliRunner().invoke(app, [*DIAGVIB_RUN, "--backend", "farm", "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and REASON.split(";")[0] in lines[0], res.output
    assert "Traceback" not in res.output and not out.exists()


def test_a_backend_without_a_check_always_passes_and_unknown_names_are_listed() -> None:
    with BACKENDS.scratch():
        register_backend("plain", _farm)
        assert backend_unavailable("plain") is None
        check_backend("plain")
    with pytest.raises(RunnerError, match=r"unknown backend 'farm'; valid choices: processes, "
                                          r"ray, serial, slurm"):
        check_backend("farm")


def test_the_built_in_checks_are_registered_with_their_backends(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    assert backend_unavailable("ray") == ("backend ray needs the ray package: "
                                          "pip install 'shortcutlab[ray]'")
    monkeypatch.setitem(sys.modules, "submitit", None)
    with pytest.raises(RunnerError, match=r"backend slurm needs the submitit package"):
        check_backend("slurm", "local")
    assert backend_unavailable("serial") is None and backend_unavailable("processes") is None
