"""Suite-wide settings: a non-interactive plotting backend, and every cache the package or its
libraries would write under the user's home redirected into one temporary folder, removed at
exit (the suite writes nowhere but its temporary folders)."""

import atexit
import os
import shutil
import tempfile

SCRATCH = tempfile.mkdtemp(prefix="shortcutlab-tests-")
atexit.register(shutil.rmtree, SCRATCH, True)

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ["SHORTCUTLAB_CACHE_DIR"] = os.path.join(SCRATCH, "cache")
os.environ["XDG_CACHE_HOME"] = os.path.join(SCRATCH, "xdg-cache")
os.environ["MPLCONFIGDIR"] = os.path.join(SCRATCH, "matplotlib")


import pytest  # noqa: E402  (after the environment above, before anything reads it)


@pytest.fixture
def scratch_registries():
    """Models, algorithms and job kinds registered during the test are forgotten after it (the
    registries' ``scratch()``; the product's registries are never left changed)."""
    from shortcutlab.runner.jobs import JOB_KINDS
    from shortcutlab.train import algorithms, models

    with models.REGISTRY.scratch(), algorithms.REGISTRY.scratch(), JOB_KINDS.scratch():
        yield
