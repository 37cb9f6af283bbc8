"""The paper's analyses for a *released* split (not only for splits shortcutlab built).

Given the release's training and IID test questions with their annotations (a VQA table, e.g.
``load_table(["Training.zip", "IID-Test.zip"])``, plus COCO instances for the visual concepts)
and the release itself (:func:`shortcutlab.vqa.release.read_release`):

* Table 1: per shortcut, groups, imbalanced groups, head and tail sizes, computed by the
  construction on the release's own train/test assignment (:func:`build_splits` with ``split``);
* Fig. 5a: Jaccard similarity of the head splits of the training set;
* Fig. 5b: coincidence ratios ``|A n B| / |A|`` between the *released* OOD test sets;
* the imbalance degree E of the training data per shortcut; with a prediction file, E against
  the accuracy on each released OOD set (Fig. 6) and head/tail accuracy (Figs. 7, 10);
* ``agreement``: how far the recomputed OOD sets match the released ones (Jaccard per set).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.evaluate import check_metric, check_numbers, score_splits
from shortcutlab.vqa.release import VQAVSRelease, score_release
from shortcutlab.vqa.splits import BuildConfig, build_splits, coincidence_matrix, jaccard_matrix

__all__ = ["analyze_release"]


def _release_split(table: pd.DataFrame, release: VQAVSRelease) -> np.ndarray:
    """``test`` for the release's IID test questions, ``train`` for every other row."""
    qids = table["question_id"].astype(str)
    test_ids = set(release.test["question_id"])
    absent = sorted(test_ids - set(qids))
    if absent:
        raise VQAError(
            f"{len(absent)} IID test question(s) of the release are not in the data "
            f"({', '.join(absent[:5])}); give the release's IID test questions (IID-Test.zip or "
            "IID-Test/IID-Test-Ques.json with -Ans.json) together with its training files"
        )
    split = np.where(qids.isin(test_ids).to_numpy(), "test", "train").astype(object)
    if not (split == "train").any():
        raise VQAError("the data holds no training questions; add the release's Training files")
    return split


def analyze_release(
    table: pd.DataFrame,
    release: VQAVSRelease,
    predictions: Any = None,
    config: BuildConfig | None = None,
    **score_options: Any,
) -> dict[str, Any]:
    """The paper's statistics and figures' data for a released split (see the module docstring).

    Returns DataFrames ``statistics``, ``jaccard``, ``coincidence``, ``imbalance``,
    ``agreement`` and ``ood_sizes``; with ``predictions`` (IID test answers) also ``row`` (the
    score on the released sets, :func:`score_release`), ``head_tail`` (accuracy on the
    recomputed head and tail of each shortcut and on the released OOD set, fractions) and
    ``imbalance_vs_accuracy`` (Fig. 6: ``E_train`` against the released OOD accuracy in %).
    ``score_options`` pass to :func:`score_release` (``metric``, ``vocabulary``, ...).
    """
    check_metric(score_options.get("metric", "official"))  # checked with or without
    check_numbers(score_options.get("numbers", "wrong"))  # predictions
    split = _release_split(table, release)
    built = build_splits(table, config, split=split)
    s = built.samples
    test = s.loc[s["split"] == "test"]
    masks = release.masks()
    ood_ids = {k: set(release.test["question_id"][masks[k]]) for k in SHORTCUTS}
    test_qid = test["question_id"].astype(str)
    ours = {k: set(test_qid[test[f"tail:{k}"].to_numpy()]) for k in SHORTCUTS}
    agreement = pd.DataFrame(
        {
            "shortcut": list(SHORTCUTS),
            "released": [len(ood_ids[k]) for k in SHORTCUTS],
            "recomputed": [len(ours[k]) for k in SHORTCUTS],
            "both": [len(ours[k] & ood_ids[k]) for k in SHORTCUTS],
            "jaccard": [
                len(ours[k] & ood_ids[k]) / len(ours[k] | ood_ids[k])
                if ours[k] | ood_ids[k] else float("nan")
                for k in SHORTCUTS
            ],
        }
    )  # fmt: skip
    out: dict[str, Any] = {
        "sizes": {"train": int((split == "train").sum()), "test": int((split == "test").sum())},
        "statistics": built.statistics,
        "jaccard": built.jaccard,
        "coincidence": coincidence_matrix(masks),
        "released_jaccard": jaccard_matrix(masks),
        "imbalance": built.imbalance,
        "agreement": agreement,
        "ood_sizes": pd.Series({k: int(m.sum()) for k, m in masks.items()}, name="questions"),
    }
    if predictions is None:
        return out
    row = score_release(release, predictions, **score_options)
    options = {
        k: v for k, v in score_options.items() if k in ("metric", "numbers", "count_missing_wrong")
    }
    if options.get("metric") == "vqa-vs":  # the same vocabulary as the released row
        vocab = score_options.get("vocabulary", True)
        options["vocabulary"] = (
            release.vocabulary if vocab is True else None if vocab in (False, None) else vocab
        )
    ours_row = score_splits(s, predictions, **options)
    out["row"] = row
    out["head_tail"] = pd.DataFrame(
        {
            "head": ours_row["head"],
            "tail": ours_row["tail"],
            "released_ood": row["ood"],
        }
    ).reindex(list(SHORTCUTS))
    out["imbalance_vs_accuracy"] = built.imbalance.assign(
        ood=[np.nan if row["ood"][k] is None else 100.0 * row["ood"][k] for k in SHORTCUTS]
    )
    return out
