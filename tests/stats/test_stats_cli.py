import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

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


def test_compare_bad_input_is_a_clean_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("block,A,B\nx,1,2\ny,3,n/a?\n")
    res = runner.invoke(app, ["compare", str(path)])
    assert res.exit_code == 2
    assert "non-numeric" in res.output and "'n/a?'" in res.output
    assert "Traceback" not in res.output


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
