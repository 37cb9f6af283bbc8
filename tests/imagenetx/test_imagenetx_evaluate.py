"""Evaluation against the published figures and the imagenet-x package as reference."""

from __future__ import annotations

import imagenet_x
import numpy as np
import pandas as pd
import pytest
from imagenet_x.aggregate import (
    compute_factor_accuracies,
    compute_factor_metaclass_accuracies,
    worst_k_class_acc,
)
from imagenet_x.prevalence import Prevalence

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS, load_annotations, real_labels
from shortcutlab.imagenetx.evaluate import ERROR_TYPES, bootstrap_ci, evaluate
from shortcutlab.imagenetx.predictions import (
    Predictions,
    original_labels_predictions,
)

# its module-scoped fixtures are computed once: every test of the module on one xdist worker
pytestmark = pytest.mark.xdist_group("test_imagenetx_evaluate")


def test_original_labels_against_real_reproduce_published_figures(top_val):
    """The imagenet-x package's 'human' row: 0.835220 on 46,110 images, pose ratio 0.746."""
    result = evaluate(original_labels_predictions(), top_val, "real_class")
    assert result.n_images == 46_110
    assert result.average[0] == pytest.approx(0.835220, abs=5e-7)
    ratios = result.table("error_ratio").loc["original_labels"]
    assert round(ratios["pose"], 3) == 0.746
    # The authors' published per-factor accuracies of the 'human' row (results/.../real_class).
    acc = result.table("accuracy").loc["original_labels"]
    assert acc["subcategory"] == pytest.approx(0.6222222222222222)
    assert acc["texture"] == pytest.approx(0.6382978723404256)
    assert result.worst_factor_name == ["subcategory"]
    # The original labels are by definition right under the 'class' error type.
    assert evaluate(original_labels_predictions(), top_val, "class").average[0] == 1.0


def test_ignore_empty_real_drops_images_without_real_labels(top_val):
    default = evaluate(original_labels_predictions(), top_val, "real_class")
    ignored = evaluate(original_labels_predictions(), top_val, "real_class", ignore_empty_real=True)
    assert ignored.n_images == 46_110 - 3_085
    wrong = (1 - default.average[0]) * default.n_images
    assert (1 - ignored.average[0]) * ignored.n_images == pytest.approx(wrong - 3_085)


@pytest.mark.parametrize(
    ("error_type", "column"),
    [("class", "is_correct"), ("metaclass", "is_metaclass_correct"),
     ("real_class", "is_correct_real")],
)
def test_matches_imagenet_x_package_top_factor(model_predictions, top_val, package_frame,
                                               error_type, column):
    reference = compute_factor_accuracies(package_frame, list(FACTORS), column)
    mine = evaluate(model_predictions, top_val, error_type).summary(worst_classes=None)
    reference = reference.loc[list(mine.index), list(mine.columns)]
    np.testing.assert_allclose(mine.to_numpy(), reference.to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("error_type", "column"), [("class", "is_correct"), ("real_class", "is_correct_real")]
)
def test_worst_100_classes_matches_the_authors_function(model_predictions, top_val, package_frame,
                                                        error_type, column):
    """The authors' accuracies_per_factor.csv column ``worst_100_classes``."""
    reference = worst_k_class_acc(package_frame, k=100, error_type=column)
    mine = evaluate(model_predictions, top_val, error_type).summary()
    assert "worst_100_classes" in mine.columns
    np.testing.assert_allclose(mine["worst_100_classes"].to_numpy(),
                               reference.loc[mine.index].to_numpy(), rtol=0, atol=1e-12)
    assert (mine["worst_100_classes"] < mine["average"]).all()


def test_matches_imagenet_x_package_public_api_multi_factor(model_dir, model_predictions):
    reference = imagenet_x.get_factor_accuracies(
        str(model_dir), which_factor="multi", error_type="class"
    )
    mine = evaluate(model_predictions, load_annotations("multi"), "class").summary(
        worst_classes=None)
    reference = reference.loc[list(mine.index), list(mine.columns)]
    np.testing.assert_allclose(mine.to_numpy(), reference.to_numpy(), rtol=0, atol=1e-12)


def test_meta_label_breakdown_matches_package(model_predictions, top_val, package_frame):
    reference = compute_factor_metaclass_accuracies(
        package_frame, list(FACTORS), "is_correct", list(META_LABELS)
    )
    result = evaluate(model_predictions, top_val, "class")
    for model in result.models:
        mine = result.meta_table(model, "accuracy")
        ref = reference.loc[model].reindex(list(META_LABELS))
        np.testing.assert_allclose(mine[list(FACTORS)], ref[list(FACTORS)], atol=1e-12)
        np.testing.assert_allclose(mine["average"], ref["average"], atol=1e-12)
    long = result.meta_long().set_index(["model", "meta_label", "factor"])
    assert long.loc[("m1", "dog", "pose"), "accuracy"] == reference.loc[("m1", "dog"), "pose"]


def test_prevalence_shift_matches_package(model_predictions, top_val, package_frame):
    prevalence = Prevalence.__new__(Prevalence)  # its __init__ re-reads everything
    prevalence.all_df, prevalence.factors = package_frame, list(FACTORS)
    result = evaluate(model_predictions, top_val, "class")
    for model in result.models:
        ref = prevalence.compute_misclassification_shift(model).set_index("factor")["shift"]
        mine = result.table("prevalence_shift").loc[model]
        np.testing.assert_allclose(mine[list(FACTORS)], ref[list(FACTORS)], atol=1e-12)


