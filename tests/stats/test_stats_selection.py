import pandas as pd
import pytest

from shortcutlab.errors import StatsError
from shortcutlab.stats import compare, compare_rules, runs_for_comparison, select

VAL = {"r1": [0.5, 0.7, 0.7, 0.6], "r2": [0.1, 0.2, 0.3, 0.9]}
T1 = {"r1": [0.2, 0.4, 0.9, 0.3], "r2": [0.5, 0.5, 0.5, 0.1]}
T2 = {"r1": [0.5, 0.1, 0.2, 0.6], "r2": [0.0, 0.0, 0.0, 1.0]}


def wide() -> pd.DataFrame:
    rows = []
    for run in ("r1", "r2"):
        for e in range(4):
            rows.append(
                {
                    "run": run,
                    "algorithm": "A",
                    "epoch": e + 1,
                    "val_acc": VAL[run][e],
                    "test_t1": T1[run][e],
                    "test_t2": T2[run][e],
                }
            )
    return pd.DataFrame(rows)


def long() -> pd.DataFrame:
    """The runner's collect_epochs layout: job_id, epoch, val_acc, test_set, tag, acc."""
    rows = []
    for run in ("r1", "r2"):
        for e in range(4):
            for name, table in (("test_t1", T1), ("test_t2", T2)):
                base = {"job_id": run, "epoch": e + 1, "val_acc": VAL[run][e], "test_set": name}
                rows.append({**base, "tag": "all", "acc": table[run][e]})
                rows.append({**base, "tag": "00-ood", "acc": 99.0})  # ignored: not 'all'
    return pd.DataFrame(rows)


def scores(df: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {(r, t): s for r, t, s in zip(df["run"], df["test_set"], df["score"], strict=True)}


def test_rules_on_hand_computed_records():
    oracle = select(wide(), "best_epoch")
    assert scores(oracle) == {
        ("r1", "test_t1"): 0.9, ("r1", "test_t2"): 0.6,
        ("r2", "test_t1"): 0.5, ("r2", "test_t2"): 1.0,
    }  # fmt: skip
    assert oracle.set_index(["run", "test_set"])["epoch"].to_dict()[("r2", "test_t1")] == 1
    best_val = select(wide(), "best_validation")  # r1: epochs 2 and 3 tie -> earliest (2)
    assert scores(best_val) == {
        ("r1", "test_t1"): 0.4, ("r1", "test_t2"): 0.1,
        ("r2", "test_t1"): 0.1, ("r2", "test_t2"): 1.0,
    }  # fmt: skip
    last = scores(select(wide(), "last_n", n_last=2))
    assert last[("r1", "test_t1")] == pytest.approx(0.6)
    assert last[("r2", "test_t2")] == pytest.approx(0.5)


def test_long_layout_gives_same_selection():
    for rule in ("best_epoch", "last_n", "best_validation"):
        a = scores(select(wide(), rule, n_last=2))
        b = scores(select(long(), rule, n_last=2))
        assert a == pytest.approx(b)


def test_validation_loss_is_minimised():
    df = wide().rename(columns={"val_acc": "val_loss"})
    df["val_loss"] = -df["val_loss"]
    assert scores(select(df, "best_validation", val_col="val_loss")) == scores(
        select(wide(), "best_validation")
    )


def test_compare_rules_table1_shape():
    table = compare_rules(wide(), n_last=2).set_index(["algorithm", "test_set"])
    row = table.loc[("A", "test_t1")]
    assert row["best_epoch"] == pytest.approx(0.7)
    assert row["best_validation"] == pytest.approx(0.25)
    assert row["best_validation_minus_oracle"] == pytest.approx(-0.45)
    assert row["last_n"] == pytest.approx(0.45)
    assert row["n_runs"] == 2
    # The oracle is an upper bound of every honest rule.
    assert (table.filter(like="_minus_oracle") <= 1e-12).all().all()


def test_selection_feeds_compare():
    a, b = wide(), wide()
    b["algorithm"] = "B"
    b[["test_t1", "test_t2"]] = b[["test_t1", "test_t2"]] + 0.05  # B better everywhere
    picked = select(
        pd.concat([a, b]).assign(run=lambda d: d["algorithm"] + d["run"]), "last_n", n_last=2
    )
    result = compare(runs_for_comparison(picked))
    assert result.ranks.to_dict() == {"A": 2.0, "B": 1.0}
    assert result.blocks == ["test_t1", "test_t2"] and result.n_runs.to_numpy().min() == 2


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        (lambda d: d.drop(columns="run"), {}, "no run column"),
        (lambda d: d, {"val_col": "val_top5"}, "unknown validation column 'val_top5'"),
        (lambda d: d, {"test_cols": ["test_t9"]}, "unknown test column 'test_t9'"),
        (lambda d: d.assign(test_t1=d["test_t1"].where(d["epoch"] != 3)), {}, "run r1 epoch 3"),
        (lambda d: pd.concat([d, d.head(1)]), {}, "duplicated per-epoch record.*run r1 epoch 1"),
        (lambda d: d, {"n_last": 9}, "needs ≥9 epochs per run; short: r1 \\(4 epochs\\)"),
        # last-0 would silently average every epoch
        (lambda d: d, {"n_last": 0}, "n_last must be a whole number ≥1, got 0"),
        # 2.5 epochs has no meaning (it failed with an IndexError deep in numpy before)
        (lambda d: d, {"n_last": 2.5}, "n_last must be a whole number ≥1, got 2.5"),
        (lambda d: d, {"n_last": True}, "n_last must be a whole number ≥1, got True"),
        # epochs logged as fractions (steps): "the last n epochs" would be n logging points
        (lambda d: d.assign(epoch=d["epoch"] / 2), {"n_last": 2},
         "epoch 0.5 of run r1: epochs must be whole numbers"),
    ],
)
def test_bad_records(change, kwargs, match):
    with pytest.raises(StatsError, match=match):
        select(change(wide()), "last_n", **kwargs)


