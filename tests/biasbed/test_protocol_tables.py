"""The BiasBed protocol's plan, competitors.csv and report numbers, from hand-built tables.

Nothing trains here: per-epoch records and ``protocol.json`` are written by the tests, and the
expected numbers come from a hand computation (the best-validation rule by ``argmax``) and from
scipy's Friedman test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from shortcutlab.biasbed import protocol, report
from shortcutlab.biasbed.datasets import FolderExperiment
from shortcutlab.biasbed.presets import BIASBED
from shortcutlab.biasbed.protocol import (
    FAST_EPOCHS,
    ProtocolError,
    ProtocolSettings,
    build_protocol_jobs,
    compare_algorithms,
    competitor_table,
    read_protocol,
    run_protocol,
)
from shortcutlab.biasbed.report import _rank_table, add_biasbed_section, check_alpha, rule_gap_frame
from shortcutlab.errors import StatsError
from shortcutlab.runner.runs import RunSummary
from shortcutlab.utils.html import HtmlReport

ALGORITHMS = ("erm", "padain", "sagnet")
TEST_SETS = ("t1", "t2", "t3", "t4")
N_RUNS, N_EPOCHS = 2, 3


def _epochs(seed: int = 0) -> pd.DataFrame:
    """``load_epochs``' layout: one row per (run, epoch, test set), random distinct scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for algorithm in ALGORITHMS:
        for r in range(N_RUNS):
            val = rng.permutation(N_EPOCHS) / 10 + 0.5  # distinct: one best epoch
            for epoch in range(N_EPOCHS):
                for test_set in TEST_SETS:
                    rows.append({
                        "run": f"{algorithm}-{r}", "algorithm": algorithm, "model": "small_cnn",
                        "dataset": "folders", "seed": r, "kind": "biasbed-folders",
                        "epoch": epoch, "train_loss": 1.0, "val_loss": 1.0 - val[epoch],
                        "val_acc": val[epoch], "test_set": test_set, "tag": "all",
                        "acc": rng.uniform(0.2, 0.9), "n": 10,
                    })
    return pd.DataFrame(rows)


def _best_validation_means(epochs: pd.DataFrame, blocks=TEST_SETS) -> pd.DataFrame:
    """Test sets × algorithms: mean over runs of the test score at each run's best-val epoch."""
    out = pd.DataFrame(index=list(blocks), columns=list(ALGORITHMS), dtype=float)
    for algorithm in ALGORITHMS:
        runs = epochs[epochs["algorithm"] == algorithm].groupby("run")
        for test_set in blocks:
            scores = []
            for _, run in runs:
                best = run.loc[run["val_acc"].idxmax(), "epoch"]
                scores.append(run[(run["epoch"] == best) & (run["test_set"] == test_set)]
                              ["acc"].item())
            out.loc[test_set, algorithm] = np.mean(scores)
    return out


def _mean_ranks(means: pd.DataFrame) -> pd.Series:
    """Mean over blocks of the within-block rank (1 = highest accuracy)."""
    ranks = np.array([stats.rankdata(-row) for row in means.to_numpy()])
    return pd.Series(ranks.mean(axis=0), index=means.columns)


# --- the run plan --------------------------------------------------------------------------


def test_a_given_lr_is_kept_under_the_biasbed_preset() -> None:
    """The authors' erm config uses lr 1e-4 (``BIASBED_LR``) when none is given; an explicit
    ``--lr`` wins."""
    assert ProtocolSettings(("erm",), preset="biasbed").run_config("erm", 0).lr == 1e-4
    given = ProtocolSettings(("erm",), preset="biasbed", lr=1e-3).run_config("erm", 0)
    assert given.lr == 1e-3


