"""``shortcutlab demo``: the main job on embedded defaults (what ``make demo`` runs).

Each area contributes a stage ``shortcutlab.<area>.demo.run_demo(out_dir, console) -> list[str]``
returning lines that say what was written where.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import typer
from rich.console import Console

STAGES = ("diagvib", "vqa", "imagenetx")


def demo(
    out: Path = typer.Option(Path("demo-output"), help="Folder for everything the demo writes."),
    only: list[str] = typer.Option(
        None, help=f"Run only these stages (choices: {', '.join(STAGES)})."
    ),
) -> None:
    """Run the demo: DiagViB-6 reduced benchmark and report, VQA-VS on easy-VQA, ImageNet-X."""
    from shortcutlab.errors import ShortcutlabError, unknown_choice

    console = Console()
    chosen = list(only) if only else list(STAGES)
    for stage in chosen:
        if stage not in STAGES:
            raise ShortcutlabError(unknown_choice("demo stage", stage, STAGES))
    summary: list[str] = []
    for stage in chosen:
        try:
            module = importlib.import_module(f"shortcutlab.{stage}.demo")
        except ModuleNotFoundError as exc:
            if exc.name != f"shortcutlab.{stage}.demo":
                raise
            continue
        start = time.perf_counter()
        console.rule(f"[bold]{stage}")
        lines = module.run_demo(out / stage, console)
        summary += [f"[{stage}, {time.perf_counter() - start:.0f} s] {line}" for line in lines]
    console.rule("[bold]demo finished")
    for line in summary:
        console.print(line)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
