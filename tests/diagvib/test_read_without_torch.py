"""Reading a DiagViB-6 run folder (``diagvib collect``, ``metrics``, ``report`` and the Python
``collect_jobs`` / ``compute_metrics``) imports neither torch nor the model registry (issue 31):
a fresh interpreter reads a finished folder of real planned jobs and reports its modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from shortcutlab.diagvib.jobs import build_jobs
from shortcutlab.runner.jobs import Job, JobOutput, run_one
from tests.package_src import PACKAGE_SRC

ROOT = Path(__file__).resolve().parents[2]

READ = """
import json, sys
from typer.testing import CliRunner
from shortcutlab.cli.main import app
from shortcutlab.diagvib.jobs import collect_jobs
from shortcutlab.diagvib.metrics import compute_metrics

folder, out = sys.argv[1], sys.argv[2]
table = collect_jobs(folder)
metrics = compute_metrics(table)
runner = CliRunner()
codes = {name: runner.invoke(app, ["diagvib", *args]).exit_code for name, args in (
    ("collect", ["collect", folder]),
    ("report", ["report", folder, "--out", out]),
)}
shown = runner.invoke(app, ["diagvib", "metrics", folder, "--json"])
codes["metrics"] = shown.exit_code
print(json.dumps({
    "codes": codes,
    "labels": sorted(json.loads(shown.stdout)["jobs"]),
    "frozen": dict(zip(table["model"], table["frozen_batchnorm"])),
    "vae_classifier": dict(zip(table["model"], table["vae_classifier"])),
    "models": sorted(set(metrics.singles["label"])),
    "loaded": sorted(m for m in ("torch", "torchvision", "shortcutlab.train.models",
                                 "shortcutlab.train.algorithms", "shortcutlab.train.trainer")
                     if m in sys.modules),
}))
"""


def fake_training(job: Job, device: str) -> JobOutput:
    """A finished job's files without training: two epochs, one accuracy per cell tag."""
    rows = [{"epoch": e, "train_loss": 1.0, "val_loss": 1.0 - e / 10, "val_acc": 0.5,
             "test_set": "test", "tag": tag, "acc": 0.6, "n": 10}
            for e in range(2) for tag in ("all", "00-id", "01-ood")]
    result = {"best_epoch": 1, "epochs_run": 2, "val_loss": 0.9, "val_acc": 0.5,
              "test_acc": 0.6, "train_seconds": 1.0, "test_acc@00-id": 0.7,
              "test_acc@01-ood": 0.5}
    return JobOutput(result, pd.DataFrame(rows))


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_reading_a_run_folder_imports_no_torch(tmp_path) -> None:
    folder = tmp_path / "run"
    jobs = [job for model in ("small_cnn", "rn50_in", "vae")
            for job in build_jobs(model, ["ZSO"], ["shape-hue"], [0], [0], 0.002)]
    for job in jobs:
        assert run_one(job, folder, "cpu", fake_training).status == "done"
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_SRC), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", READ, str(folder), str(tmp_path / "report")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["loaded"] == []
    assert seen["codes"] == {"collect": 0, "report": 0, "metrics": 0}
    assert (tmp_path / "report" / "index.html").is_file()
    # the model facts came from the torch-free declarations: RN50-IN's frozen backbone, the
    # VAE reported under its own name (not vae+vae) with its classifier
    assert seen["frozen"] == {"small_cnn": "", "rn50_in": "train", "vae": ""}
    assert seen["vae_classifier"] == {"small_cnn": "", "rn50_in": "", "vae": "joint"}
    assert seen["labels"] == seen["models"] == ["rn50_in", "small_cnn", "vae"]
