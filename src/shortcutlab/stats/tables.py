"""Reading score tables for a comparison: wide (blocks × algorithms) or long (one row per run).

Wide: first column the block name (data set, test set, factor pair), then one numeric column per
algorithm. Long: columns for block, algorithm, run and score (accepted names below); runs are
aggregated to mean ± standard deviation per (block, algorithm). The table is long when it has
both an algorithm and a score column; otherwise it is wide. ``score_col`` names the score column
of a long table whatever its name (a DomainBed-style ``test_acc``); its other columns are then
ignored.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shortcutlab.errors import StatsError, unknown_choice

BLOCK_COLUMNS = ("block", "dataset", "test_set")
ALGORITHM_COLUMNS = ("algorithm", "model", "method")
RUN_COLUMNS = ("run", "seed", "job_id")
SCORE_COLUMNS = ("score", "acc", "accuracy", "value")
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")


@dataclass(frozen=True)
class ScoreTable:
    """Per-block, per-algorithm mean scores, plus spread over runs when read from a long table.

    ``means``: index = block names, columns = algorithm names. ``std`` (sample std, ddof=1; NaN
    with a single run) and ``n_runs`` have the same shape, or are None for a wide table.
    ``runs`` is the normalised long table (block, algorithm, run, score) or None.
    """

    means: pd.DataFrame
    std: pd.DataFrame | None = None
    n_runs: pd.DataFrame | None = None
    runs: pd.DataFrame | None = None

    @property
    def blocks(self) -> list[str]:
        return [str(b) for b in self.means.index]

    @property
    def algorithms(self) -> list[str]:
        return [str(a) for a in self.means.columns]


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a CSV, TSV or Parquet table; StatsError for missing files, ragged rows or bad suffix."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise StatsError(unknown_choice("table format", suffix or p.name, TABLE_SUFFIXES))
    if not p.is_file():
        raise StatsError(f"table file not found: {p}")
    if suffix in (".parquet", ".pq"):
        try:
            return pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise StatsError(f"cannot read Parquet table {p}: {exc}") from exc
    sep = "\t" if suffix == ".tsv" else ","
    _check_rectangular(p, sep)
    try:
        header = pd.read_csv(p, sep=sep, header=None, nrows=1, dtype=str).iloc[0].tolist()
        df = pd.read_csv(p, sep=sep, skipinitialspace=True)
    except pd.errors.EmptyDataError as exc:
        raise StatsError(f"table {p} is empty") from exc
    except pd.errors.ParserError as exc:
        raise StatsError(f"ragged table {p}: {exc}".strip()) from exc
    # an empty header would become a column named "nan" (the first may be empty: an index)
    empty = [str(n + 1) for n, h in enumerate(header) if n and (pd.isna(h) or not h.strip())]
    if empty:
        raise StatsError(f"table {p}: column(s) {', '.join(empty)} have an empty header; "
                         "name every column (e.g. the algorithm of a wide table)")
    _check_unique_columns([str(h) for h in header], f"table {p}")
    df.columns = [str(h).strip() for h in header]
    return df


def _check_rectangular(path: Path, sep: str) -> None:
    """StatsError naming the first lines whose field count differs from the header's."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [(n, len(r)) for n, r in enumerate(csv.reader(fh, delimiter=sep), 1) if r]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise StatsError(f"cannot read table {path}: {exc}") from exc
    if not rows:
        raise StatsError(f"table {path} is empty")
    width = rows[0][1]
    bad = [f"line {n} has {m}" for n, m in rows[1:] if m != width]
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise StatsError(
            f"ragged table {path}: the header has {width} field(s) but "
            f"{', '.join(bad[:3])}{more}; every row needs one value per column"
        )


def _check_unique_columns(names: list[str], what: str) -> None:
    stripped = [n.strip() for n in names]
    dupes = sorted({h for h in stripped if stripped.count(h) > 1})
    if dupes:
        raise StatsError(f"{what} has duplicated column name(s): {', '.join(dupes)}")


def _find(columns: list[str], candidates: tuple[str, ...]) -> str | None:
    lower = {c.lower(): c for c in columns}
    for cand in candidates:
        if cand in lower:
            return lower[cand]
    return None


def is_long(df: pd.DataFrame, score_col: str | None = None) -> bool:
    """True when ``df`` has both an algorithm column and a score column (a long run table);
    with ``score_col``, when it has an algorithm column."""
    cols = [str(c) for c in df.columns]
    has_score = score_col is not None or _find(cols, SCORE_COLUMNS) is not None
    return _find(cols, ALGORITHM_COLUMNS) is not None and has_score


