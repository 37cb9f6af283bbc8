"""Which epoch's test accuracy a DiagViB-6 job reports: the checkpoint rule, applied after the
fact to the job's per-epoch records (``epochs.parquet``), and the spread around it.

The paper reports the checkpoint with the lowest validation loss. At full scale the validation
loss of most ZGO jobs is ≈ 0 from the second epoch on (validation is drawn like training), so
that epoch is close to arbitrary and the test accuracy there can move by 0.25 between
neighbouring epochs. Offering the rule as an option (``--checkpoint``) and showing the spread
over the last epochs lets a reader see how much a conclusion depends on it.

Rules (:data:`CHECKPOINT_RULES`): ``lowest-val-loss`` (the paper's, the trainer's own choice:
earliest epoch on ties), ``last`` (the last epoch run) and ``mean-last-K`` (the mean test
accuracy over the last K epochs, e.g. ``mean-last-10``). They are
:func:`shortcutlab.stats.selection.select`'s ``best_validation`` and ``last_n`` rules, applied to
every test set and cell tag of every job. Functions here are pure (tables in, tables out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from shortcutlab.errors import DiagvibError, StatsError

if TYPE_CHECKING:
    from shortcutlab.stats.selection import Rule

#: the paper's rule, the default everywhere (today's numbers are this rule's)
DEFAULT_CHECKPOINT = "lowest-val-loss"
CHECKPOINT_RULES: tuple[str, ...] = ("lowest-val-loss", "last", "mean-last-K")
#: epochs whose test accuracies make a job's spread (min–max over the last SPREAD_EPOCHS)
SPREAD_EPOCHS = 10
_MEAN_LAST = re.compile(r"^mean-last-([0-9]+)$")
_SEP = "\x1f"  # joins test set and tag into one "test set" for stats.selection


@dataclass(frozen=True)
class Checkpoint:
    """A parsed checkpoint rule: ``name`` as given, ``rule`` one of :data:`CHECKPOINT_RULES`,
    ``k`` the number of last epochs averaged (1 for ``last``, 0 for ``lowest-val-loss``)."""

    name: str
    rule: str
    k: int = 0

    @property
    def is_default(self) -> bool:
        return self.rule == DEFAULT_CHECKPOINT

    def describe(self) -> str:
        """How the report names the rule."""
        if self.rule == DEFAULT_CHECKPOINT:
            return "the checkpoint with the lowest validation loss (the paper's rule)"
        if self.rule == "last":
            return "the last epoch"
        return f"the mean over the last {self.k} epochs"


def parse_checkpoint(name: str) -> Checkpoint:
    """The rule named ``name``; a DiagvibError naming the valid choices otherwise."""
    text = str(name).strip()
    if text in ("lowest-val-loss", "last"):
        return Checkpoint(text, text, 0 if text == "lowest-val-loss" else 1)
    match = _MEAN_LAST.match(text)
    if match and int(match.group(1)) >= 1:
        return Checkpoint(text, "mean-last-K", int(match.group(1)))
    raise DiagvibError(f"unknown checkpoint rule {name!r}; valid choices: lowest-val-loss, last, "
                       "mean-last-K with K a whole number ≥ 1 (e.g. mean-last-10)")


def select_checkpoint(epochs: pd.DataFrame, checkpoint: str | Checkpoint) -> pd.DataFrame:
    """Per job, test set and tag: the accuracy the rule reports.

    ``epochs``: long per-epoch records (:func:`shortcutlab.runner.collect.collect_epochs`:
    job_id, epoch, val_loss, test_set, tag, acc). Returns job_id, test_set, tag, acc and epoch
    (the selected epoch; NaN for ``mean-last-K``). A job with fewer than K epochs is an error
    naming it.
    """
    cp = checkpoint if isinstance(checkpoint, Checkpoint) else parse_checkpoint(checkpoint)
    columns = ["job_id", "test_set", "tag", "acc", "epoch"]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    missing = [c for c in ("job_id", "epoch", "val_loss", "test_set", "tag", "acc")
               if c not in epochs.columns]
    if missing:
        raise DiagvibError(f"per-epoch records lack column(s) {', '.join(missing)}")
    records = epochs.assign(
        test_set=epochs["test_set"].astype(str) + _SEP + epochs["tag"].astype(str)
    )[["job_id", "epoch", "val_loss", "test_set", "acc"]]
    from shortcutlab.stats.selection import select  # the stats package loads scipy: only here

    rule: Rule = "best_validation" if cp.is_default else "last_n"
    try:
        picked = select(records, rule, n_last=max(cp.k, 1), val_col="val_loss", score_col="acc",
                        run_col="job_id", group_cols=[])
    except StatsError as exc:
        raise DiagvibError(f"checkpoint rule {cp.name}: {exc}") from None
    if cp.rule == "last":  # last_n leaves the epoch open; with one epoch it is the last one
        last = records.groupby("job_id")["epoch"].max()
        picked["epoch"] = picked["run"].map(last).to_numpy(dtype=float)
    parts = picked["test_set"].str.split(_SEP, n=1, expand=True)
    return pd.DataFrame({"job_id": picked["run"], "test_set": parts[0], "tag": parts[1],
                         "acc": picked["score"], "epoch": picked["epoch"]})[columns]


def apply_checkpoint(table: pd.DataFrame, epochs: pd.DataFrame,
                     checkpoint: str | Checkpoint) -> pd.DataFrame:
    """The job table with ``test_acc`` and every ``test_acc@<tag>`` replaced by the rule's
    (first test set per job, as the runner's ``test_acc``); ``best_epoch`` becomes the selected
    epoch (NaN for ``mean-last-K``). The default rule returns ``table`` unchanged: the jobs'
    own numbers are that rule's. A finished job without per-epoch records is an error."""
    cp = checkpoint if isinstance(checkpoint, Checkpoint) else parse_checkpoint(checkpoint)
    if cp.is_default:
        return table
    done = table[table["status"] == "done"]["job_id"].astype(str)
    have = set(epochs["job_id"].astype(str)) if len(epochs) else set()
    lacking = sorted(set(done) - have)
    if lacking:
        raise DiagvibError(f"checkpoint rule {cp.name} needs per-epoch records, and finished "
                           f"job {lacking[0]} has none (epochs.parquet); use lowest-val-loss")
    picked = select_checkpoint(epochs[epochs["job_id"].astype(str).isin(set(done))], cp)
    first = epochs.drop_duplicates("job_id").set_index("job_id")["test_set"].astype(str)
    picked = picked[picked["test_set"] == picked["job_id"].map(first)]
    out = table.copy()
    ids = out["job_id"].astype(str)
    for tag, group in picked.groupby("tag"):
        column = "test_acc" if tag == "all" else f"test_acc@{tag}"
        values = group.set_index("job_id")["acc"]
        new = ids.map(values)
        out[column] = new.where(new.notna(), out[column] if column in out.columns else np.nan)
        if tag == "all" and "best_epoch" in out.columns:
            out["best_epoch"] = ids.map(group.set_index("job_id")["epoch"])
    return out


def job_spread(epochs: pd.DataFrame, last: int = SPREAD_EPOCHS) -> pd.DataFrame:
    """Per job, the protocol's noise around its reported number (first test set, all cells):
    job_id, epochs_run, selected_epoch (lowest validation loss), acc_selected, and acc_min /
    acc_max over the last ``last`` epochs run (fewer when fewer ran)."""
    columns = ["job_id", "epochs_run", "selected_epoch", "acc_selected", "acc_min", "acc_max"]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    rows = epochs[epochs["tag"].astype(str) == "all"]
    first = rows.drop_duplicates("job_id").set_index("job_id")["test_set"]
    rows = rows[rows["test_set"] == rows["job_id"].map(first)].sort_values(
        ["job_id", "epoch"], kind="stable", ignore_index=True)
    jobs = rows.groupby("job_id", sort=True)
    best = rows.loc[jobs["val_loss"].idxmin()]  # idxmin: the first (earliest) minimum
    tail = jobs.tail(last).groupby("job_id", sort=True)["acc"]
    return pd.DataFrame({  # one pass over all jobs: 1,230 of them in well under a second
        "job_id": best["job_id"].to_numpy(),
        "epochs_run": jobs.size().to_numpy(dtype="int64"),
        "selected_epoch": best["epoch"].to_numpy(dtype="int64"),
        "acc_selected": best["acc"].to_numpy(dtype=float),
        "acc_min": tail.min().to_numpy(dtype=float),
        "acc_max": tail.max().to_numpy(dtype=float),
    })[columns]


__all__ = ["CHECKPOINT_RULES", "DEFAULT_CHECKPOINT", "SPREAD_EPOCHS", "Checkpoint",
           "apply_checkpoint", "job_spread", "parse_checkpoint", "select_checkpoint"]
