"""benchmarks/validate_diagvib_paper.py --help shows a user no development path: ``--textures``
is optional and falls back to the built-in textures, said without naming ``../shared``."""

from __future__ import annotations

import pytest

from tests.benchmarks.scripts import load_script


def test_help_names_no_development_path(capsys) -> None:
    module = load_script("validate_diagvib_paper")
    with pytest.raises(SystemExit) as stop:
        module.parse(["--help"])
    assert stop.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "shared" not in shown
    assert "--textures" in shown and "optional" in shown and "built-in textures" in shown
