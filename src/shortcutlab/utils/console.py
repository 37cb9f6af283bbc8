"""The one kind of rich console the toolkit prints with: user-given text (paths, block, model
and factor names, table cells) is shown as typed. Rich markup (``[/x]``) and emoji codes
(``:name:``) are never interpreted, so a name cannot crash a command or change its output;
styled words are built with :func:`styled`, not with markup."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text


class PlainConsole(Console):
    """A :class:`rich.console.Console` with markup and emoji codes off by default."""

    def __init__(self, *args: Any, markup: bool = False, emoji: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, markup=markup, emoji=emoji, **kwargs)


def styled(word: str, style: str, rest: str = "") -> Text:
    """``word`` in ``style`` followed by ``rest`` in plain text (neither parsed as markup)."""
    return Text.assemble((word, style), rest)
