import json

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from scipy import stats
from typer.testing import CliRunner

from shortcutlab.cli import main  # noqa: F401  (gives every command its clean errors)
from shortcutlab.cli.stats import app
from tests.stats.biasbed_table2 import ALGORITHMS, ROWS, TEST_SETS

runner = CliRunner()


def table2_csv(tmp_path):
    df = pd.DataFrame(np.array(ROWS).T, columns=ALGORITHMS)
    df.insert(0, "test set", TEST_SETS)
    path = tmp_path / "table2.csv"
    df.to_csv(path, index=False)
    return path


def test_compare_json_prints_one_object(tmp_path):
    res = runner.invoke(app, ["compare", str(table2_csv(tmp_path)), "--json"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert round(obj["chi2"], 3) == 31.906 and round(obj["F"], 3) == 7.538
    assert round(obj["critical_difference"], 3) == 3.320
    assert obj["ranks"]["Debiased"] == 2.7
    assert set(obj["nemenyi"]) == set(ALGORITHMS)
    # the p-values themselves, against scikit-posthocs and scipy (not only their keys)
    scores = np.array(ROWS).T
    ref = sp.posthoc_nemenyi_friedman(scores).to_numpy()
    got = np.array([[obj["nemenyi"][a][b] for b in ALGORITHMS] for a in ALGORITHMS])
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)
    n, k = scores.shape
    assert obj["df"] == [k - 1, (k - 1) * (n - 1)]
    assert obj["p_value"] == pytest.approx(stats.f.sf(obj["F"], *obj["df"]), rel=1e-9)
    assert obj["chi2_p_value"] == pytest.approx(stats.friedmanchisquare(*scores.T).pvalue)


def test_compare_rich_summary_and_out(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(
        app, ["compare", str(table2_csv(tmp_path)), "--alpha", "0.1", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "Iman-Davenport F(7, 63) = 7.538" in res.stdout
    assert "H0 (all algorithms equal) rejected" in res.stdout
    assert {p.name for p in out.iterdir()} == {
        "comparison.json", "comparison_scores.csv", "comparison_ranks.csv",
        "comparison_nemenyi.csv", "comparison.tex", "comparison_cd_diagram.png",
    }  # fmt: skip
    assert json.loads((out / "comparison.json").read_text())["alpha"] == 0.1


def test_compare_lower_is_better_flag(tmp_path):
    res = runner.invoke(app, ["compare", str(table2_csv(tmp_path)), "--lower-is-better", "--json"])
    assert json.loads(res.stdout)["ranks"]["pAdaIN"] == 2.5  # 9 − 6.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("block,A,B\nx,1,2\ny,3,n/a?\n", "non-numeric value(s) in column 'B': y='n/a?'"),
        ("block,A,B\nx,1,2\ny,3\n", "line 3 has 2"),  # ragged
        ("block,A\nx,1\ny,2\n", "≥2 algorithm columns"),  # one algorithm
        ("block,A,B\nx,1,2\n", "at least 2 blocks"),  # one block
        ("block,A,B\nx,1,2\ny,nan,3\n", "NaN/inf value(s) in column 'A' at row(s): y"),
        ("block,algorithm,run,score\nx,A,0,1\nx,A,0,2\nx,B,0,1\n", "duplicated run(s)"),
    ],
)
def test_compare_bad_input_is_a_clean_error_and_writes_nothing(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    out = tmp_path / "out"
    res = runner.invoke(app, ["compare", str(path), "--json", "--out", str(out)])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output
    assert res.stdout == "" and not out.exists()  # no JSON, no half-written outputs


def test_compare_long_table_of_runs(tmp_path):
    rows = [
        (b, a, r, base + shift + 0.01 * r)
        for b, base in (("edge", 20.0), ("sketch", 50.0), ("cue", 30.0))
        for a, shift in (("ERM", 0.0), ("SagNet", 1.0))
        for r in range(3)
    ]
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows, columns=["test_set", "algorithm", "seed", "acc"]).to_csv(path, index=False)
    res = runner.invoke(app, ["compare", str(path), "--json"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["ranks"] == {"ERM": 2.0, "SagNet": 1.0} and obj["n_runs"]["edge"]["ERM"] == 3
    assert obj["std"]["cue"]["SagNet"] == pytest.approx(0.01)
    assert obj["chi2"] == pytest.approx(3.0) and obj["F"] is None  # all blocks agree
    res = runner.invoke(app, ["compare", str(path)])
    assert "20.01 ± 0.01" in res.stdout  # mean ± std over runs in the printed table


def test_select_prints_rules_side_by_side(tmp_path):
    rows = [
        {"run": r, "algorithm": "ERM", "epoch": e, "val_acc": v, "test_edge": t}
        for r, vals in (("a", [(0.5, 0.3), (0.9, 0.1), (0.6, 0.5)]), ("b", [(0.2, 0.2)] * 3))
        for e, (v, t) in enumerate(vals)
    ]
    path = tmp_path / "epochs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    res = runner.invoke(app, ["select", str(path), "--last-n", "2", "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)["rows"][0]
    assert row["best_epoch"] == 0.35 and row["best_validation"] == 0.15
    out = tmp_path / "sel"
    res = runner.invoke(app, ["select", str(path), "--last-n", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "cherry-picking" in res.stdout and (out / "selected_best_validation.csv").exists()
    assert "test-set maximum" in res.stdout
    errors = runner.invoke(app, ["select", str(path), "--last-n", "2", "--lower-is-better"])
    assert errors.exit_code == 0 and "test-set minimum" in errors.stdout


def test_select_out_writes_all_its_files_or_none(tmp_path, monkeypatch):
    """A failure while the selection files are written leaves none of them (and no
    temporaries); a file where --out should be is refused before anything is computed."""
    from shortcutlab.stats import selection

    rows = [{"run": r, "epoch": e, "val_acc": 0.5 + e / 10, "test_x": 0.1 * e}
            for r in ("a", "b") for e in range(6)]
    path = tmp_path / "epochs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    real_select, calls = selection.select, []

    def failing_select(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the second of the per-rule files
            raise OSError(28, "No space left on device")
        return real_select(*args, **kwargs)

    monkeypatch.setattr(selection, "select", failing_select)
    out = tmp_path / "sel"
    res = runner.invoke(app, ["select", str(path), "--out", str(out)])
    assert res.exit_code != 0 and len(calls) == 2, res.output  # failed after one file was made
    assert not out.exists() or not any(out.iterdir())
    monkeypatch.setattr(selection, "select", real_select)
    blocked = tmp_path / "file"
    blocked.write_text("x")
    res = runner.invoke(app, ["select", str(path), "--out", str(blocked)])
    assert res.exit_code == 2 and blocked.read_text() == "x"


def test_strict_adds_its_blocks_to_the_excluded_ones(tmp_path):
    # --exclude-block and --strict together leave out both; N counts the rest
    path = table2_csv(tmp_path)
    dropped, in_dist = TEST_SETS[0], TEST_SETS[1]
    res = runner.invoke(app, ["compare", str(path), "--exclude-block", dropped, "--strict",
                              "--trained-on", f"{ALGORITHMS[0]}={in_dist}", "--json"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert set(obj["excluded_blocks"]) == {dropped, in_dist}
    scores = np.array(ROWS).T[2:]  # the rows of the other test sets, by scipy
    assert obj["chi2"] == pytest.approx(stats.friedmanchisquare(*scores.T).statistic)
