"""utils.malloc: a job worker keeps freed memory in its heap (glibc), and the runner's workers
set it up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from shortcutlab.runner import local_processes

PROBE = r"""
import ctypes, sys
from shortcutlab.utils.malloc import keep_freed_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
                .split()]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
before = libc.mallinfo2().hblkhd
block = ctypes.create_string_buffer(16 << 20)  # one malloc of 16 MiB
print(applied, libc.mallinfo2().hblkhd - before >= 16 << 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_a_16_mib_block_comes_from_the_heap_once_freed_memory_is_kept() -> None:
    def probe(mode: str) -> str:
        out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True,
                             text=True, check=True, timeout=120)
        return out.stdout.strip()

    assert probe("default") == "None True"  # glibc's default: a block this big is mmapped
    assert probe("keep") == "True False"  # kept: from the heap, reusable without page faults


def test_the_runners_workers_keep_freed_memory(monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(local_processes, "keep_freed_memory", lambda: calls.append("kept"))
    monkeypatch.setattr(local_processes, "_die_with_parent", lambda parent: None)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        local_processes._init_worker(0, None, [], dict(os.environ))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert calls == ["kept"]


def test_the_shortcutlab_command_keeps_freed_memory(monkeypatch, capsys) -> None:
    from shortcutlab.cli import main as cli_main
    from shortcutlab.utils import malloc

    calls: list[str] = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append("kept"))
    monkeypatch.setattr(sys, "argv", ["shortcutlab", "--version"])
    with pytest.raises(SystemExit) as exc:
        cli_main.main()
    assert exc.value.code == 0 and calls == ["kept"]
    assert capsys.readouterr().out.startswith("shortcutlab ")
