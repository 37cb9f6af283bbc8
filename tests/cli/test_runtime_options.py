"""`diagvib run --cuda-graphs/--compile`: runtime options that reach the jobs (through the
environment their worker processes inherit) without changing a job id."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.runner.runs import RunSummary
from shortcutlab.train.runtime import COMPILE_ENV, CUDA_GRAPHS_ENV

runner = CliRunner()
RUN = ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--scale", "0.001",
       "--epochs", "1", "--device", "cpu"]


def test_runtime_options_reach_the_jobs_and_leave_their_ids(tmp_path: Path,
                                                            monkeypatch) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run_jobs(jobs: Any, out: Any, **kwargs: Any) -> RunSummary:
        calls.append({"ids": [j.job_id for j in jobs], "graphs": os.environ.get(CUDA_GRAPHS_ENV),
                      "compile": os.environ.get(COMPILE_ENV), **kwargs})
        return RunSummary([])

    monkeypatch.setattr("shortcutlab.runner.runs.run_jobs", fake_run_jobs)
    monkeypatch.delenv(CUDA_GRAPHS_ENV, raising=False)
    base = runner.invoke(app, [*RUN, "--out", str(tmp_path / "a")])
    given = runner.invoke(app, [*RUN, "--cuda-graphs", "off", "--compile", "--jobs-per-gpu",
                                "auto", "--out", str(tmp_path / "b")])
    assert base.exit_code == 0 and given.exit_code == 0, given.output
    first, second = calls
    assert (first["graphs"], first["compile"]) == ("auto", "0")
    assert (second["graphs"], second["compile"]) == ("off", "1")
    assert (first["mps"], second["jobs_per_gpu"]) == ("auto", "auto")
    assert first["ids"] == second["ids"]  # runtime options: the same jobs
    assert CUDA_GRAPHS_ENV not in os.environ  # restored after the run


def test_bad_runtime_options_are_refused_in_one_line(tmp_path: Path) -> None:
    for flag, value, message in (
            ("--cuda-graphs", "on", "unknown cuda_graphs mode 'on'; valid choices: auto, off"),
            ("--mps", "on", "unknown --mps mode 'on'; valid choices: auto, off"),
            ("--jobs-per-gpu", "0", "jobs per GPU must be >= 1 (a whole number) or auto")):
        res = runner.invoke(app, [*RUN, flag, value, "--out", str(tmp_path / "x")])
        assert res.exit_code == 2, res.output
        assert res.stderr.startswith(f"Error: {message}"), res.stderr


def test_cuda_is_checked_here_only_where_the_jobs_run_here(tmp_path: Path, monkeypatch) -> None:
    """A SLURM login node (or a Ray cluster's client) need not have the GPU its jobs will use;
    jobs run on this machine must (this test machine has none)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("submitit.SlurmExecutor.affinity", classmethod(lambda cls: 2))
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr("shortcutlab.runner.runs.run_jobs",
                        lambda jobs, out, **kw: calls.append(kw) or RunSummary([]))
    cuda = [arg if arg != "cpu" else "cuda" for arg in RUN]
    for remote in (["--backend", "slurm"], ["--backend", "ray", "--ray-address", "auto"]):
        res = runner.invoke(app, [*cuda, *remote, "--out", str(tmp_path / remote[1])])
        assert res.exit_code == 0, res.output
        assert calls.pop()["device"] == "cuda"
    for here in (["--backend", "processes"], ["--backend", "slurm", "--slurm-executor", "local"]):
        res = runner.invoke(app, [*cuda, *here, "--out", str(tmp_path / "here")])
        assert res.exit_code == 2 and "no CUDA GPU is available" in res.output, res.output
    res = runner.invoke(app, [*RUN[:-1], "tpu", "--backend", "slurm", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "unknown device 'tpu'" in res.output
    assert not (tmp_path / "here").exists() and not calls


def test_bad_hyperparameters_are_refused_before_any_job_is_written(tmp_path: Path) -> None:
    """Checked as creating the algorithm checks them, but up front: one line and exit 2, not a
    job that fails after the run has started."""
    for algorithm, hparams, message in (
            ("vae", "lr: -1.0", "hyper-parameter lr of algorithm vae must be a number > 0"),
            ("erm", "bogus: 1", "unknown hyper-parameter of algorithm erm 'bogus'")):
        config = tmp_path / f"{algorithm}.yaml"
        config.write_text(f"hparams:\n  {hparams}\n")
        model = "vae" if algorithm == "vae" else "small_cnn"
        out = tmp_path / algorithm
        res = runner.invoke(app, [*RUN[:3], model, *RUN[4:], "--algorithm", algorithm,
                                  "--config", str(config), "--out", str(out)])
        assert res.exit_code == 2, res.output
        assert res.stderr.startswith(f"Error: {message}"), res.stderr
        assert not out.exists()
