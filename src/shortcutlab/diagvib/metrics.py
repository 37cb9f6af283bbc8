"""DiagViB-6 metrics (paper sec. 3.4 and Table 2) computed from the collected job table.

The pipeline is the paper's, made explicit:

1. keep finished jobs (``status == "done"``) and average ``test_acc`` over training seeds for each
   (model, study, predicted, correlated, dataset sample) -> ``acc_ij`` (or ``acc_i`` for ZSO);
2. ``P_ij`` / ``P_i``: mean and standard error of that accuracy over dataset samples;
3. ``FAAvg_i`` / ``FAMin_i`` (eqs. 1-2): per dataset sample the mean / minimum over the correlated
   factors j, then mean and standard error over samples (for ZSO both equal ``P_i``);
4. CHGO over ZGO (Table 2): per (pair, sample) the CHGO accuracy on the OOD test cells of the
   class that had only a shortcut opportunity, minus the ZGO accuracy of the same pair and sample;
   per sample the mean over correlated factors, then mean, std and standard error over samples.

Every function here is pure (tables in, tables out). Accuracies are fractions in [0, 1]; the
standard error is ``std(ddof=1) / sqrt(n)`` and is NaN (``null`` in JSON) when ``n == 1``.
``P``, ``FAAvg`` and ``FAMin`` also carry ``std``, the standard deviation over samples with
ddof 0 (what the authors' plotting script draws, while the paper's captions say standard error);
:data:`ERROR_BARS` names the two, and the CLI and report show the one asked for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.spec import STUDIES as _PAPER_STUDIES
from shortcutlab.diagvib.spec import get_study, study_names
from shortcutlab.errors import DiagvibError, unknown_choice
from shortcutlab.utils.display import ShowsResult
from shortcutlab.utils.sanitize import json_safe

STUDIES: tuple[str, ...] = _PAPER_STUDIES  # the paper's nine, defined in spec
PAIR_STUDIES: tuple[str, ...] = tuple(s for s in STUDIES if get_study(s).correlated)
REQUIRED_COLUMNS: tuple[str, ...] = (
    "model", "study", "predicted", "correlated", "sample", "seed", "status", "test_acc",
)
STATUSES: tuple[str, ...] = ("done", "failed", "pending")
CHANCE: float = 1.0 / 3.0
FIT_MARGIN: float = 0.05  # a run whose validation accuracy stays this close to chance did not fit
TAG_PREFIX = "test_acc@"
_TAG_RE = re.compile(r"^test_acc@([0-2])([0-2])-(id|ood)$")
_DEFAULT_ALGORITHMS = ("", "erm")


class MetricsError(DiagvibError):
    """The job table cannot be turned into DiagViB-6 metrics (missing columns, bad values)."""


#: What ± shows: ``sem`` the standard error over dataset samples (ddof 1, the paper's captions),
#: ``std`` their standard deviation with ddof 0 (the authors' plotting script, ``np.std``).
ERROR_BARS: tuple[str, ...] = ("sem", "std")
ERROR_BAR_TEXT = {"sem": "standard error (ddof 1)",
                  "std": "standard deviation (ddof 0, as the authors' plotting script)"}


def check_error_bars(name: str) -> str:
    """``name`` if it is one of :data:`ERROR_BARS`, else a MetricsError naming the choices."""
    if name not in ERROR_BARS:
        raise MetricsError(unknown_choice("error bars", name, ERROR_BARS))
    return name


def mean_sem(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (ddof=1; NaN for fewer than two values) and count."""
    arr = np.asarray(list(values), dtype=float)
    n = int(arr.size)
    if n == 0:
        return math.nan, math.nan, 0
    mean = float(arr.mean())
    sem = float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return mean, sem, n


def model_label(model: str, algorithm: str | None = None) -> str:
    """The name a model is reported under: ``model``, or ``model+algorithm`` for runs with an
    algorithm other than ERM or the one the model implies (``vae`` is trained as a VAE)."""
    missing = algorithm is None or (isinstance(algorithm, float) and math.isnan(algorithm))
    algo = "" if missing else str(algorithm)
    if algo.lower() in _DEFAULT_ALGORITHMS:
        return str(model)
    from shortcutlab.train.model_info import implied_algorithm  # torch-free

    if algo == implied_algorithm(str(model)):
        return str(model)
    return f"{model}+{algo}"


def tag_columns(table: pd.DataFrame) -> list[str]:
    """The per-cell accuracy columns ``test_acc@<a><b>-<id|ood>`` present in ``table``."""
    return sorted(c for c in table.columns if _TAG_RE.match(str(c)))


def _fail(message: str) -> MetricsError:
    return MetricsError(message)