def test_the_biasbed_preset_trains_its_100_epochs_unless_told_otherwise() -> None:
    """BiasBed averages the last 30 of 100 epochs (Table 3): without ``epochs`` the preset's 100
    stand; only a run without preset and epochs is the quick ``FAST_EPOCHS`` one."""
    assert BIASBED.values["epochs"] == 100
    assert ProtocolSettings(("erm",), preset="biasbed").run_config("erm", 0).epochs == 100
    assert ProtocolSettings(("erm",)).run_config("erm", 0).epochs == FAST_EPOCHS
    assert ProtocolSettings(("erm",), preset="biasbed", epochs=3).run_config("erm", 0).epochs == 3


def test_repeated_seeds_are_refused() -> None:
    """Two runs with one seed are one run counted twice (the same job id)."""
    with pytest.raises(ProtocolError, match="distinct non-negative"):
        ProtocolSettings(("erm",), seeds=(0, 0)).check()
    with pytest.raises(ProtocolError, match="distinct non-negative"):
        ProtocolSettings(("erm",), seeds=(1, -1)).check()
    ProtocolSettings(("erm",), seeds=(3, 7)).check()


def test_protocol_json_records_each_runs_own_seed(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protocol, "run_jobs", lambda jobs, out, **kw: RunSummary([]))
    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]},
                           folders["map"], 16)
    planned = build_protocol_jobs([exp], ProtocolSettings(("erm",), seeds=(3, 7), epochs=1))
    run_protocol(planned, tmp_path, progress=False)
    meta = read_protocol(tmp_path)
    assert sorted((m["run"], m["seed"]) for m in meta.values()) == [(0, 3), (1, 7)]
    assert {job_id: m["seed"] for job_id, m in meta.items()} == {
        p.job.job_id: p.job.train.seed for p in planned}


# --- competitors.csv -----------------------------------------------------------------------


def _job(**kw: Any) -> dict[str, Any]:
    base = {"algorithm": "erm", "dataset": "imagenet", "run": 0, "seed": 0,
            "kind": "biasbed-folders", "experiment": "folders:imagenet", "model": "small_cnn",
            "epochs": 3, "preset": "default", "pretrained": None, "train_dir": "/data/in",
            "in_distribution": [], "metric": "top1", "precision": "fp32", "lr": 0.001}
    return {**base, **kw}


def test_competitor_table_keeps_models_apart_and_older_jobs(tmp_path: Path) -> None:
    """One row per (algorithm, training set, model, recipe...) with its number of runs; a job
    recorded before ``train_dir`` was (an older invocation on the same folder) is still a
    competitor, not silently dropped."""
    older = _job(dataset="stylized", experiment="folders:stylized")
    del older["train_dir"]
    jobs = {"a": _job(), "b": _job(run=1, seed=1), "c": _job(model="resnet18"), "d": older}
    (tmp_path / "protocol.json").write_text(json.dumps({"version": 1, "jobs": jobs}))
    table = competitor_table(tmp_path)
    got = sorted(zip(table["dataset"], table["model"], table["runs"], strict=True))
    assert got == [("imagenet", "resnet18", 1), ("imagenet", "small_cnn", 2),
                   ("stylized", "small_cnn", 1)]
    assert table["runs"].sum() == len(jobs)


# --- the report ----------------------------------------------------------------------------


def test_compare_algorithms_defaults_to_table_2s_best_validation_rule() -> None:
    """BiasBed's Table 2 (and ``biasbed report``) select by the best validation epoch; the
    default of ``compare_algorithms`` is that rule, checked against a hand computation."""
    epochs = _epochs()
    expected = _mean_ranks(_best_validation_means(epochs))
    result = compare_algorithms(epochs)
    pd.testing.assert_series_equal(result.ranks[list(ALGORITHMS)], expected,
                                   check_names=False)
    last = compare_algorithms(epochs, "last_n").ranks[list(ALGORITHMS)]
    assert not np.allclose(last.to_numpy(), expected.to_numpy())  # the rules disagree here


