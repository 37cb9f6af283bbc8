"""Model-selection rules over per-epoch records (BiasBed §5 "Model selection", Table 1).

Training has no natural stopping point, so which epoch's test score counts is a rule:

- ``best_epoch``: the best test score over all epochs, per run and test set. An oracle that looks
  at the test set — cherry-picking, shown only to measure how optimistic it is;
- ``last_n``: the mean test score over the last n epochs of each run;
- ``best_validation``: the test scores at the epoch with the best training-distribution
  validation score (earliest epoch on ties).

Records are one row per (run, epoch[, test set]): either *long* with a ``test_set`` column and a
score column (``acc``/``score``/``test_acc``; when a ``tag`` column exists only tag ``all`` rows
are used — the runner's ``collect_epochs`` layout), or *wide* with one column per test metric
(default: every column whose name starts with ``test``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import pandas as pd

from shortcutlab.errors import StatsError, unknown_choice

Rule = Literal["best_epoch", "last_n", "best_validation"]
RULES: tuple[Rule, ...] = get_args(Rule)
RUN_COLUMNS = ("run", "job_id")
GROUP_COLUMNS = ("algorithm", "model", "dataset")
LONG_SCORE_COLUMNS = ("acc", "score", "test_acc")


def rule_label(rule: Rule, n_last: int = 5) -> str:
    """Human-readable name of a rule; the oracle is labelled as cherry-picking."""
    labels = {
        "best_epoch": "best epoch (oracle: cherry-picking)",
        "last_n": f"mean of last {n_last} epochs",
        "best_validation": "best validation epoch",
    }
    if rule not in labels:
        raise StatsError(unknown_choice("selection rule", rule, RULES))
    return labels[rule]


def _pick(columns: Sequence[str], given: str | None, candidates: Sequence[str], what: str) -> str:
    if given is not None:
        if given not in columns:
            raise StatsError(unknown_choice(f"{what} column", given, columns))
        return given
    for cand in candidates:
        if cand in columns:
            return cand
    raise StatsError(
        f"no {what} column: expected one of {', '.join(candidates)}; columns are "
        f"{', '.join(columns)}"
    )


def _plain(value: object) -> object:
    """A numpy scalar as the Python value it holds (messages show ``nan``, not a numpy repr)."""
    return value.item() if isinstance(value, np.generic) else value


def _as_float(values: pd.Series, what: str, runs: pd.Series, epochs: pd.Series) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce")
    bad = ~np.isfinite(num.to_numpy(dtype=float))
    if bad.any():
        idx = values.index[bad][:5]
        where = ", ".join(f"run {_plain(runs[i])} epoch {_plain(epochs[i])} "
                          f"({_plain(values[i])!r})" for i in idx)
        raise StatsError(f"missing or non-numeric {what} value(s) at {where}")
    return num.to_numpy(dtype=float)


def normalise_epochs(
    records: pd.DataFrame,
    *,
    val_col: str = "val_acc",
    test_cols: Sequence[str] | None = None,
    score_col: str | None = None,
    run_col: str | None = None,
    group_cols: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Validate per-epoch records and return them long: *groups, run, epoch, val, test_set, score.

    ``group_cols`` (default: those of algorithm, model, dataset present) and the run column
    identify a run together (runs numbered 0, 1, ... per algorithm are different runs).
    StatsError on unknown columns, non-numeric/NaN values, duplicated (run, epoch, test set)
    rows, or a validation score that differs between test-set rows of one epoch.
    """
    if not isinstance(records, pd.DataFrame) or records.empty:
        raise StatsError("per-epoch records are empty")
    cols = [str(c) for c in records.columns]
    df = records.copy()
    df.columns = cols
    run = _pick(cols, run_col, RUN_COLUMNS, "run")
    if "epoch" not in cols:
        raise StatsError(f"no 'epoch' column; columns are {', '.join(cols)}")
    if val_col not in cols:
        raise StatsError(unknown_choice("validation column", val_col, cols))
    groups = [g for g in GROUP_COLUMNS if g in cols] if group_cols is None else list(group_cols)
    for g in groups:
        if g not in cols:
            raise StatsError(unknown_choice("group column", g, cols))
    keep = [*groups, run, "epoch", val_col]
    if "test_set" in cols:
        if test_cols:
            raise StatsError("give test columns only for wide records (these have 'test_set')")
        score = _pick(cols, score_col, LONG_SCORE_COLUMNS, "score")
        if "tag" in cols:
            df = df[df["tag"].astype(str) == "all"]
            if df.empty:
                raise StatsError("records have a 'tag' column but no rows with tag 'all'")
        long = df[[*keep, "test_set", score]].rename(columns={score: "score"})
    else:
        if test_cols is None:
            test_cols = [c for c in cols if c.startswith("test") and c != val_col]
            if not test_cols:
                raise StatsError(
                    f"no test metric columns (names starting with 'test'); columns are "
                    f"{', '.join(cols)}"
                )
        for c in test_cols:
            if c not in cols or c in keep:
                raise StatsError(
                    unknown_choice("test column", c, [x for x in cols if x not in keep])
                )
        long = df[[*keep, *test_cols]].melt(
            id_vars=keep, value_vars=list(test_cols), var_name="test_set", value_name="score"
        )
    long = long.rename(columns={run: "run", val_col: "val"}).reset_index(drop=True)
    long["run"] = long["run"].astype(str)
    long["test_set"] = long["test_set"].astype(str)
    for g in groups:
        long[g] = long[g].astype(str)
    long["epoch"] = _as_float(long["epoch"], "epoch", long["run"], long["epoch"])
    odd = long["epoch"][(long["epoch"] < 0) | (long["epoch"] % 1 != 0)]
    if len(odd):  # "last n epochs" and "earliest epoch" need epochs to be counts
        raise StatsError(f"epoch {odd.iloc[0]:g} of run {long['run'][odd.index[0]]}: epochs "
                         "must be whole numbers >= 0")
    long["val"] = _as_float(long["val"], f"validation ({val_col})", long["run"], long["epoch"])
    long["score"] = _as_float(long["score"], "test score", long["run"], long["epoch"])
    dup = long.duplicated([*groups, "run", "epoch", "test_set"], keep=False)
    if dup.any():
        ex = long[dup].head(4)
        items = "; ".join(
            f"run {r} epoch {e:g} test set {t}"
            for r, e, t in zip(ex["run"], ex["epoch"], ex["test_set"], strict=True)
        )
        raise StatsError(f"duplicated per-epoch record(s): {items}")
    grid = long.groupby([*groups, "run"])[["epoch", "test_set"]].nunique()
    size = long.groupby([*groups, "run"]).size()
    gaps = size[size < grid["epoch"] * grid["test_set"]]
    if len(gaps):  # a (run, epoch) without some test set: a rule would silently skip the run
        part = long.set_index([*groups, "run"]).loc[[gaps.index[0]]]
        have = set(zip(part["epoch"], part["test_set"], strict=True))
        e, t = next((e, t) for e in sorted(set(part["epoch"]))
                    for t in sorted(set(part["test_set"])) if (e, t) not in have)
        r = gaps.index[0] if isinstance(gaps.index[0], str) else gaps.index[0][-1]
        raise StatsError(f"run {r} epoch {e:g} has no record for test set {t}; every epoch of a "
                         "run needs a score on each of its test sets")
    per_epoch_val = long.groupby([*groups, "run", "epoch"])["val"].nunique()
    if (per_epoch_val > 1).any():
        *_, r, e = per_epoch_val[per_epoch_val > 1].index[0]
        raise StatsError(f"run {r} epoch {e:g} has different validation scores across test sets")
    return long[[*groups, "run", "epoch", "val", "test_set", "score"]]