def single_factor(studies: pd.Series) -> pd.Series:
    """Per row, whether its (registered) study predicts one factor alone (ZSO and the
    studies registered with ``correlated=False``): ``P_i`` per factor instead of ``P_ij``."""
    single = {s: not get_study(s).correlated for s in set(studies)}
    return studies.map(single).astype(bool)


def validate_table(table: pd.DataFrame) -> pd.DataFrame:
    """Check and normalise a collected job table; return a copy with a ``label`` column.

    Raises :class:`MetricsError` naming missing columns, unknown studies, factors or statuses,
    finished jobs without an accuracy, conflicting jobs (same model, experiment and seed
    with different configurations) and a model whose finished jobs recorded different
    :data:`CONFIG_COLUMNS` values. Rows of every status are kept.
    """
    if not isinstance(table, pd.DataFrame):
        raise _fail(f"expected a pandas DataFrame job table, got {type(table).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise _fail(
            f"job table lacks required column(s) {', '.join(missing)}; "
            f"required: {', '.join(REQUIRED_COLUMNS)}"
        )
    if len(table) == 0:
        raise _fail("job table is empty: no jobs to compute metrics from")
    df = table.copy()
    if "job_id" in df.columns:
        dup = df["job_id"][df["job_id"].duplicated()]
        if len(dup):
            raise _fail(f"job table lists job_id {dup.iloc[0]!r} more than once "
                        f"({dup.nunique()} duplicated id(s)); each job must appear once")
    for col in ("model", "study", "predicted", "status"):
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    df["correlated"] = df["correlated"].astype(object).where(df["correlated"].notna(), "")
    df["correlated"] = df["correlated"].astype(str)
    algo = df["algorithm"] if "algorithm" in df.columns else pd.Series("", index=df.index)
    df["label"] = [model_label(m, a) for m, a in zip(df["model"], algo, strict=True)]
    if "run_name" in df.columns:  # NAME=DIR (report.named_source): model@NAME
        names = df["run_name"].astype(object).where(df["run_name"].notna(), "").astype(str)
        df["label"] = [f"{lab}@{n}" if n else lab for lab, n in zip(df["label"], names,
                                                                    strict=True)]

    known = study_names()  # the paper's studies and the registered ones (spec.register_study)
    bad = sorted(set(df["study"]) - set(known))
    if bad:
        raise _fail(f"unknown stud{'y' if len(bad) == 1 else 'ies'} {', '.join(map(repr, bad))}"
                    f"; valid choices: {', '.join(known)}")
    bad = sorted(set(df["status"]) - set(STATUSES))
    if bad:
        raise _fail(unknown_choice("job status", bad[0], STATUSES))
    bad = sorted(set(df["predicted"]) - set(FACTORS))
    if bad:
        raise _fail(unknown_choice("predicted factor", bad[0], FACTORS))
    is_single = single_factor(df["study"])
    bad = sorted(set(df.loc[~is_single, "correlated"]) - set(FACTORS))
    if bad:
        singles = [s for s in study_names() if not get_study(s).correlated]
        raise _fail(unknown_choice("correlated factor", bad[0], FACTORS)
                    + f" (only {'/'.join(singles)} jobs have no correlated factor)")
    single_corr = df[is_single & (df["correlated"] != "")]
    if len(single_corr):
        raise _fail(f"{single_corr['study'].iloc[0]} jobs have no correlated factor, got "
                    f"{single_corr['correlated'].iloc[0]!r}")
    same = df[~is_single & (df["predicted"] == df["correlated"])]
    if len(same):
        row = same.iloc[0]
        raise _fail(f"a factor cannot be correlated with itself: "
                    f"{row['study']} {row['predicted']}-{row['correlated']}")
    for col in ("sample", "seed"):
        values = pd.to_numeric(df[col], errors="coerce")
        if values.isna().any() or (values % 1 != 0).any():
            raise _fail(f"column {col!r} must hold whole numbers, got "
                        f"{df.loc[values.isna() | (values % 1 != 0), col].iloc[0]!r}")
        df[col] = values.astype(np.int64)
    for col in ["test_acc", *tag_columns(df)]:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    done = df["status"] == "done"
    acc = df.loc[done, "test_acc"]
    bad_rows = df.loc[done][acc.isna() | (acc < 0) | (acc > 1)]
    if len(bad_rows):
        row = bad_rows.iloc[0]
        who = row["job_id"] if "job_id" in df.columns else f"{row['study']} {row['predicted']}"
        raise _fail(f"finished job {who} has test_acc {row['test_acc']!r}; "
                    "accuracies must be fractions in [0, 1]")
    key = ["label", "study", "predicted", "correlated", "sample", "seed"]
    key += [c for c in ("scale", "precision") if c in df.columns]
    dup = df[done].duplicated(subset=key, keep=False)
    if dup.any():
        row = df[done][dup].iloc[0]
        raise _fail(
            f"several finished jobs for model {row['label']!r}, {row['study']} "
            f"{row['predicted']}-{row['correlated'] or '∅'} sample {row['sample']} seed "
            f"{row['seed']} with different configurations; report them from separate tables "
            f"or name one run folder's models apart ({NAME_HINT})"
        )
    if "scale" in df.columns:  # one model run at two sizes is two models
        scales = df.groupby("label")["scale"].nunique()
        for label in scales[scales > 1].index:
            rows = df["label"] == label
            df.loc[rows, "label"] = [f"{label}@scale={float(s):g}" for s in df.loc[rows, "scale"]]
    if "precision" in df.columns:  # fp32 and bf16 runs of one model (issue 31's twins): two
        recorded = df["precision"].astype(str).where(df["precision"].notna(), "")
        precisions = recorded[recorded != ""].groupby(df["label"]).nunique()
        for label in precisions[precisions > 1].index:
            rows = (df["label"] == label) & (recorded != "")
            df.loc[rows, "label"] = [f"{label}@{p}" for p in recorded[rows]]
    _check_one_configuration(df[df["status"] == "done"])
    _check_one_recipe(df[df["status"] == "done"])
    return df.reset_index(drop=True)


