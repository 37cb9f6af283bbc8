"""DiagViB-6 as the engine's second dataset: test predictions with their six factor classes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shortcutlab.diagvib import dataset as dataset_module
from shortcutlab.diagvib.dataset import DiagvibDataset
from shortcutlab.diagvib.factor_errors import factor_inputs, factor_report
from shortcutlab.diagvib.studies import make_experiment
from shortcutlab.errors import DiagvibError, FactorAnalysisError

SPEC = make_experiment("ZGO/hue-shape/0", scale=0.01)


@pytest.fixture
def test_split(monkeypatch) -> DiagvibDataset:
    monkeypatch.setattr(dataset_module, "_default_generator", lambda: None)  # no rendering
    return DiagvibDataset(SPEC, "test")


def _shortcut_model(ds: DiagvibDataset) -> np.ndarray:
    """Right except on half of the dark images (a planted lightness weakness)."""
    meta = ds.metadata()
    gen = np.random.default_rng(0)
    wrong = (meta["lightness"] == "dark").to_numpy() & (gen.random(len(meta)) < 0.5)
    wrong |= gen.random(len(meta)) < 0.05
    return np.where(wrong, (ds.labels + 1) % ds.num_classes, ds.labels)


def test_error_ratios_per_factor_class_match_a_plain_group_by(test_split):
    preds = _shortcut_model(test_split)
    report = factor_report(test_split, preds, n_boot=0, min_count=5)
    meta = test_split.metadata()
    right = pd.Series(preds == test_split.labels)
    overall = right.mean()
    ratios = report.result.table("error_ratio").loc["model"]
    for factor in ("lightness", "texture", "position"):
        for cls, acc in right.groupby(meta[factor]).mean().items():
            assert ratios[f"{factor}={cls}"] == pytest.approx((1 - acc) / (1 - overall))
    assert "hue=red" not in ratios.index  # the predicted factor is the label, left out
    assert report.worst.iloc[0]["factor"] == "lightness=dark"
    cells = right.groupby(meta["tag"]).mean()
    assert ratios[f"tag={cells.idxmin()}"] == pytest.approx(
        (1 - cells.min()) / (1 - overall))


def test_export_metadata_and_indices(test_split):
    preds = _shortcut_model(test_split)
    meta = test_split.metadata()
    annotations, predictions = factor_inputs(meta, preds, predicted="hue")
    assert list(annotations.columns) == ["id", "label", "position", "lightness", "scale",
                                         "shape", "texture", "tag"]
    order = np.random.default_rng(1).permutation(len(meta))  # a shuffled loader
    _, shuffled = factor_inputs(test_split, preds[order], indices=order)
    pd.testing.assert_frame_equal(shuffled.sort_values("id").reset_index(drop=True),
                                  predictions)
    with pytest.raises(DiagvibError, match="unknown predicted factor 'colour'"):
        factor_inputs(meta, preds, predicted="colour")
    with pytest.raises(DiagvibError, match="3 predictions for"):
        factor_inputs(test_split, preds[:3])


def test_predictions_for_part_of_the_split_are_refused_unless_coverage_is_lowered(test_split):
    """A report on half the test images would give per-class error ratios of an unknown
    subset as the split's: refused by default (min_coverage 1), accepted when asked for."""
    preds = _shortcut_model(test_split)
    half = np.arange(0, len(test_split), 2)
    with pytest.raises(FactorAnalysisError, match="coverage 50.0% < min_coverage 100%"):
        factor_report(test_split, preds[half], indices=half, n_boot=0, min_count=5)
    report = factor_report(test_split, preds[half], indices=half, n_boot=0, min_count=5,
                           min_coverage=0.5)
    assert report.result is not None
