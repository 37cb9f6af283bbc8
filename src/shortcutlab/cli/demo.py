"""``shortcutlab demo``: the main job on embedded defaults (what ``make demo`` runs).

Each stage is a module with ``run_demo(out_dir, console) -> list[str]`` returning lines that say
what was written where. At the end ``<out>/index.html`` links every report the stages wrote.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from pathlib import Path

import typer
from rich.console import Console

STAGES: dict[str, str] = {
    "diagvib": "shortcutlab.diagvib.demo",      # the generator: traversal figure, sample images
    "benchmark": "shortcutlab.runner.demo",     # reduced DiagViB-6 benchmark + report
    "vqa": "shortcutlab.vqa.demo",              # VQA-VS splits on easy-VQA, baselines
    "imagenetx": "shortcutlab.imagenetx.demo",  # original labels vs ReaL
}


def write_index(out: Path, summary: list[tuple[str, str]]) -> Path:
    """A page linking each HTML report and picture the stages wrote, with every summary line."""
    from shortcutlab.report.html import HtmlReport

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


def demo(
    out: Path = typer.Option(Path("demo-output"), help="Folder for everything the demo writes."),
    only: list[str] = typer.Option(
        None, help=f"Run only these stages (choices: {', '.join(STAGES)})."
    ),
) -> None:
    """Run the demo: generator pictures, a reduced DiagViB-6 benchmark with its report, VQA-VS
    on easy-VQA, and ImageNet-X on the original labels."""
    from shortcutlab.errors import ShortcutlabError, unknown_choice

    console = Console()
    chosen = list(only) if only else list(STAGES)
    for stage in chosen:
        if stage not in STAGES:
            raise ShortcutlabError(unknown_choice("demo stage", stage, STAGES))
    summary: list[tuple[str, str]] = []
    for stage in chosen:
        module = importlib.import_module(STAGES[stage])
        start = time.perf_counter()
        console.rule(f"[bold]{stage}")
        lines = module.run_demo(out / stage, console)
        took = time.perf_counter() - start
        summary += [(stage, line) for line in lines] + [(stage, f"stage took {took:.0f} s")]
    index = write_index(out, summary)
    console.rule("[bold]demo finished")
    for stage, line in summary:
        console.print(f"[{stage}] {line}", markup=False, highlight=False)
    console.print(f"Open {index} in a browser: it links every report.", markup=False)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