#: how a refusal below says to report two recipes of one model side by side
NAME_HINT = "NAME=DIR reports DIR's models as model@NAME, e.g. `diagvib report runs/a sgd=runs/b`"

#: job-table columns that say how a job was trained (blank where not recorded); one reported
#: model's finished jobs must agree on each, or its averages mix recipes
CONFIG_COLUMNS: tuple[str, ...] = ("preset", "head", "benchmark_seed", "lr", "batch_size",
                                   "normalization", "frozen_batchnorm", "vae_classifier")


def _check_one_configuration(done: pd.DataFrame) -> None:
    """Refuse a reported model whose finished jobs were trained with different configurations
    (e.g. two `diagvib run` calls with other options into one folder)."""
    for col in CONFIG_COLUMNS:
        if col not in done.columns:
            continue
        for label, values in done.groupby("label", sort=True)[col]:
            found = sorted({f"{v:g}" if isinstance(v, float) else str(v)
                            for v in values.dropna() if str(v) != ""})
            if len(found) > 1:
                raise _fail(
                    f"finished jobs of model {label!r} were trained with different "
                    f"configurations ({col}: {', '.join(map(repr, found))}); their accuracies "
                    "cannot be averaged into one model: report them from separate run folders "
                    f"or name one folder's models apart ({NAME_HINT})"
                )


def _check_one_recipe(done: pd.DataFrame) -> None:
    """Refuse a reported model whose finished jobs differ in what no :data:`CONFIG_COLUMNS`
    column shows: their ``recipe_id`` (:attr:`~shortcutlab.runner.jobs.Job.recipe_id`:
    optimiser, schedule, pretrained weights, algorithm hyper-parameters, image sources,
    renderer version ...), or, for the seeds of one experiment, their ``spec_hash`` (``--specs``,
    ``--selection``). Blank values (tables written before these columns) are not compared."""
    cell = ["label", "study", "predicted", "correlated", "sample"]
    for col, keys, what in (
            ("recipe_id", ["label"], "a training setting the table has no column for, the image "
             "sources or the renderer version"),
            ("spec_hash", cell, "the experiment's spec (its classes, sizes or weights)")):
        if col not in done.columns:
            continue
        given = done[done[col].notna() & (done[col].astype(str) != "")]
        counts = given.groupby(keys, sort=True)[col].transform("nunique")
        if (counts > 1).any():  # one grouped pass: a loop over 1,230 cells costs seconds
            mixed = given[counts > 1]
            first = mixed[keys].iloc[0]
            firsts = mixed[(mixed[keys] == first).all(axis=1)].drop_duplicates(col)
            row = firsts.iloc[0]
            jobs = (f"jobs {row['job_id']} and {firsts['job_id'].iloc[1]}"
                    if "job_id" in firsts.columns else f"{len(firsts)} of its jobs")
            where = "" if col == "recipe_id" else (
                f" on {row['study']} {row['predicted']}-{row['correlated'] or '∅'} sample "
                f"{row['sample']}")
            raise _fail(f"finished jobs of model {row['label']!r}{where} were trained with "
                        f"{len(firsts)} different recipes: {jobs} differ in {what} (compare "
                        "their job.json files); their accuracies cannot be averaged into one "
                        f"model: report them from separate run folders or name one folder's "
                        f"models apart ({NAME_HINT})")


