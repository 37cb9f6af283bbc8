"""Collect run directories into tidy tables (DomainBed's collect_results habit).

:func:`collect` gives one row per job (the schema the metrics read); :func:`collect_epochs` the
long per-epoch table model-selection rules read; :func:`write_table` writes the job table as CSV
and Parquet, atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from shortcutlab.errors import RunnerError
from shortcutlab.runner.jobs import (
    DONE_FILE,
    EPOCHS_FILE,
    ERROR_FILE,
    JOB_FILE,
    RESULT_FILE,
    describe_job,
)
from shortcutlab.train.config import describe_protocol
from shortcutlab.utils.io import atomic_path

# The job kind's describer (see register_job_kind) adds its columns after "algorithm", e.g.
# study, predicted, correlated and sample for DiagViB-6 jobs.
JOB_COLUMNS = (
    "job_id", "model", "algorithm", "seed", "experiment", "scale", "status", "best_epoch",
    "epochs_run", "val_loss", "val_acc", "test_acc", "train_seconds",
)
EXTRA_COLUMNS = ("benchmark_seed", "protocol", "error")
EPOCH_TABLE_COLUMNS = (
    "job_id", "epoch", "train_loss", "val_loss", "val_acc", "test_set", "tag", "acc", "n",
)
_INT_COLUMNS = ("sample", "seed", "benchmark_seed")
_NULLABLE_INT = ("best_epoch", "epochs_run")
_FLOAT_COLUMNS = ("scale", "val_loss", "val_acc", "test_acc", "train_seconds")


def _job_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        raise RunnerError(f"run folder not found: {root}")
    return sorted(p.parent for p in root.glob(f"*/{JOB_FILE}"))


def _row(path: Path) -> dict[str, Any]:
    job = json.loads((path / JOB_FILE).read_text(encoding="utf-8"))
    train = job.get("train", {})
    row: dict[str, Any] = {
        "job_id": path.name,
        "model": train.get("model", ""),
        "algorithm": train.get("algorithm", ""),
        **describe_job(str(job.get("kind", "")), str(job.get("experiment", ""))),
        "seed": train.get("seed", 0),
        "experiment": job.get("experiment", ""),
        "scale": job.get("scale", 1.0),
        "benchmark_seed": job.get("benchmark_seed", 0),
        "protocol": describe_protocol(train),
        "error": "",
    }
    if (path / DONE_FILE).is_file():
        row["status"] = "done"
        result = json.loads((path / RESULT_FILE).read_text(encoding="utf-8"))
        for key in ("best_epoch", "epochs_run", "val_loss", "val_acc", "test_acc",
                    "train_seconds"):
            row[key] = result.get(key)
        row.update({k: v for k, v in result.items() if k.startswith("test_acc@")})
    elif (path / ERROR_FILE).is_file():
        row["status"] = "failed"
        lines = (path / ERROR_FILE).read_text(encoding="utf-8").strip().splitlines()
        row["error"] = lines[-1] if lines else ""
    else:
        row["status"] = "pending"
    return row


def collect(root: str | Path) -> pd.DataFrame:
    """One row per job directory under ``root``: the job table (columns :data:`JOB_COLUMNS`
    with the job kinds' descriptive columns after ``algorithm``, then ``benchmark_seed``,
    ``error`` and any ``test_acc@<tag>`` columns, sorted by name).

    ``status`` is ``done`` (done marker present), ``failed`` (error.txt) or ``pending``; result
    columns are empty unless done.
    """
    root = Path(root)
    rows = [_row(p) for p in _job_dirs(root)]
    tag_cols = sorted({k for r in rows for k in r if k.startswith("test_acc@")})
    known = {*JOB_COLUMNS, *EXTRA_COLUMNS, *tag_cols}
    described = list(dict.fromkeys(k for r in rows for k in r if k not in known))
    at = JOB_COLUMNS.index("algorithm") + 1
    columns = [*JOB_COLUMNS[:at], *described, *JOB_COLUMNS[at:], *EXTRA_COLUMNS, *tag_cols]
    table = pd.DataFrame(rows, columns=columns)
    for col in _INT_COLUMNS:
        if col in table.columns and table[col].notna().all():
            table[col] = table[col].astype("int64")
    for col in _NULLABLE_INT:
        table[col] = pd.array(table[col], dtype="Int64")
    for col in (*_FLOAT_COLUMNS, *tag_cols):
        table[col] = pd.to_numeric(table[col], errors="coerce").astype("float64")
    text = [c for c in described if table[c].map(lambda v: v is None or isinstance(v, str)).all()]
    for col in ("job_id", "model", "algorithm", *text, "experiment", "status", "protocol",
                "error"):
        table[col] = table[col].fillna("").astype(str)
    return table.sort_values(["model", "algorithm", "experiment", "seed", "job_id"],
                             ignore_index=True)


def collect_epochs(root: str | Path) -> pd.DataFrame:
    """The long per-epoch table of every done job: job_id, epoch, train_loss, val_loss,
    val_acc, test_set, tag ("all" or a cell tag), acc, n."""
    frames = []
    for path in _job_dirs(Path(root)):
        if (path / DONE_FILE).is_file() and (path / EPOCHS_FILE).is_file():
            frame = pd.read_parquet(path / EPOCHS_FILE)
            frame.insert(0, "job_id", path.name)
            frames.append(frame)
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in EPOCH_TABLE_COLUMNS})
    table = pd.concat(frames, ignore_index=True)
    return table[list(EPOCH_TABLE_COLUMNS)]


def write_table(root: str | Path, out: str | Path | None = None) -> tuple[Path, Path]:
    """Write the job table as ``<out>.csv`` and ``<out>.parquet`` (default ``<root>/jobs``);
    a given ``.csv``/``.parquet`` suffix is replaced. Returns both paths."""
    table = collect(root)
    stem = Path(out) if out is not None else Path(root) / "jobs"
    if stem.suffix in (".csv", ".parquet"):
        stem = stem.with_suffix("")
    csv_path, parquet_path = stem.with_name(stem.name + ".csv"), stem.with_name(
        stem.name + ".parquet"
    )
    with atomic_path(csv_path, suffix=".csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(parquet_path, suffix=".parquet") as tmp:
        table.to_parquet(tmp, index=False)
    return csv_path, parquet_path
