import itertools

import numpy as np
import pandas as pd
import pytest

from shortcutlab.diagvib.comparison import add_comparison_section, compare_study, study_runs
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.errors import StatsError
from shortcutlab.utils.html import HtmlReport

PAIRS = list(itertools.permutations(FACTORS, 2))  # the 30 ordered factor pairs


def job_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    skill = {"cnn": 0.8, "resnet": 0.6, "mlp": 0.4}
    for model, (p, c), sample, seed in itertools.product(skill, PAIRS, (0, 1), (0, 1)):
        acc = skill[model] + 0.05 * rng.normal()
        rows.append((model, "ERM", "ZGO", p, c, sample, seed, "done", acc))
    for p, sample in itertools.product(FACTORS, (0, 1)):
        rows.append(("cnn", "ERM", "ZSO", p, "", sample, 0, "done", 0.9))
    rows.append(("cnn", "ERM", "ZGO", "hue", "shape", 2, 0, "failed", np.nan))  # ignored
    cols = ["model", "algorithm", "study", "predicted", "correlated", "sample", "seed", "status"]
    return pd.DataFrame(rows, columns=[*cols, "test_acc"])


def test_models_compared_over_the_30_factor_pairs():
    result = compare_study(job_table(), "ZGO")
    assert len(result.blocks) == 30 and "hue-shape" in result.blocks
    assert result.ranks.sort_values().index.tolist() == ["cnn", "resnet", "mlp"]
    assert result.significant
    assert result.n_runs.to_numpy().min() == 4  # 2 samples × 2 seeds, failed job dropped
    table = job_table()
    sel = table[
        (table.model == "resnet") & (table.predicted == "hue") & (table.correlated == "shape")
    ]
    assert result.means.loc["hue-shape", "resnet"] == pytest.approx(sel.test_acc.mean())


def test_incomplete_pairs_error_or_are_dropped():
    table = job_table()
    table = table[~((table.model == "mlp") & (table.predicted == "hue"))]
    with pytest.raises(StatsError, match="ragged.*hue-"):
        compare_study(table, "ZGO")
    runs, dropped = study_runs(table, "ZGO", complete_only=True)
    assert len(dropped) == 5 and runs["block"].nunique() == 25


def test_unknown_study_and_missing_columns():
    with pytest.raises(StatsError, match="unknown study 'FGO-5'; valid choices: ZGO, ZSO"):
        compare_study(job_table(), "FGO-5")
    with pytest.raises(StatsError, match="lacks column.*seed"):
        compare_study(job_table().drop(columns="seed"), "ZGO")


def test_report_section():
    report = HtmlReport("t")
    add_comparison_section(report, job_table())
    html = report.render()
    assert "Study ZGO" in html and "Iman-Davenport" in html and "data:image/png;base64" in html
    assert "Only one model (cnn)" in html  # ZSO has a single model: said plainly
    assert "3 models over 30 factor pairs" in html


def test_report_section_for_single_factor_studies():
    table = job_table()
    zso = table[table.study == "ZSO"]
    other = zso.assign(model="mlp", test_acc=0.5)
    report = HtmlReport("t")
    add_comparison_section(report, pd.concat([zso, other]))
    html = report.render()
    assert "2 models over 6 predicted factors" in html and "F(1, 5) = ∞" in html
    assert "read the Friedman p-value instead" in html


def test_only_done_jobs_are_compared_not_a_pending_jobs_old_value():
    """A job reset to pending keeps the metric of an earlier attempt in its row; only jobs with
    status done count (a run that cannot be proven to belong to its job is never counted)."""
    table = job_table()
    stale = ("cnn", "ERM", "ZGO", "hue", "shape", 2, 0, "pending", 0.0)
    table = pd.concat([table, pd.DataFrame([stale], columns=table.columns)], ignore_index=True)
    runs, _ = study_runs(table, "ZGO")
    cell = runs[(runs["block"] == "hue-shape") & (runs["algorithm"] == "cnn")]
    assert sorted(cell["run"]) == ["0/0", "0/1", "1/0", "1/1"]
    done = table[(table.model == "cnn") & (table.predicted == "hue")
                 & (table.correlated == "shape") & (table.status == "done")]
    result = compare_study(table, "ZGO")
    assert result.means.loc["hue-shape", "cnn"] == pytest.approx(done.test_acc.mean())
    assert result.n_runs.to_numpy().max() == 4


def test_default_alpha_gives_demsars_critical_difference():
    """BiasBed (and Demšar 2006) test at α = 0.05: for k = 3 models, q_0.05 = 2.343 (Demšar's
    Table 5a), so over N = 30 factor pairs CD = 2.343 * sqrt(k (k + 1) / (6 N)) = 0.605."""
    result = compare_study(job_table(), "ZGO")
    assert result.critical_difference == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 30)),
                                                       abs=1e-3)


def test_report_section_drops_pairs_a_model_lacks_and_compares_the_rest():
    table = job_table()
    table = table[~((table.model == "mlp") & (table.predicted == "hue"))]
    report = HtmlReport("t")
    add_comparison_section(report, table)
    html = report.render()
    assert "Left out 5 factor pair(s) not run for every model" in html
    assert "3 models over 25 factor pairs" in html


def test_a_model_at_two_scales_is_two_competitors_and_a_bad_table_is_refused():
    """compare_study and the report section read a collected job table under the names the
    metrics report (one model at two scales is two entries), with the metrics' refusals: the
    1 %-scale demo run of cnn is not pooled into cnn's full-scale runs."""
    from shortcutlab.diagvib.metrics import MetricsError

    full = job_table().assign(scale=1.0)
    demo = full[full.model == "cnn"].assign(scale=0.01, test_acc=0.2)
    table = pd.concat([full, demo], ignore_index=True)
    result = compare_study(table, "ZGO")
    assert sorted(result.ranks.index) == ["cnn@scale=0.01", "cnn@scale=1", "mlp", "resnet"]
    assert result.ranks.idxmax() == "cnn@scale=0.01"  # the worst, ranked apart
    report = HtmlReport("t")
    add_comparison_section(report, table)
    assert "4 models over 30 factor pairs" in report.render()
    table["job_id"] = [f"j{i}" for i in range(len(table))]
    table.loc[1, "job_id"] = "j0"
    with pytest.raises(MetricsError, match="lists job_id 'j0' more than once"):
        compare_study(table, "ZGO")
