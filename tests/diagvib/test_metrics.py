"""DiagViB-6 metrics against an independent loop-based reference and hand-computed cases."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.metrics import (
    STUDIES,
    MetricsError,
    compute_metrics,
    flat_summary,
    mean_sem,
    model_label,
    shortcut_class_accuracy,
    summarise,
    validate_table,
)
from tests.diagvib.tables import synthetic_table

# --- an independent reference: plain Python loops over the rows, as the paper states it -----


def _sem(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan


def reference(table: pd.DataFrame) -> dict:
    """P_i, P_ij, FAAvg, FAMin and CHGO-ZGO computed with dicts and the statistics module."""
    per_seed: dict[tuple, list[float]] = defaultdict(list)
    so_per_seed: dict[tuple, list[float]] = defaultdict(list)
    for row in table.to_dict("records"):
        if row["status"] != "done":
            continue
        corr = row["correlated"] if isinstance(row["correlated"], str) else ""
        key = (row["model"], row["study"], row["predicted"], corr, int(row["sample"]))
        per_seed[key].append(row["test_acc"])
        if row["study"] == "CHGO":
            ood = defaultdict(list)
            for col, value in row.items():
                if col.startswith("test_acc@") and col.endswith("-ood") and value == value:
                    ood[int(col[len("test_acc@")])].append(value)
            twos = [v for v in ood.values() if len(v) == 2]
            so_per_seed[key].append(sum(twos[0]) / 2 if twos else row["test_acc"])
    acc = {k: statistics.fmean(v) for k, v in per_seed.items()}
    out: dict = {"P": {}, "FAAvg": {}, "FAMin": {}, "CHGO": {}, "CHGO_cells": {}}
    by_pair: dict[tuple, list[float]] = defaultdict(list)
    for (model, study, pred, corr, _sample), value in sorted(acc.items()):
        by_pair[(model, study, pred, corr)].append(value)
    for key, values in by_pair.items():
        out["P"][key] = (statistics.fmean(values), _sem(values), len(values))
    per_sample: dict[tuple, list[float]] = defaultdict(list)
    for (model, study, pred, _corr, sample), value in acc.items():
        per_sample[(model, study, pred, sample)].append(value)
    grouped: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (model, study, pred, _sample), values in per_sample.items():
        grouped[(model, study, pred)]["FAAvg"].append(statistics.fmean(values))
        grouped[(model, study, pred)]["FAMin"].append(min(values))
    for key, metrics in grouped.items():
        for name, values in metrics.items():
            out[name][key] = (statistics.fmean(values), _sem(values), len(values))
    deltas: dict[tuple, list[float]] = defaultdict(list)
    for (model, _study, pred, corr, sample), values in so_per_seed.items():
        zgo = acc.get((model, "ZGO", pred, corr, sample))
        if zgo is not None:
            deltas[(model, pred, sample)].append(statistics.fmean(values) - zgo)
    chgo: dict[tuple, list[float]] = defaultdict(list)
    cells: dict[tuple, list[float]] = defaultdict(list)  # every (pair, sample) difference
    for (model, pred, _sample), values in deltas.items():
        chgo[(model, pred)].append(statistics.fmean(values))
        cells[(model, pred)] += values
    for key, values in cells.items():
        std = statistics.stdev(values) if len(values) > 1 else math.nan
        out["CHGO_cells"][key] = (std, len(values))
    for key, values in chgo.items():
        std = statistics.stdev(values) if len(values) > 1 else math.nan
        out["CHGO"][key] = (statistics.fmean(values), std, len(values))
    return out


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.fixture(scope="module")
def messy_table() -> pd.DataFrame:
    """Two models, two seeds, three samples, random accuracies, failures and gaps."""
    table = synthetic_table(models=("m1", "m2"), samples=(0, 1, 2), seeds=(0, 1), seed=7)
    rng = np.random.default_rng(0)
    table["test_acc"] = rng.uniform(0, 1, len(table))
    tags = [c for c in table.columns if c.startswith("test_acc@")]
    chgo = table["study"] == "CHGO"
    table.loc[chgo, tags] = np.where(table.loc[chgo, tags].notna(),
                                     rng.uniform(0, 1, (int(chgo.sum()), len(tags))), np.nan)
    # a few CHGO rows lost their per-cell accuracies -> fall back to test_acc
    table.loc[table.index[chgo][:7], tags] = np.nan
    # failures and pending jobs must not count; one seed missing; one pair missing in a sample
    table.loc[table.sample(40, random_state=1).index, "status"] = "failed"
    table.loc[table.sample(10, random_state=2).index, "status"] = "pending"
    drop = (table["study"] == "ZGO") & (table["predicted"] == "hue") & (
        table["correlated"] == "shape") & (table["sample"] == 1)
    return table[~drop].reset_index(drop=True)


def test_metrics_match_reference(messy_table: pd.DataFrame) -> None:
    metrics = compute_metrics(messy_table)
    ref = reference(messy_table)

    for r in metrics.zso.itertuples():
        exp = ref["P"][(r.label, "ZSO", r.factor, "")]
        assert _close(r.mean, exp[0]) and _close(r.sem, exp[1]) and r.n == exp[2]
    assert len(metrics.pairs) == len([k for k in ref["P"] if k[1] != "ZSO"])
    for r in metrics.pairs.itertuples():
        exp = ref["P"][(r.label, r.study, r.predicted, r.correlated)]
        assert _close(r.mean, exp[0]) and _close(r.sem, exp[1]) and r.n == exp[2]
    for r in metrics.aggregates[metrics.aggregates["study"] != "ZSO"].itertuples():
        exp = ref[r.metric][(r.label, r.study, r.factor)]
        assert _close(r.mean, exp[0]) and _close(r.sem, exp[1]) and r.n == exp[2]
    assert len(metrics.chgo) == len(ref["CHGO"]) == 12
    for r in metrics.chgo.itertuples():
        exp = ref["CHGO"][(r.label, r.factor)]
        assert _close(r.mean, exp[0]) and _close(r.std, exp[1]) and r.n == exp[2]
        assert _close(r.sem, exp[1] / math.sqrt(exp[2]))
        # std_cells: the sample std (ddof 1) over every (pair, sample) difference
        std_cells, n_cells = ref["CHGO_cells"][(r.label, r.factor)]
        assert _close(r.std_cells, std_cells) and r.n_cells == n_cells
    assert set(metrics.chgo["source"]) <= {"per-tag", "mixed"}
    assert "mixed" in set(metrics.chgo["source"])


def test_seeds_are_averaged_before_samples() -> None:
    rows = [
        ("ZSO", "hue", "", 0, 0, 0.2), ("ZSO", "hue", "", 0, 1, 0.4),
        ("ZSO", "hue", "", 1, 0, 0.9),
    ]
    table = pd.DataFrame(rows, columns=["study", "predicted", "correlated", "sample", "seed",
                                        "test_acc"]).assign(model="m", status="done")
    r = compute_metrics(table).zso.iloc[0]
    assert r["mean"] == pytest.approx(0.6)  # mean(0.3, 0.9), not mean of three rows (0.5)
    assert r["sem"] == pytest.approx(statistics.stdev([0.3, 0.9]) / math.sqrt(2))
    assert r["n"] == 2


def test_famin_takes_min_per_sample_first() -> None:
    rows = [
        ("ZGO", "hue", "position", 0, 0.1), ("ZGO", "hue", "shape", 0, 0.9),
        ("ZGO", "hue", "position", 1, 0.9), ("ZGO", "hue", "shape", 1, 0.1),
    ]
    table = pd.DataFrame(rows, columns=["study", "predicted", "correlated", "sample",
                                        "test_acc"]).assign(model="m", status="done", seed=0)
    m = compute_metrics(table)
    agg = m.aggregates.set_index("metric")
    assert agg.loc["FAMin", "mean"] == pytest.approx(0.1)  # eq. 2; min of P_ij would be 0.5
    assert agg.loc["FAMin", "sem"] == pytest.approx(0.0)
    assert agg.loc["FAAvg", "mean"] == pytest.approx(0.5)
    assert agg.loc["FAAvg", "n_pairs"] == 2
    matrix = m.matrix("m", "ZGO")
    assert matrix.shape == (6, 6) and list(matrix.index) == list(FACTORS)
    assert matrix.loc["hue", "shape"] == pytest.approx(0.5)
    assert np.isnan(np.diag(matrix.to_numpy())).all()


def test_zso_aggregates_equal_p() -> None:
    m = compute_metrics(synthetic_table(studies=("ZSO",), samples=(0, 1)))
    zso = m.zso.set_index("factor")
    for r in m.aggregates.itertuples():
        assert r.study == "ZSO"
        assert r.mean == pytest.approx(zso.loc[r.factor, "mean"])


def test_shortcut_class_is_the_row_with_two_ood_cells() -> None:
    tags = ["test_acc@" + t for t in ("10-ood", "12-ood", "01-ood", "21-ood")]
    row = pd.Series(dict(zip(tags, [0.1, 0.3, 0.8, 0.9], strict=True)))
    assert shortcut_class_accuracy(row, tags) == pytest.approx(0.2)  # class a*=1: cells 10, 12
    assert math.isnan(shortcut_class_accuracy(row.iloc[:3], tags[:3]))  # pattern incomplete


def test_chgo_falls_back_to_test_acc_without_tags() -> None:
    table = synthetic_table(studies=("ZGO", "CHGO"), samples=(0, 1))
    table = table.drop(columns=[c for c in table.columns if c.startswith("test_acc@")])
    m = compute_metrics(table)
    assert set(m.chgo["source"]) == {"test_acc"}
    ref = reference(table)["CHGO"]
    for r in m.chgo.itertuples():
        assert r.mean == pytest.approx(ref[(r.label, r.factor)][0])


def test_synthetic_shortcut_structure_is_recovered() -> None:
    """The planted structure: easy factors robust, texture shortcut by all, no CHGO transfer."""
    m = compute_metrics(synthetic_table(studies=("ZSO", "ZGO", "CHGO", "FGO-20")))
    fa = m.aggregates.set_index(["study", "metric", "factor"])["mean"]
    assert fa[("ZSO", "FAAvg", "position")] > 0.9 and fa[("ZSO", "FAAvg", "texture")] < 0.7
    assert fa[("ZGO", "FAMin", "texture")] < 1 / 3 < fa[("ZGO", "FAMin", "position")]
    assert fa[("FGO-20", "FAAvg", "texture")] > fa[("ZGO", "FAAvg", "texture")]
    assert (m.chgo["mean"].abs() < 0.05).all()


def test_summary_json_shape_and_no_nan() -> None:
    table = synthetic_table(studies=("ZSO", "ZGO", "CHGO"), samples=(0,))
    summary = summarise(table)
    text = json.dumps(summary, allow_nan=False)  # n == 1: sem is null, never NaN
    model = json.loads(text)["models"]["small_cnn"]
    assert set(model) == {"ZSO", "ZGO", "CHGO", "CHGO_over_ZGO"}
    assert set(model["ZSO"]["P"]) == set(FACTORS)
    assert model["ZSO"]["P"]["hue"]["sem"] is None and model["ZSO"]["P"]["hue"]["n"] == 1
    assert len(model["ZGO"]["P"]) == 30 and "hue-shape" in model["ZGO"]["P"]
    assert set(model["ZGO"]["FAAvg"]["hue"]) == {"mean", "sem", "std", "n", "n_pairs"}
    assert model["ZSO"]["P"]["hue"]["std"] == 0.0  # ddof 0: defined for one sample
    assert set(model["ZGO"]["FAMin"]) == set(FACTORS)
    assert set(model["CHGO_over_ZGO"]["lightness"]) >= {"mean", "std", "sem", "n", "source"}
    assert json.loads(text)["jobs"] == {"small_cnn": {"done": 66, "failed": 0, "pending": 0}}


def test_summary_independent_of_row_order_and_dtypes(messy_table: pd.DataFrame) -> None:
    shuffled = messy_table.sample(frac=1.0, random_state=3)
    assert json.dumps(summarise(shuffled)) == json.dumps(summarise(messy_table))
    as_csv_would = messy_table.assign(correlated=messy_table["correlated"].replace("", np.nan))
    assert json.dumps(summarise(as_csv_would)) == json.dumps(summarise(messy_table))


def test_flat_summary_and_frame() -> None:
    m = compute_metrics(synthetic_table(studies=("ZSO", "ZGO", "CHGO"), samples=(0, 1)))
    flat = flat_summary(m)
    assert flat["small_cnn/ZGO/P/hue-shape"] == pytest.approx(
        m.pairs.set_index(["study", "predicted", "correlated"]).loc[("ZGO", "hue", "shape"),
                                                                  "mean"])
    assert flat["count/small_cnn/done"] == len(synthetic_table(studies=("ZSO", "ZGO", "CHGO"),
                                                               samples=(0, 1)))
    frame = m.to_frame()
    assert list(frame["study"].unique()) == ["ZSO", "ZGO", "CHGO", "CHGO-ZGO"]
    assert len(frame) == 6 + 2 * 30 + 2 * 2 * 6 + 6
    aggregates = frame[frame["metric"].isin(["FAAvg", "FAMin"])]
    assert set(aggregates["n_pairs"]) == {5}
    assert frame.loc[~frame["metric"].isin(["FAAvg", "FAMin"]), "n_pairs"].isna().all()
    table = synthetic_table(studies=("ZSO", "ZGO", "CHGO"), samples=(0, 1))
    gone = (table["study"] == "ZGO") & (table["predicted"] == "hue") & (
        table["correlated"] == "shape")
    short = compute_metrics(table[~gone]).to_frame().set_index(["study", "metric", "predicted"])
    assert short.loc[("ZGO", "FAAvg", "hue"), "n_pairs"] == 4  # the CSV says it is short
    assert short.loc[("ZGO", "FAAvg", "shape"), "n_pairs"] == 5


def test_labels_for_algorithms_and_scales() -> None:
    assert model_label("resnet18", "erm") == "resnet18"
    assert model_label("resnet18", float("nan")) == "resnet18"
    assert model_label("resnet18", "sagnet") == "resnet18+sagnet"
    a = synthetic_table(studies=("ZSO",), samples=(0,))
    b = a.assign(scale=1.0, job_id=a["job_id"] + "-full")
    labels = set(validate_table(pd.concat([a, b]))["label"])
    assert labels == {"small_cnn@scale=0.01", "small_cnn@scale=1"}


def test_fp32_and_bf16_twins_of_one_model_are_two_models() -> None:
    """Issue 31's equivalence check trains each job in fp32 and in bf16 + channels_last: the
    same model, experiment and seed twice. Named by precision they are two models side by side;
    one precision alone keeps the plain name."""
    a = synthetic_table(studies=("ZSO",), samples=(0,)).assign(precision="fp32")
    b = a.assign(precision="bf16", job_id=a["job_id"] + "-bf16", test_acc=a["test_acc"] / 2)
    metrics = compute_metrics(pd.concat([a, b]))
    p = metrics.zso.set_index(["label", "factor"])["mean"]
    assert set(p.index.get_level_values("label")) == {"small_cnn@fp32", "small_cnn@bf16"}
    assert p["small_cnn@bf16", "hue"] == pytest.approx(p["small_cnn@fp32", "hue"] / 2)
    assert set(validate_table(a)["label"]) == {"small_cnn"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.drop(columns=["test_acc", "seed"]), "seed, test_acc"),
        (lambda t: t.iloc[:0], "empty"),
        (lambda t: t.assign(study="CGO-4"), "'CGO-4'; valid choices: ZSO, ZGO"),
        (lambda t: t.assign(predicted="colour"), "'colour'; valid choices: position"),
        (lambda t: t.assign(status="running"), "'running'; valid choices: done, failed"),
        (lambda t: t.assign(status="failed"), "(0 done, 30 failed, 0 pending)"),
        (lambda t: t.assign(test_acc=1.5), "1.5"),
        (lambda t: t.assign(sample="first"), "'sample'"),
        (lambda t: t.assign(correlated=t["predicted"]), "correlated with itself"),
        (lambda t: pd.concat([t, t.assign(job_id=t["job_id"] + "x")]), "different config"),
    ],
)
def test_bad_tables_raise_clear_errors(change, message: str) -> None:
    table = synthetic_table(studies=("ZGO",), samples=(0,))
    with pytest.raises(MetricsError) as info:
        compute_metrics(change(table))
    assert message in str(info.value)


def test_mean_sem_and_constants() -> None:
    assert mean_sem([0.2, 0.4])[0] == pytest.approx(0.3)
    assert mean_sem([0.2, 0.4])[1] == pytest.approx(0.1)
    assert math.isnan(mean_sem([0.5])[1]) and mean_sem([])[2] == 0
    assert STUDIES[0] == "ZSO" and len(STUDIES) == 9


# --- runs that did not fit, and the P_ij ≈ 1 - P_ji check ---------------------------------------


def test_runs_near_chance_on_validation_are_flagged() -> None:
    from shortcutlab.diagvib.metrics import CHANCE, FIT_MARGIN, unfit_runs

    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0,))
    table["val_acc"] = 0.95
    zgo = table.index[(table["study"] == "ZGO") & (table["predicted"] == "hue")
                      & (table["correlated"] == "shape")][0]
    zso = table.index[(table["study"] == "ZSO") & (table["predicted"] == "texture")][0]
    table.loc[zgo, "val_acc"] = CHANCE + FIT_MARGIN - 0.001
    table.loc[zso, "val_acc"] = CHANCE + FIT_MARGIN + 0.01  # just outside the margin: fitted
    unfit = unfit_runs(table)
    assert list(zip(unfit["study"], unfit["predicted"], unfit["correlated"], strict=True)) == [
        ("ZGO", "hue", "shape")]
    metrics = compute_metrics(table)
    assert len(metrics.unfit) == 1
    assert metrics.to_dict()["models"]["small_cnn"]["did_not_fit"] == ["ZGO/hue-shape/0"]


def test_pair_symmetry_is_p_ij_plus_p_ji_minus_one() -> None:
    from shortcutlab.diagvib.metrics import pair_symmetry

    pairs = pd.DataFrame({
        "label": ["m"] * 3, "study": ["ZGO"] * 3,
        "predicted": ["hue", "shape", "position"], "correlated": ["shape", "hue", "hue"],
        "mean": [0.9, 0.2, 0.5], "sem": [np.nan] * 3, "n": [1] * 3,
    })
    sym = pair_symmetry(pairs)
    assert len(sym) == 1  # position-hue has no reverse direction
    row = sym.iloc[0]
    assert (row["factor_i"], row["factor_j"]) == ("hue", "shape")
    assert row["P_ij"] == 0.9 and row["P_ji"] == 0.2
    assert row["deviation"] == pytest.approx(0.1)


def test_planted_dominance_follows_the_papers_symmetry() -> None:
    m = compute_metrics(synthetic_table(studies=("ZGO",), samples=(0, 1)))
    assert len(m.symmetry) == 15  # every unordered pair once
    assert m.symmetry["deviation"].abs().max() < 0.15


def test_models_with_their_own_algorithm_keep_their_name() -> None:
    assert model_label("vae", "vae") == "vae"
    assert model_label("asr_rn18", "asr") == "asr_rn18"
    assert model_label("small_cnn", "asr") == "small_cnn+asr"
    assert model_label("resnet18", "erm") == "resnet18"


def test_a_duplicated_job_id_is_refused_not_resolved_by_row_order() -> None:
    table = synthetic_table(studies=("ZSO",), samples=(0,))
    twin = table.iloc[[0]].assign(test_acc=0.0)
    with pytest.raises(MetricsError, match=f"job_id {table['job_id'].iloc[0]!r} more than once"):
        validate_table(pd.concat([twin, table], ignore_index=True))


@pytest.mark.parametrize("column, values", [
    ("preset", ("paper (epochs=2)", "paper (lr=0.001, epochs=3)")),
    ("head", ("full", "selected")),
    ("lr", (2e-4, 1e-3)),
    ("benchmark_seed", (0, 1)),
])
def test_one_model_trained_with_two_configurations_is_refused(column, values, tmp_path) -> None:
    """A run folder that two `diagvib run` calls with other options filled (ZSO with one
    recipe, ZGO with another) must not be averaged into one model's P, FAAvg and FAMin."""
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1))
    table[column] = np.where(table["study"] == "ZSO", values[0], values[1]).astype(
        type(values[0]))
    with pytest.raises(MetricsError, match=f"different configurations.*{column}"):
        compute_metrics(table)
    table.loc[table["study"] == "ZGO", "status"] = "failed"  # only finished jobs count
    assert len(compute_metrics(table).zso) == 6
    table[column] = values[0]  # one configuration: fine
    table.loc[:, "status"] = "done"
    assert len(compute_metrics(table).pairs) == 30
    table.loc[table["study"] == "ZGO", column] = values[1]
    table.to_csv(tmp_path / "jobs.csv", index=False)
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(tmp_path / "jobs.csv")])
    assert res.exit_code == 2 and "different configurations" in res.output
    assert "Traceback" not in res.output


