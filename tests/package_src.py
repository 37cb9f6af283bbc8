"""The folder that holds the package under test, for a subprocess's ``PYTHONPATH``.

Not the checkout's ``src`` folder by its path: benchmarks/mutation_check.py puts a mutated
copy of the sources first on ``PYTHONPATH``, and a test's subprocess must run that copy too, or
the mutation goes unseen."""

from pathlib import Path

import shortcutlab

PACKAGE_SRC = Path(shortcutlab.__file__).resolve().parents[1]
