"""A rich progress bar with ETA, quiet when output is not a terminal unless forced."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_bar(disable: bool = False) -> Progress:
    """A Progress with description, bar, n/total, elapsed time and ETA; use as a context manager."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        disable=disable,
        transient=False,
    )
