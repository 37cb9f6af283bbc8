"""``make demo TORCH_INDEX=...`` installs torch and torchvision from that index first (CPU-only
users, issue 34); without it the install is the default one, unchanged."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU = "https://download.pytorch.org/whl/cpu"


def _dry_run(tmp_path: Path, *args: str) -> list[str]:
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)  # a fresh folder: no .venv, the rule runs
    res = subprocess.run(["make", "-n", "demo", *args], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=True)
    return [line for line in res.stdout.splitlines() if "pip install" in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_torch_index_only_when_asked(tmp_path: Path) -> None:
    default = _dry_run(tmp_path)
    assert len(default) == 1 and "--index-url" not in default[0] and "-e '.[dev]'" in default[0]
    cpu = _dry_run(tmp_path, f"TORCH_INDEX={CPU}")
    assert len(cpu) == 2 and cpu[1] == default[0]
    assert f"--index-url {CPU} torch torchvision" in cpu[0] and "-c constraints.txt" in cpu[0]
