"""BiasBed: many runs of texture-debiasing algorithms, explicit model selection, statistics.

Datasets (:mod:`.datasets`): DiagViB-6 experiments and any image folders with a class map.
Protocol (:mod:`.protocol`): runs through the runner, per-epoch records, selection rules and the
Friedman / Iman-Davenport / Nemenyi comparison. Report (:mod:`.report`): the HTML section.
The algorithms themselves live in :mod:`shortcutlab.train.algorithms`.
"""

from shortcutlab.biasbed.datasets import (
    FolderExperiment,
    ImageFolderDataset,
    load_class_map,
    parse_dataset,
)
from shortcutlab.biasbed.protocol import (
    build_protocol_jobs,
    compare_algorithms,
    load_epochs,
    run_protocol,
    selection_table,
)

__all__ = [
    "FolderExperiment",
    "ImageFolderDataset",
    "build_protocol_jobs",
    "compare_algorithms",
    "load_class_map",
    "load_epochs",
    "parse_dataset",
    "run_protocol",
    "selection_table",
]
