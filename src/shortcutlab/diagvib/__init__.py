"""DiagViB-6: a generator of synthetic images with six controlled factors of variation,
the benchmark studies built on it, and the metrics that expose shortcut learning.

Everything a user needs is importable from here; names load on first use, so
``import shortcutlab.diagvib`` stays light (torch loads only with the dataset or generator)::

    from shortcutlab.diagvib import DiagvibDataset, make_experiment
    test = DiagvibDataset(make_experiment("ZGO/hue-shape/0", scale=0.01), "test")
    results, text = test.eval(my_predictions)
"""

from __future__ import annotations

from shortcutlab.utils.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    # factors, specs and studies
    "FACTORS": "factors", "FACTOR_TABLE": "factors",
    "ExperimentSpec": "spec", "SPLITS": "spec", "assign_classes": "spec",
    "STUDIES": "spec", "Study": "spec", "register_study": "spec",
    "make_experiment": "studies", "experiment_names": "studies",
    "parse_experiment_name": "studies", "write_benchmark": "studies",
    "paper_sample": "studies", "scaled_sizes": "studies", "select_classes": "studies",
    # images and datasets
    "ImageGenerator": "render", "classes_from_names": "render", "random_classes": "render",
    "load_shapes": "sources", "load_textures": "sources",
    "DiagvibDataset": "dataset", "export_split": "dataset", "histogram_channel_stats": "dataset",
    # scoring one's own predictions
    "mean_per_class_accuracy": "evaluation", "evaluate_predictions": "evaluation",
    "job_row": "evaluation",
    "factor_inputs": "factor_errors", "factor_report": "factor_errors",  # factor_analysis
    # runs, metrics and the report
    "build_jobs": "jobs", "collect_jobs": "jobs", "source_generator": "jobs",
    "DiagvibMetrics": "metrics", "compute_metrics": "metrics", "flat_summary": "metrics",
    "load_job_tables": "report", "write_report": "report",
    "plot_accuracy_matrices": "figures", "plot_factor_aggregates": "figures",
    "matrix_panels": "figures", "panel_values": "figures", "sequence_aggregates": "figures",
    "plot_panel": "figures", "plot_factor_aggregate": "figures", "add_colour_bar": "figures",
    "plot_chgo_improvement": "figures", "plot_pair_symmetry": "figures",
    "add_comparison_section": "comparison", "compare_study": "comparison",
    # pictures of the studies and textures (figs. 1, 3, A1), drawn from the specs
    "CellShares": "study_figures", "cell_shares": "study_figures",
    "cell_images": "study_figures", "example_cells": "study_figures",
    "plot_study_cells": "study_figures", "study_overview_figure": "study_figures",
    "study_example_figure": "study_figures", "textures_figure": "study_figures",
    "study_specs": "study_figures", "write_study_figures": "study_figures",
    # the β-VAE experiment (appendix A.2, fig. A3)
    "BetaVaePlan": "beta_vae", "SettingSplit": "beta_vae", "run_beta_vae": "beta_vae",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

