"""The DiagViB-6 HTML report: job status, the paper's tables and figures, model comparison.

:func:`write_report` computes everything first, then writes ``index.html`` (self-contained),
``metrics.json`` (what ``shortcutlab diagvib metrics --json`` prints) and ``metrics.csv`` (one
tidy row per number), each atomically. Other areas add sections through
:data:`EXTRA_SECTIONS` or ``write_report(..., extra_sections=[...])``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pandas as pd

from shortcutlab.diagvib.checkpoints import (
    DEFAULT_CHECKPOINT,
    SPREAD_EPOCHS,
    Checkpoint,
    apply_checkpoint,
    job_spread,
    parse_checkpoint,
)
from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.metrics import (
    ERROR_BAR_TEXT,
    FIT_MARGIN,
    DiagvibMetrics,
    check_error_bars,
    complete_cells,
    compute_metrics,
    incomplete_marks,
)
from shortcutlab.diagvib.spec import get_study, sequence_names, studies_in_sequence, study_names
from shortcutlab.errors import DiagvibError
from shortcutlab.utils.html import HtmlReport, literal_text
from shortcutlab.utils.io import check_output_folder, output_set

Section = Callable[[HtmlReport, pd.DataFrame], None]
_TABLE_FILES = ("jobs.parquet", "jobs.csv")
_PAPER_FIGURE = {"CGO": "4b", "FGO": "5b"}  # the paper's figure of each of its sequences


def format_mean_err(mean: float, err: float, scale: float = 1.0, digits: int = 2) -> str:
    """``"0.95 ± 0.01"``; without the error when it is undefined, an en dash for no mean."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    text = f"{mean * scale:.{digits}f}"
    if err is None or (isinstance(err, float) and math.isnan(err)):
        return text
    return f"{text} ± {err * scale:.{digits}f}"


def _read_table_file(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise DiagvibError(f"job table {path} is empty; write one with `shortcutlab diagvib "
                           "collect`") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DiagvibError(f"job table {path} cannot be read ({reason})") from None


#: ``NAME=SOURCE``: the models of SOURCE reported as ``model@NAME`` (see :func:`named_source`)
_NAMED = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.+-]*)=(.+)")


def named_source(source: str | os.PathLike[str]) -> tuple[str, Path]:
    """``(name, path)`` of a source given as ``NAME=PATH`` (a name of letters, digits and
    ``_.+-``), else ``("", path)``; an existing path with a ``=`` in it is a path. Named, a
    source's models are reported as ``model@NAME``: two recipes of one model (two run folders)
    side by side instead of refused as one model's mixed recipes."""
    text = os.fspath(source)
    match = _NAMED.fullmatch(text)
    if match is None or Path(text).exists():
        return "", Path(text)
    return match.group(1), Path(match.group(2))


def load_job_table(source: str | os.PathLike[str],
                   checkpoint: str = DEFAULT_CHECKPOINT) -> pd.DataFrame:
    """One job table from a run directory (collected from its job folders, so never stale;
    a folder holding only ``jobs.parquet``/``jobs.csv`` is read from that file) or from a
    ``.csv``/``.parquet`` file; ``NAME=SOURCE`` (:func:`named_source`) adds the column
    ``run_name`` that reports its models as ``model@NAME``.

    From job folders the table also holds each job's spread (:func:`job_spread`: ``acc_min``
    and ``acc_max`` over the last epochs, ``epochs_run``), and ``checkpoint`` picks the epoch
    whose accuracies it reports (:mod:`shortcutlab.diagvib.checkpoints`; other rules than
    the default need the job folders' ``epochs.parquet``)."""
    name, path = named_source(source)
    table = _load_job_table(path, parse_checkpoint(checkpoint))
    if name:
        table["run_name"] = name  # in place: the table's attrs (skipped folders) stay
    return table