def test_error_ratio_definition_and_flat_dict(model_predictions, top_val):
    result = evaluate(model_predictions, top_val, "class")
    acc = result.table("accuracy")
    expected = (1 - acc).div(1 - result.average, axis=0)
    pd.testing.assert_frame_equal(result.table("error_ratio"), expected)
    flat = result.flat("m1")
    assert flat["acc_avg"] == result.average[1]
    assert flat["count_pose"] == top_val.factor_counts()["pose"]
    worst = acc.loc["m1"].idxmin()
    assert result.worst_factor_name[1] == worst


def test_missing_predictions_are_left_out_like_an_inner_join(top_val):
    names = top_val.file_names
    classes = np.array([top_val.labels, top_val.labels], dtype=np.int16)
    classes[1, ::2] = -1  # second model predicts only every other image
    classes[1, 1::4] = (classes[1, 1::4] + 1) % 1000  # and half of those wrongly
    result = evaluate(Predictions(("a", "b"), names, classes), top_val)
    assert result.average[0] == 1.0
    assert result.evaluated.tolist() == [len(names), len(names[1::2])]
    assert result.count[1].sum() == top_val.factors[1::2].sum()
    assert result.average[1] == pytest.approx(0.5, abs=1e-3)


def test_vectorised_result_does_not_depend_on_chunking(model_predictions, top_val):
    preds = model_predictions
    a = evaluate(preds, top_val, "real_class", chunk_size=1)
    b = evaluate(preds, top_val, "real_class", chunk_size=256)
    np.testing.assert_array_equal(a.correct, b.correct)
    np.testing.assert_array_equal(a.meta_correct, b.meta_correct)


def test_unknown_error_type_names_choices(top_val):
    with pytest.raises(ImagenetXError, match="unknown error type 'top1'.*real_class"):
        evaluate(original_labels_predictions(), top_val, "top1")


def test_bootstrap_is_reproducible_and_brackets_the_estimate(model_predictions, top_val):
    preds = model_predictions.select(["m0", "m2"])
    ci = bootstrap_ci(preds, top_val, "class", n_boot=40, seed=3, boot_chunk=7)
    again = bootstrap_ci(preds.select(["m2"]), top_val, "class", n_boot=40, seed=3, boot_chunk=40)
    np.testing.assert_array_equal(ci.error_ratio[1], again.error_ratio[0])
    point = evaluate(preds, top_val, "class")
    assert (ci.average[:, 0] <= point.average).all() and (point.average <= ci.average[:, 1]).all()
    pose = FACTORS.index("pose")
    assert (ci.error_ratio[:, pose, 0] < point.error_ratio[:, pose]).all()
    assert (ci.error_ratio[:, pose, 1] > point.error_ratio[:, pose]).all()
    # The interval is the 2.5/97.5 percentiles of the resampled accuracies, computed here with
    # plain numpy on the same resampling weights.
    from shortcutlab.imagenetx.evaluate import bootstrap_weights

    weights = bootstrap_weights(len(top_val), range(40), seed=3)
    right = (preds.align(top_val.file_names)[1] == top_val.labels).astype(float)
    pose_rows = top_val.factors[:, pose].astype(bool)
    avg = weights @ right / weights.sum(axis=1)
    acc_pose = weights[:, pose_rows] @ right[pose_rows] / weights[:, pose_rows].sum(axis=1)
    np.testing.assert_allclose(ci.average[1], np.percentile(avg, [2.5, 97.5]), rtol=1e-5)
    np.testing.assert_allclose(ci.error_ratio[1, pose],
                               np.percentile((1 - acc_pose) / (1 - avg), [2.5, 97.5]), rtol=1e-5)
    other = bootstrap_ci(preds, top_val, "class", n_boot=40, seed=4)
    assert not np.array_equal(other.error_ratio, ci.error_ratio)


@pytest.mark.parametrize("error_type", ERROR_TYPES)
def test_training_partition(error_type):
    train = load_annotations("top", "train")
    preds = Predictions(("labels",), train.file_names, train.labels[None, :].copy())
    if error_type == "real_class":
        with pytest.raises(ImagenetXError, match="validation"):
            evaluate(preds, train, error_type)
    else:
        assert evaluate(preds, train, error_type).average[0] == 1.0


@pytest.mark.parametrize("error_type", ERROR_TYPES)
def test_missing_predictions_are_never_right(top_val, error_type):
    """A model with predictions for three images only: counts cover exactly those images."""
    labels = original_labels_predictions()
    classes = np.full_like(labels.classes, -1)
    real = real_labels(labels.file_names)
    annotated = np.isin(labels.file_names, top_val.file_names)
    label_in_real = (real == labels.classes[0][:, None]).any(axis=1)
    picked = [int(np.flatnonzero(annotated & label_in_real)[0]),
              int(np.flatnonzero(annotated & (real[:, 0] < 0))[0])]
    classes[0, picked] = labels.classes[0, picked]
    result = evaluate(Predictions(("few",), labels.file_names, classes), top_val, error_type)
    assert result.evaluated.tolist() == [2]
    expected = {"class": 1.0, "metaclass": 1.0, "real_class": 0.5}[error_type]
    assert result.average[0] == expected  # the empty-ReaL image is wrong under real_class
    assert (result.correct <= result.count).all() and result.count.sum() >= 2
