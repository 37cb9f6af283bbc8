"""The ImageNet-X section of the HTML report, and a standalone ImageNet-X report.

:func:`analyse` runs everything a report shows (evaluation, bootstrap intervals for the models
drawn, group tests, dataset statistics); :func:`add_imagenetx_section` renders it into a shared
:class:`~shortcutlab.utils.html.HtmlReport`; :func:`write_report` writes ``index.html`` with
``imagenetx.json``, ``summary.csv`` (the authors' table layout), ``meta_labels.csv``,
``table3.csv``, ``active_factors.csv``, ``factor_shares.csv`` (figure 2) and (with
probabilities) ``calibration.csv`` beside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.analyses import ORIGINAL_LABELS
from shortcutlab.imagenetx.annotations import Annotations, Partition, Which, load_annotations
from shortcutlab.imagenetx.evaluate import (
    BootstrapCI,
    ErrorType,
    EvaluationResult,
    bootstrap_ci,
    error_ratio,
    evaluate,
)
from shortcutlab.imagenetx.predictions import Predictions
from shortcutlab.utils.display import ShowsResult
from shortcutlab.utils.html import HtmlReport, literal_text
from shortcutlab.utils.io import output_set

MAX_TABLE_MODELS = 30
MAX_BAR_MODELS = 6


@dataclass(frozen=True, repr=False)
class ImagenetXAnalysis(ShowsResult):
    """Everything the ImageNet-X report section shows, built once by :func:`analyse`; only
    ``result`` is required (a bare evaluation renders as a report too)."""

    result: EvaluationResult
    ci: BootstrapCI | None = None
    groups: dict[str, str] | None = None
    group_tests: pd.DataFrame | None = None
    spearman: tuple[pd.DataFrame, pd.DataFrame] | None = None
    chi2: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    families: pd.Series | None = None
    calibration: pd.DataFrame | None = None
    active_counts: pd.DataFrame | None = None
    active_accuracy: pd.DataFrame | None = None
    listing: pd.DataFrame | None = None
    paper: PaperTables | None = None
    spearman_train: tuple[pd.DataFrame, pd.DataFrame] | None = None
    factor_shares: pd.DataFrame | None = None

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        """The evaluation's headline, the bootstrap interval of each worst factor's error
        ratio, and one line per test that ran."""
        result = self.result
        frame = result.headline()
        if self.ci is not None:
            worst = result.worst_factor_name
            cells = []
            for m, model in enumerate(result.models):
                if model in self.ci.models and worst[m] is not None:
                    low, high = self.ci.table(model).loc[worst[m]]
                    cells.append(f"{low:.3f}–{high:.3f}")
                else:
                    cells.append("–")
            frame[f"its {self.ci.level:.0%} CI"] = cells
        title = (f"ImageNet-X analysis: {len(result.models)} model(s) on {result.n_images:,} "
                 f"images ({result.which} factors, error type {result.error_type})")
        frame, cut = result.shown(frame)
        notes = [*self.notes, *cut]
        if self.group_tests is not None:
            hits = [str(f) for f in self.group_tests.index[self.group_tests["significant"]]]
            notes.append(f"Alexander-Govern across {len(set((self.groups or {}).values()))} "
                         f"groups: {len(hits)} of {len(self.group_tests)} factors differ"
                         + (f" ({', '.join(hits)})" if hits else ""))
        if self.chi2 is not None:
            notes.append(f"train vs val factor counts: χ² = {self.chi2['statistic']:.1f} "
                         f"(dof {self.chi2['dof']}, p = {self.chi2['pvalue']:.3g}), Cramér's V "
                         f"= {self.chi2['cramers_v']:.3f}")
        notes.append("write_report(analysis, folder) draws it all; .to_dict() holds the numbers")
        return title, frame, notes




    def to_dict(self) -> dict[str, Any]:
        """JSON-ready results (per-model numbers, group tests, χ²)."""
        out: dict[str, Any] = {
            "settings": {
                "which": self.result.which,
                "error_type": self.result.error_type,
                "n_images": self.result.n_images,
                **self.result.options,
            },
            "models": self.result.to_dict(),
        }
        if self.group_tests is not None:
            frame = self.group_tests.replace({np.nan: None})
            out["group_tests"] = frame.to_dict(orient="index")
        if self.chi2 is not None:
            out["chi2_train_vs_val"] = {k: v for k, v in self.chi2.items() if k != "counts"}
        if self.calibration is not None:
            out["calibration_ece"] = _records(self.calibration, orient="index")
        if self.active_accuracy is not None:
            out["accuracy_by_active_factors"] = _records(self.active_accuracy, orient="index")
        if self.listing is not None:
            out["table3"] = _records(self.listing, orient="records")
        if self.factor_shares is not None:
            out["factor_shares"] = _records(self.factor_shares, orient="records")
        if self.paper is not None:
            out["result_tables"] = self.paper.to_dict()
        return out


def _records(frame: pd.DataFrame, orient: str) -> Any:
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    return frame.astype(object).where(frame.notna(), None).to_dict(orient=orient)


@dataclass(frozen=True)
class PaperTables:
    """Analyses computed from the authors' result tables (figures 1b, 4, 6 and 17)."""

    which: str
    error_type: str
    spillover_method: str
    figure4: pd.DataFrame
    family_tests: pd.DataFrame
    spillover: dict[str, pd.DataFrame]
    claims: pd.DataFrame
    tailored: dict[str, pd.DataFrame] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "which": self.which, "error_type": self.error_type,
            "spillover_method": self.spillover_method,
            "figure4_models": len(self.figure4),
            "figure4_families": self.figure4["family"].value_counts().to_dict(),
            "family_tests": _records(self.family_tests, orient="index"),
            "spillover": {g: _records(t, orient="index") for g, t in self.spillover.items()},
            "paper_claims": _records(self.claims, orient="records"),
            "tailored_augmentation": None if self.tailored is None
            else _records(self.tailored["tests"], orient="index"),
        }


