"""Jobs, hashed run dirs, done markers, failures and resumption, collection (serial backend)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner import jobs as jobs_mod
from shortcutlab.runner.collect import (
    EPOCH_TABLE_COLUMNS,
    JOB_COLUMNS,
    collect,
    collect_epochs,
    write_table,
)
from shortcutlab.runner.jobs import Job, JobOutput, job_kinds, job_status, register_job_kind
from shortcutlab.runner.runs import run_jobs
from tests.runner import fake_jobs


def noop_jobs(n: int, prefix: str = "noop/a-b") -> list[Job]:
    return [Job(experiment=f"{prefix}/{i}", kind="noop") for i in range(n)]


def test_bad_job_fields_are_named() -> None:
    with pytest.raises(RunnerError, match=r"threads: .*'big'"):
        Job(experiment="x", kind="noop", threads="big")
    with pytest.raises(RunnerError, match=r"scale: Extra inputs"):  # a kind's field, not the Job's
        Job(experiment="x", kind="noop", scale=0.5)
    with pytest.raises(RunnerError, match=r"kind: Field required"):
        Job(experiment="x")


def test_an_unregistered_kind_fails_before_anything_runs(tmp_path) -> None:
    jobs = noop_jobs(1) + [Job(experiment="x", kind="gpu")]
    with pytest.raises(RunnerError, match=r"unknown job kind 'gpu'; valid choices: .*noop"):
        run_jobs(jobs, tmp_path, backend="serial", progress=False)
    assert not any(tmp_path.iterdir())


def test_register_job_kind_refuses_a_taken_name() -> None:
    fake_jobs.register()  # the same function again: fine
    with pytest.raises(RunnerError, match="'noop' is already registered"):
        register_job_kind("noop", lambda job, device: JobOutput({}))
    assert "noop" in job_kinds()


def test_run_writes_done_last_and_rerun_skips(tmp_path) -> None:
    jobs = noop_jobs(3)
    summary = run_jobs(jobs, tmp_path, backend="serial", progress=False)
    assert len(summary.done) == 3
    for job in jobs:
        d = tmp_path / job.job_id
        assert {p.name for p in d.iterdir()} == {"job.json", "result.json", "epochs.parquet",
                                                 "done"}
        assert json.loads((d / "result.json").read_text())["job_id"] == job.job_id
    again = run_jobs(jobs + noop_jobs(1, "noop/c-d"), tmp_path, backend="serial", progress=False)
    assert len(again.skipped) == 3 and len(again.done) == 1
    assert (tmp_path / "jobs.csv").is_file() and (tmp_path / "jobs.parquet").is_file()


def test_failed_job_is_reported_and_retried(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = noop_jobs(2) + [Job(experiment="noop/fail/0", kind="noop")]
    summary = run_jobs(jobs, tmp_path, backend="serial", progress=False)
    assert [o.error for o in summary.failed] == [
        "RuntimeError: noop job noop/fail/0 failed on purpose"
    ]
    bad = tmp_path / jobs[2].job_id
    assert "Traceback" in (bad / "error.txt").read_text() and not (bad / "done").exists()
    table = collect(tmp_path)
    assert table.set_index("job_id").loc[jobs[2].job_id, "status"] == "failed"
    assert "failed on purpose" in table.set_index("job_id").loc[jobs[2].job_id, "error"]
    # next run retries only the failed job; this time it succeeds
    ran: list[str] = []

    def succeed(job: Job, device: str) -> JobOutput:
        ran.append(job.experiment)
        return JobOutput({"best_epoch": 0, "epochs_run": 1, "val_loss": 0.5, "val_acc": 0.5,
                          "test_acc": 0.25, "train_seconds": 0.0})

    monkeypatch.setattr(fake_jobs, "noop_job", succeed)
    with jobs_mod.JOB_KINDS.scratch():
        register_job_kind("noop", succeed, override=True)
        retry = run_jobs(jobs, tmp_path, backend="serial", progress=False)
    assert ran == ["noop/fail/0"] and len(retry.done) == 1 and len(retry.skipped) == 2
    assert job_status(bad) == "done" and not (bad / "error.txt").exists()


def test_a_killed_job_leaves_nothing_that_counts_as_done(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = noop_jobs(1)[0]

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # what a kill during the result write looks like in-process

    monkeypatch.setattr(jobs_mod, "write_json", killed)
    with pytest.raises(KeyboardInterrupt):
        run_jobs([job], tmp_path, backend="serial", progress=False)
    d = tmp_path / job.job_id
    assert job_status(d) == "pending"
    assert not any(p.name.startswith(".") for p in d.iterdir())  # no temp files left
    monkeypatch.undo()
    assert collect(tmp_path)["status"].tolist() == ["pending"]
    assert len(run_jobs([job], tmp_path, backend="serial", progress=False).done) == 1


def test_collect_schema_and_epochs(tmp_path) -> None:
    run_jobs(noop_jobs(2), tmp_path, backend="serial", progress=False, collect_table=False)
    table = collect(tmp_path)
    described = ["study", "predicted", "correlated", "sample"]  # the kind's describer's columns
    assert list(table.columns[: len(JOB_COLUMNS) + 4]) == [
        *JOB_COLUMNS[:3], *described, *JOB_COLUMNS[3:]]
    row = table.iloc[0]
    assert (row["study"], row["predicted"], row["correlated"], row["status"]) == (
        "noop", "a", "b", "done"
    )
    assert table["best_epoch"].tolist() == [0, 0] and table["test_acc"].tolist() == [1.0, 1.0]
    epochs = collect_epochs(tmp_path)
    assert list(epochs.columns) == list(EPOCH_TABLE_COLUMNS) and len(epochs) == 2
    csv_path, parquet_path = write_table(tmp_path, tmp_path / "out" / "table.csv")
    assert csv_path.name == "table.csv" and parquet_path.name == "table.parquet"
    back = pd.read_parquet(parquet_path)
    pd.testing.assert_frame_equal(back, table)
    assert pd.read_csv(csv_path)["job_id"].tolist() == table["job_id"].tolist()


def test_a_failed_table_write_leaves_the_old_csv_and_parquet_together(tmp_path,
                                                                       monkeypatch) -> None:
    """The CSV and the Parquet table are written both or neither: a Parquet write that fails
    (a full disk) must not leave a new jobs.csv beside the old jobs.parquet."""
    jobs = noop_jobs(2)
    run_jobs(jobs[:1], tmp_path, backend="serial", progress=False)
    before = {name: (tmp_path / name).read_bytes() for name in ("jobs.csv", "jobs.parquet")}
    run_jobs(jobs, tmp_path, backend="serial", progress=False, collect_table=False)

    def full_disk(self, path, **kwargs) -> None:
        Path(path).write_bytes(b"PAR1 half")
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_table(tmp_path)
    after = {name: (tmp_path / name).read_bytes() for name in ("jobs.csv", "jobs.parquet")}
    assert after == before
    assert len(pd.read_csv(tmp_path / "jobs.csv")) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".jobs")) == []


def test_the_recipe_id_ignores_what_may_differ_between_one_models_jobs(tmp_path) -> None:
    """Jobs of one recipe share ``recipe_id`` whatever their experiment, spec, seed, thread
    count or input path; any other field of the id (training setting, hyper-parameter, kind,
    params, input content, code version) gives another one. collect writes it per job."""
    from shortcutlab.train.config import TrainConfig

    data = tmp_path / "data.bin"
    data.write_bytes(b"digits")
    copy = tmp_path / "copy.bin"
    copy.write_bytes(b"digits")
    base = Job(experiment="noop/a-b/0", kind="noop", params={"scale": 0.1},
               inputs={"data": str(data)}, versions={"renderer": "1"},
               train=TrainConfig(lr=1e-3, hparams={"lam": 1.0}))
    same = [base.model_copy(update=u) for u in (
        {"experiment": "noop/c-d/1"}, {"spec": {"sizes": [1, 2]}}, {"threads": 2},
        {"train": base.train.replace(seed=3)})]
    assert len({job.job_id for job in [base, *same]}) == 5  # four other jobs
    same.append(Job(**{**base.model_dump(), "inputs": {"data": str(copy)}}))  # same id too
    assert {job.recipe_id for job in same} == {base.recipe_id}
    copy.write_bytes(b"letters")
    other = [base.model_copy(update={"train": base.train.replace(**change)}) for change in (
        {"lr": 1e-2}, {"optimizer": "sgd"}, {"hparams": {"lam": 2.0}}, {"model": "vae"},
        {"pretrained": "w.pt"})]
    other += [base.model_copy(update=u) for u in (
        {"kind": "gpu"}, {"params": {"scale": 0.2}}, {"versions": {"renderer": "2"}})]
    other.append(Job(**{**base.model_dump(exclude={"input_digests"}),
                        "inputs": {"data": str(copy)}}))
    assert len({job.recipe_id for job in other} | {base.recipe_id}) == len(other) + 1
    assert len(base.recipe_id) == len(base.job_id)
    run_jobs(noop_jobs(2), tmp_path / "out", backend="serial", progress=False,
             collect_table=False)
    table = collect(tmp_path / "out")
    assert table["recipe_id"].tolist() == [noop_jobs(1)[0].recipe_id] * 2


def test_collect_of_missing_folder_is_an_error(tmp_path) -> None:
    with pytest.raises(RunnerError, match="run folder not found"):
        collect(tmp_path / "nope")


def test_threads_are_part_of_the_job_and_fixed_while_it_runs(tmp_path) -> None:
    import torch

    plain = noop_jobs(1)[0]
    assert "threads" not in plain.canonical_json()  # ids of default jobs are unchanged
    two = plain.model_copy(update={"threads": 2})
    assert two.job_id != plain.job_id and Job(**json.loads(two.model_dump_json())) == two
    before = torch.get_num_threads()
    run_jobs([plain, two], tmp_path, backend="serial", progress=False)
    for job, n in ((plain, 1), (two, 2)):
        result = json.loads((tmp_path / job.job_id / "result.json").read_text())
        assert (result["threads"], result["torch_threads"]) == (n, n)
    assert torch.get_num_threads() == before  # restored for the caller
    with pytest.raises(RunnerError, match="threads"):
        Job(experiment="x", kind="noop", threads=0)


def test_a_job_file_of_an_earlier_version_is_skipped_with_the_reason(tmp_path) -> None:
    """A job.json holding fields the Job no longer has (e.g. the former generic ``scale``) is
    left out of the table with a line saying why, not counted."""
    jobs = noop_jobs(2)
    run_jobs(jobs, tmp_path, backend="serial", progress=False)
    path = tmp_path / jobs[0].job_id / "job.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "scale": 0.01}))
    table = collect(tmp_path)
    assert table["job_id"].tolist() == [jobs[1].job_id]
    (line,) = table.attrs["skipped"]
    assert "scale" in line and "earlier shortcutlab" in line and jobs[0].job_id in line


def test_a_result_without_its_required_keys_fails_and_is_not_counted(tmp_path) -> None:
    job = noop_jobs(1)[0]

    def partial(job: Job, device: str) -> JobOutput:
        return JobOutput({"test_acc": 1.0})

    with jobs_mod.JOB_KINDS.scratch():
        register_job_kind("noop", partial, override=True)
        summary = run_jobs([job], tmp_path, backend="serial", progress=False)
        again = run_jobs([job], tmp_path, backend="serial", progress=False)
    d = tmp_path / job.job_id
    assert not summary.done and len(summary.failed) == 1
    assert "lacks the result key(s) best_epoch, epochs_run" in summary.failed[0].error
    assert "best_epoch" in (d / "error.txt").read_text()
    assert not (d / "done").exists() and job_status(d) == "failed"
    assert not again.done and len(again.failed) == 1  # failed again, not counted done
    assert not (d / "result.json").exists()
    assert not any(p.name.startswith("corrupt-") for p in d.iterdir())  # nothing moved aside


def test_a_result_value_of_the_wrong_type_fails_with_one_line_naming_its_key(tmp_path) -> None:
    """A job that returns an array where a number belongs (a forgotten ``.item()``): the failure
    line names the key, however long the value's repr; error.txt holds the traceback."""
    import numpy as np

    job = noop_jobs(1)[0]

    def arrays(job: Job, device: str) -> JobOutput:
        return JobOutput({"best_epoch": 0, "epochs_run": 1, "val_loss": 0.1,
                          "val_acc": np.full(40, 0.5), "test_acc": 0.5, "train_seconds": 1.0})

    with jobs_mod.JOB_KINDS.scratch():
        register_job_kind("noop", arrays, override=True)
        summary = run_jobs([job], tmp_path, backend="serial", progress=False)
    [failed] = summary.failed
    assert "\n" not in failed.error
    assert "val_acc = " in failed.error and "expected an accuracy in [0, 1]" in failed.error
    assert len(failed.error) < 200


