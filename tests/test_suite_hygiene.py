"""The suite's own rules: caches go to the suite's temporary folder, never to ``~/.cache``;
`make test`'s worker groups hold."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from shortcutlab.diagvib import sources

CONFTEST = Path(__file__).with_name("conftest.py")


def test_the_source_cache_lives_in_the_suites_temporary_folder() -> None:
    where = sources.cache_dir()
    assert where is not None
    assert Path(tempfile.gettempdir()).resolve() in where.resolve().parents
    assert Path.home() / ".cache" not in where.parents


GROUPED = '''
import os
import pytest

@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    _mark(f"one-{i}")

@pytest.mark.parametrize("i", range(6))
def test_ray_start(i):  # grouped by tests/conftest.py's name rule (the `serial` group)
    _mark(f"serial-{i}")

def _mark(name):
    with open(os.path.join(os.environ["GROUP_OUT"], name + ".txt"), "w") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "none"))
'''


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_loadgroup_runs_a_group_on_one_worker(tmp_path: Path) -> None:
    """`make test`'s `--dist loadgroup` keeps an xdist_group on one worker (Ray tests and
    clock-bound tests rely on it; pytest 9.2 with xdist 3.8 silently spread them, and the
    name-rule marks of tests/conftest.py came after xdist's tagging until it ran first)."""
    pytest.importorskip("xdist")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
         "--rootdir", str(tmp_path), "-n", "2", "--dist", "loadgroup", str(tmp_path)],
        env={**os.environ, "GROUP_OUT": str(out)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for group in ("one", "serial"):
        ran = list(out.glob(f"{group}-*.txt"))
        workers = {p.read_text() for p in ran}
        assert len(ran) == 6 and len(workers) == 1 and "none" not in workers, (group, workers)


def test_subprocesses_run_the_package_under_test_not_the_checkouts_src() -> None:
    """A test's subprocess puts ``tests.package_src.PACKAGE_SRC`` on ``PYTHONPATH``, never the
    checkout's ``src`` by its path: benchmarks/mutation_check.py runs the tests against a
    mutated copy first on ``PYTHONPATH``, which such a subprocess would never import (M273
    survived that way)."""
    import re

    import shortcutlab
    from tests.package_src import PACKAGE_SRC

    assert (PACKAGE_SRC / "shortcutlab" / "__init__.py").samefile(shortcutlab.__file__)
    by_path = re.compile(r'(parents\[\d\]|ROOT|REPO)\s*/\s*"src"')
    offenders = [f"{path.name}:{n}" for path in sorted(CONFTEST.parent.rglob("*.py"))
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if by_path.search(line) and "rglob" not in line]
    assert offenders == []