def analyse_result_tables(
    results_dir: str | os.PathLike[str],
    which: Which = "top",
    error_type: ErrorType = "class",
    spillover_method: str = "cubic",
) -> PaperTables:
    """Figures 1b, 4, 6 and 17 from the authors' ``results`` folder (never shipped)."""
    from shortcutlab.imagenetx import analyses, spillover, statistics

    tables = analyses.read_result_tables(Path(results_dir), which, error_type)
    figure4 = analyses.figure4_models(tables, error_type)
    main = figure4[figure4["family"].isin(analyses.MAIN_FAMILIES)]
    family_tests = statistics.alexander_govern_by_factor(
        error_ratio(main), main["family"]
    )
    groups = set(tables["group"])
    spill = {
        g: spillover.group_spillover(tables, g, spillover_method)  # type: ignore[arg-type]
        for g in spillover.PARAMETERS if g in groups
    }
    claims = (spillover.claim_verdicts(tables) if set(spillover.PARAMETERS) <= groups
              else pd.DataFrame())
    tailored = None
    if {g for g, _ in analyses.TAILORED_GROUPS.values()} <= groups:
        tailored = analyses.tailored_augmentation(tables)
    return PaperTables(which, error_type, spillover_method, figure4, family_tests, spill,
                       claims, tailored)


