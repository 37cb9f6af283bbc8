import numpy as np
import pandas as pd
import pytest

from shortcutlab.errors import StatsError
from shortcutlab.stats.tables import load_table, parse_table


def write(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_wide_csv(tmp_path):
    t = load_table(write(tmp_path, "dataset,A,B,C\nd1,1,2,3\nd2, 4 ,5,6\n"))
    assert t.blocks == ["d1", "d2"] and t.algorithms == ["A", "B", "C"]
    assert t.means.loc["d2", "A"] == 4.0 and t.std is None


def test_long_table_aggregates_runs():
    rows = [
        ("x", "A", 0, 1.0), ("x", "A", 1, 3.0), ("x", "B", 0, 2.0), ("x", "B", 1, 2.0),
        ("y", "A", 0, 5.0), ("y", "A", 1, 7.0), ("y", "B", 0, 1.0), ("y", "B", 1, 1.5),
    ]  # fmt: skip
    df = pd.DataFrame(rows, columns=["Dataset", "Algorithm", "Seed", "Score"])  # names: any case
    t = parse_table(df)
    assert t.means.loc["x", "A"] == 2.0 and t.means.loc["y", "B"] == 1.25
    assert t.std.loc["x", "A"] == pytest.approx(np.std([1.0, 3.0], ddof=1))
    assert t.n_runs.to_numpy().tolist() == [[2, 2], [2, 2]]


def test_parquet_roundtrip(tmp_path):
    df = pd.DataFrame({"block": ["a", "b"], "m1": [1.0, 2.0], "m2": [0.5, 3.0]})
    df.to_parquet(tmp_path / "t.parquet")
    assert load_table(tmp_path / "t.parquet").means.shape == (2, 2)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("dataset,A,B\nd1,1,2\nd2,3,4,5\n", r"ragged table .*header has 3 .* line 3 has 4"),
        ("dataset,A,B\nd1,1,2\nd2,3\n", r"ragged table .*line 3 has 2"),
        ("dataset,A,B\nd1,1,2\nd2,3,\n", r"NaN.*column 'B'.*d2"),
        ("dataset,A,B\nd1,1,2\nd2,3,oops\n", r"non-numeric.*'B'.*d2='oops'"),
        # an infinite score would be the best mean and rank first in every block it is in
        ("dataset,A,B\nd1,1,inf\nd2,3,4\n", r"inf value.*column 'B'.*d1"),
        ("block,algorithm,run,score\nx,A,0,1\nx,B,0,-inf\ny,A,0,1\ny,B,0,2\n",
         r"inf value.*line 3 \(x, B\)"),
        # an unnamed algorithm column would compete as an algorithm called 'nan'
        ("dataset,,B\nd1,1,2\nd2,3,4\n", r"column\(s\) 2 have an empty header"),
        ("dataset,A,\nd1,1,2\nd2,3,4\n", r"column\(s\) 3 have an empty header"),
        ("dataset,A\nd1,1\nd2,3\n", "block-name column and ≥2 algorithm"),
        ("dataset,A,B\nd1,1,2\n", "at least 2 blocks.*d1"),
        ("dataset,A,B\nd1,1,2\nd1,3,4\n", "duplicated block name.*d1"),
        ("dataset,algorithm,test_acc\nd1,A,0.8\nd1,B,0.7\nd2,A,0.6\nd2,B,0.5\n",
         r"'algorithm' makes this a long table, but it has no score column.*test_acc to acc"),
        ("dataset,A,A\nd1,1,2\nd2,3,4\n", "duplicated column name.*A"),
        ("algorithm,d1,d2\nA,1,2\nB,3,4\n", "transpose"),
        (
            "block,algorithm,run,score\nx,A,0,1\nx,A,0,2\nx,B,0,1\ny,A,0,1\ny,B,0,1\n",
            r"duplicated run.*line 2 \(x, A\) run 0",
        ),
        ("block,algorithm,score\nx,A,1\nx,A,2\nx,B,1\ny,A,1\ny,B,1\n", "add a run column"),
        ("block,algorithm,run,score\nx,A,0,1\nx,B,0,1\ny,A,0,1\n", r"ragged.*y/B"),
        ("block,algorithm,run,score,notes\nx,A,0,1,hi\n", r"unknown column.*'notes'.*valid"),
        ("block,algorithm,run,score\nx,A,0,1\nx,B,0,\ny,A,0,1\ny,B,0,2\n", r"NaN.*line 3"),
        ("block,algorithm,run,score\nx,A,0,1\ny,A,0,2\n", "at least 2 algorithms.*A"),
        ("", "empty"),
    ],
)
def test_bad_tables_name_what_is_wrong(tmp_path, text, match):
    with pytest.raises(StatsError, match=match):
        load_table(write(tmp_path, text))


def test_in_memory_tables_are_checked_too():
    df = pd.DataFrame([["x", 1.0, 2.0], ["y", 3.0, 4.0]], columns=["block", "A", "A"])
    with pytest.raises(StatsError, match="duplicated column name.*A"):
        parse_table(df)
    df = pd.DataFrame({"block": ["x", "y"], "A": [1.0, np.nan], "B": [2.0, 3.0]})
    with pytest.raises(StatsError, match=r"NaN.*column 'A'.*y"):
        parse_table(df)


def test_bad_paths(tmp_path):
    with pytest.raises(StatsError, match=r"unknown table format '.xlsx'; valid choices: .csv"):
        load_table(tmp_path / "t.xlsx")
    with pytest.raises(StatsError, match="not found"):
        load_table(tmp_path / "missing.csv")


def test_the_same_runs_in_another_order_tie():
    # 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in the last bit when summed in order: identical
    # runs listed in another order must still tie (average rank), not rank 1 and 2.
    rows = [("x", "A", r, v) for r, v in enumerate([0.1, 0.2, 0.3])]
    rows += [("x", "B", r, v) for r, v in enumerate([0.3, 0.2, 0.1])]
    rows += [("y", a, r, v) for a in "AB" for r, v in enumerate([0.5, 0.7, 0.9])]
    t = parse_table(pd.DataFrame(rows, columns=["block", "algorithm", "run", "score"]))
    assert t.means.loc["x", "A"] == t.means.loc["x", "B"]


def test_long_table_block_and_algorithm_names_are_stripped(tmp_path):
    # "x " and "x" (a trailing blank in a hand-edited CSV) are one block, not two ragged ones
    t = load_table(write(tmp_path, "block,algorithm,run,score\nx ,A,0,1\nx,B ,0,2\n"
                                   "y,A,0,3\n y,B,0,4\n"))
    assert t.blocks == ["x", "y"] and t.algorithms == ["A", "B"]
    assert t.means.to_numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