def status_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Jobs per model, study and status: columns label, study, done, failed, pending."""
    df = validate_table(table)
    counts = df.groupby(["label", "study", "status"]).size().unstack("status", fill_value=0)
    counts = counts.reindex(columns=list(STATUSES), fill_value=0).reset_index()
    counts.columns.name = None
    counts["study"] = pd.Categorical(counts["study"], study_names(), ordered=True)
    return counts.sort_values(["label", "study"]).reset_index(drop=True).astype({"study": str})


def sample_accuracies(table: pd.DataFrame, column: str = "test_acc") -> pd.DataFrame:
    """Accuracy per (label, study, predicted, correlated, sample), averaged over seeds first.

    Only finished jobs count. Columns: label, study, predicted, correlated, sample, acc, n_seeds.
    """
    df = validate_table(table)
    df = df[df["status"] == "done"]
    if column not in df.columns:
        raise _fail(unknown_choice("accuracy column", column, ["test_acc", *tag_columns(df)]))
    keys = ["label", "study", "predicted", "correlated", "sample"]
    out = df.groupby(keys, sort=True)[column].agg(["mean", "count"]).reset_index()
    return out.rename(columns={"mean": "acc", "count": "n_seeds"})


def _over_samples(frame: pd.DataFrame, keys: list[str], value: str = "acc") -> pd.DataFrame:
    """Mean, standard error (ddof=1; NaN for one value), standard deviation (ddof=0, as the
    authors' plotting script's ``np.std``) and count of ``value`` per ``keys``."""
    groups = frame.groupby(keys, sort=True)[value]
    out = groups.agg(["mean", "std", "count"]).reset_index()
    out["sem"] = out["std"] / np.sqrt(out["count"])
    out["std"] = groups.std(ddof=0).to_numpy()
    out = out.rename(columns={"count": "n"})
    out["n"] = out["n"].astype(np.int64)
    return out[[*keys, "mean", "sem", "std", "n"]]


def single_accuracy(samples: pd.DataFrame) -> pd.DataFrame:
    """``P_i`` per model, single-factor study (:func:`single_factor`) and factor from
    :func:`sample_accuracies`: columns label, study, factor, mean, sem, std, n."""
    single = samples[single_factor(samples["study"])]
    out = _over_samples(single, ["label", "study", "predicted"])
    return _by_study(out.rename(columns={"predicted": "factor"}), ["label", "study", "factor"])


def zso_accuracy(samples: pd.DataFrame) -> pd.DataFrame:
    """``P_i`` of ZSO per model and factor: columns label, factor, mean, sem, std, n."""
    out = single_accuracy(samples[samples["study"] == "ZSO"])
    return out.drop(columns="study").reset_index(drop=True)


def _by_study(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``frame`` sorted by ``keys``, studies in registration order."""
    rank = {s: i for i, s in enumerate(study_names())}
    return frame.sort_values(keys, key=lambda c: c.map(rank) if c.name == "study" else c,
                             kind="stable").reset_index(drop=True)


def pair_accuracy(samples: pd.DataFrame) -> pd.DataFrame:
    """``P_ij`` per model, study and ordered pair (OOD test cells): columns label, study,
    predicted, correlated, mean, sem, n."""
    pairs = samples[~single_factor(samples["study"])]
    return _over_samples(pairs, ["label", "study", "predicted", "correlated"])


def accuracy_matrix(pairs: pd.DataFrame, label: str, study: str) -> pd.DataFrame:
    """The 6x6 ``P_ij`` matrix of one model and study (rows predicted, columns correlated,
    FACTORS order); the diagonal and pairs without results are NaN."""
    sub = pairs[(pairs["label"] == label) & (pairs["study"] == study)]
    mat = sub.pivot(index="predicted", columns="correlated", values="mean")
    return mat.reindex(index=list(FACTORS), columns=list(FACTORS)).astype(float)


def factor_aggregates(samples: pd.DataFrame) -> pd.DataFrame:
    """FAAvg and FAMin (eqs. 1-2) per model, study and predicted factor.

    Per dataset sample the mean (FAAvg) or minimum (FAMin) of ``acc_ij`` over the correlated
    factors j with results, then mean and standard error over samples. For ZSO (every
    single-factor study) both equal ``P_i``. Columns: label, study, factor, metric, mean, sem,
    std (ddof 0), n, n_pairs (the fewest correlated factors any sample had; 5 when complete).
    """
    columns = ["label", "study", "factor", "metric", "mean", "sem", "std", "n", "n_pairs"]
    is_single = single_factor(samples["study"])
    singles = _over_samples(samples[is_single], ["label", "study", "predicted"])
    parts = [singles.assign(metric=m, n_pairs=0) for m in ("FAAvg", "FAMin")]
    pairs = samples[~is_single]
    keys = ["label", "study", "predicted"]
    per_sample = pairs.groupby([*keys, "sample"], sort=True)["acc"].agg(["mean", "min", "count"])
    per_sample = per_sample.reset_index()
    n_pairs = per_sample.groupby(keys, sort=True)["count"].min().rename("n_pairs").reset_index()
    for metric, col in (("FAAvg", "mean"), ("FAMin", "min")):
        agg = _over_samples(per_sample, keys, value=col).merge(n_pairs, on=keys)
        parts.append(agg.assign(metric=metric))
    out = pd.concat([p.rename(columns={"predicted": "factor"}) for p in parts], ignore_index=True)
    rank = {s: i for i, s in enumerate(study_names())}
    out = out.sort_values(["label", "study", "factor", "metric"],
                          key=lambda c: c.map(rank) if c.name == "study" else c, kind="stable")
    return out[columns].astype({"n": np.int64, "n_pairs": np.int64}).reset_index(drop=True)


