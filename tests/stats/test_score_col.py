"""``stats compare --score-col`` (issue 34): a DomainBed-style table whose score column is
``test_acc`` is compared as it is, not renamed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import StatsError
from shortcutlab.stats import compare, parse_table

runner = CliRunner()


def _domainbed(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"dataset": f"d{b}", "algorithm": a, "seed": s, "val_acc": rng.random(),
             "test_acc": 0.5 + 0.1 * k + 0.01 * rng.random()}
            for b in range(5) for k, a in enumerate(("ERM", "IRM", "SagNet")) for s in range(3)]
    return pd.DataFrame(rows)


def test_score_col_reads_the_named_column() -> None:
    table = _domainbed()
    parsed = parse_table(table, score_col="test_acc")
    expected = table.groupby(["dataset", "algorithm"])["test_acc"].mean()
    assert parsed.means.loc["d2", "IRM"] == pytest.approx(expected[("d2", "IRM")])
    assert parsed.n_runs is not None and int(parsed.n_runs.loc["d0", "ERM"]) == 3
    assert list(compare(parsed).ranks.sort_values().index) == ["SagNet", "IRM", "ERM"]
    with pytest.raises(StatsError, match="--score-col test_acc"):
        parse_table(table.drop(columns=["val_acc"]))  # without it: what to do, in one line


def test_score_col_errors_name_the_choices() -> None:
    table = _domainbed()
    with pytest.raises(StatsError, match=r"unknown score column 'acc'; valid choices: dataset"):
        parse_table(table, score_col="acc")
    wide = pd.DataFrame({"block": ["a", "b"], "x": [1.0, 2.0], "y": [2.0, 1.0]})
    with pytest.raises(StatsError, match="no algorithm column"):
        parse_table(wide, score_col="x")


def test_cli_score_col(tmp_path: Path) -> None:
    path = tmp_path / "domainbed.csv"
    _domainbed().to_csv(path, index=False)
    res = runner.invoke(app, ["stats", "compare", str(path), "--score-col", "test_acc",
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["algorithms"] == ["ERM", "IRM", "SagNet"] and out["ranks"]["SagNet"] == 1.0
    bad = runner.invoke(app, ["stats", "compare", str(path), "--score-col", "nope"])
    assert bad.exit_code == 2 and "unknown score column 'nope'" in bad.output


def test_compare_help_lists_every_long_table_column_name_the_reader_accepts() -> None:
    from shortcutlab.stats.tables import (
        ALGORITHM_COLUMNS,
        BLOCK_COLUMNS,
        RUN_COLUMNS,
        SCORE_COLUMNS,
    )

    res = runner.invoke(app, ["stats", "compare", "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    text = "".join(res.output.split())
    accepted = ",".join("|".join(names) for names in (BLOCK_COLUMNS, ALGORITHM_COLUMNS,
                                                       RUN_COLUMNS, SCORE_COLUMNS))
    assert f"long({accepted})" in text, f"`stats compare --help` does not list ({accepted})"
