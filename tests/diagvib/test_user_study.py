"""A study defined by the user, without editing the package: registered once
(:func:`shortcutlab.diagvib.spec.register_study`), it gets experiment specs, metrics and a
report like the paper's studies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from shortcutlab.diagvib import spec as spec_module
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.figures import (
    matrix_panels,
    panel_values,
    plot_accuracy_matrices,
    plot_factor_aggregates,
    sequence_aggregates,
)
from shortcutlab.diagvib.jobs import build_jobs, collect_jobs
from shortcutlab.diagvib.metrics import DiagvibMetrics, compute_metrics
from shortcutlab.diagvib.report import build_report, format_mean_err
from shortcutlab.diagvib.spec import Study, get_study, register_study, studies_in_sequence
from shortcutlab.diagvib.studies import experiment_names, make_experiment
from shortcutlab.errors import SpecError
from shortcutlab.runner.runs import run_jobs
from shortcutlab.train.config import TrainConfig
from shortcutlab.utils.html import HtmlReport
from tests.diagvib.tables import synthetic_table


def one_extra_cell(*, seed: int, sample: int, predicted: str, correlated: str,
                   selection: str) -> tuple[np.ndarray, np.ndarray]:
    """ZGO's diagonal plus the single cell (0, 1) in training; the other cells in test."""
    train = np.eye(3, dtype=bool)
    train[0, 1] = True
    return train / train.sum(), ~train / (~train).sum()


@pytest.fixture
def user_study() -> Iterator[str]:
    with spec_module.REGISTRY.scratch():
        register_study(Study("ONE-CELL", weights=one_extra_cell, description="diagonal + (0, 1)"))
        yield "ONE-CELL"


def test_a_registered_study_gets_specs(user_study: str) -> None:
    spec = make_experiment(f"{user_study}/hue-shape/0", scale=0.002)
    assert spec.study == user_study and (spec.predicted, spec.correlated) == ("hue", "shape")
    train = np.asarray(spec.weights["train"])
    assert train[0, 1] > 0 and train[1, 0] == 0 and np.isclose(train.sum(), 1.0)
    assert len(experiment_names(studies=[user_study], samples=1)) == 30


def test_a_registered_study_gets_metrics_and_a_report(user_study: str) -> None:
    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1))
    mine = table[table["study"] == "ZGO"].assign(study=user_study)
    if "job_id" in mine.columns:
        mine["job_id"] = mine["job_id"].str.replace("ZGO", user_study)
    both = pd.concat([table, mine], ignore_index=True)
    metrics = compute_metrics(both)
    assert user_study in set(metrics.pairs["study"])
    faavg = metrics.aggregates[(metrics.aggregates["study"] == user_study)
                               & (metrics.aggregates["metric"] == "FAAvg")]
    assert len(faavg) == 6
    assert user_study in metrics.studies()
    report, _ = build_report(both)
    assert user_study in report.render()


def test_study_names_are_taken_once(user_study: str) -> None:
    with pytest.raises(SpecError, match="study name 'ZGO' is already registered"):
        register_study(Study("ZGO", description="another ZGO"))
    assert get_study(user_study).description == "diagonal + (0, 1)"
    with pytest.raises(SpecError, match="unknown study 'NOPE'.*ONE-CELL"):
        make_experiment("NOPE/hue-shape/0")


# ------------------------------------------------------------------ figures of user studies
def fgo_50(*, seed: int, sample: int, predicted: str, correlated: str,
           selection: str) -> tuple[np.ndarray, np.ndarray]:
    """FGO with half of every class off the diagonal: more opportunities than FGO-20."""
    off = ~np.eye(3, dtype=bool)
    train = 0.5 * np.eye(3) / 3 + 0.5 * off / 2 / 3
    return train, off / off.sum()


