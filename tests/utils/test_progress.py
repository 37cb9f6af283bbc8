"""Progress in a log file (stderr not a terminal): plain lines every ``every`` seconds and one at
the end, on a fake clock; the terminal bar is tested in tests/cli/test_first_hour.py."""

from __future__ import annotations

import io

import pytest

from shortcutlab.utils.progress import LogProgress, duration, progress_bar


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_interval_and_one_at_the_end() -> None:
    clock, out = Clock(), io.StringIO()
    with LogProgress(every=60, stream=out, get_time=clock) as bar:
        task = bar.add_task("training", total=8160)
        for _ in range(100):  # 100 steps in 50 s: nothing yet
            clock.now += 0.5
            bar.advance(task)
        assert out.getvalue() == ""
        clock.now += 10
        bar.advance(task, 20)  # 60 s after the start
        clock.now += 30
        bar.update(task, advance=60, description="β=4")  # 30 s since the last line
        clock.now += 30.5
        bar.advance(task, 60)
        clock.now += 7200
        bar.update(task, completed=8160)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("training: 120/8,160 (1 %), 1 min 00 s, eta ")
    assert lines[1].startswith("β=4: 240/8,160 (3 %), 2 min 00 s")
    assert lines[2] == "β=4: 8,160/8,160 (100 %) in 2 h 02 min"
    assert len(lines) == 3


def test_short_work_prints_its_end_only_and_every_task() -> None:
    clock, out = Clock(), io.StringIO()
    with LogProgress(stream=out, get_time=clock) as bar:
        a = bar.add_task("render", total=3)
        b = bar.add_task("stream", total=None)  # no total
        bar.advance(a, 3)
        clock.now += 2
        bar.advance(b, 1500)
    assert out.getvalue().splitlines() == ["render: 3/3 (100 %) in 0 s",
                                          "stream: 1,500 in 2 s"]


def test_progress_bar_writes_lines_when_stderr_is_not_a_terminal(capsys) -> None:
    with progress_bar() as bar:  # pytest's capture is not a terminal
        assert isinstance(bar, LogProgress)
        task = bar.add_task("work", total=3)
        bar.advance(task, 3)
    assert capsys.readouterr().err == "work: 3/3 (100 %) in 0 s\n"
    with progress_bar(disable=True) as bar:
        bar.advance(bar.add_task("quiet", total=1), 1)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("seconds, text", [(0.4, "0 s"), (59.6, "1 min 00 s"),
                                           (312, "5 min 12 s"), (7380, "2 h 03 min")])
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_the_eta_is_the_time_left_at_the_rate_so_far() -> None:
    """One step a second: after 60 of 1,000 steps, 940 s are left (not the 1,000 s in all)."""
    clock, out = Clock(), io.StringIO()
    with LogProgress(every=60, stream=out, get_time=clock) as bar:
        task = bar.add_task("training", total=1000)
        for _ in range(60):
            clock.now += 1
            bar.advance(task)
        assert out.getvalue() == "training: 60/1,000 (6 %), 1 min 00 s, eta 15 min 40 s\n"
