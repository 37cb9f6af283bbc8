"""The column names a long score table may use, one tuple per role (first match wins).

Imports nothing: the command line's help text is derived from these names, and importing this
module must not load pandas, scipy or matplotlib (``tests/stats/test_columns_light.py``).
:mod:`shortcutlab.stats.tables` reads tables with them.
"""

from __future__ import annotations

BLOCK_COLUMNS = ("block", "dataset", "test_set")
ALGORITHM_COLUMNS = ("algorithm", "model", "method")
RUN_COLUMNS = ("run", "seed", "job_id")
SCORE_COLUMNS = ("score", "acc", "accuracy", "value")
#: every role in the order a long table is described: block, algorithm, run, score
LONG_TABLE_COLUMNS = (BLOCK_COLUMNS, ALGORITHM_COLUMNS, RUN_COLUMNS, SCORE_COLUMNS)

__all__ = ["ALGORITHM_COLUMNS", "BLOCK_COLUMNS", "LONG_TABLE_COLUMNS", "RUN_COLUMNS",
           "SCORE_COLUMNS"]
