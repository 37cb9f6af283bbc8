"""A run that waits on a job claimed by another run says so, once per claim: which job, who
holds it, how long the wait may last; never a silent stall."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from shortcutlab.runner import claims
from shortcutlab.runner.jobs import Job, write_job_file
from shortcutlab.runner.runs import run_jobs


def _claimed_elsewhere(out: Path, job: Job) -> Path:
    path = write_job_file(out, job)
    (path / claims.CLAIM_FILE).write_text(json.dumps(
        {"pid": 4242, "host": "node-elsewhere", "time": time.time(), "token": "t0k3n"}))
    return path


def test_waiting_on_another_hosts_claim_is_named_once(tmp_path: Path, monkeypatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(claims, "STALE_SECONDS", 1.5)  # that owner "stops" after 1.5 s
    job = Job(experiment="noop/a-b/0", kind="noop")
    _claimed_elsewhere(tmp_path, job)
    with caplog.at_level(logging.WARNING, logger="shortcutlab"):
        summary = run_jobs([job], tmp_path, backend="serial", progress=False,
                           wait_seconds=0.1)
    assert [o.job_id for o in summary.done] == [job.job_id]  # taken over once stale
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # ~15 polls, one warning
    assert job.job_id in warnings[0] and "pid 4242 on node-elsewhere" in warnings[0]
    assert "up to 1 s more" in warnings[0] or "up to 2 s more" in warnings[0], warnings[0]


def test_the_cli_prints_the_wait_as_a_warning(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    import shortcutlab.runner.runs as runs
    from shortcutlab.cli.main import app

    monkeypatch.setattr(claims, "STALE_SECONDS", 1.0)
    job = Job(experiment="noop/a-b/0", kind="noop")
    real = runs.run_jobs

    def noop_run(jobs, out, **kw):  # run_jobs' signature
        # claimed as the run starts: the command's own start-up may take longer than 1 s
        _claimed_elsewhere(Path(out), job)
        return real([job], out, backend="serial", progress=False, wait_seconds=0.1)

    monkeypatch.setattr(runs, "run_jobs", noop_run)
    res = CliRunner().invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                                   "--samples", "0", "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert res.output.count(f"Warning: job {job.job_id}") == 1, res.output
    assert "node-elsewhere" in res.output
