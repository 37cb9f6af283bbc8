"""benchmarks/mutation_check.py plants its mutations by exact text: a refactor that rewrites a
line leaves the table stale, and the check then stops at that mutation. Each old text must be
found exactly once, and each named test file must exist (checked here, without running them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("mutation_check_table",
                                              ROOT / "benchmarks" / "mutation_check.py")
assert spec is not None and spec.loader is not None
mutation_check = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mutation_check  # its dataclass looks its module up
spec.loader.exec_module(mutation_check)


@pytest.mark.parametrize("mutation", mutation_check.MUTATIONS, ids=lambda m: m.id)
def test_each_mutation_still_finds_its_text_and_tests(mutation) -> None:
    source = (mutation_check.PKG / mutation.file).read_text(encoding="utf-8")
    assert source.count(mutation.old) == 1, f"{mutation.id}: {mutation.old!r} in {mutation.file}"
    assert mutation.old != mutation.new
    for test in mutation.tests:
        assert (ROOT / test.split("::")[0]).is_file(), test
