"""BiasBed statistics: model selection over epochs and rigorous multi-run comparison.

Friedman (tie-corrected) and Iman-Davenport omnibus tests, Nemenyi post-hoc p-values, the
critical difference and its diagram, and the selection rules (best-epoch oracle, last-n average,
best validation) whose effect BiasBed's Table 1 shows.

Public names load on first use (scipy and matplotlib are seconds to import), so that importing a
light submodule such as :mod:`.columns` (the long table's column names, read by the command
line's help) costs nothing.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from shortcutlab.utils.lazy import lazy_exports

if TYPE_CHECKING:
    from shortcutlab.stats.compare import ComparisonResult, compare, strict_blocks
    from shortcutlab.stats.friedman import DF_CONVENTIONS, FriedmanResult, friedman_test
    from shortcutlab.stats.posthoc import (
        NEMENYI_METHODS,
        cd_cliques,
        cd_diagram,
        critical_difference,
        mean_ranks,
        nemenyi_p_values,
    )
    from shortcutlab.stats.selection import RULES, compare_rules, runs_for_comparison, select
    from shortcutlab.stats.tables import ScoreTable, load_table, parse_table

# ``compare`` is handled apart: the function has its module's name (see _Package)
_EXPORTS: dict[str, str] = {
    "ComparisonResult": "compare", "strict_blocks": "compare",
    "DF_CONVENTIONS": "friedman", "FriedmanResult": "friedman", "friedman_test": "friedman",
    "NEMENYI_METHODS": "posthoc", "cd_cliques": "posthoc", "cd_diagram": "posthoc",
    "critical_difference": "posthoc", "mean_ranks": "posthoc", "nemenyi_p_values": "posthoc",
    "RULES": "selection", "compare_rules": "selection", "runs_for_comparison": "selection",
    "select": "selection",
    "ScoreTable": "tables", "load_table": "tables", "parse_table": "tables",
}

__all__ = [
    "DF_CONVENTIONS",
    "NEMENYI_METHODS",
    "RULES",
    "ComparisonResult",
    "FriedmanResult",
    "ScoreTable",
    "cd_cliques",
    "cd_diagram",
    "compare",
    "compare_rules",
    "critical_difference",
    "friedman_test",
    "load_table",
    "mean_ranks",
    "nemenyi_p_values",
    "parse_table",
    "runs_for_comparison",
    "select",
    "strict_blocks",
]
_lazy_getattr, _lazy_dir = lazy_exports(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    if name == "compare":  # importing the module binds the package attribute to the function
        importlib.import_module(f"{__name__}.compare")
        return globals()["compare"]
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted({*_lazy_dir(), "compare"})


class _Package(types.ModuleType):
    """The package, whose ``compare`` stays the function: importing the submodule of that name
    (``import shortcutlab.stats.compare``) binds the package attribute to the module, which the
    eager package of old covered by importing the function after it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "compare" and isinstance(value, types.ModuleType):
            value = value.compare
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
