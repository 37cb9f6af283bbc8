"""Per-job claims: at most one process runs a job at a time, even across runs and hosts.

A claim is ``<job>/claim.json``, created with ``O_CREAT | O_EXCL`` (atomic on local file
systems and on NFS v3+), holding the owner's pid, host and start time (and, on Linux, its
process's start time, so that a reused pid is not taken for the owner) and, when the owner
runs a job for a run, that run's name (:func:`claim_run`). The owner touches it
every :data:`HEARTBEAT_SECONDS` while the job runs. A claim is *stale*, and may be taken over,
when its owner is on this host and no longer alive, or when it has not been touched for
:data:`STALE_SECONDS` (an owner on another node that died). An owner on this host that is
alive keeps its claim however long its heartbeat stalled (a run stopped by Ctrl-Z, a machine
that slept): taking it over would train the job twice. A claim that cannot be read, or
that is no claim of ours (no pid, host and token), is stale once older than
:data:`UNREADABLE_GRACE_SECONDS` (the moment its owner needs to write it), not after minutes.
Taking over goes through a second exclusive file, so two runs never break the same claim and
both believe they own the job.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from shortcutlab.runner.reaper import start_time

CLAIM_FILE = "claim.json"
_BREAK_FILE = "claim.break"
HEARTBEAT_SECONDS = 30.0
STALE_SECONDS = 300.0
UNREADABLE_GRACE_SECONDS = 5.0


def _host() -> str:
    return socket.gethostname()


def read_claim(path: Path) -> dict[str, Any] | None:
    """The claim of job folder ``path`` ({} when unreadable), or None when there is none."""
    try:
        data = json.loads((path / CLAIM_FILE).read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie does, until reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def _age(target: Path) -> float:
    try:
        return time.time() - target.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def is_stale(path: Path) -> bool:
    """Whether the claim in ``path`` belongs to nobody alive (False when there is no claim)."""
    claim = read_claim(path)
    if claim is None:
        return False
    pid, host = claim.get("pid"), claim.get("host")
    if not (isinstance(pid, int) and isinstance(host, str) and isinstance(claim.get("token"), str)):
        return _age(path / CLAIM_FILE) > UNREADABLE_GRACE_SECONDS  # junk, or being written
    if host == _host() and isinstance(pid, int):
        if not pid_alive(pid):
            return True
        started, now = claim.get("start"), start_time(pid)
        if isinstance(started, str) and now is not None:  # the owner itself, or a reused pid
            return started != now
    return _age(path / CLAIM_FILE) > STALE_SECONDS


def describe_claim(path: Path) -> str:
    """``pid 123 on node7 since 12:03:04`` for messages."""
    claim = read_claim(path) or {}
    since = claim.get("time")
    when = time.strftime("%H:%M:%S", time.localtime(since)) if isinstance(since, float) else "?"
    return f"pid {claim.get('pid', '?')} on {claim.get('host', '?')} since {when}"


def describe_wait(path: Path) -> str:
    """How long a run will wait for the claim in ``path``: a live owner on this host is waited
    for until it ends; any other until it ends or its claim goes :data:`STALE_SECONDS` without
    a heartbeat."""
    claim = read_claim(path) or {}
    pid, host = claim.get("pid"), claim.get("host")
    if host == _host() and isinstance(pid, int) and pid_alive(pid):
        return "until it ends (at once if that process dies)"
    left = max(STALE_SECONDS - _age(path / CLAIM_FILE), 0.0)
    return (f"until it ends, or for up to {left:.0f} s more if its owner stopped (no heartbeat "
            f"for {STALE_SECONDS:.0f} s makes the claim stale), then takes it over")


def claim_run(path: Path) -> str:
    """The name of the run whose worker holds the claim in ``path`` ("" when there is no
    claim, or it names no run)."""
    run = (read_claim(path) or {}).get("run")
    return run if isinstance(run, str) else ""


def _create(path: Path, token: str, run: str = "") -> bool:
    try:
        fd = os.open(path / CLAIM_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            claim = {"pid": os.getpid(), "host": _host(), "time": time.time(),
                     "token": token, "start": start_time(os.getpid())}
            json.dump({**claim, "run": run} if run else claim, fh)
    except BaseException:  # a full disk, an interrupt: no half-written claim stays behind
        with suppress(FileNotFoundError):
            (path / CLAIM_FILE).unlink()
        raise
    return True


def try_claim(path: Path, run: str = "") -> str | None:
    """Claim job folder ``path``; returns the claim's token, or None when someone alive holds
    it. A stale claim is taken over (under ``claim.break``, itself stale after a minute).
    ``run``: the name of the run the job runs for, kept in the claim (:func:`claim_run`)."""
    token = uuid.uuid4().hex
    if _create(path, token, run):
        return token
    if not is_stale(path):
        return None
    breaker = path / _BREAK_FILE
    if breaker.exists() and _age(breaker) > 60:
        with suppress(FileNotFoundError):
            breaker.unlink()
    try:
        os.close(os.open(breaker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return None  # another run is taking it over
    try:
        if not is_stale(path):  # released and claimed again meanwhile
            return None
        with suppress(FileNotFoundError):
            (path / CLAIM_FILE).unlink()
        return token if _create(path, token, run) else None
    finally:
        with suppress(FileNotFoundError):
            breaker.unlink()


def drop_if_stale(path: Path) -> None:
    """Remove a stale claim (one left by a run killed after its job was done)."""
    if is_stale(path):
        with suppress(FileNotFoundError):
            (path / CLAIM_FILE).unlink()


def release(path: Path, token: str) -> None:
    """Remove the claim if it is still ours."""
    claim = read_claim(path)
    if claim is not None and claim.get("token") == token:
        with suppress(FileNotFoundError):
            (path / CLAIM_FILE).unlink()


@contextmanager
def heartbeat(path: Path, token: str,
              every: float | None = None) -> Iterator[None]:
    """Touch our claim every ``every`` seconds (default :data:`HEARTBEAT_SECONDS`) while the
    block runs, so that runs on other hosts see the owner is alive."""
    stop = threading.Event()
    interval = HEARTBEAT_SECONDS if every is None else every

    def beat() -> None:
        while not stop.wait(interval):
            claim = read_claim(path)
            if claim is None or claim.get("token") != token:
                return
            with suppress(OSError):
                os.utime(path / CLAIM_FILE)

    thread = threading.Thread(target=beat, name="shortcutlab-claim-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
