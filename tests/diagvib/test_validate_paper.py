"""benchmarks/validate_diagvib_paper.py: the paper recipe by default, every section-5 study,
and runs in budgeted chunks that end where one unbudgeted call ends."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from shortcutlab.diagvib.jobs import collect_jobs
from shortcutlab.diagvib.metrics import STUDIES

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "validate_diagvib_paper.py"
TINY = ["--model", "small_cnn", "--studies", "ZSO", "--pairs", "hue-shape", "shape-hue",
        "--scale", "0.002", "--epochs", "1", "--backend", "serial", "--device", "cpu"]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("validate_diagvib_paper", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.REFERENCE_TEXTURES = Path("/nonexistent")  # tests never read the shared data
    return module


def test_defaults_are_the_paper_recipe_over_every_study(script) -> None:
    args = script.parse([])
    assert (args.model, args.preset, args.selection, args.head) == (
        "resnet18", "paper", "paper", "full")
    assert args.studies == list(STUDIES) and len(STUDIES) == 9
    assert {study for study, _, _ in script.statements()} == {"ZSO", "ZGO", "CGO", "CHGO", "FGO"}


def test_two_budgeted_calls_end_as_one_call(script, tmp_path, capsys) -> None:
    assert script.main([*TINY, "--budget-seconds", "0.1", "--out", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().out
    assert "1 of 2 jobs remain" in first and "textures built-in" in first
    assert "head full" in first and "selection paper" in first
    assert script.main([*TINY, "--budget-seconds", "600", "--out", str(tmp_path / "a")]) == 0
    second = capsys.readouterr().out
    assert "1 already done" in second and "remain;" not in second
    assert script.main([*TINY, "--out", str(tmp_path / "b")]) == 0
    whole = capsys.readouterr().out
    cols = ["job_id", "status", "test_acc"]
    a, b = (collect_jobs(tmp_path / d)[cols] for d in "ab")
    assert (a["status"] == "done").all() and a.equals(b)
    ours = [line for line in whole.splitlines() if "ours:  position" in line][0]
    assert "hue 0." in ours and "shape 0." in ours  # both ZSO results beside the paper's
    def said(text: str) -> str:  # the statements and our numbers, without the report path
        return text.split("Section 5")[1].split("report:")[0]

    assert said(second) == said(whole)