def unbalanced(*, seed: int, sample: int, predicted: str, correlated: str,
               selection: str) -> tuple[np.ndarray, np.ndarray]:
    """The predicted factor alone, its first class twice as often in training."""
    return np.array([0.5, 0.25, 0.25]), np.full(3, 1 / 3)


@pytest.fixture
def registry() -> Iterator[None]:
    with spec_module.REGISTRY.scratch():
        yield


def _as_study(table: pd.DataFrame, source: str, study: str, shift: float) -> pd.DataFrame:
    """The rows of ``source`` relabelled as ``study``, accuracies moved by ``shift``."""
    rows = table[table["study"] == source].assign(study=study)
    rows["job_id"] = rows["job_id"].str.replace(source, study, regex=False)
    rows["experiment"] = rows["experiment"].str.replace(source, study, regex=False)
    rows["test_acc"] = (rows["test_acc"] + shift).clip(0, 1)
    return rows


def _recorded_figures(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, str]]:
    """Every (figure, caption) the report draws, in order."""
    drawn: list[tuple[object, str]] = []
    original = HtmlReport.figure

    def record(self: HtmlReport, fig: object, caption: str = "", dpi: int = 110) -> None:
        drawn.append((fig, caption))
        original(self, fig, caption, dpi=20)

    monkeypatch.setattr(HtmlReport, "figure", record)
    return drawn


