"""Annotations read from the imagenet-x package, and the paper's statistical tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import (
    FACTORS,
    META_LABELS,
    class_to_meta_label,
    load_annotations,
    prototypical_file_names,
    real_labels,
    val_image_index,
)
from shortcutlab.imagenetx.statistics import (
    alexander_govern_by_factor,
    augmentation_strength_effects,
    chi2_train_vs_val,
    parse_hyperparameters,
    spearman_factors_meta_labels,
    welch_by_factor,
)


def test_annotation_sizes_and_prototype_filtering(top_val):
    assert len(top_val) == 46_110
    assert len(load_annotations("top", "val", filter_prototypes=False)) == 48_868
    assert len(load_annotations("top", "train")) == 11_233
    assert len(prototypical_file_names()) == 3_000
    assert not np.isin(top_val.file_names, prototypical_file_names()).any()
    assert top_val.factors.shape == (46_110, 16)
    assert top_val.factors.sum(axis=1).max() == 1
    assert load_annotations("multi").factors.sum(axis=1).max() > 1


def test_factor_counts_are_close_to_paper_table_2(top_val):
    counts = top_val.factor_counts()
    # Paper table 2 (top factor, validation): pose 15031, background 14743, texture 283.
    assert abs(counts["pose"] - 15_031) < 100
    assert abs(counts["background"] - 14_743) < 100
    assert abs(counts["texture"] - 283) < 10
    assert list(counts.index) == list(FACTORS)


def test_seventeen_meta_labels():
    meta = class_to_meta_label()
    assert len(META_LABELS) == 17 and META_LABELS[-1] == "other"
    assert meta.shape == (1000,) and set(np.unique(meta)) <= set(range(17))
    assert META_LABELS[meta[207]] == "dog"  # golden retriever


def test_real_labels_and_validation_index(top_val):
    assert val_image_index(np.array(["ILSVRC2012_val_00000001.JPEG", "x.JPEG",
                                     "ILSVRC2012_val_00050001.JPEG"])).tolist() == [0, -1, -1]
    real = real_labels(top_val.file_names)
    assert real.shape == (46_110, 9)
    assert (real[:, 0] < 0).sum() == 3_085
    with pytest.raises(ImagenetXError, match="not validation images"):
        real_labels(np.array(["n01440764_1.JPEG"]))


def test_validation_index_needs_eight_decimal_digits():
    """Only ``ILSVRC2012_val_%08d.JPEG`` names are validation images: a letter or another
    character among the eight digits (``A`` is 17 past ``0`` in ASCII, ``:`` is 10) makes the
    name unknown (-1), it is not read as some other image's number."""
    names = np.array(["ILSVRC2012_val_0000000A.JPEG", "ILSVRC2012_val_0000001:.JPEG",
                      "ILSVRC2012_val_00000017.JPEG"])
    assert val_image_index(names).tolist() == [-1, -1, 16]
    with pytest.raises(ImagenetXError, match="1 file names are not validation images"):
        real_labels(names[:1])


def test_validation_index_is_the_same_in_a_batch_with_a_non_ascii_name():
    """A non-ASCII file name of a validation name's length (28) sends the whole batch through
    the slower parser: every other name keeps its number (the eight digits, image n at
    position n - 1)."""
    names = np.array(["ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00012345.JPEG",
                      "ILSVRC2012_val_00050000.JPEG", "ILSVRC2012_val_00050001.JPEG"])
    ascii_only = val_image_index(names)
    assert ascii_only.tolist() == [0, 12_344, 49_999, -1]
    odd = "ILSVRC2012_val_0000012ä.JPEG"
    assert len(odd) == 28
    mixed = val_image_index(np.append(names, odd))
    assert mixed.tolist() == [*ascii_only.tolist(), -1]


def test_validation_index_refuses_digits_outside_ascii():
    """Arabic-Indic or full-width digits are not the ``%08d`` of a validation file name: such a
    name is no validation image, whichever parser reads it (not image 123's number)."""
    names = np.array(["ILSVRC2012_val_00000123.JPEG", "ILSVRC2012_val_0000012\u0663.JPEG",
                      "ILSVRC2012_val_0000012\uff13.JPEG"])
    assert val_image_index(names).tolist() == [122, -1, -1]


def test_bad_choices_are_named():
    with pytest.raises(ImagenetXError, match="unknown factor selection 'all'.*top, multi"):
        load_annotations("all")
    with pytest.raises(ImagenetXError, match="unknown partition 'test'.*val, train"):
        load_annotations("top", "test")


def _table(gen, n, shift=0.0):
    return pd.DataFrame(gen.normal(1 + shift, 0.1, (n, 3)), columns=["pose", "texture", "style"])


def test_alexander_govern_matches_scipy_per_factor():
    gen = np.random.default_rng(0)
    a, b, c = _table(gen, 6), _table(gen, 8, 0.3), _table(gen, 5)
    table = pd.concat([a, b, c], ignore_index=True)
    table.index = [f"m{i}" for i in range(len(table))]
    groups = dict(zip(table.index, ["a"] * 6 + ["b"] * 8 + ["c"] * 5, strict=True))
    result = alexander_govern_by_factor(table, groups)
    expected = stats.alexandergovern(a["texture"], b["texture"], c["texture"])
    assert result.loc["texture", "pvalue"] == pytest.approx(expected.pvalue)
    assert result.loc["texture", "significant"]
    assert result.loc["pose", "mean_b"] == pytest.approx(b["pose"].mean())
    with pytest.raises(ImagenetXError, match="no group given for models m0"):
        alexander_govern_by_factor(table, {k: v for k, v in groups.items() if k != "m0"})


