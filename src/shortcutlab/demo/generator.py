"""Demo stage ``diagvib``: pictures of the DiagViB-6 generator."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from shortcutlab.diagvib.gallery import render_gallery


def run_demo(out_dir: Path, console: Console) -> list[str]:
    """The figure-2 traversal, 64 random training images and their grid."""
    console.print("rendering the DiagViB-6 traversal and sample images ...")
    lines = render_gallery(out_dir)
    for line in lines:
        console.print(line)
    return lines
