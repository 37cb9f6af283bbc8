"""Options declared once (issue 27): the backend options, the same on `diagvib run` and
`biasbed run`, every one of them reaching the runner (`--threads` part of each job on both);
the statistics options, the same on `stats compare` and `biasbed report`."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import shortcutlab.biasbed.protocol  # noqa: F401  (binds the real run_jobs before any patch)
from shortcutlab.cli.main import app
from shortcutlab.cli.options import BackendOptions
from shortcutlab.runner.runs import RunSummary

runner = CliRunner()
COMMANDS = {
    "diagvib run": ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                    "--scale", "0.001", "--epochs", "1"],
    "biasbed run": ["biasbed", "run", "--algorithm", "erm", "--dataset", "diagvib:ZSO/hue/0",
                    "--scale", "0.001", "--epochs", "1", "--seeds", "0"],
}
# every backend option with a value other than its default: those ray reads, those slurm reads
GIVEN_RAY = ["--backend", "ray", "--workers", "3", "--jobs-per-gpu", "2", "--mps", "off",
             "--threads", "2", "--ray-address", "auto"]
GIVEN_SLURM = ["--backend", "slurm", "--threads", "2", "--slurm-partition", "gpu",
               "--slurm-time", "600", "--slurm-gpus", "1", "--slurm-cpus", "8",
               "--slurm-executor", "local", "--slurm-mem", "32", "--slurm-account", "lab",
               "--slurm-qos", "high"]
GIVEN = GIVEN_RAY + GIVEN_SLURM


def _options(path: str) -> dict[str, Any]:
    group, name = path.split()
    command = typer.main.get_command(app).commands[group].commands[name]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


def test_both_run_commands_have_every_backend_option_alike() -> None:
    names = [f.name for f in fields(BackendOptions)]
    assert {f"--{n.replace('_', '-')}" for n in names} == set(GIVEN[::2])  # GIVEN names them all
    run, biasbed = _options("diagvib run"), _options("biasbed run")
    for name in names:
        a, b = run[name], biasbed[name]
        assert (a.opts, a.default, a.help) == (b.opts, b.default, b.help), name
        assert a.default == getattr(BackendOptions(), name), name


STATISTICS = ["df", "nemenyi_clip", "nemenyi", "no_tie_correction"]


def test_statistics_options_alike_on_stats_compare_and_biasbed_report() -> None:
    compare, report = _options("stats compare"), _options("biasbed report")
    for name in STATISTICS:
        a, b = compare[name], report[name]
        assert (a.opts, a.default, a.help) == (b.opts, b.default, b.help), name


@pytest.mark.parametrize(
    ("command", "flag", "message"),
    [("stats compare", "--nemenyi", "unknown --nemenyi method 'fast'"),
     ("biasbed report", "--nemenyi", "unknown --nemenyi method 'fast'"),
     ("stats compare", "--df", "unknown --df convention 'fast'"),
     ("biasbed report", "--df", "unknown --df convention 'fast'")],
)
def test_statistics_choices_refused_alike(
    command: str, flag: str, message: str, tmp_path: Path
) -> None:
    res = runner.invoke(app, [*command.split(), str(tmp_path), flag, "fast"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"Error: {message}"), res.output


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_backend_option_reaches_the_runner(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run_jobs(jobs: Any, out: Any, **kwargs: Any) -> RunSummary:
        calls.append({"jobs": list(jobs), **kwargs})
        return RunSummary([])

    monkeypatch.setattr("shortcutlab.runner.runs.run_jobs", fake_run_jobs)
    monkeypatch.setattr("shortcutlab.biasbed.protocol.run_jobs", fake_run_jobs)
    for given in (GIVEN_RAY, GIVEN_SLURM):
        out = tmp_path / given[1]
        res = runner.invoke(app, [*COMMANDS[command], *given, "--device", "cpu", "--out",
                                  str(out)])
        assert res.exit_code == 0, res.output
        assert calls[-1]["jobs"] and all(job.threads == 2 for job in calls[-1]["jobs"])
        if command == "biasbed run":  # the report finds the jobs by the ids protocol.json has
            recorded = json.loads((out / "protocol.json").read_text())["jobs"]
            assert set(recorded) == {job.job_id for job in calls[-1]["jobs"]}
    ray, slurm_call = calls
    assert (ray["backend"], ray["workers"], ray["jobs_per_gpu"], ray["ray_address"],
            ray["mps"]) == ("ray", 3, 2, "auto", "off")
    slurm = slurm_call["slurm"]
    assert slurm_call["backend"] == "slurm"
    assert (slurm.cluster, slurm.partition, slurm.timeout_min, slurm.gpus_per_node,
            slurm.cpus_per_task, slurm.mem_gb, slurm.account, slurm.qos) == (
        "local", "gpu", 600, 1, 8, 32, "lab", "high")


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("given", "message"),
    [(["--backend", "processes", "--slurm-partition", "gpu"],
      "--backend processes ignores --slurm-partition (read by slurm)"),
     (["--backend", "serial", "--workers", "2", "--mps", "off"],
      "--backend serial ignores --workers (read by processes and ray), --mps (read by "
      "processes and ray)"),
     (["--backend", "slurm", "--slurm-executor", "local", "--jobs-per-gpu", "2"],
      "--backend slurm ignores --jobs-per-gpu (read by processes and ray)"),
     (["--backend", "processes", "--ray-address", "auto"],
      "--backend processes ignores --ray-address (read by ray)")],
    ids=["slurm-option-processes", "workers-serial", "jobs-per-gpu-slurm", "ray-address"])
def test_an_option_the_backend_ignores_is_refused_before_anything_is_written(
    command: str, given: list[str], message: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr("shortcutlab.runner.runs.run_jobs", lambda *a, **k: calls.append(a))
    monkeypatch.setattr("shortcutlab.biasbed.protocol.run_jobs",
                        lambda *a, **k: calls.append(a))
    out = tmp_path / "run"
    res = runner.invoke(app, [*COMMANDS[command], *given, "--device", "cpu", "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert res.stderr.splitlines() == [f"Error: {message}; drop it or choose a backend that "
                                       "reads it"]
    assert not calls and not out.exists()


def test_biasbed_run_honours_threads(tmp_path: Path) -> None:
    """A real run: the job trains with 2 threads, and its id differs from the 1-thread job's."""
    base = [*COMMANDS["biasbed run"], "--batch-size", "16", "--backend", "serial",
            "--device", "cpu"]
    ids = {}
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        res = runner.invoke(app, [*base, "--threads", str(threads), "--out", str(out)])
        assert res.exit_code == 0, res.output
        (job_id,) = json.loads((out / "protocol.json").read_text())["jobs"]
        result = json.loads((out / job_id / "result.json").read_text())
        assert result["threads"] == threads
        ids[threads] = job_id
    assert ids[1] != ids[2]


def test_diagvib_run_training_options_reach_every_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each training option of `diagvib run` ends up in every job's TrainConfig (none left at
    the preset's value)."""
    calls: list[list[Any]] = []

    def fake_run_jobs(jobs: Any, out: Any, **kwargs: Any) -> RunSummary:
        calls.append(list(jobs))
        return RunSummary([])

    monkeypatch.setattr("shortcutlab.runner.runs.run_jobs", fake_run_jobs)
    res = runner.invoke(app, [*COMMANDS["diagvib run"], "--patience", "7", "--lr", "0.003",
                              "--batch-size", "9", "--device", "cpu", "--backend", "serial",
                              "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    (jobs,) = calls
    assert jobs and {(j.train.patience, j.train.lr, j.train.batch_size, j.train.epochs)
                     for j in jobs} == {(7, 0.003, 9, 1)}
