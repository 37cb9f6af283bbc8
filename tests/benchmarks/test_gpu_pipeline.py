"""benchmarks/bench_gpu_pipeline.py's numpy section: a baseline that draws other images than the
current renderer is skipped with a reason (it was a bare assertion that ended the whole run once
the generator changed, adc8c1a), and one that draws the same images is timed."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pipeline():
    return load_script("bench_gpu_pipeline")


def _baseline(render) -> types.ModuleType:
    """A stand-in for the renderer loaded from git: ``render`` draws its images."""
    from shortcutlab.diagvib.render import ImageGenerator

    class Old(ImageGenerator):
        def render(self, classes, seed, split, indices, out=None):
            return render(super().render(classes, seed=seed, split=split, indices=indices))

    return types.SimpleNamespace(ImageGenerator=Old)


@pytest.mark.slow  # the timing imports torch (seconds on a busy machine)
def test_a_baseline_with_the_same_images_is_timed(pipeline, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "_old_renderer", lambda rev: _baseline(lambda x: x))
    monkeypatch.setattr(pipeline, "_sync", lambda device: None)  # no torch import for the CPU
    out = pipeline.bench_numpy("same", [8], 0.01)
    assert set(out) == {8} and out[8]["baseline"] > 0 and out[8]["now"] > 0


def test_a_baseline_with_other_images_is_skipped_with_a_reason(pipeline, monkeypatch,
                                                               capsys) -> None:
    monkeypatch.setattr(pipeline, "_old_renderer", lambda rev: _baseline(np.zeros_like))
    out = pipeline.bench_numpy("older", [8], 0.01)
    assert "draws other images" in out["skipped"]
    assert "numpy section skipped: the renderer at older" in capsys.readouterr().err


@pytest.mark.slow  # the renderer at the baseline imports torch
def test_the_default_baseline_runs_to_an_answer(pipeline, monkeypatch) -> None:
    """The default --baseline-rev from git, for real: measured or skipped, never a crash."""
    rev = pipeline.BASELINE_REV
    if subprocess.run(["git", "cat-file", "-e", f"{rev}^{{commit}}"], cwd=ROOT,
                      capture_output=True).returncode != 0:
        pytest.skip(f"{rev} is not in this clone's history")
    monkeypatch.setattr(pipeline, "_sync", lambda device: None)
    out = pipeline.bench_numpy(rev, [8], 0.01)
    assert "skipped" in out or set(out) == {8}
    sys.modules.pop("render_baseline", None)
