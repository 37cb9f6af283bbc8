"""A rich progress bar with ETA, always on stderr so stdout keeps the results (and ``--json``
stays pure JSON); quiet when stderr is not a terminal."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from shortcutlab.utils.console import PlainConsole


def progress_bar(disable: bool = False) -> Progress:
    """A Progress with description, bar, n/total, elapsed time and ETA, drawn on stderr; use as a
    context manager."""
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=PlainConsole(stderr=True),
        disable=disable,
        transient=False,
    )