def test_an_input_edited_after_planning_fails_the_job_instead_of_running_it(tmp_path) -> None:
    """A job's id holds its inputs' content as planned: run on edited data, its numbers would
    be filed under the old data's id. The run refuses, names the input, and counts nothing."""
    data = tmp_path / "data.bin"
    data.write_bytes(b"planned")
    job = Job(experiment="noop/a-b/0", kind="noop", inputs={"data": str(data)})
    data.write_bytes(b"edited")
    summary = run_jobs([job], tmp_path / "out", backend="serial", progress=False)
    assert not summary.done and len(summary.failed) == 1
    assert "input 'data'" in summary.failed[0].error
    assert "changed since the job was planned" in summary.failed[0].error
    assert job_status(tmp_path / "out" / job.job_id) == "failed"


def test_a_result_without_its_done_marker_is_a_pending_row_not_a_result(tmp_path) -> None:
    """A job killed between writing result.json and its done marker is pending: listed, with
    empty result columns, and never counted (the marker is written last)."""
    jobs = noop_jobs(2)
    run_jobs(jobs, tmp_path, backend="serial", progress=False, collect_table=False)
    (tmp_path / jobs[0].job_id / "done").unlink()
    assert (tmp_path / jobs[0].job_id / "result.json").is_file()
    table = collect(tmp_path).set_index("job_id")
    assert table.attrs["skipped"] == []
    assert table.loc[jobs[0].job_id, "status"] == "pending"
    assert pd.isna(table.loc[jobs[0].job_id, "test_acc"])
    assert table.loc[jobs[1].job_id, "status"] == "done"


