"""Run Python snippets as if by ``python -c`` in a fresh interpreter, without paying its start-up.

A server process (a fresh ``python``, never the pytest worker: torch's OpenMP pool may be running
there and a forked child could hang) imports the heavy libraries once and then, for each request,
forks a child that runs the snippet in the folder asked for, with ``sys.argv == ["-c"]``, a fresh
``__main__``, stdin from /dev/null and stdout/stderr to files; the exit status is what ``python
-c`` would return (``SystemExit`` handled the same way, an uncaught exception printed and 1). The
server never runs user code itself, so every child starts from the same untouched state; it
refuses to start if an import left a second thread running (forking would copy a lock held).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

SERVER = r'''
import atexit, builtins, importlib, json, os, sys, threading, traceback, types

for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
if threading.active_count() != 1:
    sys.exit(f"forkrun: preloading started threads: {threading.enumerate()}")
reply = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # a stray print of the server must not garble its replies
sys.stdout.flush()
sys.stderr.flush()


def child(request):
    reply.close()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(0, closefd=False)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    os.chdir(request["cwd"])
    sys.argv[:] = ["-c"]
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    status = 0
    try:
        exec(compile(request["code"], "<string>", "exec"), main.__dict__)
    except SystemExit as stop:
        if stop.code is None:
            status = 0
        elif isinstance(stop.code, int):
            status = stop.code
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException as error:  # printed as python -c does: without this frame
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        status = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status & 0xFF)


for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            child(request)
        finally:
            os._exit(70)
    reply.write(json.dumps({"pid": pid}) + "\n")
    reply.flush()
    _, status = os.waitpid(pid, 0)
    reply.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
    reply.flush()
'''


class ForkServer:
    """One server process; ``run`` one snippet at a time, ``close`` when done."""

    def __init__(self, preload: Iterable[str], env: Mapping[str, str]) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, json.dumps(sorted(set(preload)))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(env))
        self._pending = b""

    def run(self, code: str, cwd: Path, stdout: Path, stderr: Path,
            timeout: float) -> int:
        """The exit status of ``code`` run in ``cwd``; its output lands in the two files."""
        assert self._proc.stdin is not None
        request = {"code": code, "cwd": str(cwd), "stdout": str(stdout), "stderr": str(stderr)}
        self._proc.stdin.write(json.dumps(request).encode() + b"\n")
        self._proc.stdin.flush()
        pid = self._reply(timeout)["pid"]
        try:
            return int(self._reply(timeout)["returncode"])
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            raise

    def _reply(self, timeout: float) -> dict[str, int]:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._pending:  # raw reads: a buffered reader could hide a line
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise TimeoutError(f"no answer from the fork server in {timeout} s")
            data = os.read(fd, 65536)
            if not data:
                raise RuntimeError(f"the fork server died (exit {self._proc.wait()})")
            self._pending += data
        line, self._pending = self._pending.split(b"\n", 1)
        return dict(json.loads(line))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
