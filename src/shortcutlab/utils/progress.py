"""Progress of long work, always on stderr so stdout keeps the results (and ``--json`` stays pure
JSON): a rich bar with ETA on a terminal; in a log file (stderr redirected: a SLURM or nohup
log, CI) plain lines instead, one per task every :data:`LOG_EVERY` seconds and one when the
work ends, so a campaign of hours shows where it stands without bar glyphs or control codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from shortcutlab.utils.console import PlainConsole

#: Seconds between two progress lines of one task in a log file.
LOG_EVERY = 60.0


def progress_bar(disable: bool = False, *, log_every: float = LOG_EVERY) -> Progress:
    """A progress display for ``with``: on a terminal, a bar with description, n/total, elapsed
    time and ETA, drawn on stderr; when stderr is not a terminal, a :class:`LogProgress` (plain
    lines every ``log_every`` seconds). ``disable``: nothing at all."""
    console = PlainConsole(stderr=True)
    if not disable and not console.is_terminal:
        return LogProgress(every=log_every)
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        disable=disable,
        transient=False,
    )


class LogProgress(Progress):
    """rich's task bookkeeping without its live display: one line per task (``training:
    340/8,160 (4 %), 5 min 12 s, eta 1 h 59 min``) when ``every`` seconds have passed since the
    task started or last printed, and one per task at the end of the ``with`` block
    (``training: 8,160/8,160 (100 %) in 2 h 03 min``). Written by hand because rich has no
    line-per-interval mode: on a non-terminal it prints its bar once, at the end."""

    def __init__(self, every: float = LOG_EVERY, *, stream: TextIO | None = None,
                 get_time: Callable[[], float] | None = None) -> None:
        super().__init__(disable=True, get_time=get_time)
        self.every = every
        self.stream = stream
        self._printed: dict[TaskID, float] = {}
        self._stopped = False

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        self._tick(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._tick(task_id)

    def stop(self) -> None:
        super().stop()
        if not self._stopped:
            self._stopped = True
            for task in self.tasks:
                self._print(task, final=True)

    def _tick(self, task_id: TaskID) -> None:
        task = next(t for t in self.tasks if t.id == task_id)
        now = self.get_time()
        since = self._printed.get(task_id, task.start_time if task.start_time is not None
                                  else now)
        if now - since >= self.every and not task.finished and not self._stopped:
            self._print(task, final=False)
            self._printed[task_id] = now

    def _print(self, task: Task, *, final: bool) -> None:
        done = f"{task.completed:,.0f}"
        if task.total:
            done += f"/{task.total:,.0f} ({100 * task.completed / task.total:.0f} %)"
        elapsed = task.finished_time if task.finished_time is not None else task.elapsed
        line = f"{task.description}: {done}"
        if final:
            line += f" in {duration(elapsed or 0.0)}"
        else:
            line += f", {duration(elapsed or 0.0)}"
            if task.time_remaining is not None:
                line += f", eta {duration(task.time_remaining)}"
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()


def duration(seconds: float) -> str:
    """``45 s``, ``5 min 12 s``, ``2 h 03 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