def analyse(
    predictions: Predictions,
    which: Which = "top",
    error_type: ErrorType = "class",
    ignore_empty_real: bool = False,
    groups: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    dataset_statistics: bool = True,
    annotations: Annotations | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    spillover_method: str = "cubic",
    families: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
) -> ImagenetXAnalysis:
    """Evaluate, bootstrap the models drawn in the bar chart, test groups, describe the data;
    per-factor calibration (when probabilities are given), accuracy by number of active
    factors, table 3; with ``results_dir`` the analyses of the authors' result tables.
    ``notes`` are shown at the top of the report section. The parts are computed first and
    the frozen result built once at the end."""
    if seed < 0 or n_boot < 0:
        raise ImagenetXError(f"the bootstrap seed and resample count must be >= 0 (got {seed} "
                             f"and {n_boot})")
    from shortcutlab.imagenetx import analyses, statistics

    annotations = annotations or load_annotations(which, "val")
    result = evaluate(predictions, annotations, error_type, ignore_empty_real)
    calibration = None
    if predictions.probabilities is not None:
        calibration = analyses.calibration_by_factor(predictions, annotations, error_type,
                                                     ignore_empty_real=ignore_empty_real)
    else:
        notes = (*notes, no_calibration_note(result.models))
    multi = annotations if annotations.which == "multi" else load_annotations("multi", "val")
    paper = None
    if results_dir is not None:
        paper = analyse_result_tables(results_dir, which, error_type, spillover_method)
    ci = None
    if n_boot > 0:
        shown = list(result.models[:MAX_BAR_MODELS])
        ci = bootstrap_ci(predictions.select(shown), annotations, error_type, ignore_empty_real,
                          n_boot, seed=seed)
    group_map = dict(groups) if groups else None
    group_tests = None
    if group_map:
        group_tests = statistics.alexander_govern_by_factor(result.table("error_ratio"), group_map)
    spearman = spearman_train = chi2 = active_counts = shares = None
    if dataset_statistics:
        train = load_annotations(annotations.which, "train")
        spearman = statistics.spearman_factors_meta_labels(annotations)
        spearman_train = statistics.spearman_factors_meta_labels(train)
        chi2 = statistics.chi2_train_vs_val(train, annotations)
        active_counts = analyses.active_factor_counts(multi, load_annotations("multi", "train"))
        shares = analyses.factor_shares(*(_annotation_set(annotations, partition, which)
                                          for partition, which in analyses.FIGURE2_SETS))
    return ImagenetXAnalysis(
        result, ci=ci, groups=group_map, group_tests=group_tests, spearman=spearman, chi2=chi2,
        spearman_train=spearman_train, notes=tuple(notes),
        families=analyses.model_families(result.models, families),
        calibration=calibration, active_counts=active_counts,
        active_accuracy=analyses.accuracy_by_active_factors(predictions, multi, error_type,
                                                            ignore_empty_real),
        listing=analyses.meta_label_listing(result), paper=paper, factor_shares=shares,
    )


def _annotation_set(given: Annotations, partition: Partition, which: Which) -> Annotations:
    """``given`` when it is that set, else the package's (prototypes filtered as ``given``)."""
    if (given.partition, given.which) == (partition, which):
        return given
    if given.filtered:
        return load_annotations(which, partition)  # the cached call the other sections make
    return load_annotations(which, partition, filter_prototypes=False)


