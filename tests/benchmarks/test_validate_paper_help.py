"""benchmarks/validate_diagvib_paper.py --help shows a user no development path: ``--textures``
is optional and falls back to the built-in textures, said without naming ``../shared``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "validate_diagvib_paper.py"


def test_help_names_no_development_path(capsys) -> None:
    spec = importlib.util.spec_from_file_location("validate_diagvib_paper_help", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as stop:
        module.parse(["--help"])
    assert stop.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "shared" not in shown
    assert "--textures" in shown and "optional" in shown and "built-in textures" in shown
