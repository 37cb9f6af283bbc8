"""diagvib.checkpoints: the checkpoint rules against answers computed by hand with pandas, and
the spread of the test accuracy over the last epochs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shortcutlab.diagvib.checkpoints import (
    apply_checkpoint,
    job_spread,
    parse_checkpoint,
    select_checkpoint,
)
from shortcutlab.errors import DiagvibError

# its module-scoped fixtures are computed once: every test of the module on one xdist worker
pytestmark = pytest.mark.xdist_group("test_checkpoints")

RNG = np.random.default_rng(3)


def _epochs(job: str, n: int, val: list[float] | None = None) -> pd.DataFrame:
    val = val if val is not None else list(RNG.uniform(0, 1, n))
    rows = []
    for e in range(n):
        for tag in ("all", "00-id", "01-ood"):
            rows.append({"job_id": job, "epoch": e, "train_loss": 0.1, "val_loss": val[e],
                         "val_acc": 0.9, "test_set": "test", "tag": tag,
                         "acc": float(RNG.uniform(0, 1)), "n": 10})
    return pd.DataFrame(rows)


@pytest.fixture
def epochs() -> pd.DataFrame:
    # job a: two epochs share the lowest val loss (the earliest counts, as in the trainer)
    return pd.concat([_epochs("a", 12, [0.5, 0.2, 0.3, 0.2, *[0.9] * 8]), _epochs("b", 6)],
                     ignore_index=True)


def _by_hand(epochs: pd.DataFrame, rule: str) -> pd.Series:
    """(job, tag) -> accuracy, computed directly with pandas."""
    out = {}
    for (job, tag), g in epochs.groupby(["job_id", "tag"]):
        g = g.sort_values("epoch")
        if rule == "lowest-val-loss":
            pos = int(np.argmin(g["val_loss"].to_numpy()))  # first minimum
            out[(job, tag)] = g["acc"].iloc[pos]
        elif rule == "last":
            out[(job, tag)] = g["acc"].iloc[-1]
        else:
            out[(job, tag)] = g["acc"].iloc[-int(rule.rsplit("-", 1)[1]):].mean()
    return pd.Series(out)


@pytest.mark.parametrize("rule", ["lowest-val-loss", "last", "mean-last-1", "mean-last-5"])
def test_rules_equal_the_hand_computed_answer(epochs, rule) -> None:
    got = select_checkpoint(epochs, rule).set_index(["job_id", "tag"])["acc"]
    want = _by_hand(epochs, rule)
    assert sorted(got.index) == sorted(want.index)
    assert np.allclose(got[want.index].to_numpy(), want.to_numpy())
    if rule == "lowest-val-loss":
        a = epochs.query("job_id == 'a' and tag == 'all'")
        assert got.loc[("a", "all")] == a["acc"].iloc[1]


def test_selected_epochs(epochs) -> None:
    lowest = select_checkpoint(epochs, "lowest-val-loss").set_index(["job_id", "tag"])["epoch"]
    assert lowest[("a", "all")] == 1  # tie between epochs 1 and 3: the earliest
    last = select_checkpoint(epochs, "last").set_index(["job_id", "tag"])["epoch"]
    assert last[("a", "all")] == 11 and last[("b", "all")] == 5
    assert select_checkpoint(epochs, "mean-last-3")["epoch"].isna().all()


@pytest.mark.parametrize("bad", ["best", "mean-last-0", "mean-last-k", "mean-last-", ""])
def test_unknown_rule_names_the_choices(bad) -> None:
    with pytest.raises(DiagvibError, match="valid choices: lowest-val-loss, last, mean-last-K"):
        parse_checkpoint(bad)


def test_too_few_epochs_for_mean_last_k_names_the_job(epochs) -> None:
    with pytest.raises(DiagvibError, match="mean-last-8.*b \\(6 epochs\\)"):
        select_checkpoint(epochs, "mean-last-8")


def test_apply_replaces_test_acc_and_cell_columns_only_for_other_rules(epochs) -> None:
    table = pd.DataFrame({"job_id": ["a", "b", "c"], "status": ["done", "done", "pending"],
                          "test_acc": [0.5, 0.6, np.nan], "test_acc@00-id": [0.1, 0.2, np.nan],
                          "best_epoch": [1, 2, np.nan]})
    assert apply_checkpoint(table, epochs, "lowest-val-loss") is table  # default: unchanged
    last = apply_checkpoint(table, epochs, "last")
    want = _by_hand(epochs, "last")
    assert last["test_acc"].tolist()[:2] == [want[("a", "all")], want[("b", "all")]]
    assert last["test_acc@00-id"].tolist()[:2] == [want[("a", "00-id")], want[("b", "00-id")]]
    assert last["test_acc@01-ood"].tolist()[:2] == [want[("a", "01-ood")], want[("b", "01-ood")]]
    assert last["best_epoch"].tolist()[:2] == [11, 5] and np.isnan(last["test_acc"].iloc[2])
    with pytest.raises(DiagvibError, match="finished job b has none"):
        apply_checkpoint(table, epochs[epochs["job_id"] == "a"], "last")


def test_spread_is_min_max_of_the_last_ten_epochs(epochs) -> None:
    spread = job_spread(epochs).set_index("job_id")
    a = epochs.query("job_id == 'a' and tag == 'all'").sort_values("epoch")
    assert spread.loc["a", "epochs_run"] == 12 and spread.loc["a", "selected_epoch"] == 1
    assert spread.loc["a", "acc_selected"] == a["acc"].iloc[1]
    assert spread.loc["a", "acc_min"] == a["acc"].iloc[2:].min()
    assert spread.loc["a", "acc_max"] == a["acc"].iloc[2:].max()
    b = epochs.query("job_id == 'b' and tag == 'all'")
    assert spread.loc["b", "acc_min"] == b["acc"].min()  # fewer than ten epochs: all of them


def test_spread_reads_the_last_epochs_not_the_first() -> None:
    # 15 epochs whose test accuracy rises by 0.05 an epoch: the last ten (epochs 5..14) span
    # 0.25..0.70; the first ten would span 0.00..0.45
    rows = [{"job_id": "j", "epoch": e, "val_loss": 1.0 - e / 100, "test_set": "test",
             "tag": "all", "acc": e * 0.05} for e in range(15)]
    spread = job_spread(pd.DataFrame(rows)).set_index("job_id")
    assert spread.loc["j", "epochs_run"] == 15 and spread.loc["j", "selected_epoch"] == 14
    assert spread.loc["j", "acc_min"] == pytest.approx(0.25)
    assert spread.loc["j", "acc_max"] == pytest.approx(0.70)
    three = job_spread(pd.DataFrame(rows), last=3).set_index("job_id")
    assert three.loc["j", "acc_min"] == pytest.approx(0.60)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    out = tmp_path_factory.mktemp("run")
    done = CliRunner().invoke(app, [
        "diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--pairs", "hue-shape",
        "--pairs", "shape-hue", "--scale", "0.002", "--epochs", "3", "--device", "cpu",
        "--backend", "serial", "--out", str(out)])
    assert done.exit_code == 0, done.output
    return out


def _zso(cli_args: list[str]) -> dict[str, float]:
    import json

    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    res = CliRunner().invoke(app, ["diagvib", "metrics", *cli_args, "--json"])
    assert res.exit_code == 0, res.output
    [model] = json.loads(res.output)["models"].values()
    return {factor: v["mean"] for factor, v in model["ZSO"]["P"].items()}


def test_cli_default_is_the_paper_rule_and_last_is_the_last_epoch(run_dir) -> None:
    import json

    from shortcutlab.runner.collect import collect_epochs

    epochs = collect_epochs(run_dir)
    results = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/result.json")}
    # the paper's rule recomputed from epochs.parquet is what the jobs report today
    lowest = select_checkpoint(epochs, "lowest-val-loss").query("tag == 'all'")
    assert {r.job_id: r.acc for r in lowest.itertuples()} == {
        k: v["test_acc"] for k, v in results.items()}
    default = _zso([str(run_dir)])
    assert default == _zso([str(run_dir), "--checkpoint", "lowest-val-loss"])
    jobs = {json.loads((run_dir / k / "job.json").read_text())["experiment"].split("/")[1]: k
            for k in results}
    assert default == {f: results[jobs[f]]["test_acc"] for f in jobs}
    by_hand = epochs[(epochs["tag"] == "all") & (epochs["epoch"] == 2)].set_index("job_id")["acc"]
    assert _zso([str(run_dir), "--checkpoint", "last"]) == {f: by_hand[jobs[f]] for f in jobs}
    three = epochs[epochs["tag"] == "all"].groupby("job_id")["acc"].mean()
    mean3 = _zso([str(run_dir), "--checkpoint", "mean-last-3"])
    assert mean3 == pytest.approx({f: three[jobs[f]] for f in jobs})


def test_cli_bad_rule_and_table_without_epochs_are_one_line_errors(run_dir, tmp_path) -> None:
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    runner = CliRunner()
    bad = runner.invoke(app, ["diagvib", "metrics", str(run_dir), "--checkpoint", "best"])
    assert bad.exit_code == 2 and "valid choices: lowest-val-loss, last, mean-last-K" in bad.output
    few = runner.invoke(app, ["diagvib", "metrics", str(run_dir), "--checkpoint", "mean-last-4"])
    assert few.exit_code == 2 and "(3 epochs)" in few.output
    table = run_dir / "jobs.csv"
    assert table.is_file()
    csv = runner.invoke(app, ["report", str(table), "--out", str(tmp_path / "r"),
                              "--checkpoint", "last"])
    assert csv.exit_code == 2 and "needs the jobs' per-epoch records" in csv.output
    assert not (tmp_path / "r").exists()


def test_report_names_the_rule_and_shows_the_noise(run_dir, tmp_path) -> None:
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    res = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "r"),
                                   "--checkpoint", "mean-last-2"])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r" / "index.html").read_text()
    assert "the mean over the last 2 epochs" in html and "Checkpoint noise" in html
    default = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "d")])
    assert default.exit_code == 0
    assert "the checkpoint with the lowest validation loss" in (
        tmp_path / "d" / "index.html").read_text()


def test_checkpoint_rules_fill_test_acc_from_each_jobs_first_test_set() -> None:
    """Two test sets per job: ``test_acc`` is the first's (as the runner's own ``test_acc``),
    the second's numbers never replace it."""
    first = _epochs("a", 3)
    second = first.assign(test_set="zz", acc=first["acc"] + 0.01)
    epochs = pd.concat([first, second], ignore_index=True)
    table = pd.DataFrame({"job_id": ["a"], "status": ["done"], "test_acc": [np.nan],
                          "best_epoch": [0]})
    out = apply_checkpoint(table, epochs, "last")
    want = first[(first["epoch"] == 2) & (first["tag"] == "all")]["acc"].item()
    assert out["test_acc"].item() == want
    assert out["test_acc@01-ood"].item() == first[
        (first["epoch"] == 2) & (first["tag"] == "01-ood")]["acc"].item()
