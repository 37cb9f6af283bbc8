import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from shortcutlab.errors import StatsError
from shortcutlab.stats import compare


def long_runs(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(6):
        for a, shift in (("A", 0.0), ("B", 0.3), ("C", 1.0)):
            for r in range(3):
                rows.append((f"set{b}", a, r, float(b + shift + 0.1 * rng.normal())))
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "seed", "score"])


def test_long_table_means_std_and_ranks():
    runs = long_runs()
    result = compare(runs)
    expected = runs.groupby(["dataset", "algorithm"])["score"].agg(["mean", "std"])
    assert result.means.loc["set2", "B"] == pytest.approx(expected.loc[("set2", "B"), "mean"])
    assert result.std.loc["set2", "B"] == pytest.approx(expected.loc[("set2", "B"), "std"])
    assert result.ranks.to_dict() == {"A": 3.0, "B": 2.0, "C": 1.0}
    assert "±" in result.scores_frame().loc["set0", "A"]


def test_lower_is_better_reverses_ranks_only():
    up = compare(long_runs())
    down = compare(long_runs(), lower_is_better=True)
    assert down.ranks.to_dict() == {"A": 1.0, "B": 2.0, "C": 3.0}
    assert (down.chi2, down.F) == (up.chi2, up.F)
    np.testing.assert_allclose(down.nemenyi.to_numpy(), up.nemenyi.to_numpy())


def test_json_has_the_promised_keys_and_is_strict():
    result = compare(long_runs())
    obj = json.loads(result.to_json())
    for key in ("chi2", "chi2_p_value", "F", "p_value", "critical_difference", "ranks", "nemenyi"):
        assert key in obj
    means = long_runs().groupby(["dataset", "algorithm"])["score"].mean().unstack()
    assert obj["chi2"] == pytest.approx(stats.friedmanchisquare(*means.to_numpy().T).statistic)
    assert obj["chi2_p_value"] == pytest.approx(stats.chi2.sf(obj["chi2"], 2))
    assert obj["critical_difference"] == pytest.approx(
        stats.studentized_range.ppf(0.95, 3, np.inf) / np.sqrt(2) * np.sqrt(3 * 4 / (6 * 6)))
    assert obj["ranks"]["C"] == 1.0
    assert obj["nemenyi"]["A"]["C"] == obj["nemenyi"]["C"]["A"] < 0.05
    assert obj["F"] is None  # every block ranks C > B > A: F is infinite, written as null
    assert obj["p_value"] == 0.0


def test_write_outputs_atomically(tmp_path):
    result = compare(long_runs(1))
    paths = result.write(tmp_path / "out")
    names = sorted(p.name for p in paths)
    assert names == sorted(p.name for p in (tmp_path / "out").iterdir())  # no temp files left
    assert (tmp_path / "out" / "comparison_cd_diagram.png").read_bytes()[:4] == b"\x89PNG"
    scores = pd.read_csv(tmp_path / "out" / "comparison_scores.csv")
    assert set(scores.columns) == {"block", "algorithm", "mean", "std", "n_runs", "rank"}
    tex = (tmp_path / "out" / "comparison.tex").read_text()
    assert "\\begin{tabular}" in tex and "Iman-Davenport" in tex and "$\\pm$" in tex
    nem = pd.read_csv(tmp_path / "out" / "comparison_nemenyi.csv", index_col=0)
    np.testing.assert_allclose(nem.to_numpy(), result.nemenyi.to_numpy())
    # Same inputs, same bytes.
    again = compare(long_runs(1)).write(tmp_path / "again")
    for a, b in zip(paths, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name  # the CD-diagram PNG included


def test_latex_escapes_labels():
    df = pd.DataFrame({"block": ["a_1", "b&2"], "50%": [1.0, 2.0], "x$": [2.0, 1.0]})
    tex = compare(df).to_latex()
    assert "a\\_1" in tex and "b\\&2" in tex and "50\\%" in tex and "x\\$" in tex


def test_latex_keeps_fractions_apart():
    df = pd.DataFrame({"block": ["a", "b"], "A": [0.80, 0.70], "B": [0.82, 0.71],
                       "C": [0.79, 0.69]})
    tex = compare(df).to_latex()
    assert "0.80" in tex and "0.82" in tex and "0.79" in tex
    percent = compare(df.assign(A=[80.3, 70.1], B=[81.2, 71.4], C=[79.0, 69.2])).to_latex()
    assert "81.2" in percent and "81.20" not in percent


def _bold_cells(tex: str, block: str) -> list[bool]:
    """Which cells of ``block``'s row of the LaTeX scores table are bold."""
    (row,) = [line for line in tex.splitlines() if line.startswith(f"{block} & ")]
    return [cell.startswith("\\textbf") for cell in row.split(" & ")[1:]]


def test_latex_bolds_the_best_mean_of_each_block_in_the_direction_asked():
    """Bold marks the best cell of a block: the highest score, or with lower_is_better (error
    rates) the lowest; never the worst."""
    df = pd.DataFrame({"block": ["a", "b"], "A": [0.10, 0.30], "B": [0.20, 0.05],
                       "C": [0.40, 0.20]})
    errors = compare(df, lower_is_better=True).to_latex()
    assert _bold_cells(errors, "a") == [True, False, False]  # 0.10
    assert _bold_cells(errors, "b") == [False, True, False]  # 0.05
    scores = compare(df).to_latex()
    assert _bold_cells(scores, "a") == [False, False, True]  # 0.40
    assert _bold_cells(scores, "b") == [True, False, False]  # 0.30

def test_significant_pairs_order_and_labels():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(30, 4)) + np.array([0.0, 0.0, 2.0, 2.5])
    df = pd.DataFrame(scores, columns=list("wxyz"))
    df.insert(0, "block", [f"b{i}" for i in range(30)])
    pairs = compare(df).significant_pairs()
    assert pairs and all(better in "yz" and worse in "wx" for better, worse, _ in pairs)
    assert [p for *_, p in pairs] == sorted(p for *_, p in pairs)


