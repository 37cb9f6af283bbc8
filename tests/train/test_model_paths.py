"""``--model module:factory`` (a model named by import path) and notebook-registered models on
backends whose workers are fresh processes (issue 23)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shortcutlab.errors import RunnerError, TrainError
from shortcutlab.train.model_paths import check_models_reach_workers, resolve_model_path
from tests.package_src import PACKAGE_SRC

MODULE = textwrap.dedent("""
    import torch

    def tiny(num_classes):
        return torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
                                   torch.nn.Linear(48, num_classes))
    """)


def _env() -> dict[str, str]:
    # PYTHONPATH names only the sources: the user's module is found from the working directory
    return {**os.environ, "PYTHONPATH": str(PACKAGE_SRC), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
@pytest.mark.usefixtures("scratch_registries")
def test_model_by_import_path_from_the_command_line(tmp_path: Path, monkeypatch) -> None:
    """`diagvib run --model my_models:tiny` in the user's folder (the command in-process, as
    the `shortcutlab` script runs it: the working directory is not on ``sys.path`` until the
    model path puts it there); the job runs in a spawned worker process, which finds the module
    the same way. A fresh `python -m shortcutlab` is the Ray test's below."""
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    (tmp_path / "shortcutlab_cli_zoo.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.setenv("PYTHONPATH", str(PACKAGE_SRC))  # what the command is given; restored after
    try:
        res = CliRunner().invoke(app, [
            "diagvib", "run", "--model", "shortcutlab_cli_zoo:tiny", "--study", "ZSO", "--pairs",
            "hue-shape", "--samples", "0", "--scale", "0.002", "--epochs", "1", "--batch-size",
            "16", "--backend", "processes", "--workers", "1", "--device", "cpu", "--out",
            "runs", "--json"])
    finally:
        sys.modules.pop("shortcutlab_cli_zoo", None)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)  # done: the worker imported the module and built it
    assert summary["done"] == 1 and summary["failed"] == 0, summary


def test_unimportable_model_path_is_one_line(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["diagvib", "run", "--model", "no_such_module:tiny", "--study",
                                   "ZSO", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2
    assert "cannot import 'no_such_module'" in res.output and "Traceback" not in res.output


def test_import_path_errors_say_what_is_wrong(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shortcutlab_test_zoo.py").write_text(MODULE + "\nNOT_A_FACTORY = 3\n")
    assert resolve_model_path("shortcutlab_test_zoo:tiny")(num_classes=3)[-1].out_features == 3
    with pytest.raises(TrainError, match="has no 'wide'"):
        resolve_model_path("shortcutlab_test_zoo:wide")
    with pytest.raises(TrainError, match="is not callable"):
        resolve_model_path("shortcutlab_test_zoo:NOT_A_FACTORY")
    with pytest.raises(TrainError, match="expected module:factory"):
        resolve_model_path("shortcutlab_test_zoo:")


@pytest.mark.usefixtures("scratch_registries")
def test_notebook_model_on_worker_processes_is_refused_with_the_reason(tmp_path: Path,
                                                                     monkeypatch) -> None:
    from shortcutlab.train import models

    def nb_net(num_classes: int):  # as if typed into a notebook cell
        raise AssertionError("never built")

    nb_net.__module__ = "__main__"
    models.register_model(nb_net, name="nb_net")
    monkeypatch.delattr(sys.modules["__main__"], "__file__", raising=False)
    from shortcutlab.diagvib.jobs import build_jobs
    from shortcutlab.runner.runs import run_jobs
    from shortcutlab.train.config import TrainConfig

    jobs = build_jobs("nb_net", ["ZSO"], ["hue-shape"], [0], [0], 0.002,
                      TrainConfig(model="nb_net", epochs=1))
    with pytest.raises(RunnerError, match="registered in this notebook.*'processes'.*serial.*"
                       "module:factory"):
        run_jobs(jobs, tmp_path, backend="processes", device="cpu", progress=False)
    check_models_reach_workers(["nb_net"], "serial")  # the notebook's own process sees it
    check_models_reach_workers(["small_cnn"], "processes")


def test_imagenetx_predict_builds_a_model_by_import_path(tmp_path: Path, monkeypatch) -> None:
    from shortcutlab.imagenetx.predict import build_model

    monkeypatch.chdir(tmp_path)
    (tmp_path / "shortcutlab_test_zoo2.py").write_text(MODULE)
    net = build_model("shortcutlab_test_zoo2:tiny")
    assert net[-1].out_features == 1000 and not net.training


@pytest.mark.slow  # starts a local Ray instance (~30-60 s on a loaded CPU)
def test_model_by_import_path_on_ray(tmp_path: Path) -> None:
    """`--backend ray`: the job runs in a Ray worker process, which must import the user's
    module itself, from the PYTHONPATH the command was given (a module in the working folder
    is found by Ray's own worker set-up, not by anything of ours, so it is not tested here)."""
    pytest.importorskip("ray")
    mods, work = tmp_path / "mods", tmp_path / "work"
    mods.mkdir()
    work.mkdir()
    mods.joinpath("ray_zoo.py").write_text(MODULE)
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_SRC), str(mods)])
    env.pop("RAY_AUTH_MODE", None)  # Ray's default: it would log its token notice (issue 34)
    cmd = [sys.executable, "-m", "shortcutlab", "diagvib", "run", "--model", "ray_zoo:tiny",
           "--study", "ZSO", "--pairs", "hue-shape", "--samples", "0", "--scale", "0.002",
           "--epochs", "1", "--batch-size", "16", "--backend", "ray", "--workers", "1",
           "--device", "cpu", "--out", str(tmp_path / "runs"), "--json"]
    res = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["done"] == 1 and summary["failed"] == 0, summary
    assert "Token authentication" not in res.stderr, res.stderr  # the start is quiet
    (job,) = [p for p in (tmp_path / "runs").rglob("job.json")]
    assert json.loads(job.read_text())["train"]["model"] == "ray_zoo:tiny"


def test_a_factory_that_returns_no_module_is_refused_before_any_job(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """``factory_for`` builds the model once: a factory returning something other than an
    ``nn.Module`` (here its weights' state dict) is refused now, naming what it returned."""
    from shortcutlab.train.model_paths import factory_for

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    (tmp_path / "shortcutlab_test_not_a_module.py").write_text(
        MODULE + "\ndef weights(num_classes):\n    return tiny(num_classes).state_dict()\n")
    assert factory_for("shortcutlab_test_not_a_module:tiny")(num_classes=3)[-1].out_features == 3
    with pytest.raises(TrainError, match="returned a OrderedDict, not a torch.nn.Module"):
        factory_for("shortcutlab_test_not_a_module:weights")
