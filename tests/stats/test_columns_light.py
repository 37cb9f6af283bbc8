"""The long table's column names live in ``shortcutlab.stats.columns``, which imports nothing
heavy: ``shortcutlab stats --help`` derives its text from them without loading pandas, scipy or
matplotlib (importing the whole statistics package cost ~2.5 s at the command line's start).
The package's public names still load on first use, ``compare`` the function, not the module."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "pandas", "scipy", "matplotlib")


def _run(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def _loaded_after(statement: str) -> str:
    return _run(f"import sys\n{statement}\n"
                f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")


def test_columns_module_imports_nothing_heavy() -> None:
    assert _loaded_after("import shortcutlab.stats.columns") == "[]"


def test_stats_command_module_loads_no_statistics() -> None:
    loaded = _loaded_after("import shortcutlab.cli.stats")
    assert "scipy" not in loaded and "matplotlib" not in loaded, loaded


def test_public_names_stay_the_functions() -> None:
    out = _run("import inspect\n"
               "import shortcutlab.stats.compare, shortcutlab.stats.selection\n"
               "import shortcutlab.stats as stats\n"
               "from shortcutlab.stats import compare, parse_table, select\n"
               "print(inspect.isfunction(compare), compare is stats.compare,\n"
               "      inspect.isfunction(parse_table), inspect.isfunction(select),\n"
               "      sorted(set(stats.__all__) - set(dir(stats))),\n"
               "      all(getattr(stats, name) is not None for name in stats.__all__))")
    assert out == "True True True True [] True"
