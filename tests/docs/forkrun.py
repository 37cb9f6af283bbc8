"""Run Python snippets and ``shortcutlab`` commands as a fresh process would, without paying
the start-up of torch, pandas and matplotlib each time.

A server process (a fresh ``python``, never the pytest worker: torch's OpenMP pool may be running
there and a forked child could hang) imports the heavy libraries once, runs nothing else, and
listens on a Unix socket. Each request hands over three file descriptors (the stdin, stdout and
stderr of the run), a folder, an environment and what to run; the server forks a manager that
forks the run, waits for it and answers its exit status, so the server itself never blocks and
runs may overlap (``shortcutlab a | shortcutlab b``). A run is set up as its fresh counterpart:

- ``code``: as ``python -c code`` (``sys.argv == ["-c"]``, the folder first on ``sys.path``),
  or with ``argv`` and ``filename`` as ``python -c code ARGS`` or ``python - ARGS``;
- ``script``, ``argv``: as the console script ``script`` (its folder first on ``sys.path``,
  ``sys.argv == [script, *argv]``) calling ``shortcutlab.cli.main.main``;

both with a new ``__main__``, ``SystemExit`` and uncaught exceptions turned into the same exit
status and message, and ``atexit`` handlers run. ``shim`` writes a ``shortcutlab`` executable
that forwards its command line this way, for bash blocks, and a ``python`` one that forwards
``python -c CODE ...`` and ``python - ...`` (the script read from its stdin) and runs the real
interpreter for anything else. The server refuses to start if an
import left a second thread running (forking would copy a lock held). What differs from a fresh
process: the preloaded modules are already imported, so an environment variable that a library
reads at import time keeps the server's value (a block that sets one needs ``fresh``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

SERVER = r'''
import atexit, builtins, importlib, json, os, selectors, socket, sys, threading, traceback, types

for name in json.loads(sys.argv[2]):
    importlib.import_module(name)
if threading.active_count() != 1:
    sys.exit(f"forkrun: preloading started threads: {threading.enumerate()}")
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1] + ".new")
listener.listen(64)
os.rename(sys.argv[1] + ".new", sys.argv[1])  # the name appears once it accepts
sys.stdout.flush()
sys.stderr.flush()


def run(request, fds):
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, closefd=False)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    if "code" in request:
        sys.argv[:] = request.get("argv", ["-c"])
        code = compile(request["code"], request.get("filename", "<string>"), "exec")
    else:
        sys.argv[:] = [request["script"], *request["argv"]]
        sys.path[0] = os.path.dirname(request["script"])
        code = compile("import sys\nfrom shortcutlab.cli.main import main\nsys.exit(main())\n",
                       request["script"], "exec")
    status = 0
    try:
        exec(code, main.__dict__)
    except SystemExit as stop:
        if stop.code is None:
            status = 0
        elif isinstance(stop.code, int):
            status = stop.code
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException as error:  # printed as python does: without this frame
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        status = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status & 0xFF)


def manage(conn):
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        data += conn.recv(1 << 20)
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:
        conn.close()
        try:
            run(request, fds)
        finally:
            os._exit(70)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
selector.register(sys.stdin, selectors.EVENT_READ)  # closed by the client: time to go
while True:
    events = selector.select(timeout=1.0)
    if any(key.fileobj is sys.stdin for key, _ in events) and not sys.stdin.read(1):
        break
    if any(key.fileobj is listener for key, _ in events):
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            try:
                manage(conn)
            finally:
                os._exit(0)
        conn.close()
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
os._exit(0)  # nothing to clean up: skip tearing down torch and friends
'''

SHIM = '''#!{python} -S
"""Forwards this command to the fork server at {socket} (tests/docs/forkrun.py)."""
import json, os, socket, sys

request = {{"cwd": os.getcwd(), "env": dict(os.environ), "script": {script!r},
           "argv": sys.argv[1:]}}
'''

PYTHON_SHIM = '''#!{python} -S
"""``python -c CODE ...`` and ``python - ...`` through the fork server at {socket}; anything
else runs {python} itself (tests/docs/forkrun.py)."""
import json, os, socket, sys

args = sys.argv[1:]
if len(args) >= 2 and args[0] == "-c":
    code, argv, filename = args[1], ["-c", *args[2:]], "<string>"
elif args[:1] == ["-"]:
    code, argv, filename = sys.stdin.read(), args, "<stdin>"
else:
    os.execv({python!r}, [{python!r}, *args])
request = {{"cwd": os.getcwd(), "env": dict(os.environ), "code": code, "argv": argv,
           "filename": filename}}
'''

FORWARD = '''conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect({socket!r})
socket.send_fds(conn, [json.dumps(request).encode() + b"\\n"], [0, 1, 2])
reply = b""
while True:
    data = conn.recv(65536)
    if not data:
        sys.exit("{name} (fork server shim): the server hung up")
    reply += data
    if reply.count(b"\\n") == 2:
        code = json.loads(reply.split(b"\\n")[1])["returncode"]
        sys.exit(code if code >= 0 else 128 - code)  # killed by a signal: as bash says it
'''


class ForkServer:
    """One server process; ``run`` a snippet or ``shim`` for the CLI; ``close`` when done."""

    def __init__(self, preload: Iterable[str], env: Mapping[str, str]) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="forkrun-"))
        self.socket = str(self._dir / "socket")
        self._proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, self.socket, json.dumps(sorted(set(preload)))],
            stdin=subprocess.PIPE, env=dict(env))
        while not os.path.exists(self.socket):
            try:
                code = self._proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"the fork server did not start (exit {code})")

    def run(self, code: str, cwd: Path, env: Mapping[str, str], stdout: Path, stderr: Path,
            timeout: float) -> int:
        """The exit status of ``python -c code`` in ``cwd``; its output lands in the two files."""
        request: dict[str, object] = {"code": code, "cwd": str(cwd), "env": dict(env)}
        with open(os.devnull, "rb") as stdin, open(stdout, "wb") as out, open(stderr, "wb") as err:
            return self._request(request, [stdin.fileno(), out.fileno(), err.fileno()], timeout)

    def _request(self, request: dict[str, object], fds: Sequence[int], timeout: float) -> int:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(self.socket)
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], list(fds))
            reply = b""
            pid = None
            try:
                while reply.count(b"\n") < 2:
                    data = conn.recv(65536)
                    if not data:
                        raise RuntimeError("the fork server hung up")
                    reply += data
                    if pid is None and b"\n" in reply:
                        pid = json.loads(reply.split(b"\n")[0])["pid"]
            except TimeoutError:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                raise
            return int(json.loads(reply.split(b"\n")[1])["returncode"])

    def shim(self) -> Path:
        """A folder holding a ``shortcutlab`` executable that runs through this server, as the
        installed console script next to ``sys.executable`` would, and a ``python`` one."""
        bin_dir = self._dir / "bin"
        if not bin_dir.exists():
            bin_dir.mkdir()
            script = str(Path(sys.executable).parent / "shortcutlab")
            for name, head in (("shortcutlab", SHIM), ("python", PYTHON_SHIM)):
                path = bin_dir / name
                path.write_text(head.format(python=sys.executable, socket=self.socket,
                                            script=script)
                                + FORWARD.format(socket=self.socket, name=name))
                path.chmod(0o755)
        return bin_dir

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for path in (self._dir / "bin" / "shortcutlab", self._dir / "bin" / "python",
                     self._dir / "socket"):
            path.unlink(missing_ok=True)
        for folder in (self._dir / "bin", self._dir):
            if folder.exists():
                folder.rmdir()
