"""The runner's bookkeeping, file by file: claims that keep two runs off one job, the job id's
fields, quarantine of unreadable results, temporaries of killed writes, and which folders the
job and epoch tables count (no training: the noop kind and hand-made folders)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from shortcutlab.runner import claims
from shortcutlab.runner import jobs as jobs_mod
from shortcutlab.runner.collect import collect, collect_epochs
from shortcutlab.runner.jobs import Job, JobOutput
from shortcutlab.runner.runs import run_jobs


def _age(target: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(target, (when, when))


def _foreign_claim(path: Path, age: float) -> None:
    """A claim of a run on another host, ``age`` seconds without a heartbeat."""
    claim = {"pid": 1, "host": "another-node", "time": time.time(), "token": "theirs"}
    (path / claims.CLAIM_FILE).write_text(json.dumps(claim))
    _age(path / claims.CLAIM_FILE, age)


def _noop_jobs(n: int) -> list[Job]:
    return [Job(experiment=f"noop/a-b/{i}", kind="noop") for i in range(n)]


# ----------------------------------------------------------------------------- claims


def test_a_stale_claim_another_run_is_breaking_is_left_to_it(tmp_path: Path) -> None:
    """A fresh claim.break says another run is taking the stale claim over right now: a
    second run must not break it too (both would believe they own the job); a break file
    older than a minute was left by a killed run and is ignored."""
    _foreign_claim(tmp_path, claims.STALE_SECONDS + 60)
    (tmp_path / "claim.break").touch()
    assert claims.try_claim(tmp_path) is None
    assert (claims.read_claim(tmp_path) or {}).get("token") == "theirs"
    _age(tmp_path / "claim.break", 61)
    token = claims.try_claim(tmp_path)
    assert token is not None and (claims.read_claim(tmp_path) or {}).get("token") == token
    assert not (tmp_path / "claim.break").exists()


def test_a_claim_being_written_is_not_taken_over_within_the_grace(tmp_path: Path) -> None:
    """An empty claim.json is its owner between creating and writing it: stale only after
    UNREADABLE_GRACE_SECONDS."""
    (tmp_path / claims.CLAIM_FILE).write_text("")
    assert not claims.is_stale(tmp_path)
    assert claims.try_claim(tmp_path) is None
    _age(tmp_path / claims.CLAIM_FILE, claims.UNREADABLE_GRACE_SECONDS + 5)
    assert claims.is_stale(tmp_path)
    assert claims.try_claim(tmp_path) is not None


def test_the_heartbeat_stops_touching_a_claim_taken_over(tmp_path: Path) -> None:
    """Once another run replaced our claim, our heartbeat must not keep its age young: an
    owner that died would look alive for ever."""
    token = claims.try_claim(tmp_path)
    assert token is not None
    _foreign_claim(tmp_path, 1000.0)
    before = (tmp_path / claims.CLAIM_FILE).stat().st_mtime
    with claims.heartbeat(tmp_path, token, every=0.02):
        time.sleep(0.15)
    assert (tmp_path / claims.CLAIM_FILE).stat().st_mtime == before
    mine = tmp_path / "mine"
    mine.mkdir()
    token = claims.try_claim(mine)
    assert token is not None
    _age(mine / claims.CLAIM_FILE, 1000.0)
    with claims.heartbeat(mine, token, every=0.02):  # our own claim: touched
        time.sleep(0.15)
    assert time.time() - (mine / claims.CLAIM_FILE).stat().st_mtime < 10


# ----------------------------------------------------------------------------- job ids


@pytest.mark.parametrize("field", ["params", "versions"])
def test_params_and_versions_are_part_of_the_id_unless_empty(field: str) -> None:
    """Jobs that differ only in params (a dataset size) or versions (the renderer) are other
    jobs; empty ones hash as a job without the field always did (old folders keep their ids)."""
    bare = Job(experiment="x", kind="noop")
    one = Job(experiment="x", kind="noop", **{field: {"n": "1"}})
    two = Job(experiment="x", kind="noop", **{field: {"n": "2"}})
    assert len({bare.job_id, one.job_id, two.job_id}) == 3
    assert Job(experiment="x", kind="noop", **{field: {}}).job_id == bare.job_id


# ----------------------------------------------------------------------------- job folders


def test_quarantine_moves_every_result_file_aside_and_keeps_the_job_file(tmp_path: Path) -> None:
    for name in ("job.json", "done", "result.json", "epochs.parquet", "error.txt"):
        (tmp_path / name).write_text(name)
    aside = jobs_mod.quarantine(tmp_path)
    assert sorted(p.name for p in aside.iterdir()) == [
        "done", "epochs.parquet", "error.txt", "result.json"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["job.json"]


def test_a_job_file_being_written_is_kept_and_an_old_one_removed(tmp_path: Path) -> None:
    fresh, old = tmp_path / ".job.json.fresh", tmp_path / ".job.json.old"
    result_tmp = tmp_path / ".result.json.x"
    for p in (fresh, old, result_tmp):
        p.write_text("{")
    _age(old, 120.0)
    removed = jobs_mod.remove_temporaries(tmp_path, older_than=60.0)
    assert sorted(p.name for p in removed) == [old.name, result_tmp.name]
    assert fresh.exists() and not old.exists() and not result_tmp.exists()


def test_a_job_done_by_another_run_meanwhile_is_skipped_not_trained_again(
        tmp_path: Path) -> None:
    [job] = _noop_jobs(1)
    run_jobs([job], tmp_path, backend="serial", progress=False, collect_table=False)
    path = tmp_path / job.job_id
    before = (path / "result.json").read_bytes()
    calls: list[str] = []

    def run(job: Job, device: str) -> JobOutput:
        calls.append(job.job_id)
        raise AssertionError("trained again")

    outcome = jobs_mod._run_claimed(job, path, "cpu", run, time.perf_counter())
    assert outcome.status == "skipped" and calls == []
    assert (path / "result.json").read_bytes() == before


# ----------------------------------------------------------------------------- tables


def test_the_epoch_table_counts_only_done_jobs_with_valid_results(tmp_path: Path) -> None:
    """A job killed after writing epochs.parquet and result.json but before its done marker is
    pending (no epochs, no skip line); a done job whose result.json is out of range is left out
    with the file named, as in the job table."""
    jobs = _noop_jobs(3)
    run_jobs(jobs, tmp_path, backend="serial", progress=False, collect_table=False)
    killed, broken, good = (tmp_path / j.job_id for j in jobs)
    (killed / "done").unlink()
    result = json.loads((broken / "result.json").read_text())
    (broken / "result.json").write_text(json.dumps({**result, "test_acc": 1.5}))
    epochs = collect_epochs(tmp_path)
    assert epochs["job_id"].tolist() == [good.name]
    [line] = epochs.attrs["skipped"]
    assert str(broken / "done") in line and "result.json" in line
    table = collect(tmp_path).set_index("job_id")
    assert table.loc[killed.name, "status"] == "pending"
    assert broken.name not in table.index


def test_the_job_table_has_a_column_per_test_cell_tag(tmp_path: Path) -> None:
    [job] = _noop_jobs(1)

    def run(job: Job, device: str) -> JobOutput:
        return JobOutput({"best_epoch": 0, "epochs_run": 1, "val_loss": 0.5, "val_acc": 0.75,
                          "test_acc": 0.5, "train_seconds": 1.0,
                          "test_acc@in": 0.9, "test_acc@out": 0.1})

    assert jobs_mod.run_one(job, tmp_path, "cpu", run).status == "done"
    table = collect(tmp_path)
    assert table[["test_acc@in", "test_acc@out"]].iloc[0].tolist() == [0.9, 0.1]
    assert pd.api.types.is_float_dtype(table["test_acc@in"])
