"""Collect run directories into tidy tables (DomainBed's collect_results habit).

:func:`collect` gives one row per job (the schema the metrics read); :func:`collect_epochs` the
long per-epoch table model-selection rules read; :func:`write_table` writes the job table as CSV
and Parquet, both or neither.

A job folder proves who it is: its name must be the hash of the job in its ``job.json`` and its
result must belong to it and meet the result schema (:mod:`shortcutlab.runner.records`). A job
folder that fails (an unreadable, edited or swapped ``job.json``, a missing one, a ``done`` job
whose ``result.json`` or ``epochs.parquet`` is broken or out of range, a ``done`` marker that is
no file, a copy of another job's folder) is left out of the tables with one warning line naming
the file (logger ``shortcutlab.runner``); the list is in ``table.attrs["skipped"]``. The next
``run`` of that job rewrites its ``job.json``, moves broken results aside and redoes it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from shortcutlab.errors import RunnerError, ShortcutlabError
from shortcutlab.runner.jobs import (
    DONE_FILE,
    EPOCHS_FILE,
    ERROR_FILE,
    JOB_FILE,
    JOB_KINDS,
    RESULT_FILE,
    Job,
    JobFileError,
    describe_job,
    done_problem,
    last_error_line,
    read_job,
    read_result,
)
from shortcutlab.utils.io import output_set

# The job kind's describer (see JobKind) adds its columns after "algorithm", e.g. study,
# predicted, correlated, sample, dataset size and benchmark seed for DiagViB-6 jobs, and the
# ones the kind names ``last`` at the end (DiagViB-6: its training settings).
JOB_COLUMNS = (
    "job_id", "model", "algorithm", "seed", "experiment", "status", "best_epoch",
    "epochs_run", "val_loss", "val_acc", "test_acc", "train_seconds",
)
EXTRA_COLUMNS = ("preset", "recipe_id", "error")
EPOCH_TABLE_COLUMNS = (
    "job_id", "epoch", "train_loss", "val_loss", "val_acc", "test_set", "tag", "acc", "n",
)
_NULLABLE_INT = ("best_epoch", "epochs_run")
_FLOAT_COLUMNS = ("val_loss", "val_acc", "test_acc", "train_seconds")


log = logging.getLogger("shortcutlab.runner")


def _job_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        what = "is a file, not a run folder" if root.exists() else "not found"
        raise RunnerError(f"run folder {what}: {root}")
    dirs = sorted(p for p in root.iterdir() if p.is_dir() and _looks_like_job(p))
    if not dirs:
        raise RunnerError(f"{root} is no run folder: no <job>/{JOB_FILE} inside (write one "
                          "with a run command, e.g. `shortcutlab diagvib run --out`)")
    return dirs


def _looks_like_job(path: Path) -> bool:
    return any((path / name).exists()
               for name in (JOB_FILE, RESULT_FILE, DONE_FILE, EPOCHS_FILE, ERROR_FILE))


def _skip_prefix(path: Path) -> str:
    return f"skipped job folder {path.name}: "


def _skip(path: Path, exc: JobFileError, skipped: list[str], logged: Iterable[str] = ()) -> None:
    """Record (and log, unless a line in ``logged`` already named the folder) a skip."""
    line = f"{_skip_prefix(path)}{exc}"
    if not any(old.startswith(_skip_prefix(path)) for old in logged):
        log.warning(line)
    skipped.append(line)


def _proven_job(path: Path) -> Job:
    """The job in ``path/job.json``, whose id must be the folder's name; a
    :class:`JobFileError` naming the file otherwise (both tables leave such a folder out)."""
    if not (path / JOB_FILE).exists():
        raise JobFileError(path / JOB_FILE, "is missing from a folder holding job results "
                           "(the next run of the job writes it again)")
    job = read_job(path)
    if job.job_id != path.name:
        raise JobFileError(path / JOB_FILE, f"describes job {job.job_id}, not {path.name} "
                           "(a copied folder, an edited or swapped job.json, or a job planned by "
                           "an earlier shortcutlab whose ids have changed since; the next run "
                           "rewrites it)")
    return job


def _row(path: Path) -> tuple[dict[str, Any], str]:
    """The table row of the job folder ``path`` and the job's kind (one read of its files)."""
    job = _proven_job(path)
    try:
        described = describe_job(job)
    except ShortcutlabError as exc:  # the kind refuses its own fields
        raise JobFileError(path / JOB_FILE, f"is not a valid job ({exc})") from None
    row: dict[str, Any] = {
        "job_id": path.name,
        "model": job.train.model,
        "algorithm": job.train.algorithm,
        **described,
        "seed": job.train.seed,
        "experiment": job.experiment,
        "preset": job.train.describe_preset(),
        "recipe_id": job.recipe_id,
        "error": "",
    }
    if (path / DONE_FILE).exists():
        if not (path / DONE_FILE).is_file():
            raise JobFileError(path / DONE_FILE, "is a folder, not a done marker")
        try:
            result = read_result(path)
        except JobFileError as exc:
            raise JobFileError(path / DONE_FILE, f"marks a job whose results are unreadable: "
                               f"{exc}") from None
        row["status"] = "done"
        for key in ("best_epoch", "epochs_run", "val_loss", "val_acc", "test_acc",
                    "train_seconds"):
            row[key] = result.get(key)
        row.update({k: v for k, v in result.items() if k.startswith("test_acc@")})
    elif (path / ERROR_FILE).is_file():
        row["status"] = "failed"
        row["error"] = last_error_line(path)
    else:
        row["status"] = "pending"
    return row, job.kind