@pytest.mark.parametrize("key", ["best_epoch", "epochs_run"])
def test_a_negative_epoch_count_is_no_valid_result(key) -> None:
    from shortcutlab.runner.records import result_problem

    good = {"best_epoch": 0, "epochs_run": 1, "val_loss": 0.5, "val_acc": 0.9,
            "test_acc": 0.8, "train_seconds": 1.0}
    assert result_problem(good) is None
    assert result_problem({**good, key: -1}) == f"has {key} = -1, expected a whole number >= 0"


def test_a_rerun_with_every_job_done_still_rewrites_the_job_table(tmp_path) -> None:
    """``collect_table`` rewrites the job table at the end of every run, also one that only
    skipped done jobs: a deleted (or stale) jobs.csv comes back with every job done."""
    jobs = noop_jobs(2)
    run_jobs(jobs, tmp_path, backend="serial", progress=False)
    (tmp_path / "jobs.csv").unlink()
    (tmp_path / "jobs.parquet").unlink()
    again = run_jobs(jobs, tmp_path, backend="serial", progress=False)
    assert len(again.skipped) == 2 and again.done == []
    table = pd.read_csv(tmp_path / "jobs.csv")
    assert sorted(table["job_id"]) == sorted(j.job_id for j in jobs)
    assert table["status"].tolist() == ["done", "done"]
    assert (tmp_path / "jobs.parquet").is_file()


def test_a_job_handed_twice_runs_and_counts_once(tmp_path) -> None:
    """run_jobs takes each job id once, whether the jobs come as a list with a repeat or as
    a generator (read once): 2 distinct jobs, 2 outcomes, both done."""
    a, b = noop_jobs(2, prefix="noop/twice-x")
    summary = run_jobs([a, a, b], tmp_path / "list", backend="serial", progress=False)
    assert sorted(o.job_id for o in summary.outcomes) == sorted([a.job_id, b.job_id])
    assert len(summary.done) == 2
    summary = run_jobs((job for job in (a, b, a)), tmp_path / "generator", backend="serial",
                       progress=False)
    assert len(summary.done) == 2 and len(summary.outcomes) == 2