def unfit_runs(table: pd.DataFrame) -> pd.DataFrame:
    """Finished runs that did not fit their training data: in-distribution validation accuracy
    (of the selected checkpoint) within :data:`FIT_MARGIN` of chance. Their test accuracies say
    nothing about shortcuts. Columns: label, study, predicted, correlated, sample, seed,
    experiment, val_acc."""
    df = validate_table(table)
    cols = ["label", "study", "predicted", "correlated", "sample", "seed", "experiment",
            "val_acc"]
    if "val_acc" not in df.columns:
        return pd.DataFrame(columns=cols)
    done = df[df["status"] == "done"]
    val = pd.to_numeric(done["val_acc"], errors="coerce")
    bad = done[val <= CHANCE + FIT_MARGIN]
    return bad.reindex(columns=cols).reset_index(drop=True)


def pair_symmetry(pairs: pd.DataFrame) -> pd.DataFrame:
    """The paper's ``P_ij ≈ 1 - P_ji`` check (section 5) per model, study and unordered pair:
    if F_j is the shortcut for F_i, F_i is not the shortcut for F_j. ``deviation`` =
    ``P_ij + P_ji - 1``. With ZGO's paired images (same images, two labellings) and one training
    seed it is minus the share of OOD answers that follow neither factor: near 0 when one factor
    dominates, negative when both share the representation (the paper's lightness/position).
    Columns: label, study, factor_i, factor_j, P_ij, P_ji, deviation."""
    cols = ["label", "study", "factor_i", "factor_j", "P_ij", "P_ji", "deviation"]
    rank = {f: k for k, f in enumerate(FACTORS)}
    mean = pairs.set_index(["label", "study", "predicted", "correlated"])["mean"]
    rows = []
    for (label, study, i, j), p_ij in mean.items():
        if rank.get(i, 99) >= rank.get(j, 99) or (label, study, j, i) not in mean.index:
            continue
        p_ji = float(mean[(label, study, j, i)])
        rows.append((label, study, i, j, float(p_ij), p_ji, float(p_ij) + p_ji - 1.0))
    return pd.DataFrame(rows, columns=cols)


def shortcut_class_accuracy(row: pd.Series, tags: list[str]) -> float:
    """CHGO: accuracy on the OOD test cells of the class with only a shortcut opportunity.

    In CHGO one class ``a*`` of the predicted factor co-occurs with a single class ``b*`` of the
    correlated factor while the other two classes mix with the other two; so the OOD test cells
    are ``(a*, b)`` for the two ``b != b*`` and ``(a, b*)`` for the two ``a != a*``: ``a*`` is the
    predicted class with two OOD cells. Returns the mean of its two per-cell accuracies, or NaN
    when the row's per-cell columns do not show that pattern.
    """
    cells: dict[int, list[float]] = {}
    for col in tags:
        match = _TAG_RE.match(col)
        value = row[col]
        if match is None or match.group(3) != "ood" or pd.isna(value):
            continue
        cells.setdefault(int(match.group(1)), []).append(float(value))
    counts = sorted(len(v) for v in cells.values())
    if counts != [1, 1, 2]:
        return math.nan
    (values,) = [v for v in cells.values() if len(v) == 2]
    return float(np.mean(values))