def test_rule_gap_frame_shows_the_asked_rule() -> None:
    table = pd.DataFrame({
        "algorithm": ["erm"], "dataset": ["d"], "test_set": ["cue"],
        "best_epoch": [0.80], "best_validation": [0.75], "last_n": [0.70],
    })
    assert rule_gap_frame(table, "last_n").loc["erm", "cue"] == "80.0 / 70.0 (-10.0)"
    assert rule_gap_frame(table, "best_validation").loc["erm", "cue"] == "80.0 / 75.0 (-5.0)"


def _section(epochs: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> str:
    competitors = pd.DataFrame({"algorithm": list(ALGORITHMS), "dataset": "folders",
                                "metric": "top1", "runs": N_RUNS})
    monkeypatch.setattr(report, "load_epochs", lambda run_dir: epochs)
    monkeypatch.setattr(report, "competitor_table", lambda run_dir: competitors)
    monkeypatch.setattr(report, "strict_test_sets", lambda run_dir: ["t1"])
    page = HtmlReport("BiasBed report")
    add_biasbed_section(page, "unused", **kw)
    return page.render()


def test_report_text_states_runs_epochs_and_the_friedman_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sentence a reader quotes: runs per competitor, epochs trained, Friedman χ² and its
    p-value (scipy's ``friedmanchisquare``: no ties here), Iman-Davenport's F(k − 1,
    (k − 1)(N − 1)) and its p-value (Demšar 2006, eq. for F_F)."""
    epochs = _epochs()
    html = _section(epochs, monkeypatch)
    assert f"2–2 runs each (different training seeds), {N_EPOCHS} epochs," in html
    means = _best_validation_means(epochs)
    chi2, p = stats.friedmanchisquare(*(means[a] for a in ALGORITHMS))
    k, n = len(ALGORITHMS), len(TEST_SETS)
    f = (n - 1) * chi2 / (n * (k - 1) - chi2)
    df_num, df_den = k - 1, (k - 1) * (n - 1)
    p_f = stats.f.sf(f, df_num, df_den)
    assert f"Friedman χ² = {chi2:.3f} (p = {p:.3g})" in html
    assert f"Iman-Davenport F({df_num}, {df_den}) = {f:.3f}, p = {p_f:.3g}" in html
    assert f"{p:.3g}" != f"{p_f:.3g}"  # the two p-values are told apart


def test_ranks_under_each_rule_respect_the_strict_setting() -> None:
    """The "mean rank under each rule" table uses the same comparison options as the test
    (here: the strict setting leaves out t1)."""
    epochs = _epochs()
    options = {"exclude_test_sets": ["t1"]}
    ranks, errors = _rank_table(epochs, 1, 0.05, options)
    assert not errors
    expected = _mean_ranks(_best_validation_means(epochs, TEST_SETS[1:]))
    everything = _mean_ranks(_best_validation_means(epochs))
    assert not np.allclose(expected.to_numpy(), everything.to_numpy())  # t1 matters
    np.testing.assert_allclose(ranks.loc[list(ALGORITHMS), "best validation epoch"], expected)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.05, 5.0, float("nan")])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha: float) -> None:
    with pytest.raises(StatsError, match="strictly between 0 and 1"):
        check_alpha(alpha)


def test_alpha_inside_the_unit_interval_is_accepted() -> None:
    for alpha in (0.05, 0.1, 0.999):
        check_alpha(alpha)


def test_jobs_recorded_before_pretrained_was_count_as_from_scratch(tmp_path: Path) -> None:
    """A job written before ``pretrained`` was recorded reads "no" (as when no job records it),
    not "nan": one competitor run over two invocations is one row "no" with both runs."""
    older = _job(run=1, seed=1)
    del older["pretrained"]
    (tmp_path / "protocol.json").write_text(json.dumps({"version": 1, "jobs": {
        "a": _job(), "b": older}}))
    table = competitor_table(tmp_path)
    assert list(table["pretrained"]) == ["no"] and list(table["runs"]) == [2]
