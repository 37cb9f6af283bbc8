"""benchmarks/gpu_check.py: the CUDA tests first (a failure stops everything, loudly), every
epoch time as a ratio to the GPU's own ceiling, the benchmark's GPU-hours, resumable chunks;
in-process with the measurements faked (fast), and end to end at tiny scale on the CPU (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.scripts import load_script
from tests.package_src import PACKAGE_SRC

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
TINY = ["--device", "cpu", "--scale", "0.002", "--quick", "--jobs", "2", "--model", "small_cnn",
        "--precision-scale", "0.002", "--precision-epochs", "1", "--seeds", "1"]


@pytest.fixture(scope="module")
def check():
    return load_script("gpu_check")


CEILING = {"image_size": 128,
           "fp32": {"epoch_floor_s": 4.0, "job_epoch_floor_s": 3.0},
           "bf16+channels_last": {"epoch_floor_s": 2.0, "job_epoch_floor_s": 1.5}}


def _epoch(check, name: str, epoch_s: float) -> dict:
    precision, channels_last, graphs, shared, _ = check.EPOCHS[name]
    return {"jobs": 5 if shared else 1, "precision": precision, "epoch_s": epoch_s,
            "cuda_graphs": graphs, "step_mode": "graph", "utilisation": [50.0, 70.0]}


def _fake_sections(check, monkeypatch, calls: list[str], tests_fail: bool = False) -> None:
    times = {"epoch_alone": 5.0, "epoch_graphs_off": 7.0, "epoch_bf16": 3.0,
             "epoch_shared": 16.0, "epoch_shared_bf16": 8.0}

    def fake(name, args):
        calls.append(name)
        if name == "cuda_tests":
            outcome = "failed" if tests_fail else "passed"
            return {"outcomes": {"t.py::test_graph[cuda]": outcome, "t.py::test_x[cpu]": "passed"},
                    "output_tail": "assert 1 == 2", "all_cuda_passed": not tests_fail}
        if name == "ceiling":
            return CEILING
        return _epoch(check, name, times[name])

    monkeypatch.setattr(check, "run_section", fake)


def test_every_epoch_is_a_ratio_to_the_ceiling_with_its_gpu_hours(check, monkeypatch, tmp_path,
                                                                  capsys) -> None:
    calls: list[str] = []
    _fake_sections(check, monkeypatch, calls)
    out = tmp_path / "check.json"
    assert check.main(["--device", "cpu", "--out", str(out)]) == 0
    assert calls == list(check.DEFAULT_SECTIONS)  # the CUDA tests first
    summary = json.loads(out.read_text())["summary"]
    alone, shared, bf16 = (summary[k] for k in ("epoch_alone", "epoch_shared", "epoch_bf16"))
    assert alone["ratio_to_ceiling"] == pytest.approx(5.0 / 4.0)
    assert shared["job_epoch_s_aggregate"] == pytest.approx(16.0 / 5)
    assert shared["ratio_to_ceiling"] == pytest.approx(16.0 / 5 / 3.0)  # the shared floor
    assert bf16["ratio_to_ceiling"] == pytest.approx(3.0 / 2.0)  # its own recipe's ceiling
    assert summary["epoch_shared_bf16"]["ratio_to_ceiling"] == pytest.approx(8.0 / 5 / 1.5)
    assert shared["benchmark_gpu_hours"] == pytest.approx(1230 * 30 * 3.2 / 3600)
    assert alone["gpu_busy_percent"] == pytest.approx(60.0)
    printed = capsys.readouterr().out
    assert "1.25 x the ceiling (4.00 s)" in printed and "32.8 GPU-hours" in printed


def test_a_failed_cuda_test_stops_the_check_loudly(check, monkeypatch, tmp_path,
                                                   capsys) -> None:
    calls: list[str] = []
    _fake_sections(check, monkeypatch, calls, tests_fail=True)
    out = tmp_path / "check.json"
    assert check.main(["--device", "cpu", "--out", str(out)]) == 1
    assert calls == ["cuda_tests"]  # nothing measured after it
    err = capsys.readouterr().err
    assert "CUDA TESTS FAILED: t.py::test_graph[cuda]" in err and "assert 1 == 2" in err
    assert not out.exists() or "cuda_tests" not in json.loads(out.read_text())["sections"]


def test_the_budget_stops_before_a_section_and_the_next_call_goes_on(check, monkeypatch,
                                                                     tmp_path, capsys) -> None:
    calls: list[str] = []
    _fake_sections(check, monkeypatch, calls)
    out = tmp_path / "check.json"
    # the CUDA tests' estimate (60 s) does not fit in 20 s; the tiny ceiling (10 s) does
    assert check.main([*TINY, "--out", str(out), "--budget-seconds", "20"]) == 0
    assert calls == ["ceiling"] and "remaining: cuda_tests" in capsys.readouterr().out
    assert check.main([*TINY, "--out", str(out)]) == 0
    assert calls[1:] == [s for s in check.DEFAULT_SECTIONS if s != "ceiling"]
    assert "ceiling: already in" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:  # the same file with other settings: refused
        check.main([*TINY, "--out", str(out), "--scale", "0.004"])
    assert exc.value.code == 2 and "scale=0.002" in capsys.readouterr().err


def test_each_epoch_section_hands_its_recipe_to_the_epoch_jobs(check, monkeypatch) -> None:
    """What the end-to-end run below leaves to this test: every epoch section's precision,
    channels_last, CUDA graphs, compile and job count reach the processes that run the epochs."""
    calls: list[dict] = []

    def fake_bench_epoch(device, scale, jobs_list, precision, channels_last, model, **kwargs):
        calls.append({"device": device, "jobs": jobs_list, "precision": precision,
                      "channels_last": channels_last, "model": model, **kwargs})
        return {jobs_list[0]: {"epoch_s": 1.0, "step_mode": "graph"}}

    monkeypatch.setattr(check.pipeline, "bench_epoch", fake_bench_epoch)
    args = check.parse_args([*TINY, "--jobs", "3"])
    for name, (precision, channels_last, graphs, shared, compile) in check.EPOCHS.items():
        result = check.run_epoch(name, args)
        call = calls[-1]
        assert call == {"device": "cpu", "jobs": [3 if shared else 1], "precision": precision,
                        "channels_last": channels_last, "model": "small_cnn",
                        "cuda_graphs": graphs, "compile": compile}, name
        assert result["jobs"] == (3 if shared else 1) and result["cuda_graphs"] == graphs
    assert {c["cuda_graphs"] for c in calls} == {"auto", "off"}  # both kinds of section
    assert {c["precision"] for c in calls} == {"fp32", "bf16"}


@pytest.mark.slow
def test_gpu_check_runs_end_to_end_on_cpu(tmp_path: Path) -> None:
    """The real thing at tiny scale (about 15 s of CPU; minutes of wall time on a loaded
    machine): the CUDA tests skip, the ceiling and an epoch section (bf16 + channels_last, two
    jobs at once, each a process of its own) land in the file. The test above checks that
    every epoch section hands its own recipe to those processes; the fake-section tests run
    all sections through the same code."""
    out = tmp_path / "check.json"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_SRC), "OMP_NUM_THREADS": "1"}
    sections = ["cuda_tests", "ceiling", "epoch_shared_bf16"]
    proc = subprocess.run([sys.executable, str(SCRIPT), *TINY, "--out", str(out),
                           "--only", *sections], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert list(data["sections"]) == sections
    tests = data["sections"]["cuda_tests"]["result"]["outcomes"]
    assert len(tests) == 6 and all(v == "skipped" for k, v in tests.items() if "cpu" not in k)
    ceiling = data["sections"]["ceiling"]["result"]
    assert ceiling["fp32"]["rates"]["train_8"] > 0 and ceiling["fp32"]["epoch_floor_s"] > 0
    shared = data["summary"]["epoch_shared_bf16"]
    assert shared["step_mode"].startswith("eager: device cpu")
    assert shared["jobs"] == 2 and shared["recipe"] == "bf16+channels_last"
    assert shared["ratio_to_ceiling"] == pytest.approx(
        shared["job_epoch_s_aggregate"] / shared["ceiling_s"])
    assert "x the ceiling" in proc.stdout and "all sections done" in proc.stdout