def test_bad_alpha():
    with pytest.raises(StatsError, match="alpha"):
        compare(long_runs(), alpha=0.0)


def _csv_ranks(result) -> dict[tuple[str, str], float]:
    scores = pd.read_csv(io.StringIO(result.scores_csv()))
    return {(b, a): r for b, a, r in zip(scores["block"], scores["algorithm"], scores["rank"],
                                          strict=True)}


def test_block_ranks_rank_the_algorithms_of_each_block_best_first():
    """The scores CSV's rank column: 1 = the best algorithm of that block (ties averaged), by
    hand; the mean over blocks is the mean rank of the Friedman test."""
    df = pd.DataFrame({"block": ["a", "b"], "A": [0.9, 0.2], "B": [0.5, 0.6], "C": [0.7, 0.6]})
    result = compare(df)
    assert _csv_ranks(result) == {("a", "A"): 1.0, ("a", "B"): 3.0, ("a", "C"): 2.0,
                                  ("b", "A"): 3.0, ("b", "B"): 1.5, ("b", "C"): 1.5}
    errors = compare(df, lower_is_better=True)  # error rates: the lowest is rank 1
    assert _csv_ranks(errors) == {("a", "A"): 3.0, ("a", "B"): 1.0, ("a", "C"): 2.0,
                                  ("b", "A"): 1.0, ("b", "B"): 2.5, ("b", "C"): 2.5}
    for res in (result, errors, compare(long_runs())):
        np.testing.assert_allclose(res.block_ranks.sum(axis=1), 3 * 4 / 2)  # 1 + 2 + 3 per block
        np.testing.assert_allclose(res.block_ranks.mean(axis=0), res.ranks)


def test_the_verdict_is_the_iman_davenport_test_not_the_chi2_one():
    """BiasBed rejects H0 on the Iman-Davenport F (its p-value), which is less conservative
    than Friedman's chi2: 4 algorithms on 4 blocks where only F is significant at 0.05."""
    rows = [(4.0, 3.0, 2.0, 1.0)] * 3 + [(3.0, 1.0, 4.0, 2.0)]
    df = pd.DataFrame(rows, columns=list("ABCD"))
    df.insert(0, "block", ["b1", "b2", "b3", "b4"])
    result = compare(df)
    chi2 = stats.friedmanchisquare(*np.array(rows).T)
    assert result.chi2 == pytest.approx(chi2.statistic) == pytest.approx(7.5)
    assert result.chi2_p_value == pytest.approx(chi2.pvalue) and chi2.pvalue > 0.05
    f = 3 * 7.5 / (4 * 3 - 7.5)  # (N - 1) chi2 / (N (k - 1) - chi2) = 5
    assert result.F == pytest.approx(f)
    assert result.p_value == pytest.approx(stats.f.sf(f, 3, 9)) and result.p_value < 0.05
    assert result.significant and str(result).startswith("4 algorithms on 4 blocks differ ")
    assert json.loads(result.to_json())["significant"] is True


def test_excluded_blocks_leave_the_spread_over_runs_too():
    """The strict setting drops a block from the std and run counts as well as the means."""
    full = compare(long_runs())
    strict = compare(long_runs(), exclude_blocks=["set1", "set4"])
    kept = ["set0", "set2", "set3", "set5"]
    assert strict.blocks == kept
    assert list(strict.std.index) == kept and list(strict.n_runs.index) == kept
    pd.testing.assert_frame_equal(strict.std, full.std.loc[kept])
    obj = strict.to_dict()
    assert sorted(obj["std"]) == sorted(obj["n_runs"]) == sorted(kept)
    scores = pd.read_csv(io.StringIO(strict.scores_csv()))
    assert sorted(set(scores["block"])) == kept and not scores.isna().any().any()


def test_the_critical_difference_is_at_the_alpha_asked():
    """Demšar's CD = q_alpha(k, inf) / sqrt(2) * sqrt(k (k + 1) / (6 N)), at each alpha."""
    for alpha in (0.05, 0.1, 0.01):
        result = compare(long_runs(), alpha=alpha)  # k = 3 algorithms, N = 6 blocks
        q = stats.studentized_range.ppf(1 - alpha, 3, np.inf)
        assert result.critical_difference == pytest.approx(q / np.sqrt(2) * np.sqrt(12 / 36))
        assert json.loads(result.to_json())["alpha"] == alpha
