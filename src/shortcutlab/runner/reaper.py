"""Kill a list of processes once another process has died: the local Ray instance's processes
when the run that started it is killed (Ray's raylet and workers share the driver's fate, but
its agents outlive it).

Run as a script (it imports nothing of the package, so it starts fast):
``python reaper.py WATCHED PID:START [PID:START ...]``. ``START`` is the process's start time
(field 22 of ``/proc/<pid>/stat``), so a pid reused by another process is left alone. Linux only.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def start_time(pid: int) -> str | None:
    """The start time of ``pid`` from ``/proc`` (None when it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now (read from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as dead)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def main(argv: list[str]) -> None:
    watched = int(argv[0])
    targets = [(int(p), s) for p, s in (item.split(":", 1) for item in argv[1:])]
    while _alive(watched):
        time.sleep(1.0)
    for pid, start in targets:
        if start_time(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


if __name__ == "__main__":
    main(sys.argv[1:])
