"""CUDA MPS started by the runner for jobs sharing a GPU, with a fake ``nvidia-cuda-mps-control``
on PATH that records its starts and stops; ``--jobs-per-gpu auto``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner import backend_api, mps
from shortcutlab.runner.jobs import Job
from shortcutlab.runner.mps import (
    LOG_ENV,
    PIPE_ENV,
    auto_jobs_per_gpu,
    mps_for,
    parse_jobs_per_gpu,
    resolve_jobs_per_gpu,
)
from shortcutlab.runner.runs import run_jobs

FAKE = """#!/bin/sh
if [ "$1" = "-d" ]; then
  echo "start $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> "{log}"
  [ -n "$FAKE_MPS_REFUSE" ] && {{ echo "$FAKE_MPS_REFUSE" >&2; exit 1; }}
  touch "$CUDA_MPS_PIPE_DIRECTORY/control"
  exit 0
fi
read command
echo "$command $CUDA_MPS_PIPE_DIRECTORY" >> "{log}"
"""


@pytest.fixture
def control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake control program first on PATH; returns the file it records its calls in."""
    bin_dir, log = tmp_path / "bin", tmp_path / "mps-calls.txt"
    bin_dir.mkdir()
    script = bin_dir / mps.CONTROL
    script.write_text(FAKE.format(log=log))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(PIPE_ENV, raising=False)
    monkeypatch.delenv(LOG_ENV, raising=False)
    monkeypatch.setattr(mps, "DEFAULT_PIPE_DIRECTORY", str(tmp_path / "no-system-daemon"))
    return log


def _calls(log: Path) -> list[str]:
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def test_mps_started_with_a_private_pipe_and_stopped_at_the_end(control: Path) -> None:
    said: list[str] = []
    with mps_for("auto", 3, on_cuda=True, say=said.append) as on:
        assert on and _calls(control) == ["start"]
        pipe, log_dir = os.environ[PIPE_ENV], os.environ[LOG_ENV]  # what workers inherit
        assert Path(pipe, "control").exists() and Path(log_dir).is_dir()
        assert control.read_text().split()[1:] == [pipe, log_dir]
    assert _calls(control) == ["start", "quit"] and control.read_text().split()[-1] == pipe
    assert PIPE_ENV not in os.environ and LOG_ENV not in os.environ  # restored
    assert not Path(pipe).parent.exists()  # its folder removed
    assert len(said) == 1 and said[0].startswith("CUDA MPS started for 3 jobs per GPU")


def test_an_interrupted_run_still_stops_mps(control: Path) -> None:
    with pytest.raises(KeyboardInterrupt), mps_for("auto", 2, on_cuda=True, say=print):
        raise KeyboardInterrupt
    assert _calls(control) == ["start", "quit"]
    assert PIPE_ENV not in os.environ


def test_without_mps_one_line_says_jobs_time_slice(control: Path, monkeypatch) -> None:
    said: list[str] = []
    with mps_for("off", 2, on_cuda=True, say=said.append) as on:
        assert not on
    assert _calls(control) == [] and len(said) == 1
    assert "will time-slice" in said[0] and "--mps off" in said[0]
    monkeypatch.setenv("PATH", "/nonexistent")
    said.clear()
    with mps_for("auto", 2, on_cuda=True, say=said.append) as on:
        assert not on
    assert len(said) == 1 and f"{mps.CONTROL} not found" in said[0]


def test_nothing_to_do_for_one_job_per_gpu_cpu_or_remote_workers(control: Path) -> None:
    said: list[str] = []
    for jobs, on_cuda, local in ((1, True, True), (4, False, True), (4, True, False)):
        with mps_for("auto", jobs, on_cuda=on_cuda, local=local, say=said.append) as on:
            assert not on
    assert said == [] and _calls(control) == []


def test_a_running_daemon_is_used_and_left_alone(control: Path, tmp_path, monkeypatch) -> None:
    system = tmp_path / "system-pipe"
    system.mkdir()
    (system / "control").touch()
    monkeypatch.setenv(PIPE_ENV, str(system))
    said: list[str] = []
    with mps_for("auto", 2, on_cuda=True, say=said.append) as on:
        assert on and os.environ[PIPE_ENV] == str(system)
    assert _calls(control) == [] and "already running" in said[0]
    assert os.environ[PIPE_ENV] == str(system)


def test_where_mps_may_not_be_started_the_run_says_so_and_goes_on(control, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MPS_REFUSE", "permission denied")
    said: list[str] = []
    with mps_for("auto", 2, on_cuda=True, say=said.append) as on:
        assert not on and PIPE_ENV not in os.environ
    assert _calls(control) == ["start"]  # tried once, nothing to stop
    assert len(said) == 1 and "could not be started here (permission denied)" in said[0]
    assert "time-slice" in said[0]


def test_run_jobs_starts_and_stops_mps_even_when_interrupted(control, tmp_path,
                                                             monkeypatch) -> None:
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 1)
    jobs = [Job(experiment=f"noop/mps-x/{i}", kind="noop") for i in range(2)]

    def interrupt(_outcome: object) -> None:
        assert _calls(control) == ["start"]  # MPS runs while the jobs do
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, tmp_path / "run", backend="processes", device="auto", jobs_per_gpu=2,
                 workers=1, progress=False, on_outcome=interrupt)  # one worker: one start
    assert _calls(control) == ["start", "quit"]
    with pytest.raises(RunnerError, match="valid choices: auto, off"):
        run_jobs(jobs, tmp_path / "run", backend="serial", mps="on", progress=False)


def test_jobs_per_gpu_auto_rule_and_parsing() -> None:
    resnet18 = 11.2  # million parameters
    assert auto_jobs_per_gpu(139.8, [resnet18]) == 5  # H200: the measured 5, the cap
    assert auto_jobs_per_gpu(79.6, [resnet18]) == 5  # H100
    assert auto_jobs_per_gpu(23.6, [resnet18]) == 5  # a 24 GB card: 5 x 4 GiB fit
    assert auto_jobs_per_gpu(15.7, [resnet18]) == 3  # a 16 GB card: memory bound
    assert auto_jobs_per_gpu(8.0, [resnet18]) == 1
    assert auto_jobs_per_gpu(23.6, [resnet18, 25.6]) == 1  # the largest model counts
    assert parse_jobs_per_gpu("3") == 3 and parse_jobs_per_gpu("auto") == "auto"
    for bad in ("0", "many", "2.5", 0):
        with pytest.raises(RunnerError, match="jobs per GPU must be >= 1"):
            parse_jobs_per_gpu(bad)
    assert resolve_jobs_per_gpu("auto", "cpu", ["small_cnn"]) == 1
    assert resolve_jobs_per_gpu(4, "cuda", ["small_cnn"]) == 4


def test_jobs_per_gpu_auto_sizes_a_15m_parameter_model_as_a_small_one() -> None:
    """The 4 GiB estimate holds for models of *up to* 15 M parameters (inclusive): on a
    24 GB card, 0.9 x 23.6 GiB // 4 GiB = 5 jobs of a 15.0 M model, 0.9 x 23.6 // 12 = 1 of a
    15.1 M one."""
    assert auto_jobs_per_gpu(23.6, [mps.SMALL_MODEL_MAX_MPARAMS]) == int(0.9 * 23.6 // 4) == 5
    assert auto_jobs_per_gpu(23.6, [15.1]) == int(0.9 * 23.6 // 12) == 1