def _matrix_numbers(ax: object) -> dict[tuple[int, int], str]:
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
            for t in ax.texts}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_a_user_study_takes_its_place_in_the_figures(
        registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    register_study(Study("FGO-50", weights=fgo_50, sequences={"FGO": 0.5}))
    base = synthetic_table(models=("a", "b"), studies=("ZSO", "FGO-20", "FGO-5", "ZGO"),
                           samples=(0, 1))
    table = pd.concat([base, _as_study(base, "FGO-20", "FGO-50", 0.1)], ignore_index=True)
    metrics = compute_metrics(table)

    # metrics: P_ij, FAAvg/FAMin, the JSON and the tidy CSV
    mine = metrics.samples[metrics.samples["study"] == "FGO-50"]
    assert len(mine) == 2 * 30 * 2
    faavg = metrics.aggregates[(metrics.aggregates["study"] == "FGO-50")
                               & (metrics.aggregates["metric"] == "FAAvg")]
    hue_a = mine[(mine["label"] == "a") & (mine["predicted"] == "hue")]
    expected = hue_a.groupby("sample")["acc"].mean().mean()
    got = faavg[(faavg["label"] == "a") & (faavg["factor"] == "hue")]["mean"].item()
    assert got == pytest.approx(expected)
    assert metrics.to_dict()["models"]["a"]["FGO-50"]["FAAvg"]["hue"]["mean"] == pytest.approx(
        expected)
    assert "FGO-50" in set(metrics.to_frame()["study"])

    # the FGO figure: FGO-50 is its second step, its points are the FAAvg numbers
    agg = sequence_aggregates(metrics, "FGO")
    assert list(dict.fromkeys(agg["study"])) == ["ZSO", "FGO-50", "FGO-20", "FGO-5", "ZGO"]
    assert list(dict.fromkeys(sequence_aggregates(metrics, "CGO")["study"])) == ["ZSO", "ZGO"]
    fig = plot_factor_aggregates(metrics, "FGO")
    hue_top = fig.axes[FACTORS.index("hue")]
    assert [t.get_text() for t in fig.axes[len(FACTORS)].get_xticklabels()] == [
        "ZSO", "FGO-50", "FGO-20", "FGO-5", "ZGO"]
    line_a = [c for c in hue_top.containers if c.get_label() == "a"]
    assert len(line_a) == 1
    xs, ys = line_a[0].lines[0].get_data()
    assert list(xs) == [0, 1, 2, 3, 4] and ys[1] == pytest.approx(expected)

    # the matrices: FGO-50 after the paper's studies, its cells the P_ij
    assert matrix_panels(metrics, "a") == ["ZSO", "ZGO", "FGO-5", "FGO-20", "FGO-50"]
    fig = plot_accuracy_matrices(metrics, "a")
    ax = next(ax for ax in fig.axes if ax.get_title() == "FGO-50")
    matrix = metrics.matrix("a", "FGO-50")
    numbers = _matrix_numbers(ax)
    assert len(numbers) == 30
    assert all(text == f"{matrix.iloc[r, c]:.2f}" for (r, c), text in numbers.items())

    # the report draws both, and its FAAvg table has the study's row
    drawn = _recorded_figures(monkeypatch)
    report, _ = build_report(table)
    captions = [caption for _, caption in drawn]
    fgo = [fig for fig, caption in drawn if "through the FGO studies" in caption]
    assert len(fgo) == 1
    assert [t.get_text() for t in fgo[0].axes[len(FACTORS)].get_xticklabels()][1] == "FGO-50"
    assert not any("through the CGO studies" in c for c in captions)
    for label in ("a", "b"):
        fig = next(f for f, c in drawn if c.startswith(f"{label}: rows the predicted"))
        ax = next(ax for ax in fig.axes if ax.get_title() == "FGO-50")
        assert _matrix_numbers(ax) == _matrix_numbers(
            next(a for a in plot_accuracy_matrices(metrics, label).axes
                 if a.get_title() == "FGO-50"))
    html = report.render()
    faavg_table = html[html.index(">FAAvg:</p>"):]
    row = faavg_table[faavg_table.index("<th>FGO-50</th>"):]  # model a's row comes first
    assert format_mean_err(expected, faavg[(faavg["label"] == "a") & (faavg["factor"] == "hue")]
                           ["sem"].item()) in row[:row.index("</tr>")]


def test_a_single_factor_user_study_runs_and_is_drawn(
        registry: None, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_study(Study("ZSO-UNBALANCED", correlated=False, weights=unbalanced))
    assert experiment_names(["ZSO-UNBALANCED"], ["hue-shape", "shape-hue"], 1) == [
        "ZSO-UNBALANCED/hue/0", "ZSO-UNBALANCED/shape/0"]
    spec = make_experiment("ZSO-UNBALANCED/hue/0", scale=0.002)
    first, second, third = spec.cell_counts("train").tolist()
    assert spec.correlated is None and abs(first - 2 * second) <= 1 and abs(second - third) <= 1

    # it runs: one tiny job, collected into a job table
    jobs = build_jobs("small_cnn", ["ZSO-UNBALANCED"], ["hue-shape"], [0], scale=0.002,
                      train_config=TrainConfig(epochs=1, batch_size=16))
    summary = run_jobs(jobs, tmp_path / "runs", backend="serial", device="cpu", progress=False)
    assert not summary.failed
    ran = collect_jobs(tmp_path / "runs")
    assert ran[["study", "predicted", "correlated"]].values.tolist() == [
        ["ZSO-UNBALANCED", "hue", ""]]

    # metrics: P_i next to ZSO's, FAAvg = FAMin = P_i, JSON and CSV
    base = synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1))
    table = pd.concat([base, _as_study(base, "ZSO", "ZSO-UNBALANCED", -0.2)], ignore_index=True)
    metrics = compute_metrics(table)
    mine = metrics.singles[metrics.singles["study"] == "ZSO-UNBALANCED"].set_index("factor")
    rows = table[table["study"] == "ZSO-UNBALANCED"]
    for factor in FACTORS:
        assert mine.at[factor, "mean"] == pytest.approx(
            rows[rows["predicted"] == factor]["test_acc"].mean())
    assert metrics.zso.set_index("factor")["mean"].to_dict() != mine["mean"].to_dict()
    agg = metrics.aggregates[metrics.aggregates["study"] == "ZSO-UNBALANCED"]
    assert len(agg) == 12 and (agg["n_pairs"] == 0).all()
    assert np.allclose(agg.set_index(["metric", "factor"]).loc["FAMin", "mean"].reindex(FACTORS),
                       mine["mean"].reindex(FACTORS))
    block = metrics.to_dict()["models"]["small_cnn"]["ZSO-UNBALANCED"]
    assert block["P"]["hue"]["mean"] == pytest.approx(mine.at["hue", "mean"])
    assert "n_pairs" not in block["FAAvg"]["hue"]
    csv = metrics.to_frame()
    assert len(csv[(csv["study"] == "ZSO-UNBALANCED") & (csv["metric"] == "P")]) == 6

    # drawn as a P_i column next to ZSO's, and a table of its own in the report
    assert matrix_panels(metrics, "small_cnn") == ["ZSO", "ZSO-UNBALANCED", "ZGO"]
    column = panel_values(metrics, "small_cnn", "ZSO-UNBALANCED")
    assert list(column.columns) == ["P_i"] and list(column.index) == list(FACTORS)
    assert np.allclose(column["P_i"], mine["mean"].reindex(FACTORS))
    drawn = _recorded_figures(monkeypatch)
    report, _ = build_report(table)
    fig = next(f for f, c in drawn if c.startswith("small_cnn: rows the predicted"))
    ax = next(ax for ax in fig.axes if ax.get_title() == "ZSO-UNBALANCED")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["P_i"]
    assert sorted(_matrix_numbers(ax).values()) == sorted(f"{v:.2f}" for v in mine["mean"])
    html = report.render()
    assert "Accuracy without shortcut opportunities (ZSO, ZSO-UNBALANCED)" in html
    section = html[html.index("ZSO-UNBALANCED:"):]
    assert format_mean_err(mine.at["hue", "mean"], mine.at["hue", "sem"]) in section[
        :section.index("</table>")]

    # and `diagvib metrics` prints its P_i table beside ZSO's
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    table.to_csv(tmp_path / "jobs.csv", index=False)
    printed = CliRunner().invoke(app, ["diagvib", "metrics", str(tmp_path / "jobs.csv")],
                                env={"COLUMNS": "200"})
    assert printed.exit_code == 0, printed.output
    assert "ZSO accuracy P_i" in printed.output
    mine_printed = printed.output[printed.output.index("ZSO-UNBALANCED accuracy P_i"):]
    assert format_mean_err(mine.at["hue", "mean"], mine.at["hue", "sem"]) in mine_printed


