"""A full disk does not hide which jobs failed: when neither the job table nor a job's
``error.txt`` can be written, the summary and one ``failed <id>: reason`` line per failed job
(the reason from the outcome in memory) are printed first, then the table problem in one line;
a run with failed jobs still exits 1. And an interrupted run's line reaches the command line
with exit code 130."""

from __future__ import annotations

import errno
import importlib
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import RunnerError
from shortcutlab.runner import jobs as jobs_mod
from shortcutlab.runner import runs
from shortcutlab.runner.jobs import ERROR_FILE, Job
from shortcutlab.runner.runs import (
    JobTableError,
    RunInterrupted,
    RunSummary,
    describe_failures,
    run_jobs,
)

runner = CliRunner()
DIAGVIB_RUN = ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--pairs",
               "hue-shape", "--samples", "0", "--scale", "0.001", "--epochs", "1",
               "--device", "cpu"]
BIASBED_RUN = ["biasbed", "run", "--algorithm", "erm", "--dataset",
               "diagvib:ZGO/shape-texture/0", "--scale", "0.002", "--epochs", "1",
               "--device", "cpu"]
REAL_RUN_JOBS = runs.run_jobs
NOOP = [Job(experiment="noop/a-b/0", kind="noop"), Job(experiment="noop/fail-x/0", kind="noop")]


def _enospc(target: object, *args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The job table and every ``error.txt`` cannot be written; results still can."""
    real_write_text = jobs_mod.write_text

    def no_error_files(target: Path, text: str) -> Path:
        if Path(target).name == ERROR_FILE:
            _enospc(target)
        return real_write_text(target, text)

    monkeypatch.setattr(jobs_mod, "write_text", no_error_files)
    collect = importlib.import_module("shortcutlab.runner.collect")  # not the function
    monkeypatch.setattr(collect, "write_table", _enospc)


def test_run_jobs_keeps_the_outcomes_when_the_table_cannot_be_written(
        tmp_path: Path, full_disk: None) -> None:
    with pytest.raises(JobTableError, match="cannot write the job table in .*No space left") \
            as caught:
        run_jobs(NOOP, tmp_path, backend="serial", progress=False)
    assert isinstance(caught.value, RunnerError)  # what callers caught before
    summary = caught.value.summary
    assert [o.job_id for o in summary.done] == [NOOP[0].job_id]
    [line] = describe_failures(summary, tmp_path)
    assert line == (f"{NOOP[1].job_id}: RuntimeError: noop job noop/fail-x/0 failed on "
                    "purpose")  # from memory: no error.txt to point at
    assert not (tmp_path / NOOP[1].job_id / ERROR_FILE).exists()


def _with_noop_jobs(fail: bool = True):
    """A run_jobs that runs the noop jobs (one failing) in place of the planned ones."""
    def run(jobs: list[Job], out: Path, **kw: object) -> RunSummary:
        kw.update(backend="serial", progress=False)
        return REAL_RUN_JOBS(NOOP if fail else NOOP[:1], out, **kw)  # type: ignore[arg-type]
    return run


def _lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip()]


@pytest.mark.parametrize("command", ["diagvib", "biasbed"])
def test_the_commands_print_the_summary_and_every_failure_before_the_table_problem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full_disk: None, command: str
) -> None:
    target = importlib.import_module("shortcutlab.biasbed.protocol") if command == "biasbed" \
        else runs
    monkeypatch.setattr(target, "run_jobs", _with_noop_jobs())
    args = BIASBED_RUN if command == "biasbed" else DIAGVIB_RUN
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert res.exit_code == 1, res.output
    lines = _lines(res.output)
    summary = next(i for i, line in enumerate(lines) if line.startswith("done 1,"))
    failed = lines.index(f"failed {NOOP[1].job_id}: RuntimeError: noop job noop/fail-x/0 "
                         "failed on purpose")
    table = next(i for i, line in enumerate(lines) if line.startswith(
        "Error: cannot write the job table in") and line.endswith("No space left on device"))
    assert summary < failed < table, res.output
    assert "Traceback" not in res.output


def test_a_run_whose_only_problem_is_the_table_exits_2_after_its_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full_disk: None) -> None:
    monkeypatch.setattr(runs, "run_jobs", _with_noop_jobs(fail=False))
    res = runner.invoke(app, [*DIAGVIB_RUN, "--out", str(tmp_path / "run")])
    assert res.exit_code == 2, res.output
    lines = _lines(res.output)
    assert lines[-2].startswith("done 1, already done 0, failed 0") and \
        lines[-2].endswith("table: not written"), lines
    assert lines[-1].startswith("Error: cannot write the job table"), lines


@pytest.mark.parametrize("command", ["diagvib", "biasbed"])
def test_an_interrupted_run_prints_its_line_and_exits_130(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    def interrupted(jobs: list[Job], out: Path, **kw: object) -> RunSummary:
        raise RunInterrupted("interrupted by SIGINT after 1.0 s: 3 of 12 jobs done",
                             RunSummary([], interrupted="SIGINT"))

    target = importlib.import_module("shortcutlab.biasbed.protocol") if command == "biasbed" \
        else runs
    monkeypatch.setattr(target, "run_jobs", interrupted)
    args = BIASBED_RUN if command == "biasbed" else DIAGVIB_RUN
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert res.exit_code == 130, res.output
    assert _lines(res.output)[-1] == "interrupted by SIGINT after 1.0 s: 3 of 12 jobs done"
