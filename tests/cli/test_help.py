"""`--help` reads in full at 80 columns (issue 23): every group lists each command with its
complete one-line summary (click cuts a derived one at a sentence end or with "..."), and no
option name or help is cut."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from shortcutlab.cli.main import app

runner = CliRunner()


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    found = {path: cmd}
    if isinstance(cmd, TyperGroup):
        for name, sub in cmd.commands.items():
            found.update(_walk(sub, (*path, name)))
    return found


ALL = _walk(typer.main.get_command(app))
GROUPS = sorted(p for p, c in ALL.items() if isinstance(c, TyperGroup))


def _help(path: tuple[str, ...]) -> str:
    res = runner.invoke(app, [*path, "--help"], terminal_width=80, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return res.output


def test_all_groups_walked() -> None:
    assert GROUPS == [(), ("biasbed",), ("diagvib",), ("factors",), ("imagenetx",), ("stats",),
                      ("vqa",)]


@pytest.mark.parametrize("path", GROUPS, ids=lambda p: " ".join(("shortcutlab", *p)))
def test_every_command_is_listed_with_its_whole_summary_on_one_line(
    path: tuple[str, ...]
) -> None:
    group = ALL[path]
    lines = _help(path).split("Commands:\n", 1)[1].splitlines()
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines if line.strip()}
    assert set(listed) == set(group.commands), listed  # one line per command, no wrapped rest
    for name, command in group.commands.items():
        summary = command.short_help
        assert summary, f"{name}: no explicit one-line summary (click would cut the docstring)"
        assert summary.endswith(".") and not summary.endswith("..."), summary
        assert listed[name] == summary, (name, listed[name])


@pytest.mark.parametrize("path", sorted(ALL), ids=lambda p: " ".join(("shortcutlab", *p)))
def test_no_option_is_cut(path: tuple[str, ...]) -> None:
    text = _help(path)
    assert "…" not in text, text
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    words = text.split()
    for param in ALL[path].params:
        if getattr(param, "hidden", False):  # e.g. --protocol, the former name of --preset
            continue
        for flag in getattr(param, "opts", []):
            if flag.startswith("-"):
                assert flag in words or f"{flag}," in words or any(
                    w.startswith(f"{flag}/") for w in words), (flag, text)