def _load_job_table(path: Path, cp: Checkpoint) -> pd.DataFrame:
    from shortcutlab.diagvib.jobs import collect_jobs
    from shortcutlab.runner.collect import collect_epochs
    from shortcutlab.runner.jobs import JOB_FILE

    if path.is_dir() and any(path.glob(f"*/{JOB_FILE}")):
        table = collect_jobs(path)
        epochs = collect_epochs(path, logged=table.attrs["skipped"])  # one warning a folder
        spread = job_spread(epochs).set_index("job_id")
        for col in ("acc_min", "acc_max"):  # in place: the table's attrs (skipped folders) stay
            table[col] = table["job_id"].map(spread[col]).astype(float)
        return apply_checkpoint(table, epochs, cp)
    if not cp.is_default:
        raise DiagvibError(f"checkpoint rule {cp.name} needs the jobs' per-epoch records: give "
                           f"the run directory, not the job table {path}")
    if path.is_file():
        if path.suffix not in (".csv", ".parquet"):
            raise DiagvibError(f"not a job table: {path} (expected a .csv or .parquet file, "
                               "or a run directory)")
        return _read_table_file(path)
    if not path.is_dir():
        raise DiagvibError(f"run directory or job table not found: {path}")
    for name in _TABLE_FILES:
        if (path / name).is_file():
            return _read_table_file(path / name)
    raise DiagvibError(f"{path} holds no jobs: expected job folders written by "
                       "`shortcutlab diagvib run`, or jobs.csv / jobs.parquet")


def load_job_tables(sources: Iterable[str | os.PathLike[str]],
                    checkpoint: str = DEFAULT_CHECKPOINT) -> pd.DataFrame:
    """Concatenate the job tables of several run directories or files (one report, many
    models), each read with the ``checkpoint`` rule."""
    frames = [load_job_table(s, checkpoint) for s in sources]
    if not frames:
        raise DiagvibError("no run directories or job tables given")
    return pd.concat(frames, ignore_index=True, sort=False)


def factor_frame(frame: pd.DataFrame, keys: Sequence[str], err: str = "sem",
                 scale: float = 1.0, digits: int = 2) -> pd.DataFrame:
    """Rows ``keys``, one column per factor, cells "mean ± err"; no ± where fewer than two
    dataset samples finished (``n`` < 2: no spread was measured, though ddof-0 ``std`` is 0).
    A number over fewer samples than the model's most (``n``) or, for FAAvg/FAMin, over fewer
    than the five correlated factors in some sample (``n_pairs``) says so: "(2/3 samples)",
    "(4/5 pairs)"; a CHGO − ZGO improvement over fewer (pair, sample) cells than the complete
    study (``n_cells`` below :func:`~shortcutlab.diagvib.metrics.complete_cells`): "(4/10
    cells)" (:func:`~shortcutlab.diagvib.metrics.incomplete_marks`, :data:`INCOMPLETE_NOTE`,
    :func:`has_incomplete`)."""
    rows = {}
    frame = frame.assign(incomplete=incomplete_marks(frame))
    for key, group in frame.groupby(list(keys), sort=False):
        by_factor = group.set_index("factor")
        key = key if isinstance(key, tuple) else (key,)
        rows[key] = {f: format_mean_err(by_factor.at[f, "mean"], _spread(by_factor, f, err),
                                        scale, digits) + _mark(by_factor.at[f, "incomplete"])
                     if f in by_factor.index else "–"
                     for f in FACTORS}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=list(FACTORS))
    out.index = pd.MultiIndex.from_tuples(out.index, names=["model" if k == "label" else k
                                                             for k in keys])
    return out


def _spread(by_factor: pd.DataFrame, factor: str, err: str) -> float:
    """The ``err`` column of ``factor``'s row; NaN when its ``n`` says one sample or none."""
    if "n" in by_factor.columns and not by_factor.at[factor, "n"] >= 2:
        return math.nan
    return float(by_factor.at[factor, err])


#: what the marks of :func:`factor_frame` mean (printed below tables that carry one)
INCOMPLETE_NOTE = ("(k/m samples): over k of the model's m dataset samples; (k/5 pairs): some "
                   "sample had only k of the 5 correlated factors (FAMin may then be too high); "
                   "(k/m cells): a CHGO − ZGO improvement over k of the m (pair, sample) cells "
                   "of the complete study (5 correlated factors × the model's samples)")

#: how the marks of :func:`factor_frame` end (what :func:`has_incomplete` looks for)
_MARK_ENDS = ("samples)", "pairs)", "cells)")