def chgo_over_zgo(table: pd.DataFrame) -> pd.DataFrame:
    """Table 2: improvement of CHGO over ZGO per model and predicted factor.

    For each (pair, dataset sample) with both studies: the CHGO accuracy on the OOD cells of the
    shortcut-only class (from ``test_acc@<tag>`` columns; if the row has none, its whole
    ``test_acc``), averaged over seeds, minus the ZGO ``test_acc`` of the same pair and sample,
    averaged over seeds. Per sample the mean over correlated factors; then mean, std (ddof=1)
    and standard error over samples. ``std_cells`` is the std over all (pair, sample)
    differences. ``source`` says which CHGO accuracy was used: per-tag, test_acc or mixed.
    Columns: label, factor, mean, std, sem, n, std_cells, n_cells, source.
    """
    df = validate_table(table)
    df = df[df["status"] == "done"]
    columns = ["label", "factor", "mean", "std", "sem", "n", "std_cells", "n_cells", "source"]
    chgo = df[df["study"] == "CHGO"].copy()
    zgo = df[df["study"] == "ZGO"]
    if chgo.empty or zgo.empty:
        return pd.DataFrame(columns=columns)
    tags = tag_columns(chgo)
    so = chgo.apply(lambda r: shortcut_class_accuracy(r, tags), axis=1) if tags else None
    chgo["per_tag"] = so.notna() if so is not None else False
    chgo["so_acc"] = so.where(so.notna(), chgo["test_acc"]) if so is not None else chgo["test_acc"]
    keys = ["label", "predicted", "correlated", "sample"]
    c = chgo.groupby(keys)[["so_acc", "per_tag"]].agg({"so_acc": "mean", "per_tag": "all"})
    z = zgo.groupby(keys)["test_acc"].mean().rename("zgo_acc")
    both = c.join(z, how="inner").reset_index()
    both["delta"] = both["so_acc"] - both["zgo_acc"]
    rows = []
    for (label, factor), group in both.groupby(["label", "predicted"], sort=True):
        per_sample = group.groupby("sample")["delta"].mean()
        mean, sem, n = mean_sem(per_sample)
        std = float(per_sample.std(ddof=1)) if n > 1 else math.nan
        cells = group["delta"]
        std_cells = float(cells.std(ddof=1)) if len(cells) > 1 else math.nan
        flags = set(group["per_tag"].astype(bool))
        source = "per-tag" if flags == {True} else "test_acc" if flags == {False} else "mixed"
        rows.append((label, factor, mean, std, sem, n, std_cells, len(cells), source))
    return pd.DataFrame(rows, columns=columns)


def complete_cells(chgo: pd.DataFrame) -> pd.Series:
    """Per row of :func:`chgo_over_zgo`, the (pair, sample) cells a complete study averages:
    the 5 correlated factors of the predicted factor × the model's dataset samples (its rows'
    most ``n``, as the "(k/m samples)" marks count them). ``n_cells`` below it: some pairs or
    samples are missing, and the tables, report and figure mark the improvement."""
    if chgo.empty:
        return pd.Series(dtype=np.int64, index=chgo.index)
    most = chgo.groupby("label")["n"].transform("max").astype(np.int64)
    return (len(FACTORS) - 1) * most


#: the note under a printed :meth:`DiagvibMetrics.headline` with an ``incomplete`` column
INCOMPLETE_HEADLINE = ("incomplete: the averages include a factor over only k of the 5 "
                       "correlated factors in some sample (k/5 pairs) or k of the model's m "
                       "dataset samples (k/m samples), or lack a predicted factor "
                       f"(k/{len(FACTORS)} factors)")


def incomplete_marks(frame: pd.DataFrame) -> pd.Series:
    """Per row of a metrics frame (``singles``, ``aggregates``, ``chgo``), what its number
    lacks against a complete study, "" when nothing: "2/3 samples" (``n`` below the model's
    most ``n`` in ``frame``), "4/5 pairs" (FAAvg/FAMin: ``n_pairs``, the fewest correlated
    factors in a sample), "4/10 cells" (CHGO − ZGO: ``n_cells`` below :func:`complete_cells`),
    joined by ", ". The tables' "(k/m samples)" marks, the figures' and :meth:`headline`'s."""
    columns = set(frame.columns)
    n = frame["n"] if "n" in columns else None
    most = frame.groupby("label")["n"].transform("max") if {"label", "n"} <= columns else None
    whole = complete_cells(frame) if {"label", "n", "n_cells"} <= columns else None
    out = []
    for i in range(len(frame)):
        marks = []
        if n is not None and most is not None and int(n.iloc[i]) < int(most.iloc[i]):
            marks.append(f"{int(n.iloc[i])}/{int(most.iloc[i])} samples")
        pairs = frame["n_pairs"].iloc[i] if "n_pairs" in columns else 0
        if pd.notna(pairs) and 0 < int(pairs) < len(FACTORS) - 1:
            marks.append(f"{int(pairs)}/{len(FACTORS) - 1} pairs")
        if whole is not None:
            cells = frame["n_cells"].iloc[i]
            if pd.notna(cells) and 0 < int(cells) < int(whole.iloc[i]):
                marks.append(f"{int(cells)}/{int(whole.iloc[i])} cells")
        out.append(", ".join(marks))
    return pd.Series(out, index=frame.index, dtype=object)


def _estimate(row: Any) -> dict[str, Any]:
    """``{"mean", "sem", "std", "n"}`` of a result row, JSON-ready (std: ddof 0)."""
    return {"mean": json_safe(row.mean), "sem": json_safe(row.sem),
            "std": json_safe(getattr(row, "std", math.nan)), "n": int(row.n)}


def _order(values: Iterable[str], order: Iterable[str]) -> list[str]:
    rank = {v: i for i, v in enumerate(order)}
    return sorted(set(values), key=lambda v: (rank.get(v, len(rank)), v))