def _group_cols(norm: pd.DataFrame) -> list[str]:
    return [c for c in norm.columns if c not in ("run", "epoch", "val", "test_set", "score")]


def _first_best(frame: pd.DataFrame, by: str, keys: list[str], lower: bool) -> pd.DataFrame:
    """Row per ``keys`` group with the best ``by`` value, the earliest epoch on ties."""
    ordered = frame.sort_values([*keys, "epoch"], kind="stable")
    value = ordered[by] if lower else -ordered[by]
    best = value.groupby([ordered[k] for k in keys]).transform("min")
    winners = ordered[value == best]
    return winners.drop_duplicates(keys, keep="first")


def best_epoch(norm: pd.DataFrame, lower_is_better: bool = False) -> pd.DataFrame:
    """Oracle (cherry-picking): best test score over epochs per run and test set."""
    keys = [*_group_cols(norm), "run", "test_set"]
    picked = _first_best(norm, "score", keys, lower_is_better)
    return picked[[*keys, "score", "epoch"]].reset_index(drop=True)


def last_n_epochs(norm: pd.DataFrame, n_last: int = 5) -> pd.DataFrame:
    """Mean test score over each run's last ``n_last`` epochs; error if a run has fewer."""
    if isinstance(n_last, bool) or int(n_last) != n_last or int(n_last) < 1:
        raise StatsError(f"n_last must be a whole number ≥1, got {n_last!r}")
    n_last = int(n_last)  # 2.0 is 2 epochs (it would index a numpy array)
    run = [*_group_cols(norm), "run"]
    counts = norm.groupby(run)["epoch"].nunique()
    short = counts[counts < n_last]
    if len(short):
        items = ", ".join(f"{r if isinstance(r, str) else r[-1]} ({c} epochs)"
                          for r, c in short.head(5).items())
        raise StatsError(f"last-{n_last} selection needs ≥{n_last} epochs per run; short: {items}")
    epochs = norm[[*run, "epoch"]].drop_duplicates()
    cutoff = epochs.groupby(run)["epoch"].transform(lambda e: np.sort(e.to_numpy())[-n_last])
    window = epochs[epochs["epoch"] >= cutoff]
    picked = norm.merge(window, on=[*run, "epoch"])
    keys = [*run, "test_set"]
    # math.fsum: the mean of the same scores does not depend on the epoch order
    score = picked.groupby(keys, sort=False)["score"]
    out = score.agg(lambda s: math.fsum(s) / len(s)).reset_index()
    out["epoch"] = np.nan
    return out


