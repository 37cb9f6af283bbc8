"""Who may take over a claim on this host: the owner's process is looked up, not guessed from
the claim's age. A live owner whose heartbeat stalled (a run stopped with Ctrl-Z, a machine
that slept) keeps its job, so that two runs never both train it; a dead owner, or a process
that only reuses its pid, loses it at once."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from shortcutlab.runner import claims

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")


def _claim_in_child(path: Path) -> int:
    """Fork a child that claims ``path`` and then sleeps; its pid once the claim is there."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            ok = claims.try_claim(path) is not None
            os.write(write, b"1" if ok else b"0")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        assert fh.read(1) == b"1"
    return pid


def _age(target: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(target, (when, when))


def test_a_live_owner_on_this_host_keeps_its_claim_however_old(tmp_path: Path) -> None:
    pid = _claim_in_child(tmp_path)
    try:
        os.kill(pid, signal.SIGSTOP)  # Ctrl-Z: its heartbeat stops with it
        _age(tmp_path / claims.CLAIM_FILE, claims.STALE_SECONDS + 60)
        assert not claims.is_stale(tmp_path)
        assert claims.try_claim(tmp_path) is None
        assert json.loads((tmp_path / claims.CLAIM_FILE).read_text())["pid"] == pid
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert claims.is_stale(tmp_path)  # dead: taken over at once, old or not
    assert claims.try_claim(tmp_path) is not None


def test_a_claim_whose_pid_now_belongs_to_another_process_is_stale(tmp_path: Path) -> None:
    """A run killed in a container that restarted: its pid is reused, maybe by the new run."""
    assert claims.try_claim(tmp_path) is not None
    claim = json.loads((tmp_path / claims.CLAIM_FILE).read_text())
    claim["start"] = "1"  # our pid, started at another time: not the owner
    (tmp_path / claims.CLAIM_FILE).write_text(json.dumps(claim))
    assert claims.is_stale(tmp_path)


def test_a_run_releases_only_its_own_claim(tmp_path: Path) -> None:
    """A run whose claim was taken over meanwhile (it looked stale to another run) must not
    remove the new owner's claim when its job ends: a third run would then claim the job and
    train it while the new owner still does."""
    ours = claims.try_claim(tmp_path)
    assert ours is not None
    (tmp_path / claims.CLAIM_FILE).unlink()  # taken over: another owner's claim replaces ours
    theirs = claims.try_claim(tmp_path)
    assert theirs is not None and theirs != ours
    claims.release(tmp_path, ours)
    assert (claims.read_claim(tmp_path) or {}).get("token") == theirs
    assert claims.try_claim(tmp_path) is None  # still held by a live owner
    claims.release(tmp_path, theirs)
    assert claims.read_claim(tmp_path) is None