def test_alexander_govern_is_significant_at_the_papers_five_percent_by_default():
    """Figure 1b: a factor is significant when the Alexander-Govern p-value is at most 0.05.
    Here one factor's p-value (scipy) lies between 0.05 and 0.10: not significant by default,
    significant when 0.10 is asked for."""
    gen = np.random.default_rng(11)
    a, b, c = gen.normal(1, 0.1, 6), gen.normal(1.1, 0.1, 8), gen.normal(1, 0.1, 5)
    expected = stats.alexandergovern(a, b, c).pvalue
    assert 0.05 < expected < 0.10  # the case this test is about
    table = pd.DataFrame({"texture": np.concatenate([a, b, c])},
                         index=[f"m{i}" for i in range(19)])
    groups = dict(zip(table.index, ["a"] * 6 + ["b"] * 8 + ["c"] * 5, strict=True))
    result = alexander_govern_by_factor(table, groups)
    assert result.loc["texture", "pvalue"] == pytest.approx(expected, rel=1e-9)
    assert not result.loc["texture", "significant"]
    assert alexander_govern_by_factor(table, groups, alpha=0.10).loc["texture", "significant"]


def test_welch_and_augmentation_strengths():
    gen = np.random.default_rng(1)
    a, b = _table(gen, 5), _table(gen, 7, 0.5)
    result = welch_by_factor(a, b)
    expected = stats.ttest_ind(b["pose"], a["pose"], equal_var=False)
    assert result.loc["pose", "pvalue"] == pytest.approx(expected.pvalue)
    assert result.loc["pose", "difference"] == pytest.approx(b["pose"].mean() - a["pose"].mean())
    assert parse_hyperparameters("eval_resnet50_crop8.0_wd1e-05_color100.0_id166") == {
        "resnet": 50.0, "crop": 8.0, "wd": 1e-05, "color": 100.0}
    table = pd.concat([a, b])
    table.index = [f"eval_crop8.0_id{i}" for i in range(5)] + [f"eval_crop100.0_id{i}"
                                                               for i in range(7)]
    effects = augmentation_strength_effects(table, "crop", 8.0)
    assert effects.loc[(100.0, "pose"), "pvalue"] == pytest.approx(expected.pvalue)
    # each strength against the baseline: its mean minus the baseline's (b shifted by +0.5)
    assert effects.loc[(100.0, "pose"), "difference"] == pytest.approx(
        b["pose"].mean() - a["pose"].mean())
    assert effects.loc[(100.0, "pose"), "difference"] > 0.3
    assert effects.loc[(100.0, "pose"), "statistic"] == pytest.approx(expected.statistic)
    with pytest.raises(ImagenetXError, match=r"baseline crop=3.0 not among.*8.0"):
        augmentation_strength_effects(table, "crop", 3.0)


def test_spearman_reproduces_paper_appendix_a4_correlations():
    corr, pvals = spearman_factors_meta_labels(load_annotations("multi"))
    assert corr.shape == (33, 33)
    # Paper section 2.1 / A.4, every claimed sign, each significant at p <= 0.05:
    # dog: negative with pattern, color, smaller, shape, subcategory; positive with pose and
    # background. commodity: positive with pattern and color, negative with pose. Factor pairs:
    # color-pattern, larger-partial view and subcategory-shape positively correlated.
    claims = [("dog", f, -1) for f in ("pattern", "color", "smaller", "shape", "subcategory")]
    claims += [("dog", "pose", 1), ("dog", "background", 1), ("commodity", "pattern", 1),
               ("commodity", "color", 1), ("commodity", "pose", -1), ("color", "pattern", 1),
               ("larger", "partial_view", 1), ("subcategory", "shape", 1)]
    for a, b, sign in claims:
        assert np.sign(corr.loc[a, b]) == sign, (a, b, corr.loc[a, b])
        assert pvals.loc[a, b] <= 0.05, (a, b)
    one_hot = (load_annotations("multi").meta_label == META_LABELS.index("dog")).astype(float)
    pattern = load_annotations("multi").factors[:, FACTORS.index("pattern")]
    assert corr.loc["dog", "pattern"] == pytest.approx(stats.spearmanr(one_hot, pattern)[0])


def test_chi2_train_vs_val_matches_scipy(top_val):
    train = load_annotations("top", "train")
    result = chi2_train_vs_val(train, top_val)
    table = np.stack([train.factors.sum(0), top_val.factors.sum(0)])
    expected = stats.chi2_contingency(table)
    assert result["statistic"] == pytest.approx(expected.statistic)
    assert result["dof"] == 15
    assert result["counts"].loc["pose", "train"] == train.factor_counts()["pose"]
    assert 0 < result["cramers_v"] < 0.2  # distributions are similar (paper section 2.1)


def test_a_strength_with_one_model_is_left_out_of_the_strength_effects():
    gen = np.random.default_rng(2)
    table = pd.concat([_table(gen, 5), _table(gen, 4, 0.5), _table(gen, 1, 0.5)])
    table.index = ([f"eval_crop8.0_id{i}" for i in range(5)]
                   + [f"eval_crop50.0_id{i}" for i in range(4)] + ["eval_crop100.0_id0"])
    effects = augmentation_strength_effects(table, "crop", 8.0)
    assert sorted(set(effects.index.get_level_values("strength"))) == [50.0]
    assert len(effects) == 3
