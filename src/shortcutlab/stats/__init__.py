"""BiasBed statistics: model selection over epochs and rigorous multi-run comparison.

Friedman (tie-corrected) and Iman-Davenport omnibus tests, Nemenyi post-hoc p-values, the
critical difference and its diagram, and the selection rules (best-epoch oracle, last-n average,
best validation) whose effect BiasBed's Table 1 shows.
"""

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
