"""`--help` reads in full at 80 columns (issue 23): every group lists each command with its
complete one-line summary (click cuts a derived one at a sentence end or with "..."), and no
option name or help is cut."""

from __future__ import annotations

import re
from pathlib import Path
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


ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _documented_commands() -> dict[tuple[str, ...], str]:
    """Every ``shortcutlab <word> [<word>]`` written in code (fenced or inline) in the README and
    docs/*.md, with the first file that writes it."""
    found: dict[tuple[str, ...], str] = {}
    for doc in USER_DOCS:
        text = doc.read_text(encoding="utf-8")
        blocks = re.findall(r"```.*?```", text, flags=re.S)
        spans = re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", text, flags=re.S))
        for code in (*blocks, *spans):
            for m in re.finditer(r"(?<![\w/.-])shortcutlab((?: [a-z][a-z0-9_-]*){1,2})", code):
                found.setdefault(tuple(m.group(1).split()), doc.name)
    return found


def test_every_documented_command_exists_and_every_group_is_documented() -> None:
    """The command tree is checked against what the README and docs tell users to type (not
    against a list kept in this test): a command renamed or dropped while the docs still use it,
    or a group nobody documents, fails."""
    documented = _documented_commands()
    top = ALL[()].commands
    assert len(documented) >= 10, documented  # the scan finds the docs' commands at all
    for path, doc in sorted(documented.items()):
        assert path[0] in top, f"{doc}: `shortcutlab {path[0]}` is no command; have {sorted(top)}"
        if (path[0],) in GROUPS and len(path) > 1:
            sub = ALL[(path[0],)].commands
            assert path[1] in sub, (
                f"{doc}: `shortcutlab {' '.join(path)}` is no command; have {sorted(sub)}")
    undocumented = {p[0] for p in GROUPS if p} - {p[0] for p in documented}
    assert not undocumented, f"groups no doc shows: {sorted(undocumented)}"
    top_help = _help(()).split("Commands:\n", 1)[1].split()
    assert all(p[0] in top_help for p in GROUPS if p)


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
