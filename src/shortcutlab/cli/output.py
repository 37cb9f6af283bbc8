"""How every command prints machine-readable results: ``--json`` gives one JSON object on
stdout, keys sorted, indented by 2, strict JSON (NaN/inf as null, numpy scalars as numbers),
accuracies as fractions in [0, 1]."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from shortcutlab.utils.sanitize import json_safe

JSON_HELP = "Print the result as one JSON object on stdout (fractions, not percent)."


def json_option(help: str = JSON_HELP) -> Any:  # "help": typer's own keyword
    """The ``--json`` flag, the same on every command that computes numbers."""
    return typer.Option(False, "--json", help=help)


def to_json(obj: Any) -> str:
    """The one JSON rendering of command results (see the module docstring)."""
    return json.dumps(json_safe(obj), indent=2, sort_keys=True, allow_nan=False)


def print_json(obj: Any) -> None:
    typer.echo(to_json(obj))


def print_json_file(path: Path) -> None:
    """Print a JSON file a command wrote (a report's numbers) as its ``--json`` output."""
    print_json(json.loads(Path(path).read_text(encoding="utf-8")))
