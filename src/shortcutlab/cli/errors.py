"""One place that turns a :class:`~shortcutlab.errors.ShortcutlabError` into a clean exit.

The library's errors are plain exceptions; :func:`wrap_commands` gives every command of an app
and its sub-groups a click class that runs it under :func:`clean_errors`, so a user's mistake
prints one line and exits with :data:`EXIT_BAD_INPUT`, and command modules need nothing of
their own; a bad option value (``--workers 0``) is one line too, not click's usage box.
An ``OSError``
(an output folder that is not writable, ``--out`` naming a directory where a file goes or a file
where a folder goes, a full disk) gets the same treatment: one line naming the path. Warnings
the library logs (logger ``shortcutlab``, e.g. a job folder skipped because a file of it cannot
be read) are printed as ``Warning: <message>`` lines on stderr while a command runs.
"""

from __future__ import annotations

import errno
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperCommand

from shortcutlab.errors import ShortcutlabError

EXIT_BAD_INPUT = 2


_HINTS = {
    errno.EISDIR: "a folder is where a file should go; give a file path",
    errno.ENOTDIR: "a file is where a folder should go; give a folder path",
    errno.EEXIST: "a file is where a folder should go; give a folder path",
    errno.EACCES: "choose a location you may write to",
    errno.EPERM: "choose a location you may write to",
    errno.EROFS: "choose a location you may write to",
    errno.ENOSPC: "free some space or choose another disk",
}


def describe_os_error(exc: OSError) -> str:
    """``<path>: <reason> (<what to do>)`` on one line, for an error of the file system."""
    # a rename's target (filename2) is the path the user gave; the source is our temporary
    where = str(exc.filename2 if exc.filename2 is not None else exc.filename or "")
    reason = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno or 0)
    text = f"{where}: {reason}" if where else reason
    return f"{text} ({hint})" if hint else text


@contextmanager
def clean_errors() -> Iterator[None]:
    """Print ``Error: <message>`` on stderr and exit with :data:`EXIT_BAD_INPUT` (no
    traceback) for a :class:`ShortcutlabError` or an ``OSError`` raised in the block; show the
    library's warnings as ``Warning:`` lines meanwhile."""
    handler = logging.StreamHandler(sys.stderr)  # the stderr of this call
    handler.setFormatter(logging.Formatter("Warning: %(message)s"))
    handler.setLevel(logging.WARNING)
    library = logging.getLogger("shortcutlab")
    library.addHandler(handler)
    try:
        yield
    except ShortcutlabError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(code=EXIT_BAD_INPUT) from None
    except OSError as exc:
        typer.echo(f"Error: {describe_os_error(exc)}", err=True)
        raise typer.Exit(code=EXIT_BAD_INPUT) from None
    except UnicodeDecodeError as exc:  # a safety net: loaders name the file themselves
        typer.echo(f"Error: an input file is not UTF-8 text ({exc.reason} at byte "
                   f"{exc.start}); save it as UTF-8", err=True)
        raise typer.Exit(code=EXIT_BAD_INPUT) from None
    finally:
        library.removeHandler(handler)


class CleanErrorsCommand(TyperCommand):
    """A command whose body runs under :func:`clean_errors`, and whose bad option values
    (out of range, not a number, refused by a callback) are one ``Error:`` line too, not
    click's usage box; a missing option or an unknown one keeps the usage box."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # a click context
        from typer._click.exceptions import MissingParameter  # typer vendors click

        try:
            return super().parse_args(ctx, args)
        except typer.BadParameter as exc:
            if isinstance(exc, MissingParameter):
                raise
            typer.echo(f"Error: {exc.format_message()}", err=True)
            raise typer.Exit(code=EXIT_BAD_INPUT) from None

    def invoke(self, ctx: Any) -> Any:  # a click context (typer vendors click)
        with clean_errors():
            return super().invoke(ctx)


def wrap_commands(app: typer.Typer) -> None:
    """Make every registered command of ``app`` and its sub-groups a
    :class:`CleanErrorsCommand`."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = CleanErrorsCommand
        elif not issubclass(command.cls, CleanErrorsCommand):
            raise TypeError(f"command {command.name!r} has its own class {command.cls!r}")
    for group in app.registered_groups:
        if group.typer_instance is not None:
            wrap_commands(group.typer_instance)
