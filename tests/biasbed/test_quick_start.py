"""The documented quick start writes a comparison: each DiagViB-6 experiment's test set is its
own block, even though every such test set is called "test"."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.biasbed.protocol import resolve_compare_by
from shortcutlab.cli.main import app
from shortcutlab.diagvib import jobs as diagvib_jobs
from shortcutlab.errors import StatsError


def _epochs(kind: str) -> pd.DataFrame:
    rows = [{"dataset": d, "test_set": "test", "kind": kind, "algorithm": a}
            for d in ("ZGO/shape-texture/0", "ZGO/shape-hue/0") for a in ("erm", "padain")]
    return pd.DataFrame(rows)


def test_diagvib_test_sets_are_never_shared() -> None:
    assert resolve_compare_by(_epochs(diagvib_jobs.KIND)) == "dataset"
    assert resolve_compare_by(_epochs("biasbed-folders")) == "competitor"
    with pytest.raises(StatsError, match="own test set"):
        resolve_compare_by(_epochs(diagvib_jobs.KIND), "competitor")


def test_quick_start_writes_a_comparison(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["biasbed", "run", "--algorithm", "erm", "--algorithm", "padain",
            "--dataset", "diagvib:ZGO/shape-texture/0", "--dataset", "diagvib:ZGO/shape-hue/0",
            "--scale", "0.001", "--seeds", "0", "--epochs", "1", "--batch-size", "16",
            "--backend", "serial", "--device", "cpu", "--out", str(tmp_path / "runs")]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["biasbed", "report", str(tmp_path / "runs"), "--out",
                              str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "rep" / "comparison.json").read_text())
    assert sorted(result["algorithms"]) == ["erm", "padain"]
    assert sorted(result["blocks"]) == ["ZGO/shape-hue/0/test", "ZGO/shape-texture/0/test"]
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "Accuracy is the mean per-class accuracy" in html  # DiagViB-6: the paper's metric
    res = runner.invoke(app, ["biasbed", "report", str(tmp_path / "runs"), "--out",
                              str(tmp_path / "rep2"), "--nemenyi", "table"])
    assert res.exit_code == 0, res.output
    table = json.loads((tmp_path / "rep2" / "comparison.json").read_text())
    assert table["nemenyi_method"] == "table"
    assert 0.001 <= table["nemenyi"]["erm"]["padain"] <= 0.9
    competitors = pd.read_csv(tmp_path / "rep" / "competitors.csv")
    assert set(competitors["metric"]) == {"mean_per_class"}


def test_report_names_top1_when_runs_used_it() -> None:
    from shortcutlab.biasbed.report import _metric_text

    table = pd.DataFrame({"dataset": ["imagenet", "sin"], "metric": ["top1", "top1"]})
    assert "top-1 accuracy" in _metric_text(table)
    table["metric"] = ["top1", "mean_per_class"]
    assert "imagenet: top-1" in _metric_text(table) and "sin: mean per-class" in _metric_text(table)