def check_score_col(df: pd.DataFrame, score_col: str) -> str:
    """``score_col`` if it is a column of ``df`` and the table is long; a StatsError naming the
    columns (or the long table's required ones) otherwise."""
    cols = [str(c) for c in df.columns]
    if score_col not in cols:
        raise StatsError(unknown_choice("score column", score_col, cols))
    if _find(cols, ALGORITHM_COLUMNS) is None:
        raise StatsError(
            f"score column {score_col!r} given, but the table has no algorithm column "
            f"({'|'.join(ALGORITHM_COLUMNS)}): a score column belongs to a long table; a wide "
            "table has one column per algorithm"
        )
    return score_col


def _numeric(series: pd.Series, what: str, row_names: pd.Series) -> pd.Series:
    """Convert to float; StatsError naming rows with non-numeric or missing values."""
    values = pd.to_numeric(series, errors="coerce")
    bad_text = values.isna() & series.notna()
    if bad_text.any():
        rows = [f"{row_names[i]!s}={series[i]!r}" for i in series.index[bad_text][:5]]
        raise StatsError(f"non-numeric value(s) in {what}: {', '.join(rows)}")
    bad = ~np.isfinite(values.to_numpy(dtype=float))
    if bad.any():
        rows = [str(row_names[i]) for i in series.index[bad][:5]]
        raise StatsError(f"missing/NaN/inf value(s) in {what} at row(s): {', '.join(rows)}")
    return values.astype(float)


def _check_shape(means: pd.DataFrame) -> None:
    if means.shape[1] < 2:
        raise StatsError(
            f"need at least 2 algorithms to compare, got {means.shape[1]}: "
            f"{', '.join(map(str, means.columns)) or '(none)'}"
        )
    if means.shape[0] < 2:
        raise StatsError(
            f"need at least 2 blocks (data sets) to compare, got {means.shape[0]}: "
            f"{', '.join(map(str, means.index)) or '(none)'}"
        )


def parse_wide(df: pd.DataFrame) -> ScoreTable:
    """Wide table: first column block names, one numeric column per algorithm."""
    if df.shape[1] < 3:
        raise StatsError(
            f"a wide table needs a block-name column and ≥2 algorithm columns; got columns "
            f"{', '.join(map(str, df.columns))}"
        )
    first = str(df.columns[0])
    if first.lower() in ALGORITHM_COLUMNS:
        raise StatsError(
            f"first column is {first!r}: algorithms must be columns and blocks rows in a wide "
            f"table (transpose it), or give a long table with columns "
            f"{'|'.join(BLOCK_COLUMNS)}, {'|'.join(ALGORITHM_COLUMNS)}, "
            f"{'|'.join(RUN_COLUMNS)}, {'|'.join(SCORE_COLUMNS)}"
        )
    blocks = df.iloc[:, 0]
    if blocks.isna().any():
        rows = [str(i + 2) for i in np.flatnonzero(blocks.isna().to_numpy())[:5]]
        raise StatsError(f"empty block name in line(s) {', '.join(rows)} of column {first!r}")
    blocks = blocks.astype(str).str.strip()
    dupes = sorted(set(blocks[blocks.duplicated()]))
    algorithm = _find([str(c) for c in df.columns], ALGORITHM_COLUMNS)
    if dupes and algorithm is not None:  # a long table whose score column has another name
        raise StatsError(
            f"column {algorithm!r} makes this a long table, but it has no score column: expected "
            f"one of {', '.join(SCORE_COLUMNS)}; found {', '.join(map(str, df.columns))} "
            "(name it: --score-col test_acc, score_col='test_acc' in Python; or rename the "
            "score column, e.g. test_acc to acc)"
        )
    if dupes:
        raise StatsError(f"duplicated block name(s) in column {first!r}: {', '.join(dupes)}")
    data = {}
    for col in df.columns[1:]:
        data[str(col)] = _numeric(df[col], f"column {col!r}", blocks).to_numpy()
    means = pd.DataFrame(data, index=pd.Index(blocks.to_numpy(), name=first))
    means.columns.name = "algorithm"
    _check_shape(means)
    return ScoreTable(means=means)