@dataclass(frozen=True, repr=False)
class DiagvibMetrics(ShowsResult):
    """All DiagViB-6 metrics of a job table as tidy DataFrames (see the module docstring).

    ``print(metrics)`` (and Jupyter's display) shows :meth:`headline`; the rest is in the
    frames, :meth:`to_dict`, :meth:`to_frame` and :meth:`matrix`."""

    table: pd.DataFrame
    status: pd.DataFrame
    samples: pd.DataFrame
    zso: pd.DataFrame
    singles: pd.DataFrame
    pairs: pd.DataFrame
    aggregates: pd.DataFrame
    chgo: pd.DataFrame
    unfit: pd.DataFrame
    symmetry: pd.DataFrame

    @property
    def labels(self) -> list[str]:
        """Reported model names, sorted."""
        return sorted(set(self.table["label"]))

    def studies(self, label: str | None = None) -> list[str]:
        """Studies with at least one finished job (for one model, or any), in STUDIES order."""
        s = self.samples if label is None else self.samples[self.samples["label"] == label]
        return _order(s["study"], study_names())

    def matrix(self, label: str, study: str) -> pd.DataFrame:
        """6x6 ``P_ij`` matrix (rows predicted, columns correlated)."""
        return accuracy_matrix(self.pairs, label, study)

    def headline(self) -> pd.DataFrame:
        """Per model and study (STUDIES order): FAAvg and FAMin averaged over the predicted
        factors (for ZSO both are the mean ``P_i``), the finished/all job counts, and
        ``incomplete``: what those averages lack ("" when nothing), "5/6 factors" when some
        predicted factor has no number, then each factor whose number has
        :func:`incomplete_marks` ("hue 2/5 pairs; texture 2/3 samples")."""
        agg = self.aggregates.pivot_table(index=["label", "study"], columns="metric",
                                          values="mean", aggfunc="mean")
        jobs = self.status.set_index(["label", "study"])
        out = pd.DataFrame({
            "FAAvg": agg.get("FAAvg"), "FAMin": agg.get("FAMin"),
        }).reindex(jobs.index)
        out["jobs done"] = [f"{int(r.done)}/{int(r.done + r.failed + r.pending)}"
                            for r in jobs.itertuples()]
        lacking = self._lacking()
        out["incomplete"] = [lacking.get(key, "") for key in out.index]
        rank = {s: i for i, s in enumerate(study_names())}
        order = sorted(out.index, key=lambda k: (k[0], rank.get(k[1], len(rank)), k[1]))
        return out.loc[order].rename_axis(["model", "study"])

    def _lacking(self) -> dict[tuple[str, str], str]:
        """The ``incomplete`` text of :meth:`headline` per (model, study) that lacks something:
        FAAvg and FAMin share their counts, so each factor is named once."""
        marked = self.aggregates.assign(mark=incomplete_marks(self.aggregates))
        rank = {f: i for i, f in enumerate(FACTORS)}
        out = {}
        for (label, study), group in marked.groupby(["label", "study"], sort=False):
            per = group.drop_duplicates("factor").sort_values(
                "factor", key=lambda c: c.map(rank), kind="stable")
            parts = [f"{r.factor} {r.mark}" for r in per.itertuples() if r.mark]
            if len(per) < len(FACTORS):
                parts.insert(0, f"{len(per)}/{len(FACTORS)} factors")
            if parts:
                out[(str(label), str(study))] = "; ".join(parts)
        return out

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        done = int(self.status["done"].sum())
        title = (f"DiagViB-6 metrics: {len(self.labels)} model(s), {done} finished job(s); "
                 "FAAvg/FAMin averaged over the predicted factors")
        notes = [".to_dict(), .to_frame(), .matrix(model, study) and the frames (singles, "
                 "pairs, aggregates, chgo, ...) hold every number"]
        if len(self.unfit):
            notes.insert(0, f"{len(self.unfit)} run(s) did not fit their training data "
                            "(.unfit)")
        head = self.headline()
        if (head["incomplete"] == "").all():
            head = head.drop(columns="incomplete")
        else:
            notes.insert(0, INCOMPLETE_HEADLINE)
        return title, head, notes




    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested dict: ``{"models": {label: {study: {"P", "FAAvg", "FAMin"},
        "CHGO_over_ZGO": {...}}}, "jobs": {label: {status: count}}}``."""
        models: dict[str, Any] = {}
        for label in self.labels:
            entry: dict[str, Any] = {}
            z = self.singles[self.singles["label"] == label]
            for study in _order(z["study"], study_names()):
                entry[study] = {"P": {r.factor: _estimate(r)
                                      for r in z[z["study"] == study].itertuples()}}
            p = self.pairs[self.pairs["label"] == label]
            for study in _order(p["study"], study_names()):
                ps = p[p["study"] == study]
                entry[study] = {"P": {f"{r.predicted}-{r.correlated}": _estimate(r)
                                      for r in ps.itertuples()}}
            a = self.aggregates[self.aggregates["label"] == label]
            for r in a.itertuples():
                block = entry.setdefault(r.study, {}).setdefault(r.metric, {})
                block[r.factor] = _estimate(r)
                if get_study(r.study).correlated:
                    block[r.factor]["n_pairs"] = int(r.n_pairs)
            c = self.chgo[self.chgo["label"] == label]
            if len(c):
                entry["CHGO_over_ZGO"] = {
                    r.factor: {k: json_safe(getattr(r, k)) for k in
                               ("mean", "std", "sem", "n", "std_cells", "n_cells", "source")}
                    for r in c.itertuples()
                }
            models[label] = entry
        for label, group in self.unfit.groupby("label", sort=True):
            models.setdefault(label, {})["did_not_fit"] = sorted(group["experiment"].astype(str))
        for label, group in self.symmetry.groupby("label", sort=True):
            for study, sub in group.groupby("study", sort=True):
                models.setdefault(label, {}).setdefault(study, {})["symmetry"] = {
                    f"{r.factor_i}-{r.factor_j}": json_safe(r.deviation)
                    for r in sub.itertuples()
                }
        jobs = {
            label: {s: int(g[s].sum()) for s in STATUSES}
            for label, g in self.status.groupby("label", sort=True)
        }
        return {"models": models, "jobs": jobs}

    def to_frame(self) -> pd.DataFrame:
        """One long tidy table of every number (for CSV): label, study, metric, predicted,
        correlated, mean, sem, std, n, n_pairs (the fewest correlated factors an FAAvg/FAMin
        averaged in a sample: below 5 it is short; empty for the other metrics)."""
        parts = [
            self.singles.assign(metric="P", correlated="").rename(columns={"factor": "predicted"}),
            self.pairs.assign(metric="P"),
            self.aggregates[~single_factor(self.aggregates["study"])]
            .rename(columns={"factor": "predicted"}).assign(correlated=""),
            self.chgo.assign(study="CHGO-ZGO", metric="improvement", correlated="")
            .rename(columns={"factor": "predicted"}),
        ]
        cols = ["label", "study", "metric", "predicted", "correlated", "mean", "sem", "std", "n",
                "n_pairs"]
        frames = [p.reindex(columns=cols) for p in parts if len(p)]
        if not frames:
            return pd.DataFrame(columns=cols)
        out = pd.concat(frames, ignore_index=True)
        out["n"] = out["n"].astype(int)
        out["n_pairs"] = out["n_pairs"].astype("Int64")
        rank = {v: i for i, v in enumerate((*study_names(), "CHGO-ZGO", *FACTORS, ""))}
        out = out.sort_values(
            ["label", "study", "metric", "predicted", "correlated"],
            key=lambda c: c if c.name in ("label", "metric") else c.map(rank),
            kind="stable",
        )
        return out.reset_index(drop=True).rename(columns={"label": "model"})


def compute_metrics(table: pd.DataFrame) -> DiagvibMetrics:
    """Validate ``table`` and compute every metric; raises :class:`MetricsError` when no job
    has finished."""
    df = validate_table(table)
    status = status_counts(df)
    if not (df["status"] == "done").any():
        counts = df["status"].value_counts().to_dict()
        detail = ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES)
        raise _fail(f"no finished jobs to compute metrics from ({detail})")
    samples = sample_accuracies(df)
    pairs = pair_accuracy(samples)
    return DiagvibMetrics(
        table=df,
        status=status,
        samples=samples,
        zso=zso_accuracy(samples),
        singles=single_accuracy(samples),
        pairs=pairs,
        aggregates=factor_aggregates(samples),
        chgo=chgo_over_zgo(df),
        unfit=unfit_runs(df),
        symmetry=pair_symmetry(pairs),
    )


def summarise(table: pd.DataFrame) -> dict[str, Any]:
    """All metrics of a job table as one JSON-ready dict (see :meth:`DiagvibMetrics.to_dict`)."""
    return compute_metrics(table).to_dict()


def flat_summary(metrics: DiagvibMetrics) -> dict[str, float]:
    """WILDS-style flat dict of means, e.g. ``"resnet18/ZGO/FAAvg/hue"`` or
    ``"resnet18/ZGO/P/hue-shape"``, plus ``count/<model>/<status>`` job counts."""
    flat: dict[str, float] = {}
    for r in metrics.to_frame().itertuples():
        what = f"{r.predicted}-{r.correlated}" if r.correlated else r.predicted
        flat[f"{r.model}/{r.study}/{r.metric}/{what}"] = float(r.mean)
    for label, jobs in metrics.to_dict()["jobs"].items():
        for status, count in jobs.items():
            flat[f"count/{label}/{status}"] = float(count)
    return flat
