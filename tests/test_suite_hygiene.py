"""The suite's own rules: caches go to the suite's temporary folder, never to ``~/.cache``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from shortcutlab.diagvib import sources


def test_the_source_cache_lives_in_the_suites_temporary_folder() -> None:
    where = sources.cache_dir()
    assert where is not None
    assert Path(tempfile.gettempdir()).resolve() in where.resolve().parents
    assert Path.home() / ".cache" not in where.parents
