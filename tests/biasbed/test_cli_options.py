"""`biasbed run` options: several training sets, recipe preset, pretrained start, Ray/SLURM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.runner.runs import RunSummary
from shortcutlab.train.models import create_model


def _base(folders: dict[str, Path], out: Path) -> list[str]:
    return ["biasbed", "run", "--algorithm", "erm", "--seeds", "0", "--image-size", "16",
            "--train-dir", f"imagenet={folders['train']}", "--val-dir",
            f"imagenet={folders['val']}", "--train-dir", f"stylized={folders['val']}",
            "--val-dir", f"stylized={folders['train']}", "--test-dir", f"cue={folders['cue']}",
            "--test-dir", f"edge={folders['edge']}", "--class-map", str(folders["map"]),
            "--in-distribution", "stylized=cue", "--device", "cpu", "--out", str(out)]


def _record_jobs(monkeypatch: pytest.MonkeyPatch) -> list[list]:
    """Replace the runner: each `biasbed run` appends its planned jobs, nothing trains."""
    calls: list[list] = []
    monkeypatch.setattr(
        "shortcutlab.biasbed.protocol.run_jobs",
        lambda jobs, out, **kw: calls.append(list(jobs)) or RunSummary([]),
    )
    return calls


def test_run_passes_slurm_options_and_recipe(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict] = []

    def fake_run_jobs(jobs, out, **kwargs):
        calls.append({"jobs": list(jobs), **kwargs})
        return RunSummary([])

    monkeypatch.setattr("shortcutlab.biasbed.protocol.run_jobs", fake_run_jobs)
    # as if on a SLURM login node: `--backend slurm` is checked before anything is written
    monkeypatch.setattr("submitit.SlurmExecutor.affinity", classmethod(lambda cls: 2))
    weights = tmp_path / "init.pt"
    torch.save(create_model("small_cnn", 2).state_dict(), weights)
    args = _base(folders, tmp_path / "runs") + [
        "--protocol", "biasbed", "--epochs", "2", "--pretrained", str(weights),
        "--backend", "slurm", "--slurm-partition", "gpu", "--slurm-gpus", "1",
        "--slurm-cpus", "8", "--slurm-time", "600",
        "--device", "cuda",  # the cluster's nodes have it; this login node need not
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    (call,) = calls
    slurm = call["slurm"]
    assert (slurm.partition, slurm.gpus_per_node, slurm.cpus_per_task, slurm.timeout_min) == (
        "gpu", 1, 8, 600)
    assert call["backend"] == "slurm" and call["ray_address"] is None
    assert call["device"] == "cuda"
    jobs = call["jobs"]
    assert len(jobs) == 2  # erm on each of the two training sets
    train = jobs[0].train
    assert train.preset == "biasbed" and train.optimizer == "sgd" and train.epochs == 2
    assert train.lr == pytest.approx(1e-4)  # the authors' ERM learning rate under the recipe
    assert train.pretrained == str(weights)
    meta = json.loads((tmp_path / "runs" / "protocol.json").read_text())["jobs"]
    by_dataset = {m["dataset"]: m for m in meta.values()}
    assert set(by_dataset) == {"imagenet", "stylized"}
    assert by_dataset["stylized"]["in_distribution"] == ["cue"]
    assert by_dataset["imagenet"]["preset"] == "biasbed (lr=0.0001, epochs=2)"
    assert "erm on imagenet: small_cnn, biasbed (lr=0.0001, epochs=2), lr 0.0001" in res.output


def test_run_option_errors(folders: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, _base(folders, tmp_path / "r") + ["--preset", "fast"])
    assert res.exit_code == 2
    assert "unknown --preset 'fast'; valid choices: biasbed, default, demo, paper" in res.output
    bad = _base(folders, tmp_path / "r")
    bad[bad.index("stylized=cue")] = "sin=cue"
    res = runner.invoke(app, bad)
    assert res.exit_code == 2 and "unknown --in-distribution dataset 'sin'" in res.output
    res = runner.invoke(app, _base(folders, tmp_path / "r") + ["--test-head", "cue"])
    assert res.exit_code == 2 and "NAME=HEAD" in res.output
    # --name names a --train-dir/--val-dir given as a bare DIR: with NAME=DIR folders only, or
    # DiagViB-6 datasets only, it was silently ignored
    for args in (_base(folders, tmp_path / "r"),
                 ["biasbed", "run", "--algorithm", "erm", "--dataset",
                  "diagvib:ZGO/shape-texture/0", "--out", str(tmp_path / "r")]):
        res = runner.invoke(app, [*args, "--name", "sin"])
        assert res.exit_code == 2, res.output
        assert "--name 'sin' names a --train-dir/--val-dir given as DIR" in res.output
    assert not (tmp_path / "r").exists()  # nothing written on bad input


def test_diagvib_dataset_options_without_a_diagvib_dataset_are_refused(
        folders: dict[str, Path], tmp_path: Path) -> None:
    """--scale, --mnist and --textures shape DiagViB-6 datasets only: with image folders alone
    they were silently ignored (the run trained as if they were not given)."""
    for extra, named in ((["--scale", "0.5"], "--scale"),
                         (["--textures", str(folders["train"])], "--textures"),
                         (["--mnist", str(folders["train"])], "--mnist")):
        res = CliRunner().invoke(app, _base(folders, tmp_path / "r") + extra)
        assert res.exit_code == 2, res.output
        assert f"{named} applies to DiagViB-6 datasets only and would be ignored" in res.output
    assert not (tmp_path / "r").exists()  # nothing written on bad input


def test_single_training_set_keeps_the_old_form(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_jobs(monkeypatch)
    args = ["biasbed", "run", "--algorithm", "erm", "--seeds", "0", "--train-dir",
            str(folders["train"]), "--val-dir", str(folders["val"]), "--test-dir",
            f"cue={folders['cue']}", "--class-map", str(folders["map"]), "--out",
            str(tmp_path / "o")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    (jobs,) = calls
    cfg = jobs[0].train
    assert (cfg.preset, cfg.epochs, cfg.batch_size, cfg.lr) == ("default", 10, 64, 1e-3)
    assert jobs[0].experiment == "folders:folders"


def test_paper_defaults_precision_metric_and_own_settings(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_jobs(monkeypatch)
    base = ["biasbed", "run", "--algorithm", "erm", "--algorithm", "padain", "--train-dir",
            str(folders["train"]), "--val-dir", str(folders["val"]), "--test-dir",
            f"cue={folders['cue']}", "--class-map", str(folders["map"]), "--device", "cpu"]
    args = base + ["--preset", "biasbed", "--precision", "bf16", "--metric", "top1",
                   "--out", str(tmp_path / "o")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    (jobs,) = calls
    assert sorted({j.train.seed for j in jobs}) == list(range(10))  # BiasBed's ten runs
    assert len(jobs) == 20 and {j.train.precision for j in jobs} == {"bf16"}
    assert jobs[0].spec["preprocess"] == "biasbed" and jobs[0].spec["image_size"] == 256
    assert jobs[0].spec["metric"] == "top1"
    meta = json.loads((tmp_path / "o" / "protocol.json").read_text())["jobs"]
    assert {m["metric"] for m in meta.values()} == {"top1"}
    assert {m["precision"] for m in meta.values()} == {"bf16"}
    # each competitor's own learning rate, not the first job's for all
    assert "erm on folders: small_cnn, biasbed (lr=0.0001), lr 0.0001" in res.output
    assert "padain on folders: small_cnn, biasbed, lr 0.2" in res.output
    calls.clear()
    res = CliRunner().invoke(app, base + ["--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    (jobs,) = calls
    assert sorted({j.train.seed for j in jobs}) == [0, 1, 2]
    assert "preprocess" not in jobs[0].spec and jobs[0].spec["image_size"] == 224
    bad = CliRunner().invoke(app, base + ["--precision", "fp8", "--out", str(tmp_path / "q")])
    assert bad.exit_code == 2 and "valid choices: fp32, bf16, fp16" in bad.output
    bad = CliRunner().invoke(app, base + ["--metric", "top5", "--out", str(tmp_path / "q")])
    assert bad.exit_code == 2 and "valid choices: auto, top1, mean_per_class" in bad.output


def test_fp16_reaches_the_jobs_or_is_refused_where_the_device_cannot(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_jobs(monkeypatch)
    args = _base(folders, tmp_path / "o") + ["--precision", "fp16", "--algorithm", "sagnet"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    (jobs,) = calls
    assert {j.train.precision for j in jobs} == {"fp16"} and "fp16" in res.output
    meta = json.loads((tmp_path / "o" / "protocol.json").read_text())["jobs"]
    assert {m["precision"] for m in meta.values()} == {"fp16"}
    monkeypatch.setattr("shortcutlab.train.precision.precision_available",
                        lambda precision, device: precision != "fp16")
    res = CliRunner().invoke(app, _base(folders, tmp_path / "p") + ["--precision", "fp16"])
    assert res.exit_code == 2 and len(calls) == 1
    assert "precision 'fp16' is not available on device cpu" in res.output
    assert "valid choices there: fp32, bf16" in res.output and "Traceback" not in res.output
