"""The HTML report builder, the DiagViB-6 figures and ``shortcutlab report``."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib import report as report_module
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.figures import (
    plot_accuracy_matrices,
    plot_chgo_improvement,
    plot_factor_aggregates,
)
from shortcutlab.diagvib.metrics import compute_metrics
from shortcutlab.diagvib.report import (
    format_mean_err,
    load_job_table,
    load_job_tables,
    write_report,
)
from shortcutlab.errors import DiagvibError
from shortcutlab.utils.html import HtmlReport, figure_to_png
from tests.diagvib.tables import synthetic_table


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return synthetic_table(models=("small_cnn", "resnet18"), samples=(0, 1, 2), seeds=(0,))


@pytest.fixture(scope="module")
def small(table: pd.DataFrame) -> pd.DataFrame:
    """ZSO and ZGO of one sample: a report of a few figures, for the tests whose point is not
    the figures (a full report costs ~12 s of CPU)."""
    keep = table["study"].isin(["ZSO", "ZGO"]) & (table["sample"] == 0)
    return table[keep].reset_index(drop=True)


def test_html_escapes_text_and_embeds_figures(tmp_path):
    report = HtmlReport("a <b> & c")
    report.heading("x < y", level=3)
    report.paragraph("<script>alert(1)</script>", note=True)
    report.table(pd.DataFrame({"acc": [0.5, math.nan]}, index=["m1", "m2"]), "{:.1f}")
    fig = Figure()
    fig.subplots().plot([0, 1])
    report.figure(fig, "a line")
    html = report.render()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<h1>a &lt;b&gt; &amp; c</h1>" in html and "<h3>x &lt; y</h3>" in html
    assert ">0.5<" in html and "–" in html
    png = re.search(r'src="data:image/png;base64,([^"]+)"', html)
    assert png is not None and "<figcaption>a line</figcaption>" in html
    assert figure_to_png(fig).startswith(b"\x89PNG")
    path = report.write(tmp_path / "sub" / "r.html")
    assert path.read_text(encoding="utf-8") == html
    assert [p.name for p in path.parent.iterdir()] == ["r.html"]  # no temporary file left


def test_format_mean_err():
    assert format_mean_err(0.9512, 0.0123) == "0.95 ± 0.01"
    assert format_mean_err(0.9512, math.nan) == "0.95"
    assert format_mean_err(math.nan, 0.1) == "–"
    assert format_mean_err(-0.021, 0.013, scale=100, digits=1) == "-2.1 ± 1.3"


def test_accuracy_matrix_figure_shows_p_ij(table):
    metrics = compute_metrics(table)
    fig = plot_accuracy_matrices(metrics, "resnet18", studies=["ZGO"])
    zso_ax, zgo_ax = fig.axes[:2]
    assert zgo_ax.get_title() == "ZGO"
    matrix = metrics.matrix("resnet18", "ZGO")
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in zgo_ax.texts}
    assert len(texts) == 30  # the diagonal stays empty
    for (r, c), text in texts.items():
        assert text == f"{matrix.iloc[r, c]:.2f}"
    assert [t.get_text() for t in zso_ax.get_yticklabels()] == list(FACTORS)
    with pytest.raises(DiagvibError, match="unknown model 'vgg'; valid choices: resnet18"):
        plot_accuracy_matrices(metrics, "vgg")


def test_aggregate_and_chgo_figures(table):
    metrics = compute_metrics(table)
    fig = plot_factor_aggregates(metrics, "FGO", error_bars=True)
    first = fig.axes[0]
    assert first.get_title() == FACTORS[0]
    bottom = fig.axes[len(FACTORS)]  # FAMin row carries the study names
    assert bottom.get_ylabel() == "FAMin"
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["ZSO", "FGO-20", "FGO-10",
                                                                "FGO-5", "ZGO"]
    assert len(first.get_lines()) >= 3  # chance line + one line per model
    with pytest.raises(DiagvibError, match="unknown sequence 'XYZ'; valid choices: CGO, FGO"):
        plot_factor_aggregates(metrics, "XYZ")
    bars = plot_chgo_improvement(metrics).axes[0].patches
    assert len(bars) == 2 * len(FACTORS)
    expected = metrics.chgo.set_index(["label", "factor"])["mean"] * 100
    heights = sorted(round(b.get_height(), 6) for b in bars)
    assert heights == sorted(round(v, 6) for v in expected)


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_write_report_files_match_metrics(table, tmp_path):
    out = tmp_path / "report"
    index = write_report(table, out)
    metrics = compute_metrics(table)
    assert index == out / "index.html"
    assert json.loads((out / "metrics.json").read_text()) == json.loads(
        json.dumps(metrics.to_dict()))
    csv = pd.read_csv(out / "metrics.csv")
    assert len(csv) == len(metrics.to_frame())
    assert set(csv["model"]) == {"small_cnn", "resnet18"}
    html = index.read_text(encoding="utf-8")
    for text in ("Jobs", "ZSO", "FAAvg", "FAMin", "figure 4a", "Table 2", "figure 4b",
                 "figure 5b", "Statistical comparison", "Study ZGO", "Iman-Davenport"):
        assert text in html, text
    assert html.count("data:image/png;base64") >= 2 + 2 + 1 + 9  # 4b/5b, 4a per model, CHGO, CD
    assert "http://" not in html and "https://" not in html  # readable offline


def test_report_lists_failed_jobs_and_extra_sections(small, tmp_path):
    failed = small.copy()
    failed.loc[0, "status"] = "failed"
    failed["error"] = ""
    failed.loc[0, "error"] = "RuntimeError: out of memory"
    seen = []

    def extra(report, frame):
        seen.append(len(frame))
        report.heading("An extra section")

    html = write_report(failed, tmp_path, extra_sections=[extra]).read_text(encoding="utf-8")
    assert "1 failed job(s)" in html and "RuntimeError: out of memory" in html
    assert "An extra section" in html and seen == [len(small)]


def test_bad_table_writes_nothing(table, tmp_path):
    out = tmp_path / "report"
    with pytest.raises(DiagvibError, match="lacks required column"):
        write_report(table.drop(columns="test_acc"), out)
    assert not out.exists()


def test_load_job_tables(table, tmp_path):
    csv, parquet = tmp_path / "a.csv", tmp_path / "b.parquet"
    table.iloc[:10].to_csv(csv, index=False)
    table.iloc[10:25].to_parquet(parquet, index=False)
    folder = tmp_path / "run"
    folder.mkdir()
    table.iloc[25:30].to_csv(folder / "jobs.csv", index=False)
    both = load_job_tables([csv, parquet, folder])
    assert len(both) == 30
    np.testing.assert_allclose(both["test_acc"], table["test_acc"].iloc[:30])
    with pytest.raises(DiagvibError, match="not found"):
        load_job_table(tmp_path / "missing")
    with pytest.raises(DiagvibError, match="not a job table"):
        (tmp_path / "x.txt").write_text("1")
        load_job_table(tmp_path / "x.txt")
    with pytest.raises(DiagvibError, match="holds no jobs"):
        (tmp_path / "empty").mkdir()
        load_job_table(tmp_path / "empty")


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_cli_metrics_json_and_report(small, tmp_path):
    path = tmp_path / "jobs.csv"
    small.to_csv(path, index=False)
    runner = CliRunner()
    res = runner.invoke(app, ["diagvib", "metrics", str(path), "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.output)
    p = printed["models"]["resnet18"]["ZGO"]["P"]["hue-position"]["mean"]
    assert p == pytest.approx(compute_metrics(small).matrix("resnet18", "ZGO").loc["hue",
                                                                                  "position"])
    res = runner.invoke(app, ["diagvib", "metrics", str(path)])
    assert res.exit_code == 0 and "FAMin" in res.output
    res = runner.invoke(app, ["diagvib", "report", str(path), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert "Study ZGO" in (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    res = runner.invoke(app, ["diagvib", "report", str(tmp_path / "nope"), "--out",
                              str(tmp_path / "r2")])
    assert res.exit_code == 2 and "not found" in res.output
    assert not (tmp_path / "r2").exists()


def test_the_former_top_level_report_is_an_alias_that_says_so(monkeypatch, tmp_path):
    """``shortcutlab report`` hands every option to the same library call as ``diagvib report``
    (the report itself is tested above) and says that it is the former name."""
    calls = []

    def fake_write_report(dirs, out, **kwargs):
        calls.append((list(dirs), out, kwargs))
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text("{}")
        return out / "index.html"

    monkeypatch.setattr("shortcutlab.diagvib.report.write_report", fake_write_report)
    runner = CliRunner()
    args = [str(tmp_path / "jobs.csv"), "--out", str(tmp_path / "r"), "--error-bars", "std",
            "--title", "T", "--checkpoint", "last"]
    new = runner.invoke(app, ["diagvib", "report", *args])
    old = runner.invoke(app, ["report", *args])
    assert new.exit_code == 0 and old.exit_code == 0, old.output
    assert "`shortcutlab report` is now `shortcutlab diagvib report`" in old.stderr
    assert "is now" not in new.output
    assert len(calls) == 2 and calls[0] == calls[1]
    assert calls[0][2]["error_bars"] == "std" and calls[0][2]["checkpoint"] == "last"


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_zso_zgo_only_draws_one_aggregate_figure(table, tmp_path):
    two = table[table["study"].isin(["ZSO", "ZGO"])]
    html = write_report(two, tmp_path).read_text(encoding="utf-8")
    assert html.count("<figcaption>FAAvg and FAMin from ZSO to ZGO") == 1
    assert "figure 5b)" not in html


def test_report_states_the_setup_and_flags_runs_that_did_not_fit(tmp_path):
    from shortcutlab.diagvib.figures import plot_pair_symmetry, unfit_cells
    from shortcutlab.diagvib.report import setup_table, write_report

    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0,), seeds=(0, 1))
    table["val_acc"] = 0.9
    table["preset"] = "paper"
    table["head"], table["lr"], table["batch_size"] = "full", 2e-4, 64
    bad = table.index[(table["study"] == "ZGO") & (table["predicted"] == "hue")
                      & (table["correlated"] == "shape") & (table["seed"] == 1)][0]
    table.loc[bad, "val_acc"] = 0.34
    metrics = compute_metrics(table)
    setup = setup_table(metrics.table)
    assert setup.loc["small_cnn"].to_dict() == {
        "scale": "0.01", "preset": "paper", "head": "full", "lr": "0.0002", "batch size": "64",
        "normalisation": "–", "frozen BatchNorm": "–", "VAE prediction": "–",
        "precision": "–", "channels_last": "–", "±": "sem",
        "dataset samples": 1, "training seeds": 2, "finished jobs": len(table)}
    assert setup_table(metrics.table, "std").loc["small_cnn", "±"] == "std"
    assert unfit_cells(metrics, "small_cnn", "ZGO") == {("hue", "shape")}
    assert unfit_cells(metrics, "small_cnn", "ZSO") == set()
    fig = plot_accuracy_matrices(metrics, "small_cnn")
    marked = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text().endswith("!")]
    assert len(marked) == 1
    assert isinstance(plot_pair_symmetry(metrics), Figure)
    html = write_report(table, tmp_path / "r").read_text()
    assert "did not fit their training data" in html and "ZGO/hue-shape/0" in html
    assert "P_ij vs 1 − P_ji" in html and "mean |deviation|" in html
    # one dataset sample: no standard errors anywhere
    zso = html.split("(ZSO)</h2>")[1].split("<table")[1].split("</table>")[0]
    assert "±" not in zso


def test_an_unwritable_folder_is_refused_before_anything_is_read(small, tmp_path, monkeypatch):
    """A file where the report's folder goes fails at once (no figure drawn, no run read)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    drawn = []
    monkeypatch.setattr(report_module, "build_report", lambda *a, **k: drawn.append(1))
    with pytest.raises(NotADirectoryError):
        write_report([tmp_path / "no-such-run"], blocker / "report")
    with pytest.raises(FileExistsError):
        write_report(small, blocker)
    assert drawn == [] and blocker.read_text() == "x"


