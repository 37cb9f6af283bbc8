"""One place that turns a :class:`~shortcutlab.errors.ShortcutlabError` into a clean exit.

The library's errors are plain exceptions; :func:`wrap_commands` applies :func:`clean_errors`
to every command of an app and its sub-groups, so a user's mistake prints one line and exits
with :data:`EXIT_BAD_INPUT`, and command modules need nothing of their own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from shortcutlab.errors import ShortcutlabError

F = TypeVar("F", bound=Callable[..., Any])
EXIT_BAD_INPUT = 2


def clean_errors(func: F) -> F:
    """Print ``Error: <message>`` on stderr and exit with the error's code (no traceback)."""
    if getattr(func, "_clean_errors", False):
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ShortcutlabError as exc:
            typer.echo(f"Error: {exc}", err=True)
            raise typer.Exit(code=EXIT_BAD_INPUT) from None

    wrapper._clean_errors = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def wrap_commands(app: typer.Typer) -> None:
    """Apply :func:`clean_errors` to every registered command of ``app``, recursively."""
    for command in app.registered_commands:
        if command.callback is not None:
            command.callback = clean_errors(command.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            wrap_commands(group.typer_instance)