def has_incomplete(cells: pd.DataFrame) -> bool:
    """Whether a :func:`factor_frame` (possibly with " !" flags added) holds a number marked as
    over fewer samples, correlated factors or cells than complete (:data:`INCOMPLETE_NOTE`)."""
    text = cells.stack().astype(str).str.removesuffix(" !")
    return bool(text.str.endswith(_MARK_ENDS).any())


def _mark(marks: str) -> str:
    """" (k/m samples, k/5 pairs, k/m cells)" for a number with :func:`incomplete_marks`."""
    return f" ({marks})" if marks else ""


def short_chgo_cells(chgo: pd.DataFrame) -> list[str]:
    """"model factor (k/m cells)" for each CHGO − ZGO improvement of ``chgo`` (the frame of
    :func:`~shortcutlab.diagvib.metrics.chgo_over_zgo`) over fewer (pair, sample) cells than
    the complete study, for figure captions."""
    whole = complete_cells(chgo)
    short = chgo[chgo["n_cells"] < whole]
    return [f"{r.label} {r.factor} ({int(r.n_cells)}/{int(whole[i])} cells)"
            for i, r in zip(short.index, short.itertuples(), strict=True)]


def short_aggregates(aggregates: pd.DataFrame, studies: Iterable[str]) -> list[str]:
    """"model study factor (2/5 pairs)" for each FAAvg/FAMin of ``aggregates`` (the frame of
    :func:`~shortcutlab.diagvib.metrics.factor_aggregates`) in ``studies`` that
    :func:`~shortcutlab.diagvib.metrics.incomplete_marks` marks (once for both metrics: they
    share their counts), for figure captions."""
    marks = incomplete_marks(aggregates)
    short = aggregates[(marks != "") & aggregates["study"].isin(list(studies))]
    return list(dict.fromkeys(f"{r.label} {r.study} {r.factor} ({marks[i]})"
                              for i, r in zip(short.index, short.itertuples(), strict=True)))


#: at most this many marked numbers are named in a figure caption (then "and k more")
_CAPTION_NAMES = 12


def _marked_caption(short: list[str], what: str) -> str:
    """" {what} average ...: a, b, c." naming the first :data:`_CAPTION_NAMES` of ``short``."""
    if not short:
        return ""
    named = ", ".join(short[:_CAPTION_NAMES])
    more = len(short) - _CAPTION_NAMES
    return f" {what}: {named}" + (f" and {more} more." if more > 0 else ".")


#: job-table column -> Setup-table column, for the choices the paper leaves open
_SETTINGS = {"head": "head", "lr": "lr", "batch_size": "batch size",
             "normalization": "normalisation", "frozen_batchnorm": "frozen BatchNorm",
             "vae_classifier": "VAE prediction", "precision": "precision",
             "channels_last": "channels_last"}


#: columns only a job trained by ``shortcutlab diagvib run`` has; a table of ``job_row``
#: records (one's own predictions) has none of them
TRAINING_COLUMNS = ("scale", "preset", "epochs_run", "best_epoch", "lr", "batch_size")


def predictions_only(table: pd.DataFrame) -> list[str]:
    """Reported models whose finished jobs record no training here (``job_row`` tables of
    one's own predictions): the report describes no checkpoint rule or recipe for them."""
    done = table[table["status"] == "done"]
    out = []
    for label, group in done.groupby("label", sort=True):
        recorded = [c for c in TRAINING_COLUMNS if c in group.columns
                    and group[c].map(lambda v: pd.notna(v) and str(v) != "").any()]
        if not recorded:
            out.append(str(label))
    return out


def _values(group: pd.DataFrame, column: str) -> str:
    """The distinct non-empty values of ``column`` joined by ", " ("–" for none)."""
    if column not in group.columns:
        return "–"
    values = sorted({f"{v:g}" if isinstance(v, float) else str(v)
                     for v in group[column].dropna() if str(v) != ""})
    return ", ".join(values) or "–"


