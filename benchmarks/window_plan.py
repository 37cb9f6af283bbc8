"""How a GPU window spends the time its GPU check left: jobs at a time and seconds per epoch.

``gpu_window.sh`` calls this after ``gpu_check.py``: from the check's summary (seconds per
full-scale epoch of one job alone, and of ``jobs`` jobs sharing the device) it picks the most
jobs at a time whose 30 epochs, plus each job's fixed costs (process start, rendering, the
statistics pass), finish inside what is left, and prints ``JOBS SECONDS_PER_EPOCH``: the
estimate ``validate_diagvib_paper.py --seconds-per-epoch`` takes (per full-scale epoch of one
job, fixed costs spread over the epochs, 10 % margin). The check's epoch times are full-scale
equivalents at any ``--scale``; a chunk at scale ``s`` takes ``s`` times as long. Prints
``0 0`` when no job fits: the window then runs no chunk.

    python benchmarks/window_plan.py gpu-check.json SECONDS_LEFT SCALE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EPOCHS = 30
#: Per job, whatever its scale: process start, rendering, the statistics pass (~40 s measured).
FIXED_SECONDS = 40.0
MARGIN = 1.1


def plan(summary: dict, left: float, scale: float) -> tuple[int, float]:
    """(jobs at a time, estimated seconds per full-scale epoch of each) for the chunk, or (0, 0)
    when not even one job's ``EPOCHS`` epochs and fixed costs fit in ``left`` seconds."""
    alone = summary.get("epoch_alone", {}).get("epoch_s_each")
    shared = summary.get("epoch_shared", {})
    options = []
    if alone:
        options.append((1, alone))
    if shared.get("epoch_s_each"):
        options.append((shared["jobs"], shared["epoch_s_each"]))
        if alone:  # two jobs: at most twice one job's time, at least the shared aggregate pace
            options.append((2, max(alone, 2 * shared["job_epoch_s_aggregate"])))
    fits = []
    for jobs, epoch_s in options:
        per_epoch = MARGIN * epoch_s + FIXED_SECONDS / (EPOCHS * scale)
        if per_epoch * scale * EPOCHS <= left:
            fits.append((jobs, round(per_epoch, 3)))
    return max(fits, key=lambda option: option[0]) if fits else (0, 0.0)


def main(argv: list[str]) -> None:
    path, left, scale = Path(argv[0]), float(argv[1]), float(argv[2])
    jobs, per_epoch = plan(json.loads(path.read_text()).get("summary", {}), left, scale)
    print(jobs, per_epoch)


if __name__ == "__main__":
    main(sys.argv[1:])
