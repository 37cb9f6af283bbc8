"""Suite-wide settings: a non-interactive plotting backend, and every cache the package or its
libraries would write under the user's home redirected into one temporary folder, removed at
exit (the suite writes nowhere but its temporary folders)."""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

SCRATCH = tempfile.mkdtemp(prefix="shortcutlab-tests-")
atexit.register(shutil.rmtree, SCRATCH, True)

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ["SHORTCUTLAB_CACHE_DIR"] = os.path.join(SCRATCH, "cache")
os.environ["XDG_CACHE_HOME"] = os.path.join(SCRATCH, "xdg-cache")
os.environ["MPLCONFIGDIR"] = os.path.join(SCRATCH, "matplotlib")
# Under pytest-xdist each worker has a core of its own: one OpenMP/torch thread each (two
# workers of two threads on two cores compete), set before any test module imports torch.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# Tests that must not run beside each other under pytest-xdist (`make test` runs 2 workers with
# --dist loadgroup): each starts a local Ray instance (its own raylet, GCS and ports), or kills
# process trees and waits on a clock. They all go to one worker, one after the other. Matched
# here by name, so the test files need no marker; without xdist the mark does nothing.
SERIAL_GROUP = "serial"
_SERIAL_WORDS = {"ray", "killed", "death"}  # in the test's or its file's name


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist tags the groups of `--dist loadgroup`
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        words = set(item.name.split("[", 1)[0].lower().split("_"))
        words |= set(item.path.stem.lower().split("_"))
        if words & _SERIAL_WORDS:
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse to run when ``--dist loadgroup`` would not group (a pytest-xdist worker whose
    grouped tests lack the ``@group`` suffix the scheduler reads: pytest 9.2 with xdist 3.8
    did that silently, and Ray tests then ran side by side)."""
    config = session.config
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    lost = [item.nodeid for item in session.items
            if any(item.iter_markers("xdist_group")) and "@" not in item.nodeid]
    if lost:
        message = (f"pytest-xdist's --dist loadgroup did not tag {len(lost)} grouped test(s) "
                   f"(e.g. {lost[0]}) under pytest {pytest.__version__}: install the pytest of "
                   "constraints.txt")
        print(f"\nERROR: {message}", file=sys.__stderr__, flush=True)  # xdist hides the raise
        raise pytest.UsageError(message)


@pytest.fixture
def scratch_registries():
    """Models, algorithms and job kinds registered during the test are forgotten after it (the
    registries' ``scratch()``; the product's registries are never left changed)."""
    from shortcutlab.runner.jobs import JOB_KINDS
    from shortcutlab.train import algorithms, models

    with models.REGISTRY.scratch(), algorithms.REGISTRY.scratch(), JOB_KINDS.scratch():
        yield


@pytest.fixture
def budget_spent_after_first_round(monkeypatch):
    """Make a time budget of ``run_jobs`` run out right after its first round has started,
    whatever the machine's load: the runner's clock reads 0 s at the run's start and at the
    first round's check, then an hour (a real 0.1 s budget could run out before the first
    round on a loaded machine, and a real job can take less than any larger one)."""
    import time
    import types

    from shortcutlab.runner import runs

    readings = iter([0.0, 0.0])
    clock = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time)
                                     if not name.startswith("_")})
    clock.perf_counter = lambda: next(readings, 3600.0)
    monkeypatch.setattr(runs, "time", clock)