def setup_table(table: pd.DataFrame, error_bars: str = "sem") -> pd.DataFrame:
    """Per reported model: the dataset scale(s), training preset(s), the open choices of
    the paper (head, lr, batch size, normalisation, a frozen backbone's BatchNorm mode, a VAE's
    prediction; "–" where not recorded or not applicable), what ± shows, and the numbers of
    dataset samples and training seeds among finished jobs."""
    done = table[table["status"] == "done"]
    rows = {}
    for label, group in done.groupby("label", sort=True):
        rows[label] = {
            "scale": (", ".join(f"{float(s):g}" for s in sorted(group["scale"].dropna().unique()))
                      if "scale" in group.columns else "") or "–",  # job_row tables have none
            "preset": _values(group, "preset"),
            **{name: _values(group, col) for col, name in _SETTINGS.items()},
            "±": check_error_bars(error_bars),
            "dataset samples": int(group["sample"].nunique()),
            "training seeds": int(group["seed"].nunique()),
            "finished jobs": len(group),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")


def _status_section(report: HtmlReport, metrics: DiagvibMetrics, error_bars: str) -> None:
    report.heading("Setup")
    own = predictions_only(metrics.table)
    trained = [m for m in metrics.labels if m not in own]
    spread = (f"± is the {ERROR_BAR_TEXT[error_bars]} over dataset samples, shown only where "
              "at least two samples finished; the paper used five.")
    if trained:
        report.paragraph(
            "Scale 1 is the paper's dataset size (43,740 training, 8,748 validation, 10,000 "
            f"test images per experiment). {spread} Learning rate and batch size are the "
            "authors' ResNet-18 values (Adam 2e-4, batch 64) for every model trained here "
            "unless set; the paper tuned them per baseline (appendix A.2) without giving them. "
            "head: full = one output per class of the predicted factor (the authors' networks), "
            "selected = the 3 selected classes. docs/diagvib-fidelity.md explains each choice."
        )
    if own:
        report.paragraph(
            f"{', '.join(own)}: scored from predictions given to the report (job_row records); "
            "how they were trained, and which checkpoint was kept, is not recorded here. "
            + ("" if trained else spread)
        )
    report.table(setup_table(metrics.table, error_bars))
    report.heading("Jobs")
    status = metrics.status.rename(columns={"label": "model"}).set_index(["model", "study"])
    report.table(status)
    if len(metrics.unfit):
        report.paragraph(
            f"{len(metrics.unfit)} run(s) did not fit their training data: their validation "
            f"accuracy on the training distribution stayed within {FIT_MARGIN:.2f} of chance, so "
            "their test accuracies say nothing about shortcuts. They are marked with \"!\" in "
            "the tables and figures below; train longer, or check the protocol.", note=True)
        report.table(metrics.unfit.rename(columns={"label": "model"})
                     .set_index(["model", "experiment"]), float_format="{:.3f}")
    failed = metrics.table[metrics.table["status"] == "failed"]
    if len(failed):
        cols = [c for c in ("job_id", "label", "experiment", "seed", "error") if c in failed]
        report.paragraph(f"{len(failed)} failed job(s); rerun `shortcutlab diagvib run` with the "
                         "same options to retry them:", note=True)
        report.table(failed[cols].rename(columns={"label": "model"}).set_index(cols[0]))
    pending = int((metrics.table["status"] == "pending").sum())
    if pending:
        report.paragraph(f"{pending} job(s) pending (started but not finished); they are not "
                         "averaged.", note=True)


def _metric_sections(report: HtmlReport, metrics: DiagvibMetrics, error_bars: str) -> None:
    from shortcutlab.diagvib import figures as figs

    err_text = ERROR_BAR_TEXT[error_bars]
    singles = _study_order(metrics.singles["study"])
    registered = [s for s in study_names() if not get_study(s).correlated]
    report.heading(f"Accuracy without shortcut opportunities ({', '.join(singles or registered)})")
    report.paragraph(f"P_i: mean per-class test accuracy on the training distribution, mean ± "
                     f"{err_text} over dataset samples; chance is 0.33.")
    marked = False  # a number over fewer samples or correlated factors than the others
    for study in singles:
        if len(singles) > 1:
            report.paragraph(f"{study}:", note=True)
        frame = factor_frame(metrics.singles[metrics.singles["study"] == study], ["label"],
                             err=error_bars)
        for label, factor, _ in _flagged(metrics, study):
            if (label,) in frame.index and frame.at[(label,), factor] != "–":
                frame.at[(label,), factor] += " !"
        report.table(frame)
        marked = marked or has_incomplete(frame)
    if not singles:
        report.paragraph(f"No {'/'.join(registered)} job has finished.", note=True)

    report.heading("Factor aggregates FAAvg and FAMin (paper eqs. 1–2)")
    report.paragraph(
        "Accuracy on the out-of-distribution test cells, per predicted factor: the mean (FAAvg) "
        "or the minimum (FAMin) over the five correlated factors within each dataset sample, "
        f"then mean ± {err_text} over samples. Values near 0 mean the model predicted the "
        "factor from its correlated factor: it took the shortcut."
    )
    rank = {s: i for i, s in enumerate(study_names())}
    for metric in ("FAAvg", "FAMin"):
        sub = metrics.aggregates[metrics.aggregates["metric"] == metric]
        sub = sub.sort_values(["label", "study"], kind="stable",
                              key=lambda c: c.map(rank) if c.name == "study" else c)
        report.paragraph(f"{metric}:", note=True)
        frame = factor_frame(sub, ["label", "study"], err=error_bars)
        for r in metrics.unfit.itertuples():
            key = (r.label, r.study)
            if key in frame.index and frame.at[key, r.predicted] != "–" and not str(
                    frame.at[key, r.predicted]).endswith("!"):
                frame.at[key, r.predicted] += " !"
        report.table(frame)
        marked = marked or has_incomplete(frame)
    if marked:
        report.paragraph(INCOMPLETE_NOTE[0].upper() + INCOMPLETE_NOTE[1:] + ".", note=True)
    _aggregate_figures(report, metrics)

    report.heading("Accuracy per factor pair (paper figure 4a)")
    for label in metrics.labels:
        try:
            fig = figs.plot_accuracy_matrices(metrics, label)
        except DiagvibError as exc:
            report.paragraph(f"{label}: {exc}", note=True)
            continue
        report.figure(fig, f"{label}: rows the predicted factor, columns the correlated factor; "
                           "red below chance (shortcut taken), blue above.")

    if len(metrics.symmetry):
        report.heading("Is one factor of a pair the shortcut for the other? (P_ij vs 1 − P_ji)")
        report.paragraph(
            "The paper (section 5) finds P_ij ≈ 1 − P_ji for almost every pair: if F_j is the "
            "shortcut for predicting F_i, F_i is not the shortcut for predicting F_j. deviation "
            "= P_ij + P_ji − 1. ZGO (i, j) and (j, i) share their images (as in the authors' "
            "code), so with the same training seed they are one learning problem and deviation "
            "is minus the share of out-of-distribution answers that follow neither factor: near "
            "0 when the model follows one of the two (the paper's case a), clearly negative when "
            "it mixes them (case b, the paper's lightness/position)."
        )
        for study in _study_order(metrics.symmetry["study"]):
            sub = metrics.symmetry[metrics.symmetry["study"] == study]
            mean_dev = sub.groupby("label")["deviation"].apply(lambda d: d.abs().mean())
            report.paragraph(f"{study}: mean |deviation| " + ", ".join(
                f"{label} {v:.2f}" for label, v in mean_dev.items()), note=True)
            report.table(sub.rename(columns={"label": "model"})
                         .set_index(["model", "factor_i", "factor_j"]).drop(columns="study"),
                         float_format="{:.2f}")
            report.figure(figs.plot_pair_symmetry(metrics, study),
                          f"{study}: each unordered pair once; the dashed line is P_ij = "
                          "1 − P_ji.")

    if len(metrics.chgo):
        report.heading("CHGO over ZGO (paper Table 2)")
        report.paragraph(
            "Accuracy gain, in percentage points, of the class that had only a shortcut "
            "opportunity in CHGO over the same pair in ZGO (mean ± std over dataset samples). "
            "Near 0: the generalisation opportunities of the other classes did not transfer."
        )
        chgo = factor_frame(metrics.chgo, ["label"], err="std", scale=100, digits=1)
        report.table(chgo)
        if has_incomplete(chgo):
            report.paragraph(INCOMPLETE_NOTE[0].upper() + INCOMPLETE_NOTE[1:] + ".", note=True)
        short = short_chgo_cells(metrics.chgo)
        caption = "CHGO − ZGO per factor." + _marked_caption(
            short, "Hatched bars average fewer (pair, sample) cells than the complete study")
        report.figure(figs.plot_chgo_improvement(metrics), caption)


#: what the hollow points of the FAAvg/FAMin figures are (their caption names them)
_HOLLOW = ("Hollow points average fewer correlated factors in some sample or fewer dataset samples "
          "than complete")


def _aggregate_figures(report: HtmlReport, metrics: DiagvibMetrics) -> None:
    """One FAAvg/FAMin figure per sequence (:attr:`~shortcutlab.diagvib.spec.Study.sequences`)
    with results in a study of its own (not shared with another sequence, as ZSO and ZGO are);
    else the first sequence with two studies with results."""
    from shortcutlab.diagvib import figures as figs

    studies = set(metrics.aggregates["study"])
    sequences = {q: studies_in_sequence(q) for q in sequence_names()}
    drawn = False
    for sequence, order in sequences.items():
        shared = {s for q, other in sequences.items() if q != sequence for s in other}
        if studies & (set(order) - shared):
            drawn = True
            paper = _PAPER_FIGURE.get(sequence)
            report.figure(figs.plot_factor_aggregates(metrics, sequence),
                          f"FAAvg and FAMin from {order[0]} to {order[-1]} through the "
                          f"{sequence} studies" + (f" (paper figure {paper})." if paper else ".")
                          + _marked_caption(short_aggregates(metrics.aggregates, order), _HOLLOW))
    if drawn:
        return
    for sequence, order in sequences.items():
        present = [s for s in order if s in studies]
        if len(present) >= 2:
            report.figure(figs.plot_factor_aggregates(metrics, sequence),
                          f"FAAvg and FAMin from {present[0]} to {present[-1]} (run the "
                          f"{' or '.join(sequences)} studies to see the steps in between, paper "
                          "figures 4b and 5b)."
                          + _marked_caption(short_aggregates(metrics.aggregates, present), _HOLLOW))
            return


def _flagged(metrics: DiagvibMetrics, study: str) -> list[tuple[str, str, str]]:
    u = metrics.unfit[metrics.unfit["study"] == study]
    return sorted({(str(r.label), str(r.predicted), str(r.correlated or ""))
                   for r in u.itertuples()})


def _study_order(studies: Iterable[str]) -> list[str]:
    rank = {s: i for i, s in enumerate(study_names())}
    return sorted(set(studies), key=lambda s: rank.get(s, len(rank)))


def noise_table(table: pd.DataFrame, widest: int = 10) -> pd.DataFrame:
    """The finished jobs whose test accuracy moved most over their last epochs (``acc_max -
    acc_min``, see :func:`~shortcutlab.diagvib.checkpoints.job_spread`), widest first:
    model, experiment, seed, reported accuracy and the range."""
    cols = ["model", "experiment", "seed", "test_acc", "acc_min", "acc_max"]
    if "acc_min" not in table.columns or "experiment" not in table.columns:
        return pd.DataFrame(columns=cols)
    done = table[(table["status"] == "done") & table["acc_min"].notna()]
    done = done.assign(model=done["label"], width=done["acc_max"] - done["acc_min"])
    return done.sort_values(["width", "experiment"], ascending=[False, True],
                            kind="stable").head(widest)[cols].reset_index(drop=True)


def _noise_section(report: HtmlReport, metrics: DiagvibMetrics) -> None:
    widest = noise_table(metrics.table)
    if widest.empty:
        return
    width = metrics.table["acc_max"] - metrics.table["acc_min"]
    report.heading("Checkpoint noise")
    report.paragraph(
        f"Range of each job's test accuracy over its last {SPREAD_EPOCHS} epochs: median "
        f"{width.median():.2f}, largest {width.max():.2f} over {int(width.notna().sum())} "
        "jobs. Where it is wide the reported number depends on which epoch is counted; "
        "`--checkpoint last` or `mean-last-K` shows how much. The widest:")
    report.table(widest.round(3).set_index(["model", "experiment"]))


def build_report(table: pd.DataFrame, title: str = "DiagViB-6 shortcut report",
                 extra_sections: Sequence[Section] = (),
                 error_bars: str = "sem",
                 checkpoint: str = DEFAULT_CHECKPOINT) -> tuple[HtmlReport, DiagvibMetrics]:
    """The report page and the metrics it shows, computed in memory (nothing written).
    ``error_bars``: what ± shows, ``sem`` or ``std`` (see :data:`ERROR_BAR_TEXT`);
    ``checkpoint``: the rule the table's accuracies were read with (named on the page)."""
    from shortcutlab.diagvib.comparison import add_comparison_section

    check_error_bars(error_bars)
    cp = parse_checkpoint(checkpoint)
    metrics = compute_metrics(table)
    report = HtmlReport(title)
    own = predictions_only(metrics.table)
    trained = [m for m in metrics.labels if m not in own]
    of_what = (f"{cp.describe()}" + (f" for {', '.join(trained)}" if own else "")
               if trained else "")
    if own:
        given = f"the predictions given for {', '.join(own)}"
        of_what = f"{of_what}, and of {given}" if of_what else given
    report.paragraph(
        f"{len(metrics.labels)} model(s): {', '.join(metrics.labels)}. Every accuracy is the "
        f"mean per-class accuracy (chance 1/3) of {of_what}."
    )
    _status_section(report, metrics, error_bars)
    _metric_sections(report, metrics, error_bars)
    _noise_section(report, metrics)
    add_comparison_section(report, table)  # under the reported names (comparison.reported)
    for section in extra_sections:
        section(report, metrics.table)
    return report, metrics


def write_report(
    sources: pd.DataFrame | Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    title: str = "DiagViB-6 shortcut report",
    extra_sections: Sequence[Section] = (),
    error_bars: str = "sem",
    checkpoint: str = DEFAULT_CHECKPOINT,
) -> Path:
    """Write ``index.html``, ``metrics.json`` and ``metrics.csv`` into ``out_dir`` (all three or,
    on a failure, none); return the path of ``index.html``. ``sources`` is a job table or run
    directories / table files; ``checkpoint``: the epoch each job's accuracies are read at
    (:mod:`shortcutlab.diagvib.checkpoints`; other rules than the paper's need run
    directories). An ``out_dir`` that cannot be written is refused before anything is read."""
    check_output_folder(out_dir)  # a bad folder is refused now, not after the figures
    cp = parse_checkpoint(checkpoint)
    if isinstance(sources, pd.DataFrame) and not cp.is_default:
        raise DiagvibError(f"checkpoint rule {cp.name} needs the jobs' per-epoch records: give "
                           "run directories, not a job table")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    sections = list(extra_sections)
    if not isinstance(sources, pd.DataFrame):
        from shortcutlab.diagvib.inspect import inspection_section  # ASR/VAE figures' links

        sources = list(sources)
        sections.append(inspection_section([named_source(s)[1] for s in sources], out_dir))
    table = sources if isinstance(sources, pd.DataFrame) else load_job_tables(sources, cp.name)
    check_error_bars(error_bars)
    with literal_text():  # names are data, not mathtext
        report, metrics = build_report(table, title, sections, error_bars, cp.name)
    out = Path(out_dir)
    with output_set() as outputs:  # all three files or none (old ones stay on a failure)
        outputs.write_json(out / "metrics.json", metrics.to_dict())
        outputs.write_text(out / "metrics.csv", metrics.to_frame().to_csv(index=False))
        outputs.write_text(out / "index.html", report.render())
    return out / "index.html"


__all__ = ["INCOMPLETE_NOTE", "TRAINING_COLUMNS", "build_report", "factor_frame",
           "format_mean_err", "has_incomplete", "load_job_table", "load_job_tables",
           "named_source", "noise_table", "predictions_only", "setup_table", "short_aggregates",
           "short_chgo_cells", "write_report"]