def add_imagenetx_section(
    report: HtmlReport, results: ImagenetXAnalysis | EvaluationResult
) -> None:
    """Append the ImageNet-X section (tables, figures, tests) to ``report``."""
    from shortcutlab.imagenetx import figures

    analysis = results if isinstance(results, ImagenetXAnalysis) else ImagenetXAnalysis(results)
    result = analysis.result
    ignored = ""
    if result.options.get("ignore_empty_real"):
        ignored = ", images with an empty ReaL set ignored"
    report.heading("ImageNet-X: which factors are the models' mistakes associated with?")
    report.paragraph(
        f"{len(result.models)} model(s) on {result.n_images:,} annotated validation images "
        f"({result.which} factor, error type {result.error_type}{ignored}). "
        "Error ratio = (1 − accuracy on images with the factor) / (1 − overall accuracy): above "
        "1 the factor is over-represented among the model's mistakes."
    )
    for note in analysis.notes:
        report.paragraph(note, note=True)
    trivial = trivial_original_labels_note(result)
    if trivial:
        report.paragraph(trivial, note=True)
    summary = result.table("error_ratio")
    summary.insert(0, "worst_factor_name", result.worst_factor_name)
    summary.insert(0, "average_accuracy", result.average)
    if len(summary) > MAX_TABLE_MODELS:
        report.paragraph(f"First {MAX_TABLE_MODELS} of {len(summary)} models shown.", note=True)
    report.table(summary.head(MAX_TABLE_MODELS).T)
    ratios = result.table("error_ratio")
    shown = [m for m in result.models[:MAX_BAR_MODELS] if ratios.loc[m].notna().any()]
    if shown:  # models without a defined error ratio (no mistakes) would draw nothing
        report.figure(
            figures.error_ratio_bars(result, shown, analysis.ci),
            "Error ratio per factor (dashed line: a model whose mistakes ignore the factor).",
        )
    if analysis.groups and analysis.group_tests is not None:
        report.heading("Model groups", level=3)
        report.paragraph(
            "Alexander-Govern test per factor of equal mean error ratio across the model groups "
            "(robust to unequal variances); factors with p > 0.05 are drawn transparent."
        )
        report.figure(
            figures.group_comparison(
                result.table("error_ratio"), analysis.groups, analysis.group_tests
            ),
            "Mean error ratio per model group (as paper figure 1b).",
        )
        report.table(analysis.group_tests)
    _add_overall_sections(report, analysis)
    report.heading("By meta-label (figures 5 and 13)", level=3)
    shown_models = result.models[:MAX_TABLE_MODELS]
    if len(result.models) > MAX_TABLE_MODELS:
        report.paragraph(f"Heatmaps of the first {MAX_TABLE_MODELS} of {len(result.models)} "
                         "models; meta_labels.csv holds every model.", note=True)
    undefined = [m for m in shown_models if not _any_error_ratio(result, m)]
    for model in shown_models:
        if model not in undefined:
            report.figure(
                figures.meta_label_heatmap(result, model),
                f"{model}: error ratio per meta-label and factor.",
            )
    if undefined:
        report.paragraph(
            f"No heatmap for {', '.join(undefined)}: no mistakes under error type "
            f"{result.error_type}, so every error ratio is 0/0 (undefined)."
            + (f" {TRIVIAL_HINT}" if trivial else ""), note=True)
    if analysis.listing is not None:
        from shortcutlab.imagenetx.analyses import listing_text

        report.paragraph(
            "Table 3: the up to 4 most robust (error ratio ≤ 1) and most susceptible (> 1) "
            "factors per meta-label; † n marks a value resting on fewer than 10 images. "
            "table3.csv gives every count and 95% Wilson interval."
        )
        listing = analysis.listing[analysis.listing["model"].isin(shown_models)]
        report.table(listing_text(listing).set_index(["model", "meta_label"]))
    shift = result.table("prevalence_shift").head(MAX_TABLE_MODELS)
    report.paragraph("Prevalence shift of each factor among the mistakes ((P(f | wrong) − P(f)) / "
                     "P(f)):")
    report.table(shift.T)
    if analysis.factor_shares is not None or analysis.spearman is not None:
        report.heading("The annotations themselves", level=3)
    if analysis.factor_shares is not None:
        report.figure(
            figures.factor_shares_bars(analysis.factor_shares),
            "Share of the images with each factor selected, in the annotated training subset "
            "and the validation set, with all the factors the annotator ticked and with the top "
            "factor only (paper figure 2); factors ordered by mean share, each panel on its own "
            "scale. factor_shares.csv holds the counts.",
        )
        report.table(factor_shares_table(analysis.factor_shares), float_format="{:.1f}")
    if analysis.spearman is not None:
        corr, pvals = analysis.spearman
        report.figure(
            figures.correlation_heatmap(corr, pvals),
            "Spearman correlations between factors and meta-labels over validation images "
            "(paper figure 8; only p ≤ 0.05 shown).",
        )
    if analysis.spearman_train is not None:
        corr, pvals = analysis.spearman_train
        report.figure(
            figures.correlation_heatmap(
                corr, pvals, title="Spearman correlations over training images (shown where "
                "p ≤ 0.05)"),
            "Spearman correlations between factors and meta-labels over the annotated training "
            "images (paper figure 9; only p ≤ 0.05 shown).",
        )
    if analysis.chi2 is not None:
        chi2 = analysis.chi2
        report.paragraph(
            f"χ² test of the factor distribution of the training subset against the validation "
            f"set: χ² = {chi2['statistic']:.1f}, dof = {chi2['dof']}, p = {chi2['pvalue']:.3g}, "
            f"Cramér's V = {chi2['cramers_v']:.3f} (with tens of thousands of images even small "
            "differences are significant; V measures how large they are)."
        )
        report.table(chi2_table(chi2["counts"]), float_format="{:.1f}")


