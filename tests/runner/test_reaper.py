"""The reaper that kills a local Ray instance's processes once the run that started it died:
it reads each process's start time from ``/proc`` (so that a pid reused by another process is
left alone) and kills only the processes whose start time is the one it was given. The
processes here are ``sleep`` children of the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shortcutlab.runner import reaper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "30"])


def _boot_time() -> int:
    """Seconds since the epoch at boot (``btime`` of ``/proc/stat``)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return int(line.split()[1])
    raise AssertionError("no btime in /proc/stat")


def test_start_time_is_when_the_process_started() -> None:
    """The start time is field 22 of ``/proc/<pid>/stat``, clock ticks after boot: for a
    process started just now, boot time + ticks / SC_CLK_TCK is now (within a few seconds);
    it does not change while the process runs; None once the process is gone."""
    proc = _sleeper()
    try:
        start = reaper.start_time(proc.pid)
        assert start is not None
        started_at = _boot_time() + int(start) / os.sysconf("SC_CLK_TCK")
        assert abs(started_at - time.time()) < 5.0
        assert reaper.start_time(proc.pid) == start
    finally:
        proc.kill()
        proc.wait()
    assert reaper.start_time(proc.pid) is None


def test_only_the_processes_with_their_start_time_are_killed() -> None:
    """Once the watched process is gone, a target with its own start time is killed
    (SIGKILL); one given another start time (its pid reused since) is left running."""
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its pid is no process now
    ours, reused = _sleeper(), _sleeper()
    try:
        ours_start = reaper.start_time(ours.pid)
        reused_start = reaper.start_time(reused.pid)
        assert ours_start is not None and reused_start is not None
        other = str(int(reused_start) + 1)  # the start time of the pid's former process
        reaper.main([str(gone.pid), f"{ours.pid}:{ours_start}", f"{reused.pid}:{other}"])
        assert ours.wait(timeout=5) == -signal.SIGKILL
        assert reused.poll() is None
    finally:
        for proc in (ours, reused):
            proc.kill()
            proc.wait()
