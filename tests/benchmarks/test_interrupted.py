"""Ctrl-C during benchmarks/bench_baselines.py --accuracy or benchmarks/validate_diagvib_paper.py
ends as the CLI ends: the runner's one line (what finished, what did not) on stderr and exit
status 130, not a ``RunInterrupted`` traceback."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from shortcutlab.runner import RunInterrupted, RunSummary
from tests.benchmarks.scripts import load_script

LINE = "interrupted: 1 of 2 jobs finished, 1 not started"


def _load(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, "1"))  # restored after the test
    return load_script(name)


def _interrupt(*args, **kwargs):
    raise RunInterrupted(LINE, RunSummary(outcomes=[]))


def _assert_one_line(code: int, capsys: pytest.CaptureFixture[str]) -> None:
    err = capsys.readouterr().err
    assert code == 130
    assert err.strip() == LINE
    assert "Traceback" not in err


@pytest.mark.slow  # imports torch
def test_bench_baselines_accuracy_interrupted(monkeypatch, capsys, tmp_path) -> None:
    script = _load("bench_baselines", monkeypatch)
    monkeypatch.setattr("shortcutlab.runner.runs.run_jobs", _interrupt)
    code = script.main(["--accuracy", "--set", "small", "--only", "small_cnn", "--scale",
                        "0.002", "--epochs", "1", "--out", str(tmp_path / "runs")])
    _assert_one_line(code, capsys)


def test_validate_diagvib_paper_interrupted(monkeypatch, capsys, tmp_path) -> None:
    script = _load("validate_diagvib_paper", monkeypatch)
    monkeypatch.setattr(script, "REFERENCE_TEXTURES", Path("/nonexistent"))
    monkeypatch.setattr(script, "run_jobs", _interrupt)
    code = script.main(["--model", "small_cnn", "--studies", "ZSO", "--pairs", "hue-shape",
                        "--scale", "0.002", "--epochs", "1", "--backend", "serial", "--device",
                        "cpu", "--out", str(tmp_path / "runs")])
    _assert_one_line(code, capsys)
