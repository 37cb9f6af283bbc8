"""The reduced-benchmark demo stage and the demo's index page, at a tiny size."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.demo import benchmark as benchmark_demo
from shortcutlab.runner.collect import collect

TINY = {"pairs": ["hue-shape", "shape-hue"], "scale": 0.002, "backend": "serial",
        "progress": False,
        "config": benchmark_demo.DEMO_CONFIG.replace(epochs=1, batch_size=16)}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_benchmark_stage_trains_and_reports(tmp_path) -> None:
    lines = benchmark_demo.run_benchmark_demo(tmp_path, Console(quiet=True), **TINY)
    table = collect(tmp_path / "runs")
    assert sorted(table["experiment"]) == ["ZGO/hue-shape/0", "ZGO/shape-hue/0",
                                           "ZSO/hue/0", "ZSO/shape/0"]
    assert (table["status"] == "done").all() and (table["model"] == "small_cnn").all()
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert {"ZSO", "ZGO"} <= set(metrics["models"]["small_cnn"])
    assert any(line.endswith("report/index.html") for line in lines)
    zso = next(line for line in lines if line.startswith("ZSO accuracy"))
    hue = metrics["models"]["small_cnn"]["ZSO"]["P"]["hue"]["mean"]
    assert f"hue {hue:.2f}" in zso
    # resumable: a second demo trains nothing and rewrites the same metrics
    before = (tmp_path / "report" / "metrics.json").read_bytes()
    benchmark_demo.run_benchmark_demo(tmp_path, Console(quiet=True), **TINY)
    assert (tmp_path / "report" / "metrics.json").read_bytes() == before
    # runs of other settings in the same folder (an earlier version's demo): each demo reports
    # its own jobs, never a mix (which the report would refuse)
    other = {**TINY, "pairs": ["hue-shape"], "config": TINY["config"].replace(lr=0.01)}
    benchmark_demo.run_benchmark_demo(tmp_path, Console(quiet=True), **other)
    assert len(collect(tmp_path / "runs")) == 6
    assert json.loads((tmp_path / "report" / "metrics.json").read_bytes()) != json.loads(before)
    benchmark_demo.run_benchmark_demo(tmp_path, Console(quiet=True), **TINY)
    assert (tmp_path / "report" / "metrics.json").read_bytes() == before


def test_demo_index_links_reports(tmp_path, monkeypatch) -> None:
    def fake_stage(out_dir, console):
        out_dir.mkdir(parents=True)
        (out_dir / "report.html").write_text("<html></html>")
        return [f"report: {out_dir / 'report.html'}", f"figure: {out_dir / 'fig.png'}",
                f"table: {out_dir / 'table.csv'}"]

    monkeypatch.setattr(benchmark_demo, "run_demo", fake_stage)
    res = CliRunner().invoke(app, ["demo", "--only", "benchmark", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    index = (tmp_path / "index.html").read_text()
    assert 'href="benchmark/report.html"' in index and 'href="benchmark/fig.png"' in index
    assert "table.csv" in index and 'href="benchmark/table.csv"' not in index
    bad = CliRunner().invoke(app, ["demo", "--only", "nope", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "unknown demo stage 'nope'" in bad.output
    assert "benchmark" in bad.output