def best_validation(norm: pd.DataFrame, val_lower_is_better: bool = False) -> pd.DataFrame:
    """Test scores at each run's best-validation epoch (earliest on ties)."""
    run = [*_group_cols(norm), "run"]
    epochs = norm.drop_duplicates([*run, "epoch"])
    chosen = _first_best(epochs, "val", run, val_lower_is_better)[[*run, "epoch"]]
    picked = norm.merge(chosen, on=[*run, "epoch"])
    keys = [*run, "test_set"]
    return picked[[*keys, "score", "epoch"]].reset_index(drop=True)


def select(
    records: pd.DataFrame,
    rule: Rule,
    *,
    n_last: int = 5,
    lower_is_better: bool = False,
    val_lower_is_better: bool | None = None,
    val_col: str = "val_acc",
    test_cols: Sequence[str] | None = None,
    score_col: str | None = None,
    run_col: str | None = None,
    group_cols: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Apply one rule; returns *groups, run, test_set, score, epoch (NaN for ``last_n``).

    ``val_lower_is_better`` defaults to True when the validation column's name contains "loss".
    """
    if rule not in RULES:
        raise StatsError(unknown_choice("selection rule", rule, RULES))
    norm = normalise_epochs(
        records,
        val_col=val_col,
        test_cols=test_cols,
        score_col=score_col,
        run_col=run_col,
        group_cols=group_cols,
    )
    return _apply(norm, rule, n_last, lower_is_better, _val_lower(val_col, val_lower_is_better))


def _val_lower(val_col: str, given: bool | None) -> bool:
    return ("loss" in val_col.lower()) if given is None else given


def _apply(
    norm: pd.DataFrame, rule: str, n_last: int, lower: bool, val_lower: bool
) -> pd.DataFrame:
    if rule == "best_epoch":
        return best_epoch(norm, lower)
    if rule == "last_n":
        return last_n_epochs(norm, n_last)
    return best_validation(norm, val_lower)


def compare_rules(
    records: pd.DataFrame,
    rules: Sequence[str] = RULES,
    *,
    n_last: int = 5,
    lower_is_better: bool = False,
    val_lower_is_better: bool | None = None,
    val_col: str = "val_acc",
    test_cols: Sequence[str] | None = None,
    score_col: str | None = None,
    run_col: str | None = None,
    group_cols: Sequence[str] | None = None,
) -> pd.DataFrame:
    """How much the selection rule changes the numbers (BiasBed Table 1).

    One row per (*groups, test_set) with, for each rule, the mean and std (ddof=1) over runs, and
    for every rule but the oracle ``<rule>_minus_oracle`` = its mean − the best-epoch mean.
    """
    unknown = [r for r in rules if r not in RULES]
    if unknown or not rules:
        raise StatsError(unknown_choice("selection rule", unknown[0] if unknown else "", RULES))
    norm = normalise_epochs(
        records,
        val_col=val_col,
        test_cols=test_cols,
        score_col=score_col,
        run_col=run_col,
        group_cols=group_cols,
    )
    keys = [*_group_cols(norm), "test_set"]
    val_lower = _val_lower(val_col, val_lower_is_better)
    table: pd.DataFrame | None = None
    for rule in rules:
        picked = _apply(norm, rule, n_last, lower_is_better, val_lower)
        agg = picked.groupby(keys, sort=False)["score"].agg(["mean", "std", "count"])
        agg.columns = [rule, f"{rule}_std", "n_runs"]
        if table is None:
            table = agg
        else:
            table = table.join(agg.drop(columns="n_runs"))
    assert table is not None
    if "best_epoch" in rules:
        for rule in rules:
            if rule != "best_epoch":
                table[f"{rule}_minus_oracle"] = table[rule] - table["best_epoch"]
    return table.reset_index()


def runs_for_comparison(
    selected: pd.DataFrame, algorithm_col: str | None = None, block_col: str = "test_set"
) -> pd.DataFrame:
    """Turn a :func:`select` result into the long run table ``compare`` reads.

    Blocks are test sets (prefixed with the dataset when a ``dataset`` column has several values);
    algorithms come from ``algorithm_col`` (default: ``algorithm``, else ``model``).
    """
    cols = list(selected.columns)
    algo = _pick(cols, algorithm_col, ("algorithm", "model"), "algorithm")
    if block_col not in cols:
        raise StatsError(unknown_choice("block column", block_col, cols))
    block = selected[block_col].astype(str)
    if "dataset" in cols and selected["dataset"].nunique() > 1 and block_col != "dataset":
        block = selected["dataset"].astype(str) + "/" + block
    return pd.DataFrame(
        {
            "block": block.to_numpy(),
            "algorithm": selected[algo].astype(str).to_numpy(),
            "run": selected["run"].astype(str).to_numpy(),
            "score": selected["score"].to_numpy(dtype=float),
        }
    )