def test_one_sample_shows_no_spread_with_either_error_bar(tmp_path):
    """With one dataset sample there is no spread to show: ddof-0 std is 0.0 (kept in the JSON),
    but a table must not print "± 0.00" as if five samples had agreed exactly."""
    from shortcutlab.diagvib.report import factor_frame

    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0,))
    metrics = compute_metrics(table)
    for err in ("sem", "std"):
        assert "±" not in "".join(factor_frame(metrics.singles, ["label"], err).stack())
        famin = metrics.aggregates[metrics.aggregates["metric"] == "FAMin"]
        assert "±" not in "".join(factor_frame(famin, ["label", "study"], err).stack())
    path = tmp_path / "jobs.csv"
    table.to_csv(path, index=False)
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(path), "--error-bars", "std"])
    assert res.exit_code == 0, res.output
    assert "± 0.00" not in res.output and "±\n" not in res.output


def test_tables_say_when_a_number_lacks_samples_or_correlated_factors(tmp_path):
    """A failed job leaves FAAvg/FAMin of its row over 4 of the 5 correlated factors in one
    sample, and a P_i over fewer samples than the model's others; the JSON says so (n, n_pairs),
    and so must the printed tables and the report, not show them as complete numbers."""
    from shortcutlab.diagvib.report import factor_frame

    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1, 2))
    gone = (((table["study"] == "ZGO") & (table["predicted"] == "hue")
             & (table["correlated"] == "shape") & (table["sample"] == 1))
            | ((table["study"] == "ZSO") & (table["predicted"] == "texture")
               & (table["sample"] == 2)))
    table.to_csv(tmp_path / "c.csv", index=False)
    table.loc[gone, "status"] = "failed"
    metrics = compute_metrics(table)
    famin = factor_frame(metrics.aggregates[metrics.aggregates["metric"] == "FAMin"],
                         ["label", "study"])
    assert "4/5 pairs" in famin.at[("small_cnn", "ZGO"), "hue"]
    assert "pairs" not in famin.at[("small_cnn", "ZGO"), "shape"]  # complete
    zso = factor_frame(metrics.singles, ["label"])
    assert "2/3 samples" in zso.at[("small_cnn",), "texture"]
    assert "samples" not in zso.at[("small_cnn",), "hue"]
    path = tmp_path / "jobs.csv"
    table.to_csv(path, index=False)
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "(4/5 pairs)" in res.output and "(2/3 samples)" in res.output
    assert "(k/5 pairs): some sample had only k of the 5 correlated factors" in res.output
    complete = CliRunner().invoke(app, ["diagvib", "metrics", str(path.with_name("c.csv"))])
    assert complete.exit_code == 0 and "pairs)" not in complete.output
    html = write_report(table, tmp_path / "r").read_text(encoding="utf-8")
    assert "4/5 pairs" in html and "2/3 samples" in html
    assert "(k/5 pairs): some sample had only k of the 5 correlated factors" in html


