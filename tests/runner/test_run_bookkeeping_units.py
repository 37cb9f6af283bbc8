"""The runner's small decisions, each pinned by its effect: which jobs a waiting run counts as
whose, which temporaries and notes folders a run removes, when a claim is stale, what a
failure line names, which results and devices are accepted."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner import backend_api, claims, local_processes, runs
from shortcutlab.runner.cluster_backends import check_ray_device
from shortcutlab.runner.jobs import ERROR_FILE, Job, Outcome, write_job_file
from shortcutlab.runner.records import result_problem

RESULT = {"best_epoch": 0, "epochs_run": 1, "val_loss": 0.1, "val_acc": 0.5, "test_acc": 0.5,
          "train_seconds": 1.0}


def _job(i: int = 0) -> Job:
    return Job(experiment=f"noop/a-b/{i}", kind="noop")


def _old(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_waiting_run_counts_each_released_job_as_it_ended_elsewhere(tmp_path: Path) -> None:
    """Done by the other run: skipped here (that run counts it), never done twice; failed
    there: reported failed; abandoned (no claim, no error): handed back to be run here."""
    done, failed, abandoned = _job(0), _job(1), _job(2)
    runs.run_jobs([done], tmp_path, backend="serial", progress=False, collect_table=False)
    (write_job_file(tmp_path, failed) / ERROR_FILE).write_text("Traceback\nValueError: boom\n")
    write_job_file(tmp_path, abandoned)
    rerun, settled = runs._wait_for_others([done, failed, abandoned], tmp_path, 0.01)
    assert rerun == [abandoned]
    assert [(o.job_id, o.status, o.error, o.note) for o in settled] == [
        (done.job_id, "skipped", "", "done by another run"),
        (failed.job_id, "failed", "in another run: ValueError: boom", "")]


def test_only_old_job_table_temporaries_are_removed(tmp_path: Path) -> None:
    """A killed run's temporary goes; one a concurrent run is writing now stays."""
    fresh, old = tmp_path / ".jobs.csv.fresh", tmp_path / ".jobs.parquet.old"
    fresh.write_text("x")
    old.write_text("x")
    _old(old, 3600)
    runs._remove_stale_temporaries(tmp_path)
    assert fresh.exists() and not old.exists()


def test_a_run_removes_the_notes_folders_of_dead_runs_only(tmp_path: Path) -> None:
    host = socket.gethostname()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    dead = tmp_path / runs.NOTES_FOLDER / f"{host}-{int(ended.stdout)}-abc"
    live = tmp_path / runs.NOTES_FOLDER / f"{host}-{os.getppid()}-def"
    dead.mkdir(parents=True)
    live.mkdir()
    notes = runs._make_notes(tmp_path)
    assert notes.is_dir() and live.is_dir() and not dead.exists()


def test_a_failure_line_names_a_traceback_only_where_there_is_one(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ERROR_FILE).write_text("Traceback\n")
    summary = runs.RunSummary([Outcome("a", "failed", "cannot write"),
                               Outcome("b", "failed", "boom")])
    assert list(runs.describe_failures(summary, tmp_path)) == [
        "a: cannot write", f"b: boom (traceback: {tmp_path / 'b' / ERROR_FILE})"]


def _claim(path: Path, **fields: object) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    target = path / claims.CLAIM_FILE
    target.write_text(json.dumps({"pid": 4242, "host": "node-elsewhere", "time": time.time(),
                                  "token": "t0k3n", **fields}))
    return target


def test_another_hosts_claim_is_taken_over_only_once_its_heartbeat_is_stale(
        tmp_path: Path) -> None:
    """Its owner touches it every 30 s: 100 s without a touch is a slow file system, not a
    dead owner; after 300 s (:data:`~shortcutlab.runner.claims.STALE_SECONDS`) it is stale."""
    claim = _claim(tmp_path / "job")
    _old(claim, 100)
    assert claims.try_claim(tmp_path / "job") is None
    _old(claim, claims.STALE_SECONDS + 10)
    token = claims.try_claim(tmp_path / "job")
    assert token is not None and claims.read_claim(tmp_path / "job")["token"] == token


def test_a_claim_that_cannot_be_written_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(claims.json, "dump", full_disk)
    with pytest.raises(OSError):
        claims.try_claim(tmp_path)
    assert not (tmp_path / claims.CLAIM_FILE).exists()


