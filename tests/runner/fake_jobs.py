"""A fake job kind for runner tests and benchmarks: trains nothing.

An experiment name containing ``fail`` raises, one containing ``sleep`` waits 0.2 s. Registered
from the tests (see ``conftest.py``), never by the product.
"""

from __future__ import annotations

import time

import pandas as pd

from shortcutlab.diagvib.jobs import describe_experiment
from shortcutlab.runner.jobs import Job, JobOutput, register_job_kind

KIND = "noop"


def noop_job(job: Job, device: str) -> JobOutput:
    if "fail" in job.experiment:
        raise RuntimeError(f"noop job {job.experiment} failed on purpose")
    if "sleep" in job.experiment:
        time.sleep(0.2)
    epochs = pd.DataFrame(
        {"epoch": [0], "train_loss": [0.0], "val_loss": [0.0], "val_acc": [1.0],
         "test_set": ["test"], "tag": ["all"], "acc": [1.0], "n": [1]}
    )
    result = {"best_epoch": 0, "epochs_run": 1, "val_loss": 0.0, "val_acc": 1.0,
              "test_acc": 1.0, "train_seconds": 0.0}
    return JobOutput(result, epochs)


def register() -> None:
    """The noop kind, describing its experiment names like DiagViB-6's (study/pair/sample)."""
    register_job_kind(KIND, noop_job, describe=describe_experiment)
