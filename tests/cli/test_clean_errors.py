"""Every command of ``shortcutlab``, whatever it does, turns a library error raised in its body
into one ``Error:`` line on stderr and exit code 2 (no traceback)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from shortcutlab.cli.main import app
from shortcutlab.errors import ShortcutlabError


def _leaves(cmd: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(cmd, TyperGroup):
        found: dict[tuple[str, ...], Any] = {}
        for name, sub in cmd.commands.items():
            found.update(_leaves(sub, (*path, name)))
        return found
    return {path: cmd}


PATHS = sorted(_leaves(typer.main.get_command(app)))


def test_every_group_is_walked() -> None:
    groups = {p[0] for p in PATHS if len(p) > 1}
    assert groups == {"diagvib", "stats", "biasbed", "vqa", "imagenetx", "factors"}, groups
    assert len(PATHS) >= 20, PATHS


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_a_library_error_in_any_command_is_one_line_and_exit_2(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    root = typer.main.get_command(app)  # a fresh click tree: its commands may be changed
    command = _leaves(root)[path]

    def fail(**_: Any) -> None:
        raise ShortcutlabError(f"broken input of {' '.join(path)}")

    command.callback = fail
    for param in command.params:  # the callback is reached without any argument
        param.required = False
    with pytest.raises(SystemExit) as exit_:
        root.main(args=list(path), prog_name="shortcutlab")
    out, err = capsys.readouterr()
    assert exit_.value.code == 2, (out, err)
    assert out == ""
    assert err.splitlines() == [f"Error: broken input of {' '.join(path)}"]