BUILT_IN_STUDIES = ("ZSO", "ZGO", "CGO-1", "CGO-2", "CGO-3", "CHGO", "FGO-5", "FGO-10", "FGO-20")


def _figure_data(metrics: DiagvibMetrics) -> dict:
    """What the figures of the paper's studies draw, for comparison (as repr: NaN equals NaN)."""
    out: dict = {}
    for label in metrics.labels:
        panels = matrix_panels(metrics, label)
        out[label] = (panels, [panel_values(metrics, label, p).to_numpy().tolist()
                               for p in panels])
    for sequence in ("CGO", "FGO"):
        out[sequence] = sequence_aggregates(metrics, sequence).to_dict("list")
    return out


#: What an artist shows, by getter: text, data, colours, line and marker styles, geometry.
_SHOWN = ("get_text", "get_position", "get_xydata", "get_offsets", "get_paths", "get_array",
          "get_clim", "get_cmap", "get_xy", "get_width", "get_height", "get_facecolor",
          "get_edgecolor", "get_color", "get_linestyle", "get_linewidth", "get_marker",
          "get_markersize", "get_alpha", "get_visible", "get_extent", "get_xlim", "get_ylim",
          "get_title", "get_xlabel", "get_ylabel", "get_subplotspec", "get_label")


def _shown(fig: object) -> str:
    """Everything a figure shows, read from its artists without laying it out or drawing it
    (the constrained layout and the PNG are two thirds of a report's time; both follow from
    the artists): every artist's type and the values of its :data:`_SHOWN` getters, tick
    labels included, as one string."""
    for ax in fig.axes:  # type: ignore[attr-defined]
        ax.get_xticklabels(), ax.get_yticklabels()  # fills the tick labels' text
    parts = []
    for artist in fig.findobj():  # type: ignore[attr-defined]
        parts.append(type(artist).__name__)
        for name in _SHOWN:
            getter = getattr(artist, name, None)
            if getter is None:
                continue
            try:
                value = getter()
            except (ValueError, TypeError):  # e.g. a colour bar's spine has no position
                continue
            if name == "get_paths":
                value = [path.vertices for path in value]
            elif name == "get_cmap":
                value = value.name
            elif name == "get_subplotspec" and value is not None:
                value = value.get_geometry()
            parts.append(f"{name}={np.asarray(value, dtype=object).tolist()!r}"
                         if isinstance(value, np.ndarray | list) else f"{name}={value!r}")
    return "\n".join(parts)


