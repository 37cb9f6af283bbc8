"""The paper's analyses beyond the factor tables, on small synthetic predictions and tables."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from imagenet_x.aggregate import compute_factor_calibration_errors
from scipy import stats

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx import analyses, spillover
from shortcutlab.imagenetx.annotations import FACTORS, META_LABELS, load_annotations
from shortcutlab.imagenetx.evaluate import error_ratio, evaluate
from shortcutlab.imagenetx.predictions import Predictions

# its module-scoped fixtures are computed once: every test of the module on one xdist worker
pytestmark = pytest.mark.xdist_group("test_imagenetx_analyses")


def test_calibration_per_factor_matches_the_package(model_predictions, top_val, package_frame):
    reference = compute_factor_calibration_errors(package_frame, list(FACTORS), "is_correct")
    mine = analyses.calibration_by_factor(model_predictions, top_val, "class")
    reference = reference.loc[mine.index, mine.columns]
    np.testing.assert_allclose(mine.to_numpy(), reference.to_numpy(), rtol=0, atol=1e-12)


def test_calibration_needs_probabilities(top_val):
    preds = Predictions(("m",), top_val.file_names[:5], top_val.labels[None, :5])
    with pytest.raises(ImagenetXError, match="probabilities"):
        analyses.calibration_by_factor(preds, top_val)


def test_accuracy_by_active_factors_counts_images_by_number_of_factors():
    multi = load_annotations("multi")
    n_active = multi.factors.sum(axis=1)
    # A model right exactly on the images with 2 active factors.
    classes = np.where(n_active == 2, multi.labels, (multi.labels + 1) % 1000)
    preds = Predictions(("two",), multi.file_names, classes[None, :])
    acc = analyses.accuracy_by_active_factors(preds, multi)
    assert acc.loc["two", 2] == 1.0
    assert np.nansum(acc.drop(columns=2).to_numpy()) == 0.0
    assert acc.attrs["n_images"][2] == int((n_active == 2).sum())
    counts = analyses.active_factor_counts(multi)
    assert counts["val"].sum() == len(multi)
    assert counts.loc[2, "val"] == int((n_active == 2).sum())


@pytest.fixture(scope="module")
def figure2_shares() -> pd.DataFrame:
    return analyses.factor_shares()


def test_figure2_factor_shares_equal_a_count_of_each_annotation_table(figure2_shares):
    shares = figure2_shares
    sets = list(dict.fromkeys(zip(shares["partition"], shares["which"], strict=True)))
    assert sets == [("train", "multi"), ("val", "multi"), ("train", "top"), ("val", "top")]
    for (partition, which), part in shares.groupby(["partition", "which"], sort=False):
        # Counted again from the annotation table's 0/1 columns (pandas, not the factor matrix).
        table = load_annotations(which, partition).to_frame()[list(FACTORS)]
        assert part["factor"].tolist() == list(FACTORS)
        assert part["count"].tolist() == table.sum().tolist(), (partition, which)
        assert (part["images"] == len(table)).all()  # images with no factor count too
        np.testing.assert_allclose(part["share"], table.mean(), rtol=1e-12)
        # Shares add up to the mean number of factors per image (multi) or, with one factor
        # per image, to the share of images that have one (top; 6 train, 2 val have none).
        per_image = table.sum(axis=1)
        expected = per_image.mean() if which == "multi" else (per_image > 0).mean()
        assert part["share"].sum() == pytest.approx(expected, rel=1e-12)
        assert bool(per_image.max() == 1) == (which == "top")
    assert len(shares.query("partition == 'val'").drop_duplicates("images")) == 1
    assert shares.query("partition == 'val'")["images"].iloc[0] == 46_110  # prototypes out


def test_figure2_is_the_authors_count_over_their_annotation_reader(figure2_shares):
    """The authors' figure 2 (imagenet-x's factor_distribution_comparison) divides each
    factor's sum by the rows of their load_annotations table: checked on the training subset's
    all-factor table (0.1 s to read with their reader; every table is counted above)."""
    from imagenet_x.utils import load_annotations as package_annotations

    frame = package_annotations("multi", "train")
    theirs = frame[list(FACTORS)].sum() / len(frame)
    ours = figure2_shares.query("partition == 'train' and which == 'multi'")
    np.testing.assert_allclose(ours["share"], theirs.to_numpy(), rtol=1e-12)


def test_figure2_claims_of_the_paper_in_numbers(figure2_shares):
    """Section 2.1: pose and background are selected for "around 80 %" of the validation
    images; the top factor reduces them clearly; train and val share the most common factors
    (docs/imagenetx-fidelity.md gives the numbers)."""
    share = figure2_shares.set_index(["partition", "which", "factor"])["share"].sort_index()
    assert share["val", "multi", "pose"] == pytest.approx(0.867, abs=5e-4)
    assert share["val", "multi", "background"] == pytest.approx(0.771, abs=5e-4)
    assert share["val", "top", "pose"] == pytest.approx(0.327, abs=5e-4)
    assert share["val", "top", "background"] == pytest.approx(0.320, abs=5e-4)
    for partition in ("train", "val"):
        for which in ("multi", "top"):
            top4 = share[partition, which].nlargest(4).index
            assert set(top4) == {"pose", "background", "pattern", "color"}
    # ... but pattern is far more common in the training subset (61 % against 34 %)
    assert share["train", "multi", "pattern"] - share["val", "multi", "pattern"] > 0.25


def test_factor_shares_refuse_a_repeated_set(top_val):
    with pytest.raises(ImagenetXError, match="repeated"):
        analyses.factor_shares(top_val, load_annotations("top", "val", filter_prototypes=False))


def test_table3_listing_robust_and_susceptible_with_counts(top_val):
    # Wrong exactly on the 'dog' images with the texture factor and on those with pose: in the
    # dog meta-label texture is the most susceptible factor and pose is never robust.
    dog = top_val.meta_label == META_LABELS.index("dog")
    f = {name: top_val.factors[:, FACTORS.index(name)] for name in ("texture", "pose")}
    wrong = dog & (f["texture"] | (f["pose"] & (np.arange(len(top_val)) % 2 == 0)))
    classes = np.where(wrong, (top_val.labels + 1) % 1000, top_val.labels)
    result = evaluate(Predictions(("m",), top_val.file_names, classes[None, :]), top_val)
    listing = analyses.meta_label_listing(result)
    part = listing[(listing["meta_label"] == "dog")]
    susceptible = part[part["kind"] == "susceptible"].sort_values("rank")
    assert susceptible.iloc[0]["factor"] == "texture"
    n_texture = int((dog & f["texture"]).sum())
    assert susceptible.iloc[0]["n_images"] == n_texture
    expected = 1.0 / (1 - result.meta_average[0, META_LABELS.index("dog")])
    assert susceptible.iloc[0]["error_ratio"] == pytest.approx(expected)
    assert (susceptible["lower"] <= susceptible["error_ratio"]).all()
    robust = part[part["kind"] == "robust"]
    assert (robust["error_ratio"] <= 1).all() and len(robust) == 4
    assert "pose" not in set(robust["factor"])
    assert (part[part["kind"] == "susceptible"]["error_ratio"] > 1).all()
    text = analyses.listing_text(listing)
    row = text[(text["meta_label"] == "dog")].iloc[0]
    assert row["susceptible"].endswith(f"texture ({expected:.1f})" if n_texture >= 10
                                       else f"texture ({expected:.1f} †{n_texture})")


def test_wilson_interval_contains_the_proportion_and_is_nan_without_data():
    bounds = analyses.wilson_interval(np.array([3, 0]), np.array([10, 0]))
    assert bounds[0, 0] < 0.3 < bounds[0, 1]
    assert bounds[0] == pytest.approx([0.1078, 0.6032], abs=1e-4)
    assert np.isnan(bounds[1]).all()


def test_model_families_from_the_shipped_map_with_overrides():
    fam = analyses.model_families(["resnet50", "DINO", "BiT-M-R50x1-ILSVRC2012", "human", "mine"],
                                  extra={"mine": "self_supervised"})
    assert fam.to_dict() == {
        "resnet50": "supervised_1k", "DINO": "self_supervised",
        "BiT-M-R50x1-ILSVRC2012": "more_data", "human": "original_labels",
        "mine": "self_supervised",
    }
    known = analyses.load_model_families()
    assert set(known) <= set(analyses.FAMILIES)
    assert (known == "self_supervised").sum() == 13


def _fake_group(group: str, name: str, strengths, effect: dict[str, float], seed: int):
    """Models of one augmentation group whose factor accuracies follow ``effect`` × strength."""
    gen = np.random.default_rng(seed)
    rows = {}
    for s in strengths:
        for rep in range(6):
            acc = {f: 0.7 + gen.normal(0, 0.005) for f in FACTORS}
            for factor, slope in effect.items():
                acc[factor] = 0.7 - slope * s / 100 + gen.normal(0, 0.005)
            acc["average"] = 0.75
            value = 100 - s if group == "crop" else s
            rows[f"resnet50_{name}{value:g}_id{rep}"] = acc
    frame = pd.DataFrame(rows).T
    frame.insert(0, "group", group)
    return frame


@pytest.fixture(scope="module")
def fake_tables():
    levels = [0, 25, 50, 75, 100]
    parts = [
        # crop: stronger -> pose error ratio lower (accuracy up), subcategory higher.
        _fake_group("crop", "crop", [8, 30, 50, 70, 92], {"pose": -0.2, "subcategory": 0.2}, 0),
        _fake_group("colorjitter", "color", levels, {"color": -0.2, "pose": 0.1}, 1),
        _fake_group("gaussian_blur", "smoothing", levels, {"texture": -0.3}, 2),
    ]
    return pd.concat(parts)


@pytest.mark.parametrize("method", ["cubic", "welch"])
def test_spillover_finds_the_planted_effects(fake_tables, method):
    crop = spillover.group_spillover(fake_tables, "crop", method)
    assert crop.loc["pose", "direction"] == "lower" and crop.loc["pose", "significant"]
    assert crop.loc["subcategory", "direction"] == "higher"
    assert crop.loc["subcategory", "significant"]
    # The 14 flat factors are mostly not significant (the cubic procedure compares the two
    # strengths where the fit to noise is extreme, so it flags more of them).
    assert crop["significant"].sum() <= (8 if method == "cubic" else 4)
    assert crop.attrs["method"] == method
    # The p-value is Welch's t-test (scipy) between the models at the two strengths compared.
    ratios = error_ratio(fake_tables[fake_tables["group"] == "crop"])
    strength = spillover.augmentation_strength(ratios.index, "crop")
    weak = strength.isin([float(v) for v in crop.loc["pose", "weak"].split(", ")])
    strong = strength.isin([float(v) for v in crop.loc["pose", "strong"].split(", ")])
    expected = stats.ttest_ind(ratios.loc[strong, "pose"], ratios.loc[weak, "pose"],
                               equal_var=False)
    assert crop.loc["pose", "pvalue"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert crop.loc["pose", "change"] == pytest.approx(
        ratios.loc[strong, "pose"].mean() - ratios.loc[weak, "pose"].mean())
    if method == "cubic":  # the authors' procedure: the fit's extremes are the end strengths
        assert set(crop.loc["pose", ["weak", "strong"]]) == {"8", "92"}


def test_claim_verdicts_use_both_methods(fake_tables):
    verdicts = spillover.claim_verdicts(fake_tables)
    assert len(verdicts) == 10
    row = verdicts[(verdicts["augmentation"] == "crop") & (verdicts["factor"] == "pose")].iloc[0]
    assert row["reproduced_cubic"] and row["reproduced_welch"]
    # Each verdict is "significant at 0.05 and in the stated direction" of that method's test.
    for method in ("cubic", "welch"):
        expected = ((verdicts[f"pvalue_{method}"] <= 0.05)
                    & (np.sign(verdicts[f"change_{method}"])
                       == np.where(verdicts["paper"] == "lower", -1, 1)))
        assert verdicts[f"reproduced_{method}"].tolist() == expected.tolist()
    flat = verdicts[(verdicts["augmentation"] == "crop") & (verdicts["factor"] == "pattern")]
    assert not flat.iloc[0]["reproduced_welch"]  # no effect planted on pattern


def test_crop_strength_is_100_minus_the_crop_parameter():
    strength = spillover.augmentation_strength(["r_crop8.0_wd1e-05_id1", "r_crop100_id2"], "crop")
    assert strength.tolist() == [92.0, 0.0]
    with pytest.raises(ImagenetXError, match="augmentation group"):
        spillover.augmentation_strength(["x"], "rotation")
    with pytest.raises(ImagenetXError, match="spill-over method"):
        spillover.spillover(pd.DataFrame({"pose": [1.0]}), pd.Series([1.0]), "bogus")


def test_read_result_tables_and_figure4_set(tmp_path):
    root = tmp_path / "results" / "val" / "top_factor"
    rows = {"resnet50": 0.76, "BiT-M-R50x1-ILSVRC2012": 0.8, "unknown_net": 0.5, "DINO": 0.77}
    for group in ("imagenet_testbed", "base"):
        folder = root / group / "class"
        folder.mkdir(parents=True)
        table = pd.DataFrame({f: rows for f in FACTORS})
        table["average"] = pd.Series(rows)
        table.index.name = "model"
        table.to_csv(folder / "accuracies_per_factor.csv")
    tables = analyses.read_result_tables(tmp_path / "results", "top", "class")
    assert set(tables["group"]) == {"imagenet_testbed", "base"}
    fig4 = analyses.figure4_models(tables)
    # testbed models of the four main families, plus base's self-supervised models only.
    assert sorted(fig4.index) == ["BiT-M-R50x1-ILSVRC2012", "DINO", "resnet50"]
    assert fig4.loc["DINO", "family"] == "self_supervised"
    with pytest.raises(Exception, match="accuracies_per_factor.csv"):
        analyses.read_result_tables(tmp_path / "results", "top", "metaclass")


def test_cubic_procedure_compares_the_strengths_where_the_fit_is_extreme():
    """A peak at a middle strength: the authors' procedure compares it with the lowest point
    of the fit, not the two end strengths; the Welch procedure compares the end thirds."""
    gen = np.random.default_rng(3)
    levels = [0, 25, 50, 75, 100]
    peak = {0: 1.0, 25: 1.3, 50: 1.6, 75: 1.3, 100: 1.05}
    strength = pd.Series({f"m{s}_{r}": s for s in levels for r in range(6)}, dtype=float)
    ratios = pd.DataFrame({"pose": [peak[s] + gen.normal(0, 0.01) for s in strength]},
                          index=strength.index)
    cubic = spillover.spillover(ratios, strength, "cubic").loc["pose"]
    assert {cubic["weak"], cubic["strong"]} == {"0", "50"}
    assert cubic["direction"] == "higher" and cubic["significant"]
    welch = spillover.spillover(ratios, strength, "welch").loc["pose"]
    assert (welch["weak"], welch["strong"]) == ("0", "100")
    few = strength[strength < 50].index.append(pd.Index(["m50_0"]))
    with pytest.raises(ImagenetXError, match="5\\+ models"):
        spillover.spillover(ratios.loc[few].iloc[:9], strength)


def test_spillover_keeps_a_strength_with_five_models_and_drops_one_with_four():
    """The authors keep the strengths with more than 4 models (imagenet_x/plots.py:
    ``groupby(strength).size() > 4``): exactly 5 models are enough, 4 are not."""
    gen = np.random.default_rng(5)
    sizes = {0: 5, 50: 5, 100: 4}
    strength = pd.Series({f"m{s}_{r}": s for s, n in sizes.items() for r in range(n)},
                         dtype=float)
    ratios = pd.DataFrame({"pose": [1.0 + v / 100 + gen.normal(0, 0.01) for v in strength]},
                          index=strength.index)
    row = spillover.spillover(ratios, strength, "cubic").loc["pose"]
    assert (row["weak"], row["strong"]) == ("0", "50")
    assert (row["n_weak"], row["n_strong"]) == (5, 5)
    assert row["change"] == pytest.approx(0.5, abs=0.03)


def test_cubic_procedure_with_three_strengths_fits_their_means_without_a_warning():
    """Three strengths under-determine a cubic: the fit drops to the quadratic through their
    means (what the cubic's least-squares fit gives), so the extremes are the strengths with
    the lowest and highest mean, and numpy's ill-conditioning warning never reaches the user."""
    gen = np.random.default_rng(4)
    means = {10: 1.2, 40: 0.9, 90: 1.5}
    strength = pd.Series({f"m{s}_{r}": s for s in means for r in range(6)}, dtype=float)
    ratios = pd.DataFrame({"pose": [means[s] + gen.normal(0, 0.01) for s in strength]},
                          index=strength.index)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = spillover.spillover(ratios, strength, "cubic").loc["pose"]
    assert (row["weak"], row["strong"]) == ("40", "90")
    assert row["change"] == pytest.approx(0.6, abs=0.02)


def test_table3_lists_the_most_susceptible_factors_with_their_intervals(top_val):
    """Table 3's susceptible list is the k factors with the highest error ratios above 1,
    highest first; checked against error ratios counted by hand on the 'dog' images of a model
    wrong on a different share of each factor's images (seven factors above the dog average)."""
    dog = top_val.meta_label == META_LABELS.index("dog")
    position = np.arange(len(top_val))
    every = {"texture": 1, "pattern": 2, "color": 3, "smaller": 4, "shape": 5,
             "subcategory": 7, "partial_view": 9, "pose": 40}
    wrong = np.zeros(len(top_val), dtype=bool)
    for name, step in every.items():
        wrong |= top_val.factors[:, FACTORS.index(name)] & (position % step == 0)
    wrong &= dog
    classes = np.where(wrong, (top_val.labels + 1) % 1000, top_val.labels)
    result = evaluate(Predictions(("m",), top_val.file_names, classes[None, :]), top_val)
    listing = analyses.meta_label_listing(result, k=4)
    part = listing[(listing["meta_label"] == "dog") & (listing["kind"] == "susceptible")]

    base = wrong[dog].mean()  # the dog meta-label's error rate
    by_hand = {}
    for k, name in enumerate(FACTORS):
        images = dog & top_val.factors[:, k]
        if images.any():
            by_hand[name] = (wrong[images].mean() / base, int(images.sum()),
                             int((~wrong[images]).sum()))
    above = sorted((v[0], name) for name, v in by_hand.items() if v[0] > 1)
    assert len(above) >= 6  # more susceptible factors than the four listed
    expected = [name for _, name in above[::-1][:4]]
    assert part.sort_values("rank")["factor"].tolist() == expected
    for row in part.itertuples():
        ratio, n, right = by_hand[row.factor]
        assert row.error_ratio == pytest.approx(ratio, rel=1e-9)
        assert row.n_images == n
        # Wilson interval of the factor's accuracy (z = 1.96) mapped to 1 - accuracy over base
        bounds = analyses.wilson_interval(np.array(right), np.array(n))
        assert (row.lower, row.upper) == pytest.approx(((1 - bounds[1]) / base,
                                                        (1 - bounds[0]) / base), rel=1e-9)
        assert row.lower <= row.error_ratio <= row.upper


def test_figure4_keeps_the_four_model_groups_of_the_paper(tmp_path):
    """Figures 1b and 4 compare four groups of models: supervised on ImageNet-1k, with more
    data, self-supervised and with robustness interventions (paper section 3.1); the other
    families of the shipped map are left out."""
    known = analyses.load_model_families()
    one_each = {family: known.index[known == family][0] for family in analyses.FAMILIES}
    folder = tmp_path / "results" / "val" / "top_factor" / "imagenet_testbed" / "class"
    folder.mkdir(parents=True)
    table = pd.DataFrame({f: 0.7 for f in FACTORS}, index=list(one_each.values()))
    table["average"] = 0.75
    table.rename_axis("model").to_csv(folder / "accuracies_per_factor.csv")
    fig4 = analyses.figure4_models(analyses.read_result_tables(tmp_path / "results"))
    assert sorted(fig4["family"]) == sorted(["supervised_1k", "more_data", "self_supervised",
                                             "robustness_intervention"])
    assert fig4.loc[one_each["robustness_intervention"], "family"] == "robustness_intervention"


def test_accuracy_by_active_factors_leaves_out_images_without_a_prediction():
    """A model with predictions for every other image only: its accuracy per number of active
    factors is counted over the images it has (images it lacks are not its errors)."""
    multi = load_annotations("multi")
    n_active = multi.factors.sum(axis=1)
    has = np.arange(len(multi)) % 2 == 0
    right = has & (np.arange(len(multi)) % 3 != 0)
    classes = np.where(right, multi.labels, (multi.labels + 1) % 1000)
    preds = Predictions(("half",), multi.file_names[has], classes[None, has])
    acc = analyses.accuracy_by_active_factors(preds, multi)
    for n in (1, 2, 3):
        assert acc.loc["half", n] == pytest.approx(right[has & (n_active == n)].mean(), rel=1e-12)
    assert acc.loc["half", 1] == pytest.approx(2 / 3, abs=0.01)


def test_figure17_takes_the_strongest_strength_with_five_models():
    """Figure 17 (as the authors' code): crop only and colour jitter only at their strongest
    strength among those with 5+ models; both and the tailored jitter with all their models.
    The per-factor test is scipy's Alexander-Govern across the four."""
    tables = pd.concat([
        _fake_group("crop", "crop", [8, 50, 92], {"pose": -0.2}, 0),
        _fake_group("colorjitter", "color", [0, 50, 100], {"color": -0.2}, 1),
        _fake_group("colorjitter_crop", "color", [50], {}, 2),
        _fake_group("adaptive_colorjitter", "color", [50], {}, 3),
    ])
    # colour jitter 100 keeps 4 models: 50 is the strongest strength with 5+
    tables = tables.drop([f"resnet50_color100_id{r}" for r in (4, 5)])
    out = analyses.tailored_augmentation(tables)
    ratios = out["ratios"]
    models = ratios.groupby("augmentation").groups
    assert sorted(models["crop"]) == [f"crop/resnet50_crop8_id{r}" for r in range(6)]
    assert sorted(models["color jitter"]) == [f"colorjitter/resnet50_color50_id{r}"
                                              for r in range(6)]
    assert len(models["color jitter + crop"]) == len(models["per-class color jitter + crop"]) == 6
    crop = tables.loc[[f"resnet50_crop8_id{r}" for r in range(6)]]
    np.testing.assert_allclose(ratios.loc[sorted(models["crop"]), "pose"],
                               error_ratio(crop)["pose"], rtol=1e-12)
    samples = [ratios.loc[ratios["augmentation"] == label, "pose"]
               for label in analyses.TAILORED_GROUPS]
    expected = stats.alexandergovern(*samples)
    assert out["tests"].loc["pose", "pvalue"] == pytest.approx(expected.pvalue, rel=1e-9)


def test_table3_lists_an_error_ratio_of_exactly_one_as_robust(top_val):
    """Wrong on every dog image: each factor's error rate within dog equals dog's, so every
    ratio there is exactly 1 (robust, ≤ 1), none susceptible."""
    part = top_val.take(np.arange(3000))
    dog = part.meta_label == META_LABELS.index("dog")
    classes = np.where(dog, (part.labels + 1) % 1000, part.labels)
    result = evaluate(Predictions(("m",), part.file_names, classes[None, :]), part)
    listing = analyses.meta_label_listing(result)
    rows = listing[listing["meta_label"] == "dog"]
    present = int((part.factors[dog].sum(axis=0) > 0).sum())
    assert len(rows) == min(4, present) and (rows["kind"] == "robust").all()
    assert (rows["error_ratio"] == 1.0).all()


def test_table3_text_marks_values_on_fewer_than_min_count_images():
    listing = pd.DataFrame({
        "model": "m", "meta_label": "dog", "kind": ["robust", "robust", "susceptible"],
        "rank": [1, 2, 1], "factor": ["pose", "shape", "texture"],
        "error_ratio": [0.5, 0.8, 2.0], "n_images": [10, 9, 11],
        "lower": np.nan, "upper": np.nan})
    row = analyses.listing_text(listing, min_count=10).iloc[0]
    assert row["robust"] == "pose (0.5), shape (0.8 †9)"
    assert row["susceptible"] == "texture (2.0)"


def test_a_row_without_a_strength_such_as_human_is_no_model_of_the_spillover(fake_tables):
    human = fake_tables[fake_tables["group"] == "crop"].iloc[:1].copy()
    human.index = ["human"]
    human[list(FACTORS)] = 0.0  # extreme: would move every mean it joined
    with_human = spillover.group_spillover(pd.concat([fake_tables, human]), "crop", "welch")
    pd.testing.assert_frame_equal(with_human, spillover.group_spillover(fake_tables, "crop",
                                                                        "welch"))
