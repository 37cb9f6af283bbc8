"""``run_jobs(..., budget_seconds=N)``: no job starts after N seconds; the next call goes on."""

from __future__ import annotations

import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner.collect import collect
from shortcutlab.runner.jobs import Job
from shortcutlab.runner.runs import run_jobs


def _jobs() -> list[Job]:
    return [Job(experiment=f"noop/sleep-x/{i}", kind="noop") for i in range(4)]


def test_budget_stops_starting_jobs_and_the_next_call_goes_on(tmp_path, monkeypatch,
                                                              budget_spent_after_first_round
                                                              ) -> None:
    jobs = _jobs()
    first = run_jobs(jobs, tmp_path / "a", backend="serial", progress=False, budget_seconds=0.1)
    monkeypatch.undo()  # the real clock again
    # the first job starts (the budget is checked before each start), then the budget is spent
    assert len(first.done) == 1 and len(first.remaining) == 3
    assert set(first.remaining) == {j.job_id for j in jobs[1:]}
    table = collect(tmp_path / "a").set_index("job_id")
    assert table.loc[first.remaining, "status"].tolist() == ["pending"] * 3
    second = run_jobs(jobs, tmp_path / "a", backend="serial", progress=False)
    assert len(second.skipped) == 1 and len(second.done) == 3 and second.remaining == []
    whole = run_jobs(jobs, tmp_path / "b", backend="serial", progress=False)
    assert whole.remaining == []
    cols = ["job_id", "status", "test_acc"]
    assert collect(tmp_path / "a")[cols].equals(collect(tmp_path / "b")[cols])


def test_zero_budget_starts_nothing_and_negative_is_refused(tmp_path) -> None:
    summary = run_jobs(_jobs(), tmp_path, backend="serial", progress=False, budget_seconds=0)
    assert summary.done == [] and len(summary.remaining) == 4
    with pytest.raises(RunnerError, match="budget"):
        run_jobs(_jobs(), tmp_path, backend="serial", progress=False, budget_seconds=-1)


def test_a_budget_that_is_not_a_number_is_refused_before_anything_is_written(tmp_path) -> None:
    """``nan`` passes ``< 0`` (and the CLI's ``min=0``) but no elapsed time is ever ``>=`` it: it
    would silently run every job as if there were no budget."""
    with pytest.raises(RunnerError, match=r"budget must be >= 0 seconds \(got nan\)"):
        run_jobs(_jobs(), tmp_path / "out", backend="serial", progress=False,
                 budget_seconds=float("nan"))
    assert not (tmp_path / "out").exists()
