"""A worker process that dies (``os._exit`` in native code, SIGKILL from the out-of-memory
killer) fails only the job it ran, with an ``error.txt`` that exists and says so; the jobs that
were pending, or running in the pool's other workers, finish in a fresh pool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shortcutlab.runner.backends import describe_failures, run_jobs
from shortcutlab.runner.jobs import Job

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.mark.parametrize(("word", "reason"), [("die", "exit code 3"),
                                              ("sigkill", "killed by SIGKILL")])
def test_a_dead_worker_fails_only_its_own_job(tmp_path: Path, word: str, reason: str) -> None:
    others = [Job(experiment=f"noop/sleep-{i}/0", kind="noop") for i in range(4)]
    dying = Job(experiment=f"noop/{word}-x/0", kind="noop")
    summary = run_jobs([others[0], dying, *others[1:]], tmp_path, backend="processes",
                       workers=2, progress=False)
    assert [o.job_id for o in summary.failed] == [dying.job_id]
    assert sorted(o.job_id for o in summary.done) == sorted(j.job_id for j in others)
    error = summary.failed[0].error
    assert "worker process" in error and "died" in error and reason in error, error
    [line] = describe_failures(summary, tmp_path)
    trace = Path(line.rsplit("(traceback: ", 1)[1].rstrip(")"))
    assert trace == tmp_path / dying.job_id / "error.txt"
    assert trace.is_file() and error in trace.read_text()
    assert not (tmp_path / dying.job_id / "claim.json").exists()  # the next run retries it


def test_failure_lines_name_no_traceback_file_that_does_not_exist(tmp_path: Path) -> None:
    from shortcutlab.runner.backends import RunSummary
    from shortcutlab.runner.jobs import Outcome

    summary = RunSummary([Outcome("abc", "failed", "cannot write the job folder")])
    assert describe_failures(summary, tmp_path) == ["abc: cannot write the job folder"]