def test_one_model_trained_with_two_recipes_beyond_the_tables_columns_is_refused() -> None:
    """Seed 0 trained with Adam and seed 1 with SGD (or another hyper-parameter, image source
    or renderer) show the same preset, lr and head: their ``recipe_id`` tells them apart and
    the model's P, FAAvg and FAMin must not average them. The seeds of one experiment must
    also share its spec (``--specs``, ``--selection``); different experiments have their own."""
    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0,), seeds=(0, 1))
    table["recipe_id"] = "aaaa"
    table["spec_hash"] = table["experiment"]  # one spec per experiment
    assert len(compute_metrics(table).pairs) == 30  # one recipe, a spec per experiment: fine
    second = table["seed"] == 1
    table.loc[second, "recipe_id"] = "bbbb"
    first_two = table.drop_duplicates("recipe_id")["job_id"].tolist()
    with pytest.raises(MetricsError, match=f"model 'small_cnn' were trained with 2 different "
                       f"recipes: jobs {first_two[0]} and {first_two[1]} differ in a training"):
        compute_metrics(table)
    table.loc[second, "status"] = "failed"  # only finished jobs count
    assert len(compute_metrics(table).pairs) == 30
    table.loc[second, "status"] = "done"
    table.loc[second, "recipe_id"] = ""  # a table written before the column: not compared
    assert len(compute_metrics(table).pairs) == 30
    table["recipe_id"] = "aaaa"
    changed = second & (table["study"] == "ZGO") & (table["predicted"] == "hue") & (
        table["correlated"] == "shape")
    table.loc[changed, "spec_hash"] = "other"
    with pytest.raises(MetricsError, match="model 'small_cnn' on ZGO hue-shape sample 0 were "
                       "trained with 2 different recipes: .* differ in the experiment's spec"):
        compute_metrics(table)