def parse_long(df: pd.DataFrame, score_col: str | None = None) -> ScoreTable:
    """Long table of runs -> mean/std/count per (block, algorithm); strict about gaps and dupes
    (and about unknown columns unless ``score_col`` names the score column)."""
    cols = [str(c) for c in df.columns]
    block = _find(cols, BLOCK_COLUMNS)
    algo = _find(cols, ALGORITHM_COLUMNS)
    run = _find(cols, RUN_COLUMNS)
    score = check_score_col(df, score_col) if score_col is not None else _find(cols, SCORE_COLUMNS)
    valid = (
        f"valid columns: {'|'.join(BLOCK_COLUMNS)} (block), {'|'.join(ALGORITHM_COLUMNS)} "
        f"(algorithm), {'|'.join(RUN_COLUMNS)} (run, optional), {'|'.join(SCORE_COLUMNS)} (score, "
        "or any column named by --score-col)"
    )
    if block is None or algo is None or score is None:
        raise StatsError(f"long table lacks a block, algorithm or score column; {valid}")
    used = {block, algo, score} | ({run} if run else set())
    unknown = [c for c in cols if c not in used]
    if unknown and score_col is None:
        names = ", ".join(map(repr, unknown))
        raise StatsError(f"unknown column(s) {names} in long table; {valid}")
    norm = pd.DataFrame(
        {
            "block": df[block].astype(str).str.strip(),
            "algorithm": df[algo].astype(str).str.strip(),
            "run": df[run].astype(str).str.strip() if run else "0",
        }
    )
    for name, col in (("block", block), ("algorithm", algo), ("run", run)):
        if col is not None and df[col].isna().any():
            lines = [str(i + 2) for i in np.flatnonzero(df[col].isna().to_numpy())[:5]]
            raise StatsError(f"empty {name} in column {col!r} at line(s) {', '.join(lines)}")
    labels = "line " + (pd.Series(np.arange(len(df)), index=df.index) + 2).astype(str)
    labels = labels + " (" + norm["block"] + ", " + norm["algorithm"] + ")"
    norm["score"] = _numeric(df[score], f"column {score!r}", labels).to_numpy()
    dup = norm.duplicated(["block", "algorithm", "run"], keep=False)
    if dup.any():
        ex = norm[dup].head(4)
        items = "; ".join(f"{labels[i]} run {r}" for i, r in zip(ex.index, ex["run"], strict=True))
        hint = "" if run else f" (add a run column: {'|'.join(RUN_COLUMNS)})"
        raise StatsError(f"duplicated run(s) for the same block and algorithm: {items}{hint}")
    grouped = norm.groupby(["block", "algorithm"], sort=False)["score"]
    block_order = list(dict.fromkeys(norm["block"]))
    algo_order = list(dict.fromkeys(norm["algorithm"]))
    # math.fsum: the mean of the same runs does not depend on their order (a tie stays a tie)
    exact_mean = grouped.agg(lambda s: math.fsum(s) / len(s))
    means = exact_mean.unstack("algorithm").reindex(index=block_order, columns=algo_order)
    missing = [f"{b}/{a}" for b in block_order for a in algo_order if pd.isna(means.loc[b, a])]
    if missing:
        raise StatsError(
            f"ragged table: no score for {len(missing)} (block/algorithm) combination(s): "
            f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}"
        )
    std = grouped.std(ddof=1).unstack("algorithm").reindex(index=block_order, columns=algo_order)
    n_runs = grouped.count().unstack("algorithm").reindex(index=block_order, columns=algo_order)
    for frame in (means, std, n_runs):
        frame.index.name = "block"
        frame.columns.name = "algorithm"
    _check_shape(means)
    return ScoreTable(means=means, std=std, n_runs=n_runs.astype(int), runs=norm)


def parse_table(df: pd.DataFrame, score_col: str | None = None) -> ScoreTable:
    """Parse a wide or long table (see module docstring) into a :class:`ScoreTable`;
    ``score_col``: the score column of a long table, whatever its name."""
    if df.empty:
        raise StatsError("score table is empty")
    _check_unique_columns([str(c) for c in df.columns], "score table")
    if score_col is not None:
        check_score_col(df, score_col)
    return parse_long(df, score_col) if is_long(df, score_col) else parse_wide(df)


def load_table(path: str | os.PathLike[str], score_col: str | None = None) -> ScoreTable:
    """Read and parse a score table file (``score_col``: see :func:`parse_table`)."""
    return parse_table(read_table(path), score_col)