@pytest.fixture
def captions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No figure is drawn (these tests read the page's numbers and captions): the captions
    :meth:`HtmlReport.figure` was given, in order; a report then builds in well under a second."""
    from shortcutlab.diagvib import figures as figs
    from shortcutlab.stats.compare import ComparisonResult

    shown: list[str] = []
    monkeypatch.setattr(HtmlReport, "figure",
                        lambda self, fig, caption="", dpi=110: shown.append(caption))
    for name in ("plot_accuracy_matrices", "plot_factor_aggregates", "plot_pair_symmetry",
                 "plot_chgo_improvement"):
        monkeypatch.setattr(figs, name, lambda *a, **k: None)
    monkeypatch.setattr(ComparisonResult, "cd_diagram", lambda self, **k: None)
    return shown


def _section(html: str, heading: str) -> str:
    """The first table after the ``<h2>`` ending in ``heading``."""
    return html.split(f"{heading}</h2>")[1].split("<table")[1].split("</table>")[0]


def test_aggregate_captions_name_the_papers_figures(captions):
    """The paper draws FAAvg/FAMin through the CGO studies in figure 4b and through the FGO
    studies in figure 5b (its figure 5 caption: "ZSO, FGO and ZGO studies")."""
    table = synthetic_table(studies=("ZSO", "ZGO", "CGO-1", "FGO-5"), samples=(0,))
    report_module.build_report(table)
    cgo = [c for c in captions if "through the CGO studies" in c]
    fgo = [c for c in captions if "through the FGO studies" in c]
    assert len(cgo) == 1 and "(paper figure 4b)" in cgo[0]
    assert len(fgo) == 1 and "(paper figure 5b)" in fgo[0]


def test_zso_table_shows_the_chosen_error_bar(captions):
    """--error-bars std: the P_i table shows mean ± the ddof-0 standard deviation over the
    dataset samples (ERROR_BAR_TEXT), computed here from the job table's three samples."""
    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1, 2))
    zso = table[table["study"] == "ZSO"].groupby("predicted")["test_acc"]
    for err, spread in (("std", zso.std(ddof=0)), ("sem", zso.sem(ddof=1))):
        report, _ = report_module.build_report(table, error_bars=err)
        cells = _section(report.render(), "(ZSO)")
        mean = zso.mean()
        for factor in FACTORS:
            assert f"{mean[factor]:.2f} ± {spread[factor]:.2f}" in cells, (err, factor)
    assert not np.allclose(zso.std(ddof=0), zso.sem(ddof=1))  # the two are told apart


