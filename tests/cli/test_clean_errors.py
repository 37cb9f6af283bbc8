"""Every command of ``shortcutlab``, whatever it does, turns a library error raised in its body
into one ``Error:`` line on stderr and exit code 2 (no traceback)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from shortcutlab.cli.errors import clean_errors, describe_os_error
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


def test_a_failed_rename_names_the_users_path_not_the_temporary(tmp_path: Path) -> None:
    """An atomic write renames a temporary onto the path the user gave: when that path is a
    folder, the one-line error names it (the rename's filename2), with the hint (M268)."""
    temporary, target = tmp_path / ".out.json.tmp", tmp_path / "out.json"
    temporary.write_text("{}")
    target.mkdir()
    (target / "x").write_text("x")  # a non-empty folder: the rename fails on any platform
    with pytest.raises(OSError) as caught:
        os.replace(temporary, target)
    line = describe_os_error(caught.value)
    assert line.startswith(f"{target}: ") and str(temporary) not in line, line


def test_warnings_show_once_per_command_and_the_handler_goes_away(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Each block shows the library's warnings as one ``Warning:`` line, and leaves the
    library logger's handlers as it found them: in-process commands (a notebook, CliRunner)
    do not print a warning once more per earlier command (M269)."""
    library = logging.getLogger("shortcutlab")
    before = list(library.handlers)
    for _ in range(3):
        with clean_errors():
            logging.getLogger("shortcutlab.somewhere").warning("a job folder skipped")
        assert capsys.readouterr().err == "Warning: a job folder skipped\n"
    assert library.handlers == before


def test_an_undecodable_input_in_any_command_is_one_line_and_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The safety net: a UnicodeDecodeError no loader turned into a named error is still one
    line and exit 2, not a traceback and exit 1 (M270)."""
    root = typer.main.get_command(app)
    command = _leaves(root)[("factors", "evaluate")]

    def fail(**_: Any) -> None:
        b"\xff".decode("utf-8")

    command.callback = fail
    for param in command.params:
        param.required = False
    with pytest.raises(SystemExit) as exit_:
        root.main(args=["factors", "evaluate"], prog_name="shortcutlab")
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "Error: an input file is not UTF-8 text (invalid start byte at byte 0); save it as UTF-8"]


def test_a_missing_option_keeps_clicks_usage_and_a_bad_value_is_one_line() -> None:
    """A missing required option shows how to call the command; a bad value is one line."""
    from typer.testing import CliRunner

    runner = CliRunner()
    missing = runner.invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO"])
    assert missing.exit_code == 2
    assert missing.stderr.startswith("Usage: shortcutlab diagvib run [OPTIONS]")
    assert "Missing option '--out'" in missing.stderr
    bad = runner.invoke(app, ["diagvib", "run", "--model", "small_cnn", "--workers", "0",
                              "--out", "x"])
    assert bad.exit_code == 2 and "Usage" not in bad.stderr
    assert bad.stderr.splitlines() == [
        "Error: Invalid value for '--workers': Input should be greater than or equal to 1"]