def factor_shares_table(shares: pd.DataFrame) -> pd.DataFrame:
    """Figure 2's numbers as a narrow table: one row per factor, its image count in each
    annotation set (``train all``, ``val all``, ``train top``, ``val top``), then the shares in
    percent."""
    names = {"multi": "all", "top": "top"}
    label = shares["partition"] + " " + shares["which"].map(names).fillna(shares["which"])
    frame = shares.assign(set=label)
    counts = frame.pivot(index="factor", columns="set", values="count")
    percent = 100 * frame.pivot(index="factor", columns="set", values="share")
    order = list(dict.fromkeys(label))
    factors = list(dict.fromkeys(shares["factor"]))
    table = pd.concat([counts.loc[factors, order].astype("int64").astype(object),
                       percent.loc[factors, order].round(1).add_suffix(" %")], axis=1)
    table.index = [str(i).replace("_", " ") for i in table.index]
    table.index.name = "factor"
    table.columns.name = None
    return table


def chi2_table(counts: pd.DataFrame) -> pd.DataFrame:
    """The χ² test's counts as a narrow table that fits the page: one row per factor, its
    image count and share of the images in each subset."""
    shares = counts / counts.sum(axis=0).where(counts.sum(axis=0) > 0)
    table = pd.concat([counts.astype("int64").astype(object),
                       (100 * shares).round(1).add_suffix(" %")], axis=1)
    table.index = [str(i).replace("_", " ") for i in table.index]
    table.index.name = "factor"
    return table


def no_calibration_note(models: Sequence[str]) -> str:
    """Why a report has no calibration section (and no calibration.csv)."""
    why = ("the original labels carry no probabilities, and models are calibrated together "
           "only when every one has them; leave out --original-labels for calibration"
           if ORIGINAL_LABELS in models else
           "the predictions carry no probabilities (a predicted_probability column or an .npz "
           "probabilities array)")
    return f"No calibration per factor (calibration.csv not written): {why}."


TRIVIAL_HINT = ("The original labels are what error type class compares with; use --error-type "
                "real_class (or error_type=\"real_class\") to score them against the ReaL labels.")


def trivial_original_labels_note(result: EvaluationResult) -> str:
    """A note when the original labels are scored with error type ``class`` (right by
    construction: accuracy 1.0, no error ratios), else ``""``."""
    if result.error_type != "class" or ORIGINAL_LABELS not in result.models:
        return ""
    return (f"{ORIGINAL_LABELS} scores 1.0 by construction under error type class: it makes no "
            f"mistakes, so its error ratios are undefined and it has no bars or heatmap. "
            f"{TRIVIAL_HINT}")


def _any_error_ratio(result: EvaluationResult, model: str) -> bool:
    """Whether any meta-label × factor error ratio of ``model`` is defined."""
    values = result.meta_table(model).drop(columns="average").to_numpy(dtype=float)
    return bool(np.isfinite(values).any())


def _add_overall_sections(report: HtmlReport, analysis: ImagenetXAnalysis) -> None:
    """Figure 4 (own models), figure 7, calibration and the result-table analyses."""
    from shortcutlab.imagenetx import figures

    result = analysis.result
    if analysis.families is not None:
        summary = result.summary()
        report.heading("Factor accuracy against overall accuracy (figure 4)", level=3)
        report.figure(
            figures.factor_vs_overall(summary, analysis.families),
            "Accuracy on each factor's images against overall accuracy; dashed: a model "
            "equally good on every factor. Families from the shipped map (other: not in it).",
        )
    if analysis.active_accuracy is not None:
        report.heading("Number of active factors (figure 7)", level=3)
        counts = analysis.active_counts
        report.figure(
            figures.active_factors_bars(
                counts if counts is not None else pd.DataFrame(
                    {"val": analysis.active_accuracy.attrs["n_images"]}),
                analysis.active_accuracy),
            "Images per number of active factors (multi-factor annotations) and each model's "
            "accuracy on them.",
        )
        report.table(analysis.active_accuracy.head(MAX_TABLE_MODELS))
    if analysis.calibration is not None:
        report.heading("Calibration per factor", level=3)
        report.paragraph("Expected calibration error (15 equal-width confidence bins) on the "
                         "images of each factor.")
        report.table(analysis.calibration.head(MAX_TABLE_MODELS).T)
    if analysis.paper is not None:
        _add_paper_sections(report, analysis.paper)


