"""benchmarks/gpu_check.py at tiny scale on the CPU: every section lands in the result file,
the budget stops before a section that does not fit, and the next call goes on from there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
TINY = ["--device", "cpu", "--scale", "0.002", "--quick", "--jobs", "2", "--model", "small_cnn",
        "--precision-scale", "0.002", "--precision-epochs", "1", "--seeds", "1"]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *TINY, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_gpu_check_runs_on_cpu_in_chunks(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    # 40 s of budget: the CUDA tests (~60 s estimated) and the epochs do not fit; the renderer
    # (~30 s) does and runs
    first = _run("--out", str(out), "--budget-seconds", "40")
    assert first.returncode == 0, first.stderr
    assert "remaining: cuda_tests" in first.stdout and "epoch_alone" in first.stdout
    data = json.loads(out.read_text())
    assert list(data["sections"]) == ["render"]
    render = data["sections"]["render"]["result"]
    assert render["512"]["torch"] > 0 and render["512"]["numpy_1_core"] > 0
    # the next call skips what is done and finishes the rest
    second = _run("--out", str(out))
    assert second.returncode == 0, second.stderr
    assert "render: already in" in second.stdout and "all sections done" in second.stdout
    data = json.loads(out.read_text())
    assert set(data["sections"]) == {"cuda_tests", "render", "epoch_alone", "epoch_shared",
                                     "precision"}
    assert data["sections"]["render"]["result"] == render  # not measured again
    tests = data["sections"]["cuda_tests"]["result"]["outcomes"]
    assert len(tests) == 4  # three tests, the InfoDrop one for cpu and cuda
    assert all(v == "skipped" for k, v in tests.items() if "cpu" not in k)  # no CUDA here
    assert data["sections"]["cuda_tests"]["result"]["all_cuda_passed"] is False
    alone, shared = data["sections"]["epoch_alone"]["result"], data["sections"]["epoch_shared"][
        "result"]
    assert alone["jobs"] == 1 and shared["jobs"] == 2 and shared["mps"] is False
    assert len(shared["test_acc"]) == 2 and 0 < alone["epoch_s"]
    summary = data["summary"]
    for key, sec in (("epoch_alone", alone), ("epoch_shared", shared)):
        hours = 1230 * 30 * sec["epoch_s"] / sec["jobs"] / 3600
        assert summary[key]["benchmark_gpu_hours"] == pytest.approx(hours)
    assert set(data["sections"]["precision"]["result"]) == {
        "fp32", "bf16", "fp16", "channels_last", "bf16+channels_last"}
    assert summary["precision"]["fp32"]["change_vs_fp32"] == 0
    # the same file with other settings is refused, not mixed
    bad = _run("--out", str(out), "--scale", "0.004")
    assert bad.returncode == 2 and "scale=0.002" in bad.stderr
