"""The GPU check times the step a DiagViB-6 job takes: the jobs' own preset (whose dropped last
batch lets the step run as a CUDA graph), and a loud mark on an epoch that ran eager although
graphs were asked for on CUDA (the 2026-11-27 check timed the engine's neutral preset instead)."""

from __future__ import annotations

import json

import pytest

from shortcutlab.diagvib.jobs import build_jobs
from shortcutlab.diagvib.presets import DIAGVIB_PRESET
from shortcutlab.train.config import TrainConfig
from tests.benchmarks.scripts import load_script


def _load(name: str):
    return load_script(name)


def test_the_timed_epoch_uses_the_recipe_of_a_diagvib_job() -> None:
    pipeline = _load("bench_gpu_pipeline")
    timed = pipeline.job_config("resnet18", epochs=2)
    job = build_jobs("resnet18", ["ZSO"], None, [0], [0], 0.002,
                     TrainConfig(preset=DIAGVIB_PRESET, model="resnet18"))[0].train
    assert timed.drop_last  # one batch shape: the step can be a CUDA graph
    for field in ("lr", "batch_size", "drop_last", "normalization", "frozen_batchnorm",
                  "precision", "channels_last", "preset"):
        assert getattr(timed, field) == getattr(job, field), field


@pytest.mark.parametrize(("expected", "step_mode", "flagged"), [
    (True, "eager: training batches of 28 and 64 images", True),
    (True, "graph", False),
    (False, "eager: device cpu (CUDA graphs need a CUDA device)", False),
])
def test_an_eager_epoch_where_graphs_were_asked_is_marked(tmp_path, capsys, monkeypatch,
                                                          expected, step_mode, flagged) -> None:
    check = _load("gpu_check")

    def fake(name, args):
        if name == "cuda_tests":
            return {"outcomes": {}, "output_tail": "", "all_cuda_passed": True}
        return {"jobs": 1, "precision": "fp32", "epoch_s": 10.0, "cuda_graphs": "auto",
                "graphs_expected": expected, "step_mode": step_mode}

    monkeypatch.setattr(check, "run_section", fake)
    out = tmp_path / "check.json"
    assert check.main(["--device", "cpu", "--out", str(out), "--only", "cuda_tests",
                       "epoch_alone"]) == 0
    summary = json.loads(out.read_text())["summary"]["epoch_alone"]
    assert summary["not_the_recipe_step"] is flagged
    printed = capsys.readouterr().out
    assert ("!! ran eager although CUDA graphs were asked for" in printed) is flagged
