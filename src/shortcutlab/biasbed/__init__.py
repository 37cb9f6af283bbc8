"""BiasBed: many runs of texture-debiasing algorithms, explicit model selection, statistics.

Datasets (:mod:`.datasets`): DiagViB-6 experiments and any image folders with a class map, or
BiasBed's 1000-class setting with 16-class and ImageNet-A/R test heads (:mod:`.imagenet`).
Protocol (:mod:`.protocol`): runs through the runner, per-epoch records, selection rules and the
Friedman / Iman-Davenport / Nemenyi comparison. Report (:mod:`.report`): the HTML section.
Stylized ImageNet from local ImageNet, style images and AdaIN weights: :mod:`.stylize`.
Sample images of every folder (the paper's Figure 1, from the user's data): :mod:`.samples`.
The algorithms themselves live in :mod:`shortcutlab.train.algorithms`. Public names load on
first use (the image-folder dataset needs torch; reading a finished run does not).
"""

from __future__ import annotations

from shortcutlab.utils.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "FolderExperiment": "datasets", "ImageFolderDataset": "datasets",
    "load_class_map": "datasets", "parse_dataset": "datasets",
    "build_protocol_jobs": "protocol", "ProtocolSettings": "protocol",
    "compare_algorithms": "protocol",
    "load_epochs": "protocol", "parse_hparams": "protocol", "run_protocol": "protocol",
    "selection_table": "protocol", "write_report": "report", "stylize_folder": "stylize",
    "sample_sets": "samples", "draw_samples": "samples",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