def _add_paper_sections(report: HtmlReport, paper: PaperTables) -> None:
    from shortcutlab.imagenetx import figures

    report.heading("From the authors' result tables", level=3)
    fams = ", ".join(f"{k} {v}" for k, v in paper.figure4["family"].value_counts().items())
    report.paragraph(f"Figure 4's model set: {len(paper.figure4)} models ({fams}); "
                     f"{paper.which} factor, error type {paper.error_type}.")
    report.figure(figures.factor_vs_overall(paper.figure4, paper.figure4["family"]),
                  "Figure 4 from the authors' tables.")
    report.figure(
        figures.group_comparison(error_ratio(paper.figure4), paper.figure4["family"],
                                 paper.family_tests, title="Error ratio by model family"),
        "Figure 1b: mean error ratio per family, Alexander-Govern test per factor.",
    )
    report.table(paper.family_tests)
    method = {"cubic": "the authors' procedure (cubic fit of error ratio in augmentation "
                       "strength, Welch's t-test between the strengths where the fit is lowest "
                       "and highest)",
              "welch": "shortcutlab's procedure (Welch's t-test of the strongest third of the "
                       "strengths against the weakest third)"}[paper.spillover_method]
    report.heading("Augmentation spill-over (figure 6)", level=3)
    report.paragraph(f"Computed by {method}. change = mean error ratio at the stronger − at the "
                     "weaker strength.")
    for group, table in paper.spillover.items():
        report.paragraph(f"{group}:")
        report.table(table)
    if not paper.claims.empty:
        report.paragraph("The paper's ten spill-over claims under both procedures "
                         "(reproduced: significant at 0.05 in the stated direction):")
        report.table(paper.claims.set_index(["augmentation", "factor"]), "{:.3g}")
    if paper.tailored is not None:
        report.heading("Tailored augmentation (figure 17)", level=3)
        report.figure(figures.augmentation_comparison(paper.tailored["ratios"],
                                                      paper.tailored["tests"]),
                      "Figure 17: error ratio per factor for four augmentation recipes.")
        report.table(paper.tailored["tests"])


def report_tables(analysis: ImagenetXAnalysis) -> dict[str, str]:
    """File name -> CSV text of the tables :func:`write_report` writes beside ``index.html``
    and ``imagenetx.json``: ``summary.csv``, ``meta_labels.csv`` and, where the analysis has
    them, ``table3.csv``, ``calibration.csv``, ``active_factors.csv``, ``factor_shares.csv``."""
    tables = {"summary.csv": analysis.result.summary().to_csv(),
              "meta_labels.csv": analysis.result.meta_long().to_csv(index=False)}
    if analysis.listing is not None:
        tables["table3.csv"] = analysis.listing.to_csv(index=False)
    if analysis.calibration is not None:
        tables["calibration.csv"] = analysis.calibration.to_csv()
    if analysis.active_accuracy is not None:
        tables["active_factors.csv"] = analysis.active_accuracy.to_csv()
    if analysis.factor_shares is not None:
        tables["factor_shares.csv"] = analysis.factor_shares.to_csv(index=False)
    return tables


def write_report(
    results: ImagenetXAnalysis | EvaluationResult,
    out_dir: str | os.PathLike[str],
    title: str = "ImageNet-X error analysis",
) -> Path:
    """Write ``index.html``, ``imagenetx.json`` and the tables of :func:`report_tables`, all
    or none."""
    analysis = results if isinstance(results, ImagenetXAnalysis) else ImagenetXAnalysis(results)
    out = Path(out_dir)
    report = HtmlReport(title)
    with literal_text():  # model names are data, not mathtext
        add_imagenetx_section(report, analysis)
    tables = report_tables(analysis)
    with output_set() as outputs:  # every file or none (old ones stay on a failure)
        outputs.write_json(out / "imagenetx.json", analysis.to_dict())
        for name, text in tables.items():
            outputs.write_text(out / name, text)
        return outputs.write_text(out / "index.html", report.render())