def _report_shown(table: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """The report of ``table``: its HTML with each figure's caption where the PNG would be,
    and what each figure shows (:func:`_shown`)."""
    shown: list[str] = []

    def record(self: HtmlReport, fig: object, caption: str = "", dpi: int = 110) -> None:
        shown.append(_shown(fig))
        self._parts.append(f"<figure>{caption}</figure>")

    with monkeypatch.context() as patch:
        patch.setattr(HtmlReport, "figure", record)
        html = build_report(table)[0].render()
    return html, shown


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_the_paper_studies_are_drawn_as_in_the_paper(
        registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    table = synthetic_table(models=("a", "b"), studies=BUILT_IN_STUDIES, samples=(0, 1))
    metrics = compute_metrics(table)
    assert matrix_panels(metrics, "a") == ["ZSO", "ZGO", "CGO-1", "CGO-2", "CGO-3", "FGO-5",
                                           "FGO-10", "FGO-20", "CHGO"]
    assert studies_in_sequence("CGO") == ("ZSO", "CGO-3", "CGO-2", "CGO-1", "ZGO")
    assert studies_in_sequence("FGO") == ("ZSO", "FGO-20", "FGO-10", "FGO-5", "ZGO")
    zso = panel_values(metrics, "a", "ZSO")["P_i"]
    assert np.allclose(zso, metrics.zso[metrics.zso["label"] == "a"].set_index("factor")["mean"]
                       .reindex(FACTORS))
    agg = sequence_aggregates(metrics, "CGO")
    assert agg.groupby("study")["x"].first().to_dict() == {
        "ZSO": 0, "CGO-3": 1, "CGO-2": 2, "CGO-1": 3, "ZGO": 4}
    before = (repr(_figure_data(metrics)), metrics.to_dict(), metrics.to_frame().to_csv())
    report_before = _report_shown(table, monkeypatch)
    assert len(report_before[1]) >= 9 and "FGO-20" in "".join(report_before[1])

    # registering user studies of both kinds changes nothing the paper's studies show
    register_study(Study("FGO-50", weights=fgo_50, sequences={"FGO": 0.5}))
    register_study(Study("ZSO-UNBALANCED", correlated=False, weights=unbalanced))
    again = compute_metrics(table)
    assert (repr(_figure_data(again)), again.to_dict(), again.to_frame().to_csv()) == before
    assert _report_shown(table, monkeypatch) == report_before


def test_a_study_description_is_checked() -> None:
    with pytest.raises(SpecError, match="sequences maps a sequence name to an x position"):
        Study("BAD", sequences={"CGO": "left"})
    with pytest.raises(SpecError, match="sequences maps"):
        Study("BAD", sequences={"CGO": float("nan")})
    first: Any = "first"
    with pytest.raises(SpecError, match="panel must be a number or None"):
        Study("BAD", panel=first)
    sequences: Any = Study("OK", sequences={"FGO": 0.5}).sequences
    with pytest.raises(TypeError):  # read-only once described
        sequences["FGO"] = 9
