"""The report's numbers are those of the settings asked for: every part of :func:`analyse`
scored under the evaluation's error type and ReaL handling, a heatmap for each model with
mistakes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shortcutlab.imagenetx.analyses import accuracy_by_active_factors, calibration_by_factor
from shortcutlab.imagenetx.annotations import FACTORS, load_annotations
from shortcutlab.imagenetx.evaluate import bootstrap_ci, evaluate, evaluation_images
from shortcutlab.imagenetx.predictions import Predictions
from shortcutlab.imagenetx.report import analyse, write_report


@pytest.fixture(scope="module")
def part(top_val):
    """The first 3,000 annotated validation images."""
    return top_val.take(np.arange(3000))


def test_every_part_of_the_analysis_uses_the_error_type_and_ignore_empty_real(
        model_predictions, part):
    analysis = analyse(model_predictions, error_type="real_class", ignore_empty_real=True,
                       n_boot=20, seed=1, dataset_statistics=False, annotations=part)
    direct = evaluate(model_predictions, part, "real_class", ignore_empty_real=True)
    assert analysis.result.n_images == direct.n_images < len(part)
    np.testing.assert_array_equal(analysis.result.average, direct.average)
    assert analysis.result.options["ignore_empty_real"] is True
    ci = bootstrap_ci(model_predictions, part, "real_class", True, n_boot=20, seed=1)
    assert analysis.ci is not None
    np.testing.assert_array_equal(analysis.ci.error_ratio, ci.error_ratio)
    np.testing.assert_array_equal(analysis.ci.average, ci.average)
    assert analysis.calibration is not None and analysis.active_accuracy is not None
    # calibration and accuracy by active factors leave out the empty-ReaL images too: scored
    # over the images kept, not over all of them (where those images count as wrong)
    kept = evaluation_images(part, "real_class", ignore_empty_real=True)[0]
    pd.testing.assert_frame_equal(analysis.calibration,
                                  calibration_by_factor(model_predictions, kept, "real_class"))
    assert not np.allclose(analysis.calibration.to_numpy(dtype=float),
                           calibration_by_factor(model_predictions, part, "real_class")
                           .to_numpy(dtype=float))
    multi = load_annotations("multi", "val")
    multi_kept = evaluation_images(multi, "real_class", ignore_empty_real=True)[0]
    pd.testing.assert_frame_equal(
        analysis.active_accuracy,
        accuracy_by_active_factors(model_predictions, multi_kept, "real_class"))
    real = accuracy_by_active_factors(model_predictions, multi, "real_class")
    kept_acc, all_acc = analysis.active_accuracy.align(real, join="inner")
    assert (kept_acc >= all_acc).all().all() and (kept_acc > all_acc).any().any()
    # the error types give different numbers here, so a part scored under 'class' shows
    assert not np.allclose(real.to_numpy(dtype=float),
                           accuracy_by_active_factors(model_predictions, multi, "class")
                           .to_numpy(dtype=float), equal_nan=True)


def test_a_model_with_mistakes_gets_its_heatmap(tmp_path, top_val):
    """On 80 images most meta-label x factor cells are empty (NaN); the model still has
    defined error ratios where it has images, so its heatmap is drawn."""
    few = top_val.take(np.arange(80))
    classes = few.labels.copy()
    classes[::4] = (classes[::4] + 1) % 1000
    result = evaluate(Predictions(("m",), few.file_names, classes[None, :]), few)
    ratios = result.meta_table("m").drop(columns="average").to_numpy(dtype=float)
    assert np.isnan(ratios).any() and np.isfinite(ratios).any()
    html = write_report(result, tmp_path).read_text()
    assert "m: error ratio per meta-label and factor." in html
    assert "No heatmap for" not in html


def test_the_printed_interval_is_that_of_the_worst_factors_error_ratio(model_predictions, part):
    analysis = analyse(model_predictions, n_boot=20, seed=3, dataset_statistics=False,
                       annotations=part)
    ci = bootstrap_ci(model_predictions, part, n_boot=20, seed=3)
    text = str(analysis)
    assert "its 95% CI" in text
    for m, worst in enumerate(analysis.result.worst_factor_name):
        f = FACTORS.index(worst)
        low, high = ci.error_ratio[m, f]
        assert f"{low:.3f}–{high:.3f}" in text
        acc_low, acc_high = ci.accuracy[m, f]
        assert f"{acc_low:.3f}–{acc_high:.3f}" not in text