def test_chgo_table_shows_the_standard_deviation_as_papers_table_2(captions):
    """Paper Table 2: "mean accuracy improvement and its standard deviation" of CHGO over ZGO,
    whatever ± the other tables show (the default, sem, is smaller by sqrt(3) here)."""
    table = synthetic_table(studies=("ZSO", "ZGO", "CHGO"), samples=(0, 1, 2), noise=0.05)
    report, metrics = report_module.build_report(table, error_bars="sem")
    cells = _section(report.render(), "CHGO over ZGO (paper Table 2)")
    chgo = metrics.chgo.set_index("factor")
    for factor in FACTORS:
        mean, std = 100 * chgo.at[factor, "mean"], 100 * chgo.at[factor, "std"]
        assert f"{mean:.1f} ± {std:.1f}" in cells, factor
    shown = [f"± {100 * chgo.at[f, 'std']:.1f}" for f in FACTORS]
    assert shown != [f"± {100 * chgo.at[f, 'sem']:.1f}" for f in FACTORS]  # sem: other numbers


def test_mean_deviation_is_of_absolute_values(captions):
    """mean |P_ij + P_ji - 1| over the 15 unordered ZGO pairs, by hand: P_ij = 0.9 when the
    indices of i < j have an even sum (6 pairs: deviation +0.2), else 0.3 (9 pairs: -0.4);
    P_ji = 0.3. Mean |deviation| = (6 * 0.2 + 9 * 0.4) / 15 = 0.32 (the signed mean: -0.16)."""
    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0,))
    zgo = table["study"] == "ZGO"
    rank = {f: k for k, f in enumerate(FACTORS)}
    i = table.loc[zgo, "predicted"].map(rank)
    j = table.loc[zgo, "correlated"].map(rank)
    table.loc[zgo, "test_acc"] = np.where((i < j) & ((i + j) % 2 == 0), 0.9, 0.3)
    html = report_module.build_report(table)[0].render()
    assert "ZGO: mean |deviation| small_cnn 0.32" in html


