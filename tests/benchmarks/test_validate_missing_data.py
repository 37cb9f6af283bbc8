"""benchmarks/validate_*.py without their reference data: one convention for all, an error (the
check did not run, so it must not read as passed): one ``error:`` line on stderr that says which
data is needed and where to get it, pointing to no development path (``../shared/...``), and
exit status 2 (bad input, as the CLI's; 1 stays "the numbers disagree")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# script, its data option, a word naming where the data come from
CASES = {
    "validate_imagenetx.py": ("--data", "facebookresearch/imagenetx"),
    "validate_vqa_accuracy.py": ("--zip", "PhoebusSi/VQA-VS"),
    "validate_vqa_analysis.py": ("--zip", "PhoebusSi/VQA-VS"),
}


@pytest.mark.parametrize("script", list(CASES))
def test_missing_reference_data_says_what_and_where(script: str, tmp_path: Path) -> None:
    option, source = CASES[script]
    missing = tmp_path / "missing"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), option,
                          str(missing)], capture_output=True, text=True, timeout=120)
    said = " ".join((res.stdout + res.stderr).split())
    assert str(missing) in said and source in said, said
    assert "shared/" not in said, said
    assert "Traceback" not in said
    assert res.returncode == 2, (res.returncode, said)
    assert res.stdout == "" and res.stderr.startswith("error: "), (res.stdout, res.stderr)
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