def collect(root: str | Path) -> pd.DataFrame:
    """One row per job directory under ``root``: the job table (columns :data:`JOB_COLUMNS`
    with the job kinds' descriptive columns after ``algorithm``, then ``preset``,
    ``recipe_id`` (:attr:`~shortcutlab.runner.jobs.Job.recipe_id`), ``error``, any
    ``test_acc@<tag>`` columns, sorted by name, and the descriptive columns the kinds name
    ``last``). Each job folder's files are read once.

    ``status`` is ``done`` (done marker present), ``failed`` (error.txt) or ``pending``; result
    columns are empty unless done.
    """
    root = Path(root)
    rows: list[dict[str, Any]] = []
    kinds: set[str] = set()
    skipped: list[str] = []
    for path in _job_dirs(root):
        try:
            row, kind = _row(path)
        except JobFileError as exc:
            _skip(path, exc, skipped)
            continue
        rows.append(row)
        kinds.add(kind)
    tag_cols = sorted({k for r in rows for k in r if k.startswith("test_acc@")})
    known = {*JOB_COLUMNS, *EXTRA_COLUMNS, *tag_cols}
    described = list(dict.fromkeys(k for r in rows for k in r if k not in known))
    last_names = {c for kind in kinds if (found := JOB_KINDS.find(kind)) for c in found.last}
    last = [c for c in described if c in last_names]
    first = [c for c in described if c not in last_names]
    at = JOB_COLUMNS.index("algorithm") + 1
    columns = [*JOB_COLUMNS[:at], *first, *JOB_COLUMNS[at:], *EXTRA_COLUMNS, *tag_cols, *last]
    table = pd.DataFrame(rows, columns=columns)
    if table["seed"].notna().all():  # described integer columns are int64 when complete
        table["seed"] = table["seed"].astype("int64")
    for col in _NULLABLE_INT:
        table[col] = pd.array(table[col], dtype="Int64")
    for col in (*_FLOAT_COLUMNS, *tag_cols):
        table[col] = pd.to_numeric(table[col], errors="coerce").astype("float64")
    text = [c for c in described if table[c].map(lambda v: v is None or isinstance(v, str)).all()]
    for col in ("job_id", "model", "algorithm", *text, "experiment", "status", "preset",
                "recipe_id", "error"):
        table[col] = table[col].fillna("").astype(str)
    table = table.sort_values(["model", "algorithm", "experiment", "seed", "job_id"],
                              ignore_index=True)
    table.attrs["skipped"] = skipped
    return table


def collect_epochs(root: str | Path, logged: Iterable[str] = ()) -> pd.DataFrame:
    """The long per-epoch table of every done job: job_id, epoch, train_loss, val_loss,
    val_acc, test_set, tag ("all" or a cell tag), acc, n. A folder :func:`collect` leaves out
    (see the module's docstring) is left out here too, with the same warning line.

    ``logged``: the skip lines a caller already logged (``collect(root).attrs["skipped"]``);
    a folder named there is not logged again (still listed in ``attrs["skipped"]``), so a
    command reading both tables warns once a folder.

    Each ``epochs.parquet`` is read as an Arrow table and all are converted to pandas at once:
    a pandas frame per file costs several times the read itself (a 1,230-job folder: ≈ 1 s
    instead of ≈ 8 s)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts: list[pa.Table] = []
    skipped: list[str] = []
    logged = tuple(logged)
    columns = list(EPOCH_TABLE_COLUMNS[1:])
    for path in _job_dirs(Path(root)):
        if (path / DONE_FILE).is_file() and (path / EPOCHS_FILE).is_file():
            try:
                _proven_job(path)
                problem = done_problem(path)
                if problem is not None:
                    raise JobFileError(path / DONE_FILE, f"marks a job whose results are "
                                       f"unreadable: {problem}")
                with pq.ParquetFile(path / EPOCHS_FILE) as source:
                    part = source.read(use_threads=False)
                missing = [c for c in columns if c not in part.column_names]
                if missing:
                    raise JobFileError(path / EPOCHS_FILE, f"lacks columns {missing}")
            except JobFileError as exc:
                _skip(path, exc, skipped, logged)
                continue
            part = part.select(columns).replace_schema_metadata(None)
            parts.append(part.add_column(0, "job_id",
                                         pa.array([path.name] * part.num_rows, pa.string())))
    if not parts:
        table = pd.DataFrame({c: pd.Series(dtype="object") for c in EPOCH_TABLE_COLUMNS})
    else:
        try:
            table = pa.concat_tables(parts, promote_options="permissive").to_pandas()
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # types no promotion joins: as pandas
            table = pd.concat([p.to_pandas() for p in parts], ignore_index=True)
    table.attrs["skipped"] = skipped
    return table


def write_table(root: str | Path, out: str | Path | None = None,
                table: pd.DataFrame | None = None) -> tuple[Path, Path]:
    """Write the job table as ``<out>.csv`` and ``<out>.parquet`` (default ``<root>/jobs``),
    both or neither (a failed write leaves the old pair as it was); a given
    ``.csv``/``.parquet`` suffix is replaced. Returns both paths. ``table``: the
    already collected table of ``root`` (default: collect it now)."""
    table = collect(root) if table is None else table
    stem = Path(out) if out is not None else Path(root) / "jobs"
    if stem.suffix in (".csv", ".parquet"):
        stem = stem.with_suffix("")
    csv_path, parquet_path = stem.with_name(stem.name + ".csv"), stem.with_name(
        stem.name + ".parquet"
    )
    with output_set() as outputs:  # both or neither: never a new CSV beside an old Parquet
        table.to_csv(outputs.path(csv_path, suffix=".csv"), index=False)
        table.to_parquet(outputs.path(parquet_path, suffix=".parquet"), index=False)
    return csv_path, parquet_path
