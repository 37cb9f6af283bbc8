"""``shortcutlab demo``: the main job on embedded defaults (what ``make demo`` runs)."""

from __future__ import annotations

from pathlib import Path

import typer

from shortcutlab.demo import STAGES


def demo(
    out: Path = typer.Option(Path("demo-output"), help="Folder for everything the demo writes."),
    only: list[str] = typer.Option(
        None, help=f"Run only these stages (choices: {', '.join(STAGES)})."
    ),
) -> None:
    """Run the demo: generator pictures, a reduced DiagViB-6 benchmark with its report, VQA-VS
    on easy-VQA, and ImageNet-X on the original labels."""
    from shortcutlab.demo import run_demo
    from shortcutlab.utils.console import PlainConsole, styled

    console = PlainConsole()
    summary, index = run_demo(out, console, only)
    console.rule(styled("demo finished", "bold"))
    for stage, line in summary:
        console.print(f"[{stage}] {line}", highlight=False)
    console.print(f"Open {index} in a browser: it links every report.")


def register(app: typer.Typer) -> None:
    app.command(
        "demo", short_help="Run the demo: DiagViB-6, VQA-VS and ImageNet-X on small data."
    )(demo)