def test_a_whole_float_n_last_is_that_many_epochs() -> None:
    """``n_last=2.0`` (from a JSON or YAML config) selects exactly as ``n_last=2``."""
    pd.testing.assert_frame_equal(select(wide(), "last_n", n_last=2.0),
                                  select(wide(), "last_n", n_last=2))


def test_unknown_rule():
    with pytest.raises(
        StatsError, match="unknown selection rule 'best'; valid choices: best_epoch"
    ):
        select(wide(), "best")


def test_missing_values_are_named_without_numpy_reprs() -> None:
    import numpy as np

    from shortcutlab.errors import StatsError
    from shortcutlab.stats.selection import _as_float

    values = pd.Series([0.5, np.nan])
    with pytest.raises(StatsError) as err:
        _as_float(values, "val_acc", pd.Series(np.array([3, 3])), pd.Series([0.0, 1.0]))
    assert str(err.value).endswith("at run 3 epoch 1.0 (nan)") and "np." not in str(err.value)


def test_last_n_mean_does_not_depend_on_the_epoch_order():
    # the same last-3 scores in another epoch order give the same mean (a tie stays a tie)
    rows = [{"run": "a", "epoch": e, "val_acc": 0.5, "test_x": v}
            for e, v in enumerate([0.1, 0.2, 0.3])]
    rows += [{"run": "b", "epoch": e, "val_acc": 0.5, "test_x": v}
             for e, v in enumerate([0.3, 0.2, 0.1])]
    picked = select(pd.DataFrame(rows), "last_n", n_last=3).set_index("run")["score"]
    assert picked["a"] == picked["b"]


def test_run_numbers_may_repeat_across_algorithms():
    # runs numbered 0, 1 per algorithm (seeds) are different runs, not duplicated records
    a, b = wide(), wide()
    b["algorithm"] = "B"
    b[["test_t1", "test_t2"]] = b[["test_t1", "test_t2"]] + 0.05
    both = pd.concat([a, b], ignore_index=True)
    unique = both.assign(run=both["algorithm"] + both["run"])
    for rule in ("best_epoch", "last_n", "best_validation"):
        got = select(both, rule, n_last=2).sort_values(["algorithm", "run", "test_set"])
        want = select(unique, rule, n_last=2).sort_values(["algorithm", "run", "test_set"])
        assert got["score"].tolist() == want["score"].tolist(), rule
        assert len(got) == 8
    table = compare_rules(both, n_last=2)
    assert (table["n_runs"] == 2).all()


def test_a_missing_test_set_record_is_refused():
    # r1's best-validation epoch (2) has no test_t1 record: r1 would silently drop out of test_t1
    records = long()
    gap = (records["job_id"] == "r1") & (records["epoch"] == 2) & (records["test_set"] == "test_t1")
    with pytest.raises(StatsError, match="run r1 epoch 2 has no record for test set test_t1"):
        select(records[~gap], "best_validation")


def test_a_validation_score_that_differs_between_test_sets_is_refused():
    # r1 epoch 2 (val 0.7, the best-validation epoch) says val 0.9 on its test_t2 rows: which
    # epoch is the best one would depend on the test set
    records = long()
    odd = (records["job_id"] == "r1") & (records["epoch"] == 2) & (records["test_set"] == "test_t2")
    records.loc[odd, "val_acc"] = 0.9
    with pytest.raises(StatsError, match="run r1 epoch 2 has different validation scores"):
        select(records, "best_validation")


def test_compare_rules_std_is_the_sample_std_over_runs():
    """Table 1's ± is the spread over runs (std, ddof=1), by hand from the two runs' picks."""
    row = compare_rules(wide(), n_last=2).set_index(["algorithm", "test_set"]).loc[("A", "test_t1")]
    assert row["best_epoch_std"] == pytest.approx(abs(0.9 - 0.5) / 2**0.5)  # r1 0.9, r2 0.5
    assert row["best_validation_std"] == pytest.approx(abs(0.4 - 0.1) / 2**0.5)  # 0.4, 0.1
    assert row["last_n_std"] == pytest.approx(abs(0.6 - 0.3) / 2**0.5)  # (.9+.3)/2, (.5+.1)/2
