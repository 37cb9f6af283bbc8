"""A fake job kind for runner tests and benchmarks: trains nothing.

An experiment name containing ``fail`` raises, one containing ``die`` ends its process at once
(``os._exit(3)``, as a crash in native code would), ``sigkill`` kills it with SIGKILL (as the
out-of-memory killer would), one containing ``sleep`` waits 0.2 s, ``slow`` 1 s and ``hang``
60 s. The result records the process id, the CUDA devices the process sees and
torch's thread count during the job; with ``SHORTCUTLAB_TEST_RUNLOG`` set, every start of a job
appends ``<experiment> <pid>`` to that file (to count how often each job ran). Registered from
the tests (see ``conftest.py``), never by the product.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pandas as pd

from shortcutlab.diagvib.jobs import describe_experiment
from shortcutlab.runner.jobs import Job, JobOutput, register_job_kind

KIND = "noop"
RUNLOG = "SHORTCUTLAB_TEST_RUNLOG"
#: an environment variable the job reports, to show which environment its worker has
MARK = "SHORTCUTLAB_TEST_MARK"
_WAITS = {"sleep": 0.2, "slow": 1.0, "hang": 60.0}


def append_line(path: str, line: str) -> None:
    """Append ``line`` to ``path`` in one write (workers of one test log side by side)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, f"{line}\n".encode())
    os.close(fd)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def noop_job(job: Job, device: str) -> JobOutput:
    import torch

    log = os.environ.get(RUNLOG)
    if log:
        append_line(log, f"{job.experiment} {os.getpid()}")
    if "die" in job.experiment:
        os._exit(3)
    if "sigkill" in job.experiment:
        os.kill(os.getpid(), signal.SIGKILL)
    if "fail" in job.experiment:
        raise RuntimeError(f"noop job {job.experiment} failed on purpose")
    for word, seconds in _WAITS.items():
        if word in job.experiment:
            time.sleep(seconds)
    epochs = pd.DataFrame(
        {"epoch": [0], "train_loss": [0.0], "val_loss": [0.0], "val_acc": [1.0],
         "test_set": ["test"], "tag": ["all"], "acc": [1.0], "n": [1]}
    )
    result = {"best_epoch": 0, "epochs_run": 1, "val_loss": 0.0, "val_acc": 1.0,
              "test_acc": 1.0, "train_seconds": 0.0, "pid": os.getpid(),
              "parent_pid": os.getppid(), "mark": os.environ.get(MARK),
              "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
              "torch_threads": torch.get_num_threads()}
    return JobOutput(result, epochs)


def describe_noop(job: Job) -> dict[str, object]:
    """A noop job's table columns: its experiment name read like DiagViB-6's."""
    return describe_experiment(job.experiment)


def register() -> None:
    """The noop kind, describing its experiment names like DiagViB-6's (study/pair/sample)."""
    register_job_kind(KIND, noop_job, describe=describe_noop)