def test_the_wait_for_another_hosts_claim_counts_from_its_last_heartbeat(tmp_path: Path) -> None:
    _old(_claim(tmp_path), 100)
    assert "for up to 200 s more" in claims.describe_wait(tmp_path)


def test_a_live_owners_claim_is_not_dropped(tmp_path: Path) -> None:
    token = claims.try_claim(tmp_path)
    claims.drop_if_stale(tmp_path)
    assert token is not None and claims.read_claim(tmp_path)["token"] == token
    _claim(tmp_path, host=socket.gethostname(), pid=int(subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
        text=True, check=True).stdout))  # an owner on this host that ended
    claims.drop_if_stale(tmp_path)
    assert claims.read_claim(tmp_path) is None


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), -1.0])
def test_a_result_whose_training_time_is_no_finite_duration_is_refused(seconds: float) -> None:
    assert result_problem({**RESULT, "train_seconds": 1.0}) is None
    assert "train_seconds" in str(result_problem({**RESULT, "train_seconds": seconds}))


def test_every_numbered_gpu_is_refused_with_ray() -> None:
    for device in ("cuda:0", "cuda:1"):
        with pytest.raises(RunnerError, match=f"--device {device} names one GPU"):
            check_ray_device(device)
    for device in ("cuda", "auto", "cpu"):
        check_ray_device(device)


def test_gpu_slots_read_a_visible_devices_list_with_spaces(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3")
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path / "no-mps-daemon"))
    monkeypatch.setattr(backend_api, "gpu_count", lambda: 2)
    assert local_processes.device_slots("auto", 2) == ["2", "2", "3", "3"]


@pytest.mark.parametrize("key", ["best_epoch", "epochs_run", "val_loss", "val_acc", "test_acc",
                                 "train_seconds"])
def test_a_result_without_any_one_required_key_is_refused(key: str) -> None:
    partial = {k: v for k, v in RESULT.items() if k != key}
    assert result_problem(partial) == f"lacks the result key(s) {key}"


def test_the_serial_backend_notes_the_jobs_its_run_did(tmp_path: Path) -> None:
    """The note that shows a done job is this run's (not another's), and the claim naming
    the run, come from serial's jobs too."""
    from shortcutlab.runner.backends import BACKENDS

    notes = tmp_path / ".runs" / "host-1-abc"
    notes.mkdir(parents=True)
    job = _job()
    context = backend_api.BackendContext(device="cpu", notes=str(notes))
    [outcome] = BACKENDS.get("serial")([job], tmp_path, context)
    assert outcome.status == "done" and (notes / f"{job.job_id}.ran").exists()


def test_a_slurm_task_lost_after_writing_its_results_is_this_runs(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """A stand-in for submitit's executor runs each task here, which writes its job's results
    and then dies with its node (the reply lost): this run's notes show its task did the job,
    so it is done here, not "done by another run"."""
    submitit = pytest.importorskip("submitit")

    class Lost:
        job_id = "77_0"

        def done(self) -> bool:
            return True

        def result(self) -> Outcome:
            raise RuntimeError("the node died")

    class Executor:
        def __init__(self, **kwargs: object) -> None:
            pass

        def update_parameters(self, **kwargs: object) -> None:
            pass

        def map_array(self, fn, *columns):  # type: ignore[no-untyped-def]
            lost = []
            for args in zip(*columns, strict=True):
                assert fn(*args).status == "done"
                lost.append(Lost())
            return lost

    monkeypatch.setattr(submitit, "AutoExecutor", Executor)
    job = _job()
    slurm = backend_api.SlurmOptions(cluster="local", poll_seconds=0.01)
    summary = runs.run_jobs([job], tmp_path, backend="slurm", slurm=slurm, progress=False)
    assert [(o.job_id, o.status) for o in summary.outcomes] == [(job.job_id, "done")]
    assert "reply was lost (slurm job 77_0 failed: the node died)" in summary.outcomes[0].note


@pytest.mark.parametrize("value", [2.5, 1.9, "02", True, 0, "auto "])
def test_jobs_per_gpu_that_is_no_whole_number_is_refused_not_rounded(value: object) -> None:
    from shortcutlab.runner.mps import parse_jobs_per_gpu

    with pytest.raises(RunnerError, match="jobs per GPU must be >= 1"):
        parse_jobs_per_gpu(value)  # type: ignore[arg-type]
    assert parse_jobs_per_gpu(" 3") == 3 and parse_jobs_per_gpu("auto") == "auto"
