"""``shortcutlab demo``: the main job on embedded defaults, composed from the areas' public
functions.

Each stage is a module here with ``run_demo(out_dir, console) -> list[str]`` returning lines
that say what was written where; :func:`run_demo` runs the chosen stages and writes
``<out>/index.html`` linking every report and picture they wrote.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from shortcutlab.errors import ShortcutlabError, unknown_choice

if TYPE_CHECKING:
    from rich.console import Console

STAGES: dict[str, str] = {
    "diagvib": "shortcutlab.demo.generator",      # traversal figure, sample images
    "benchmark": "shortcutlab.demo.benchmark",    # reduced DiagViB-6 benchmark + report
    "vqa": "shortcutlab.demo.vqa",                # VQA-VS splits on easy-VQA, baselines
    "imagenetx": "shortcutlab.demo.imagenetx",    # original labels vs ReaL
}

__all__ = ["STAGES", "run_demo", "write_index"]


def write_index(out: Path, summary: list[tuple[str, str]]) -> Path:
    """A page linking each HTML report and picture the stages wrote, with every summary line."""
    from shortcutlab.utils.html import HtmlReport  # matplotlib: not for `shortcutlab --help`

    page = HtmlReport("shortcutlab demo")
    for stage in dict.fromkeys(s for s, _ in summary):
        page.heading(stage)
        items = []
        for s, line in summary:
            if s != stage:
                continue
            match = re.search(r"(\S+\.(?:html|png))$", line)
            href = os.path.relpath(match.group(1), out) if match else None
            items.append((line, href))
        page.links(items)
    return page.write(out / "index.html")


def run_demo(
    out: Path, console: Console, only: Sequence[str] | None = None
) -> tuple[list[tuple[str, str]], Path]:
    """Run the ``only`` stages (default all, in :data:`STAGES` order) into ``out/<stage>``;
    return the (stage, line) summary and the index page."""
    from rich.text import Text

    chosen = list(only) if only else list(STAGES)
    for stage in chosen:
        if stage not in STAGES:
            raise ShortcutlabError(unknown_choice("demo stage", stage, STAGES))
    summary: list[tuple[str, str]] = []
    for stage in chosen:
        module = importlib.import_module(STAGES[stage])
        start = time.perf_counter()
        console.rule(Text(stage, style="bold"))
        lines = module.run_demo(out / stage, console)
        took = time.perf_counter() - start
        summary += [(stage, line) for line in lines] + [(stage, f"stage took {took:.0f} s")]
    return summary, write_index(out, summary)
