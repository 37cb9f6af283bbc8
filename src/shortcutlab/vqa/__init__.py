"""VQA-VS: shortcut-specific OOD test sets for any VQA data (Si et al. 2022), the official VQA
accuracy and the authors' scorer, and scoring of the release as published.

Typical use::

    from shortcutlab.vqa import read_release, score_release
    result = score_release(read_release("VQA-VS/"), predictions, metric="vqa-vs")
    result["iid"], result["ood"]["KW"], result["ood_mean"]      # fractions in [0, 1]

``predictions`` may be a dict ``{question_id: answer}``, a list of ``{question_id, answer}``
records, or a DataFrame with those columns; integer and string ids are the same id.
"""

from shortcutlab.vqa.accuracy import (
    METRICS,
    normalize_answer,
    training_vocabulary,
    vqa_accuracies,
    vqa_accuracy,
    vqa_vs_accuracy,
)
from shortcutlab.vqa.analysis import analyze_release
from shortcutlab.vqa.baselines import (
    PRIORS,
    CnnBowConfig,
    answer_prior,
    concept_prior,
    inject_correlation,
    keyword_prior,
    prior_predictions,
    question_type_prior,
    train_cnn_bow,
    train_cnn_bow_epochs,
)
from shortcutlab.vqa.concepts import (
    ENGLISH_STOP_WORDS,
    SHORTCUT_GROUPS,
    SHORTCUTS,
    ConceptConfig,
    compute_concepts,
)
from shortcutlab.vqa.distributions import (
    GroupDistribution,
    figure_groups,
    group_distribution,
)
from shortcutlab.vqa.evaluate import (
    VQAScores,
    accuracies,
    load_predictions,
    parse_predictions,
    score_sets,
    score_splits,
    score_table,
)
from shortcutlab.vqa.loaders import load_easy_vqa, load_table
from shortcutlab.vqa.planted import planted_study
from shortcutlab.vqa.release import (
    VQAVSRelease,
    read_release,
    read_test_annotations,
    read_vocabulary,
    score_release,
)
from shortcutlab.vqa.selection import STRATEGIES, select_checkpoints
from shortcutlab.vqa.splits import (
    BuildConfig,
    VQASplits,
    build_splits,
    coincidence_matrix,
    group_flags,
    imbalance_degree,
    jaccard_matrix,
    normalized_entropy,
    tail_threshold,
)
from shortcutlab.vqa.store import (
    read_build_config,
    read_samples,
    write_answer_figures,
    write_splits,
)
from shortcutlab.vqa.synthetic import synthetic_vqa
from shortcutlab.vqa.table import make_table

__all__ = [
    "ENGLISH_STOP_WORDS",
    "METRICS",
    "PRIORS",
    "SHORTCUTS",
    "STRATEGIES",
    "SHORTCUT_GROUPS",
    "BuildConfig",
    "CnnBowConfig",
    "ConceptConfig",
    "GroupDistribution",
    "VQASplits",
    "VQAScores",
    "VQAVSRelease",
    "accuracies",
    "analyze_release",
    "answer_prior",
    "build_splits",
    "coincidence_matrix",
    "compute_concepts",
    "concept_prior",
    "figure_groups",
    "group_distribution",
    "group_flags",
    "imbalance_degree",
    "inject_correlation",
    "jaccard_matrix",
    "keyword_prior",
    "load_easy_vqa",
    "load_predictions",
    "load_table",
    "make_table",
    "normalize_answer",
    "normalized_entropy",
    "parse_predictions",
    "planted_study",
    "prior_predictions",
    "question_type_prior",
    "read_build_config",
    "read_release",
    "read_samples",
    "read_test_annotations",
    "read_vocabulary",
    "score_release",
    "score_sets",
    "score_splits",
    "score_table",
    "select_checkpoints",
    "synthetic_vqa",
    "tail_threshold",
    "train_cnn_bow",
    "train_cnn_bow_epochs",
    "training_vocabulary",
    "vqa_accuracies",
    "vqa_accuracy",
    "vqa_vs_accuracy",
    "write_answer_figures",
    "write_splits",
]