def test_noise_table_lists_the_widest_ranges_first():
    from shortcutlab.diagvib.report import noise_table

    widths = {"a": 0.10, "b": 0.30, "c": 0.20, "d": 0.05}
    table = pd.DataFrame({
        "label": "m", "status": "done", "experiment": list(widths), "seed": 0, "test_acc": 0.5,
        "acc_min": 0.4, "acc_max": [0.4 + w for w in widths.values()]})
    widest = noise_table(table, widest=2)
    assert widest["experiment"].tolist() == ["b", "c"]
    assert (widest["acc_max"] - widest["acc_min"]).round(6).tolist() == [0.3, 0.2]


def test_two_recipes_of_one_model_are_reported_side_by_side_when_named(tmp_path,
                                                                       monkeypatch) -> None:
    """`diagvib metrics runs/adam runs/sgd` refuses one model of two recipes; naming a folder
    (`sgd=runs/sgd`) reports its models as `small_cnn@sgd` beside `small_cnn`, in the metrics,
    the report and its comparison; an existing path with '=' in its name stays a path."""
    from pathlib import Path

    from shortcutlab.diagvib.jobs import KIND, build_jobs
    from shortcutlab.diagvib.report import named_source
    from shortcutlab.runner.jobs import JOB_KINDS, register_job_kind
    from shortcutlab.runner.runs import run_jobs
    from shortcutlab.train.config import TrainConfig
    from tests.runner.fake_jobs import noop_job

    cfg = TrainConfig(preset="paper", epochs=1)
    adam, sgd = tmp_path / "adam", tmp_path / "a=b"  # a folder whose name holds '='
    with JOB_KINDS.scratch():  # results without training
        register_job_kind(KIND, noop_job, override=True)
        for out, config in ((adam, cfg), (sgd, cfg.replace(optimizer="sgd"))):
            run_jobs(build_jobs("small_cnn", ["ZSO"], None, [0], [0], 0.002, config), out,
                     backend="serial", progress=False)
    assert named_source(sgd) == ("", sgd) and named_source(f"sgd={sgd}") == ("sgd", sgd)
    assert named_source("=x") == ("", Path("=x"))  # no name before '='
    monkeypatch.chdir(tmp_path)
    assert named_source("a=b") == ("", Path("a=b"))  # the folder, not b named a
    assert named_source("x=adam") == ("x", Path("adam"))
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(adam), str(sgd)])
    assert res.exit_code == 2 and "with different configurations" in res.output
    assert "NAME=DIR" in res.output
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(adam), f"sgd={sgd}", "--json"])
    assert res.exit_code == 0, res.output
    assert sorted(json.loads(res.output)["models"]) == ["small_cnn", "small_cnn@sgd"]
    res = CliRunner().invoke(app, ["diagvib", "report", str(adam), f"sgd={sgd}", "--out",
                                   str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "2 model(s): small_cnn, small_cnn@sgd" in html
    res = CliRunner().invoke(app, ["diagvib", "metrics", f"sgd={tmp_path / 'nope'}"])
    assert res.exit_code == 2 and "not found" in res.output
