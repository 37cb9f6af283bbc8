"""glibc's allocator set up for a training worker process: keep freed memory for reuse.

By default glibc returns big freed blocks to the kernel (``mmap``/``munmap`` above a threshold
that adapts, and a heap top trimmed above 128 KiB), so every training step of a small CNN on
the CPU maps, zero-fills and unmaps the same buffers again: on the DiagViB-6 demo's jobs about
1.2 M page faults and 12 % of the time in the kernel. Keeping blocks of up to 32 MiB in the heap
and never trimming it cuts that to about 0.3 M faults and the job's wall time by about 10 %
(benchmarks/RESULTS-train-runner.md); the numbers are unchanged (only where memory comes from
changes) and the process keeps its peak heap, which a job worker needs again at the next step.

Written by hand: the usual fix (jemalloc or tcmalloc through ``LD_PRELOAD``) cannot be applied
to worker processes from Python; ``mallopt`` is glibc's own interface for it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # glibc malloc.h
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from (and return to) the heap; glibc's ceiling on 64-bit.
MMAP_THRESHOLD = 32 * 1024 * 1024
NEVER_TRIM = 2**31 - 1


def keep_freed_memory() -> bool:
    """In this process, keep freed blocks up to :data:`MMAP_THRESHOLD` for reuse and never
    trim the heap (glibc on Linux; elsewhere nothing). Returns whether glibc accepted it.
    Meant for processes the tool owns (the runner's job workers, the ``shortcutlab`` command),
    not for a user's own Python process."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))
