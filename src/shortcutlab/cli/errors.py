"""One place that turns a :class:`~shortcutlab.errors.ShortcutlabError` into a clean exit.

typer >= 0.20 vendors its own click, whose handler does not recognise the
``click.ClickException`` that ShortcutlabError derives from; without this a user's mistake
would print a traceback. :func:`wrap_commands` applies :func:`clean_errors` to every command of
an app and its sub-groups, so command modules need nothing of their own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from shortcutlab.errors import ShortcutlabError

F = TypeVar("F", bound=Callable[..., Any])


def clean_errors(func: F) -> F:
    """Print ``Error: <message>`` on stderr and exit with the error's code (no traceback)."""
    if getattr(func, "_clean_errors", False):
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ShortcutlabError as exc:
            typer.echo(f"Error: {exc.message}", err=True)
            raise typer.Exit(code=exc.exit_code) from None

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
