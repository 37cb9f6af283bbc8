"""The BiasBed section of the HTML report: selection rules side by side, curves, statistics.

BiasBed's Table 1 shows how much the reported accuracy depends on the model-selection rule; here
every (algorithm, test set) gets ``oracle / rule (difference)`` for the best-validation and the
last-n rules, the per-epoch curves (mean ± std over runs, BiasBed Fig. 2), how the mean ranks move
between rules, and D's Friedman / Iman-Davenport / Nemenyi comparison with its CD diagram.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from shortcutlab.biasbed.protocol import (
    compare_algorithms,
    competitor_table,
    default_n_last,
    load_epochs,
    resolve_compare_by,
    selection_table,
    strict_test_sets,
)
from shortcutlab.errors import StatsError
from shortcutlab.stats.selection import RULES, rule_label
from shortcutlab.utils.html import HtmlReport, literal_text
from shortcutlab.utils.io import output_set

__all__ = ["add_biasbed_section", "epoch_curves", "rule_gap_frame", "write_report"]

MAX_CURVE_PANELS = 8


def _block(row: pd.Series, several_datasets: bool) -> str:
    return f"{row['dataset']}/{row['test_set']}" if several_datasets else str(row["test_set"])


def rule_gap_frame(table: pd.DataFrame, rule: str, scale: float = 100.0) -> pd.DataFrame:
    """Algorithms × test sets as text ``oracle / rule (rule − oracle)``, BiasBed Table 1 style
    (accuracies in percent with ``scale=100``)."""
    several = table["dataset"].nunique() > 1
    cells: dict[tuple[str, str], str] = {}
    for _, row in table.iterrows():
        oracle, value = row["best_epoch"] * scale, row[rule] * scale
        cells[(str(row["algorithm"]), _block(row, several))] = (
            f"{oracle:.1f} / {value:.1f} ({value - oracle:+.1f})"
        )
    algos = list(dict.fromkeys(str(a) for a in table["algorithm"]))
    blocks = list(dict.fromkeys(_block(r, several) for _, r in table.iterrows()))
    frame = pd.DataFrame(
        [[cells.get((a, b), "–") for b in blocks] for a in algos],
        index=pd.Index(algos, name="algorithm"),
        columns=blocks,
    )
    return frame


def epoch_curves(epochs: pd.DataFrame) -> Figure:
    """Test accuracy per epoch, mean ± std over runs, one panel per (dataset, test set)."""
    data = epochs[epochs["tag"].astype(str) == "all"]
    several = data["dataset"].nunique() > 1
    panels = list(dict.fromkeys(zip(data["dataset"], data["test_set"], strict=True)))
    shown = panels[:MAX_CURVE_PANELS]
    ncols = min(3, len(shown))
    nrows = -(-len(shown) // ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.0 * nrows))  # no pyplot: no global figure registry
    axes = np.asarray(fig.subplots(nrows, ncols, squeeze=False))
    for ax, (dataset, test_set) in zip(axes.flat, shown, strict=False):
        sub = data[(data["dataset"] == dataset) & (data["test_set"] == test_set)]
        for algorithm, grp in sub.groupby("algorithm", sort=True):
            stats = grp.groupby("epoch")["acc"].agg(["mean", "std"]).fillna({"std": 0.0})
            x = stats.index.to_numpy() + 1
            ax.plot(x, stats["mean"], label=str(algorithm))
            ax.fill_between(
                x, stats["mean"] - stats["std"], stats["mean"] + stats["std"], alpha=0.2
            )
        ax.set_title(f"{dataset}/{test_set}" if several else str(test_set), fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylabel("accuracy")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


METRIC_NAMES = {"top1": "top-1 accuracy (the fraction of correct predictions, as BiasBed reports)",
                "mean_per_class": "mean per-class accuracy (recall averaged over the classes)"}


def _metric_text(competitors: pd.DataFrame) -> str:
    """Which accuracy the numbers are, per training set when they differ."""
    used = competitors.groupby("dataset")["metric"].first()
    if used.nunique() == 1:
        return f"Accuracy is the {METRIC_NAMES.get(used.iloc[0], used.iloc[0])}."
    parts = [f"{d}: {METRIC_NAMES.get(m, m)}" for d, m in used.items()]
    return "Accuracy per training set — " + "; ".join(parts) + "."


def _rank_table(
    epochs: pd.DataFrame, n_last: int, alpha: float, options: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, str]]:
    ranks: dict[str, pd.Series] = {}
    errors: dict[str, str] = {}
    for rule in RULES:
        try:
            ranks[rule_label(rule, n_last)] = compare_algorithms(
                epochs, rule, n_last=n_last, alpha=alpha, **options
            ).ranks
        except StatsError as exc:
            errors[rule] = str(exc)
    frame = pd.DataFrame(ranks)
    frame.index.name = "algorithm"
    return frame, errors


def add_biasbed_section(
    report: HtmlReport,
    run_dir: str | os.PathLike[str],
    *,
    rule: str = "best_validation",
    n_last: int | None = None,
    alpha: float = 0.05,
    compare_by: str = "auto",
    strict: bool = False,
    df: str = "textbook",
    nemenyi_clip: bool = False,
    nemenyi_method: str = "exact",
    tie_correction: bool = True,
) -> dict[str, Any]:
    """Add the BiasBed section for the protocol in ``run_dir``; returns the computed tables
    (``epochs``, ``selection``, ``competitors``, ``comparison`` or None,
    ``comparison_error``). ``compare_by``/``strict``/``df``/``nemenyi_clip``: see
    :func:`shortcutlab.biasbed.protocol.compare_algorithms` (strict: leave out the test sets
    marked in-distribution for some training set)."""
    run_dir = os.fspath(run_dir)  # the protocol readers take str | Path
    epochs = load_epochs(run_dir)
    competitors = competitor_table(run_dir)
    excluded = strict_test_sets(run_dir) if strict else []
    if strict and not excluded:
        raise StatsError("--strict leaves out the test sets marked in-distribution, but this "
                         "protocol marks none (biasbed run --in-distribution NAME=TESTSET)")
    options: dict[str, Any] = {
        "compare_by": compare_by, "exclude_test_sets": excluded, "df": df,
        "nemenyi_clip": nemenyi_clip, "nemenyi_method": nemenyi_method,
        "tie_correction": tie_correction,
    }
    n = default_n_last(epochs) if n_last is None else n_last
    table = selection_table(epochs, n)
    runs = epochs.groupby(["algorithm", "dataset"])["run"].nunique()
    n_epochs = int(epochs["epoch"].max()) + 1
    report.heading("BiasBed protocol: model selection and statistical comparison")
    report.paragraph(
        f"{epochs['algorithm'].nunique()} algorithm(s) on {epochs['dataset'].nunique()} "
        f"dataset(s), {int(runs.min())}–{int(runs.max())} runs each (different training seeds), "
        f"{n_epochs} epochs, every epoch evaluated on every test set. {_metric_text(competitors)}"
    )
    report.heading("Competitors: algorithm, training set and training recipe", 3)
    report.paragraph(
        "One row per (algorithm, training set); the recipe is the training protocol preset with "
        "any overridden fields (e.g. biasbed (lr=0.0001))."
    )
    report.table(competitors.set_index(["algorithm", "dataset"]))
    report.heading("How the model-selection rule changes the numbers (cf. BiasBed Table 1)", 3)
    report.paragraph(
        "Each cell: best epoch (oracle: it looks at the test set, i.e. cherry-picking) / the "
        "honest rule (difference), mean over runs, in percent. The oracle is shown only to "
        "measure how optimistic it is."
    )
    report.paragraph("Best training-distribution validation epoch:", note=True)
    report.table(rule_gap_frame(table, "best_validation"))
    report.paragraph(f"Mean of the last {n} epochs:", note=True)
    report.table(rule_gap_frame(table, "last_n"))
    report.paragraph("All rules, mean and standard deviation over runs:", note=True)
    report.table(table.set_index(["algorithm", "dataset", "test_set"]), float_format="{:.4f}")
    report.figure(
        epoch_curves(epochs), caption="Test accuracy per epoch: mean over runs, shaded ± one std."
    )

    report.heading("Statistical comparison (Friedman, Iman-Davenport, Nemenyi)", 3)
    result, error = None, ""
    try:
        mode = resolve_compare_by(epochs, compare_by)
        result = compare_algorithms(epochs, rule, n_last=n, alpha=alpha, **options)
    except StatsError as exc:
        error = str(exc)
        report.paragraph(
            f"No statistical comparison: {error}. Blocks are the test sets (per dataset); add "
            "test sets or datasets, or algorithms."
        )
    if result is not None:
        assert rule in RULES  # compare_algorithms refuses any other rule
        verdict = (
            "the algorithms differ significantly"
            if result.significant
            else "no significant difference between the algorithms"
        )
        f_text = f"{result.F:.3f}" if result.F != float("inf") else "∞"
        who = "competitors (algorithm, training set)" if mode == "competitor" else "algorithms"
        left_out = f" Strict setting: left out {', '.join(excluded)}." if excluded else ""
        clip = " Nemenyi p-values bounded to [0.001, 0.9]." if nemenyi_clip else ""
        if nemenyi_method == "table":
            clip = " Nemenyi p-values from the studentized-range table, bounded to [0.001, 0.9]."
        if not tie_correction:
            clip += " Friedman χ² without tie correction."
        report.paragraph(
            f"Rule: {rule_label(rule, n)}. {len(result.algorithms)} {who} over "
            f"{len(result.blocks)} blocks (test sets): Friedman χ² = {result.chi2:.3f} "
            f"(p = {result.chi2_p_value:.3g}); Iman-Davenport F({result.df_num:.4g}, "
            f"{result.df_den:.4g}) = {f_text}, p = {result.p_value:.3g} ({df} degrees of "
            f"freedom) — {verdict} at α = {alpha:g}. Critical difference CD = "
            f"{result.critical_difference:.3f}.{left_out}{clip}"
        )
        report.table(result.scores_frame(3), float_format="{}")
        report.table(result.ranks_frame())
        report.figure(result.cd_diagram(), caption="Critical-difference diagram (mean ranks).")
        ranks, _ = _rank_table(epochs, n, alpha, options)
        if not ranks.empty:
            report.paragraph("Mean rank of each algorithm under each selection rule:", note=True)
            report.table(ranks)
    return {
        "epochs": epochs,
        "selection": table,
        "competitors": competitors,
        "comparison": result,
        "comparison_error": error,
        "n_last": n,
    }


def check_alpha(alpha: float) -> None:
    """Refuse a significance level outside (0, 1) (``--alpha 5``: a percentage) in one line."""
    if not 0.0 < alpha < 1.0:  # nan fails both comparisons
        raise StatsError(f"--alpha must lie strictly between 0 and 1, e.g. 0.05 (got {alpha:g})")


def write_report(
    run_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    rule: str = "best_validation",
    n_last: int | None = None,
    alpha: float = 0.05,
    **options: Any,
) -> list[Path]:
    """Write ``index.html`` plus ``epochs.csv``, ``selection.csv``, ``competitors.csv`` and
    the comparison files (JSON, CSV, LaTeX, CD diagram) into ``out_dir``; returns the written
    paths. ``options``: ``compare_by``, ``strict``, ``df``, ``nemenyi_clip`` of
    :func:`add_biasbed_section`. An ``alpha`` outside (0, 1) is refused before anything is
    read (the comparison would otherwise be skipped with a note)."""
    check_alpha(alpha)
    out = Path(out_dir)
    report = HtmlReport("BiasBed report")
    with literal_text():  # algorithm and test-set names are data, not mathtext
        tables = add_biasbed_section(
            report, run_dir, rule=rule, n_last=n_last, alpha=alpha, **options
        )
    frames = (
        ("epochs.csv", tables["epochs"]),
        ("selection.csv", tables["selection"]),
        ("competitors.csv", tables["competitors"]),
    )
    with output_set() as outputs:  # every file or none (old ones stay on a failure)
        written = [outputs.write_text(out / name, frame.to_csv(index=False))
                   for name, frame in frames]
        if tables["comparison"] is not None:
            written.extend(tables["comparison"].stage(outputs, out, stem="comparison"))
        written.append(outputs.write_text(out / "index.html", report.render()))
    return written
