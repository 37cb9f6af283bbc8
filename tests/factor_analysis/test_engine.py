"""The factor-analysis engine on a user's own table, checked against plain pandas group-bys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from shortcutlab.errors import FactorAnalysisError
from shortcutlab.factor_analysis import (
    annotation_table,
    calibration_by_factor,
    factor_error_tests,
    factor_result,
    join_predictions,
    worst_factors,
    worst_factors_by_class,
    worst_group_accuracy,
)


def waterbirds_like(n: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Birds on land/water backgrounds; the model is right 95% of the time when the background
    matches the bird, 55% when it does not (a planted background shortcut)."""
    gen = np.random.default_rng(seed)
    label = gen.choice(["landbird", "waterbird"], n)
    matches = gen.random(n) < 0.8
    background = np.where(matches, np.where(label == "landbird", "land", "water"),
                          np.where(label == "landbird", "water", "land"))
    annotations = pd.DataFrame({
        "id": [f"img{i:05d}" for i in range(n)], "label": label, "background": background,
        "blurry": (gen.random(n) < 0.3).astype(int), "site": gen.choice([1, 2, 3], n),
    })
    right = gen.random(n) < np.where(matches, 0.95, 0.55)
    other = np.where(label == "landbird", "waterbird", "landbird")
    predictions = pd.DataFrame({
        "id": annotations["id"], "prediction": np.where(right, label, other),
        "probability": np.clip(np.where(right, 0.9, 0.7) + gen.normal(0, 0.05, n), 0, 1),
    })
    return annotations, predictions.sample(frac=1.0, random_state=1)  # any row order


@pytest.fixture(scope="module")
def data():
    annotations, predictions = waterbirds_like()
    table = annotation_table(annotations)
    joined = join_predictions(table, predictions, prob_col="probability")
    return annotations, predictions, table, joined


def _plain(annotations: pd.DataFrame, predictions: pd.DataFrame) -> pd.DataFrame:
    frame = annotations.merge(predictions, on="id")
    frame["right"] = frame["prediction"] == frame["label"]
    return frame


def test_per_factor_accuracy_and_error_ratio_match_a_plain_group_by(data):
    annotations, predictions, table, joined = data
    result = factor_result(table, joined)
    frame = _plain(annotations, predictions)
    overall = frame["right"].mean()
    expected = {}
    for column in ("background", "site"):
        for cls, acc in frame.groupby(column)["right"].mean().items():
            expected[f"{column}={cls}"] = acc
    expected["blurry"] = frame.loc[frame["blurry"] == 1, "right"].mean()
    assert set(result.names) == set(expected)
    acc = result.table("accuracy").loc["model"]
    ratios = result.table("error_ratio").loc["model"]
    for name, value in expected.items():
        assert acc[name] == pytest.approx(value), name
        assert ratios[name] == pytest.approx((1 - value) / (1 - overall)), name
    assert result.average[0] == pytest.approx(overall)
    assert result.table("count").loc["model", "site=2"] == (frame["site"] == 2).sum()


def test_the_planted_background_is_the_worst_factor_per_class(data):
    annotations, predictions, table, joined = data
    worst = worst_factors(factor_result(table, joined), k=2)
    assert worst["rank"].tolist() == [1, 2]
    # The minority backgrounds: water for landbirds, land for waterbirds.
    by_class = worst_factors_by_class(table, joined, k=1)
    assert dict(zip(by_class["class"], by_class["factor"], strict=True)) == {
        "landbird": "background=water", "waterbird": "background=land"}
    frame = _plain(annotations, predictions)
    land = frame[frame["label"] == "landbird"]
    acc_pair = land.loc[land["background"] == "water", "right"].mean()
    row = by_class[by_class["class"] == "landbird"].iloc[0]
    assert row["error_ratio"] == pytest.approx((1 - acc_pair) / (1 - land["right"].mean()))
    grouped = worst_factors_by_class(table, joined, k=1,
                                     class_groups={"landbird": "birds", "waterbird": "birds"})
    assert grouped["class"].tolist() == ["birds"]


def test_worst_group_accuracy_is_the_minimum_over_label_and_factor_groups(data):
    annotations, predictions, table, joined = data
    frame = _plain(annotations, predictions)
    groups = frame.groupby(["label", "background"])["right"].agg(["mean", "size"])
    wg = worst_group_accuracy(table, joined, factors=["background"])
    assert wg["model"]["acc_wg"] == pytest.approx(groups["mean"].min())
    label, background = groups["mean"].idxmin()
    assert wg["model"]["worst_group"] == f"label={label}, background={background}"
    assert wg["model"]["n_groups"] == 4
    # A group smaller than min_count is excluded from the minimum and named.
    small = worst_group_accuracy(table, joined, factors=["background", "site", "blurry"],
                                 min_count=10_000 // 100)
    full = frame.groupby(["label", "background", "site", "blurry"])["right"].agg(["mean", "size"])
    kept = full[full["size"] >= 100]
    assert small["model"]["acc_wg"] == pytest.approx(kept["mean"].min())
    assert len(small["model"]["excluded"]) == int((full["size"] < 100).sum())
    with pytest.raises(FactorAnalysisError, match="no group .* has 5000\\+"):
        worst_group_accuracy(table, joined, min_count=5000)


def test_calibration_per_factor_against_a_plain_binning(data):
    annotations, predictions, table, joined = data
    ece = calibration_by_factor(table, joined, n_bins=10)
    frame = _plain(annotations, predictions)
    part = frame[frame["background"] == "water"]
    bins = np.clip(np.ceil(part["probability"] * 10).astype(int) - 1, 0, 9)
    per_bin = part.groupby(bins).agg(right=("right", "sum"), conf=("probability", "sum"))
    expected = (per_bin["right"] - per_bin["conf"]).abs().sum() / len(part)
    assert ece.loc["model", "background=water"] == pytest.approx(expected)
    assert ece.loc["model", "worst_factor"] == ece.drop(
        columns=["worst_factor", "average"]).loc["model"].max()
    without = join_predictions(table, predictions)
    with pytest.raises(FactorAnalysisError, match="probability"):
        calibration_by_factor(table, without)


def test_calibration_average_is_the_ece_over_all_items_not_the_mean_over_factors(data):
    annotations, predictions, table, joined = data
    ece = calibration_by_factor(table, joined, n_bins=10)
    frame = _plain(annotations, predictions)
    bins = np.clip(np.ceil(frame["probability"] * 10).astype(int) - 1, 0, 9)
    per_bin = frame.groupby(bins).agg(right=("right", "sum"), conf=("probability", "sum"))
    expected = (per_bin["right"] - per_bin["conf"]).abs().sum() / len(frame)
    assert ece.loc["model", "average"] == pytest.approx(expected)
    factors = ece.drop(columns=["worst_factor", "average"]).loc["model"]
    assert factors.mean() != pytest.approx(expected)  # the test tells the two apart


def test_worst_factors_keep_a_factor_with_exactly_min_count_items(data):
    annotations, predictions, table, joined = data
    result = factor_result(table, joined)
    frame = _plain(annotations, predictions)
    n_water = int((frame["background"] == "water").sum())
    counts = result.table("count").loc["model"]
    assert counts["background=water"] == n_water
    worst = worst_factors(result, k=len(result.names), min_count=n_water)
    expected = {name for name in result.names if counts[name] >= n_water}
    assert "background=water" in expected
    assert set(worst["factor"]) == expected
    assert len(worst) == len(expected)


def test_bootstrap_interval_brackets_and_chi2_flags_the_planted_factor(data):
    _, _, table, joined = data
    result = factor_result(table, joined, n_boot=200, seed=1)
    long = result.long().set_index("factor")
    for name in ("background=water", "blurry"):
        assert long.loc[name, "error_ratio_lower"] < long.loc[name, "error_ratio"]
        assert long.loc[name, "error_ratio"] < long.loc[name, "error_ratio_upper"]
    tests = factor_error_tests(result).set_index("factor")
    assert not tests.loc["blurry", "significant"]  # no effect planted
    f = result.names.index("site=1")
    r_in, n_in = result.correct[0, f], result.count[0, f]
    r_all, n_all = result.average[0] * result.n_scored[0], result.n_scored[0]
    expected = stats.chi2_contingency([[r_in, n_in - r_in],
                                       [r_all - r_in, n_all - n_in - (r_all - r_in)]]).pvalue
    assert tests.loc["site=1", "pvalue"] == pytest.approx(expected)


def test_holm_adjustment_matches_statsmodels():
    """Three factors with the same counts have the same, smallest χ² p-value p: of four
    tests, Holm's step-down gives each 4p (the adjusted values never decrease along the
    sorted p-values), as statsmodels' ``multipletests(method="holm")``; a factor without
    items (NaN) is no test."""
    from statsmodels.stats.multitest import multipletests

    from shortcutlab.factor_analysis import FactorResult

    result = FactorResult(
        models=("m",), names=("a", "b", "c", "d", "e"),
        correct=np.array([[40.0, 40.0, 40.0, 0.0, 85.0]]),
        count=np.array([[100.0, 100.0, 100.0, 0.0, 100.0]]),
        average=np.array([0.8]), n_scored=np.array([1000]),
    )
    tests = factor_error_tests(result).set_index("factor")
    assert np.isnan(tests.loc["d", "pvalue"]) and np.isnan(tests.loc["d", "pvalue_holm"])
    finite = tests.drop(index="d")
    expected = multipletests(finite["pvalue"], method="holm")[1]
    np.testing.assert_allclose(finite["pvalue_holm"], expected, rtol=1e-12)
    p = finite.loc["a", "pvalue"]
    assert finite.loc[["a", "b", "c"], "pvalue_holm"].tolist() == pytest.approx([4 * p] * 3)


def test_several_models_in_long_format(data):
    annotations, predictions, table, _ = data
    perfect = annotations[["id", "label"]].rename(columns={"label": "prediction"})
    both = pd.concat([predictions.assign(model="shortcut"), perfect.assign(model="oracle")])
    joined = join_predictions(table, both, model_col="model")
    result = factor_result(table, joined)
    assert result.models == ("shortcut", "oracle")
    assert result.average[1] == 1.0
    assert np.isnan(result.error_ratio[1]).all()  # no mistakes: 0/0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: pd.concat([a, a.iloc[:2]]), "2 duplicated ids .*img00000"),
        (lambda a: a.assign(score=np.linspace(0, 1, len(a))), "'score' holds non-integer"),
        (lambda a: a.assign(empty=np.nan), "'empty' is empty"),
        (lambda a: a.assign(never=0), "'never' is empty: binary"),
        (lambda a: a.assign(name=a["id"]), "'name' has 2000 classes"),
        (lambda a: a.drop(columns="label"), "no label column 'label'"),
    ],
)
def test_bad_annotations_are_one_line_errors(change, message):
    annotations, _ = waterbirds_like(n=2000)
    with pytest.raises(FactorAnalysisError, match=message) as info:
        annotation_table(change(annotations))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("change", "kwargs", "message"),
    [
        (lambda p: p.iloc[:1000], {}, r"predicts 1,000 of 2,000 .*coverage 50.0% < min"),
        (lambda p: pd.concat([p, p.iloc[:1].assign(id="stranger")]), {},
         "1 prediction ids are not in the annotations .*stranger.*cover 2,000 of 2,000 "
         r"annotated items \(100.0%\)"),
        (lambda p: pd.concat([p, p.iloc[:3]]), {}, "3 duplicated ids"),
        (lambda p: p.assign(prediction="cat"), {}, "outside the annotations' label set .*cat"),
        (lambda p: p, {"prob_col": "nope"}, "no column 'nope'"),
        # confidences in percent would be binned as 1.0 and give a wrong calibration error
        (lambda p: p.assign(probability=p["probability"] * 100), {"prob_col": "probability"},
         r"'probability' must hold probabilities in \[0, 1\]; \d+ bad values"),
        # an empty prediction cell must not be scored as some label
        (lambda p: p.assign(prediction=p["prediction"].where(p["id"] != "img00001")), {},
         "1 rows without a value in 'prediction'"),
    ],
)
def test_bad_predictions_are_one_line_errors(change, kwargs, message):
    annotations, predictions = waterbirds_like(n=2000)
    table = annotation_table(annotations)
    with pytest.raises(FactorAnalysisError, match=message) as info:
        join_predictions(table, change(predictions), **kwargs)
    assert "\n" not in str(info.value)


def test_partial_predictions_pass_with_a_lower_min_coverage():
    annotations, predictions = waterbirds_like(n=2000)
    table = annotation_table(annotations)
    joined = join_predictions(table, predictions.iloc[:1500], min_coverage=0.7)
    assert joined.coverage.loc["model", "coverage"] == pytest.approx(0.75)
    result = factor_result(table, joined)
    assert result.n_scored[0] == 1500


@pytest.mark.parametrize("n_classes", [3, 40])  # few combinations (counted) and many (sorted)
def test_worst_group_over_many_combinations_and_missing_values(n_classes):
    gen = np.random.default_rng(5)
    n = 300
    annotations = pd.DataFrame({
        "id": np.arange(n), "label": gen.choice(["a", "b"], n),
        **{c: gen.integers(0, n_classes, n) for c in ("x", "y", "z")}})
    annotations.loc[:9, "x"] = np.nan  # ten items in no group
    predictions = pd.DataFrame({"id": np.arange(n),
                                "prediction": gen.choice(["a", "b"], n, p=[0.7, 0.3])})
    table = annotation_table(annotations)
    least = 2 if n_classes == 3 else 1  # 40 classes: nearly every group is one item
    wg = worst_group_accuracy(table, join_predictions(table, predictions), min_count=least)
    frame = _plain(annotations, predictions).dropna(subset=["x"])
    groups = frame.groupby(["label", "x", "y", "z"])["right"].agg(["mean", "size"])
    assert wg["model"]["acc_wg"] == pytest.approx(
        groups.loc[groups["size"] >= least, "mean"].min())
    assert len(wg["model"]["excluded"]) == int((groups["size"] < least).sum())
    assert len(wg["groups"]) == len(groups)
    assert wg["groups"]["count"].sum() == n - 10


def test_the_engine_runs_without_torch():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'torch', 'torchvision'}:\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import pandas as pd\n"
        "from shortcutlab.factor_analysis import analyse_factors\n"
        "a = pd.DataFrame({'id': [1, 2, 3, 4], 'label': ['x', 'y', 'x', 'y'],"
        " 'f': [1, 0, 1, 0]})\n"
        "p = pd.DataFrame({'id': [1, 2, 3, 4], 'prediction': ['y', 'y', 'x', 'y']})\n"
        "r = analyse_factors(a, p, n_boot=0, min_count=1)\n"
        "assert r.result.table('error_ratio').loc['model', 'f'] == 2.0\n"
        "assert 'torch' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("dtype", ["boolean", object])  # nullable booleans; True/False/None
def test_a_true_false_column_with_missing_values_is_binary(dtype):
    annotations, _ = waterbirds_like(n=300)
    flag = pd.Series([True, False, None] * 100, dtype=dtype)
    table = annotation_table(annotations.assign(flag=flag))
    assert "flag" in table.names and not any(n.startswith("flag=") for n in table.names)
    assert table.indicators[:, table.names.index("flag")].sum() == 100


def test_predictions_without_an_id_are_named_as_such():
    annotations, predictions = waterbirds_like(n=300)
    table = annotation_table(annotations)
    broken = predictions.assign(id=predictions["id"].where(predictions["id"] != "img00003"))
    with pytest.raises(FactorAnalysisError, match="1 rows without an id in column 'id'"):
        join_predictions(table, broken)


def test_cramers_v_of_more_than_two_sets_matches_scipy():
    from scipy.stats.contingency import association

    from shortcutlab.factor_analysis.significance import chi2_homogeneity

    counts = pd.DataFrame({"a": [10, 20, 30], "b": [30, 20, 10], "c": [5, 5, 50]},
                          index=["pose", "color", "style"])
    expected = association(counts.T.to_numpy(), method="cramer")
    assert chi2_homogeneity(counts)["cramers_v"] == pytest.approx(expected)
    two = counts[["a", "b"]]
    assert chi2_homogeneity(two)["cramers_v"] == pytest.approx(
        association(two.T.to_numpy(), method="cramer"))
    # two factors in two sets (dof 1): V from the χ² without Yates' correction,
    # sqrt(3.5059 / 85) = 0.2031 (with it, 0.1784)
    square = pd.DataFrame({"a": [10, 20], "b": [30, 25]}, index=["pose", "color"])
    assert chi2_homogeneity(square)["cramers_v"] == pytest.approx(0.2030906, abs=1e-7)


@pytest.mark.parametrize("bad", [2.5, -1.0, np.nan])
def test_chi2_refuses_counts_that_are_not_whole_numbers(bad):
    from shortcutlab.factor_analysis.significance import chi2_homogeneity

    counts = pd.DataFrame({"a": [10.0, 20.0, bad], "b": [30.0, 25.0, 5.0]})
    with pytest.raises(FactorAnalysisError, match="counts must be whole numbers >= 0"):
        chi2_homogeneity(counts)


def test_group_tests_on_a_group_of_identical_models_warn_nothing():
    import warnings

    from shortcutlab.factor_analysis.significance import (
        alexander_govern_by_factor,
        welch_by_factor,
    )

    table = pd.DataFrame({"pose": [1.0, 1.0, 2.0, 2.1], "color": [1.0, 1.1, 1.2, 1.3]},
                         index=["a", "b", "c", "d"])  # a and b: the same predictions twice
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = alexander_govern_by_factor(table, {"a": "x", "b": "x", "c": "y", "d": "y"})
        welch_by_factor(table.loc[["a", "b"]], table.loc[["c", "d"]])
    assert result.loc["color", "pvalue"] == pytest.approx(stats.alexandergovern(
        [1.0, 1.1], [1.2, 1.3]).pvalue)


def test_a_model_with_a_missing_group_is_named_not_a_crash():
    from shortcutlab.factor_analysis.significance import alexander_govern_by_factor

    table = pd.DataFrame({"pose": [1.0, 1.1, 2.0, 2.1, 1.5]}, index=list("abcde"))
    groups = {"a": "x", "b": "x", "c": "y", "d": "y", "e": np.nan}  # a blank cell in groups.csv
    with pytest.raises(FactorAnalysisError, match="no group given for models e"):
        alexander_govern_by_factor(table, groups)


def test_a_model_listed_in_two_groups_is_refused_not_counted_twice():
    from shortcutlab.factor_analysis.significance import alexander_govern_by_factor

    table = pd.DataFrame({"pose": [1.0, 1.2, 2.0, 2.1, 2.2]}, index=list("abcde"))
    groups = pd.Series(["x", "x", "y", "y", "y", "y"], index=list("abcdea"))
    with pytest.raises(FactorAnalysisError, match="models in more than one group: a") as info:
        alexander_govern_by_factor(table, groups)
    assert "\n" not in str(info.value)


def test_a_repeated_factor_or_group_column_is_refused():
    annotations, predictions = waterbirds_like(n=300)
    with pytest.raises(FactorAnalysisError, match="repeated.*background") as info:
        annotation_table(annotations, factor_cols=["background", "background"])
    assert "\n" not in str(info.value)
    table = annotation_table(annotations)
    joined = join_predictions(table, predictions)
    with pytest.raises(FactorAnalysisError, match="repeated.*site"):
        worst_group_accuracy(table, joined, factors=["site", "site"])


def test_prediction_rows_without_a_model_are_refused_not_given_to_another_model():
    annotations, predictions = waterbirds_like(n=300)
    table = annotation_table(annotations)
    both = pd.concat([predictions.assign(model="a"), predictions.assign(model="b")],
                     ignore_index=True)
    both.loc[0, "model"] = np.nan
    with pytest.raises(FactorAnalysisError, match="1 rows without a model in column 'model'"):
        join_predictions(table, both, model_col="model", min_coverage=0)


def test_spearman_matrix_of_two_columns_is_their_2x2_matrix():
    """scipy returns one coefficient for two columns: the matrix still has both rows."""
    from shortcutlab.factor_analysis.significance import spearman_matrix

    x = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]])
    corr, pval = spearman_matrix(x, ["a", "b"])
    expected = stats.spearmanr(x[:, 0], x[:, 1])
    assert corr.shape == pval.shape == (2, 2)
    assert corr.loc["a", "b"] == corr.loc["b", "a"] == pytest.approx(-1 / 6)
    assert pval.loc["a", "b"] == pytest.approx(expected.pvalue)
    assert corr.loc["a", "a"] == corr.loc["b", "b"] == 1.0
    with pytest.raises(FactorAnalysisError, match="at least 2 columns, got 1"):
        spearman_matrix(x[:, :1], ["a"])


def test_per_class_worst_factors_keep_a_factor_with_exactly_min_count_items(data):
    annotations, predictions, table, joined = data
    frame = _plain(annotations, predictions)
    land = frame[frame["label"] == "landbird"]
    n_water = int((land["background"] == "water").sum())
    by_class = worst_factors_by_class(table, joined, k=len(table.names), min_count=n_water)
    listed = set(by_class.loc[by_class["class"] == "landbird", "factor"])
    assert "background=water" in listed
    assert by_class.set_index(["class", "factor"]).loc[("landbird", "background=water"),
                                                       "count"] == n_water
    fewer = worst_factors_by_class(table, joined, k=len(table.names), min_count=n_water + 1)
    assert "background=water" not in set(fewer.loc[fewer["class"] == "landbird", "factor"])


def test_analyse_factors_ranks_factors_with_min_count_items():
    """min_count is the threshold of the worst-factor list too: a factor on 12 items is
    listed with min_count=10, left out with the default 30."""
    from shortcutlab.factor_analysis import analyse_factors

    annotations, predictions = waterbirds_like(n=400)
    annotations = annotations.assign(rare=(np.arange(400) < 12).astype(int))
    listed = analyse_factors(annotations, predictions, n_boot=0, min_count=10, k=20).worst
    assert listed.set_index("factor").loc["rare", "count"] == 12
    default = analyse_factors(annotations, predictions, n_boot=0, k=20).worst
    assert "rare" not in set(default["factor"])


def test_a_categorical_column_of_exactly_max_classes_classes_is_accepted():
    frame = pd.DataFrame({"id": range(8), "label": [0, 1] * 4, "site": [0, 1, 2, 3] * 2})
    table = annotation_table(frame, max_classes=4)
    assert table.names == ("site=0", "site=1", "site=2", "site=3")
    with pytest.raises(FactorAnalysisError, match="has 4 classes .more than max_classes=3"):
        annotation_table(frame, max_classes=3)


def test_bootstrap_resamples_every_item_equally_often():
    """Each replicate draws n items with replacement from all n: every item's mean count over
    replicates is about 1 (the last one too) and each replicate holds n draws."""
    from shortcutlab.factor_analysis.counts import bootstrap_weights

    weights = bootstrap_weights(5, range(2000), seed=0)
    assert (weights.sum(axis=1) == 5).all()
    np.testing.assert_allclose(weights.mean(axis=0), 1.0, atol=0.1)


def test_group_tests_leave_out_missing_values_and_refuse_one_model_per_side():
    from shortcutlab.factor_analysis.significance import (
        alexander_govern_by_factor,
        welch_by_factor,
    )

    table = pd.DataFrame({"pose": [1.0, 1.2, np.nan, 1.1, 2.0, 2.3, 2.1]},
                         index=[f"m{i}" for i in range(7)])
    groups = {"m0": "x", "m1": "x", "m2": "x", "m3": "x", "m4": "y", "m5": "y", "m6": "y"}
    result = alexander_govern_by_factor(table, groups)
    expected = stats.alexandergovern([1.0, 1.2, 1.1], [2.0, 2.3, 2.1])
    assert result.loc["pose", "statistic"] == pytest.approx(expected.statistic)
    assert result.loc["pose", "pvalue"] == pytest.approx(expected.pvalue)
    assert result.loc["pose", "mean_x"] == pytest.approx(1.1)
    with pytest.raises(FactorAnalysisError, match="at least 2 models per side, got 1 and 3"):
        welch_by_factor(table.iloc[:1], table.iloc[4:])


def test_chi2_drops_a_factor_without_items_in_any_set():
    from shortcutlab.factor_analysis.significance import chi2_homogeneity

    counts = pd.DataFrame({"a": [10, 0, 30, 5], "b": [30, 0, 20, 5]},
                          index=["pose", "style", "color", "shape"])
    result = chi2_homogeneity(counts)
    expected = stats.chi2_contingency([[10, 30, 5], [30, 20, 5]])
    assert result["statistic"] == pytest.approx(expected.statistic)
    assert result["dof"] == 2
    assert result["counts"].loc["style", "a"] == 0


def test_analyse_factors_lists_k_worst_factors_per_class_too():
    """k is the length of both lists (the per-class one was cut at 3 whatever k)."""
    from shortcutlab.factor_analysis import analyse_factors

    annotations, predictions = waterbirds_like()
    report = analyse_factors(annotations, predictions, n_boot=0, k=5)
    assert report.by_class.groupby("class").size().to_dict() == {"landbird": 5, "waterbird": 5}
    assert report.by_class.groupby("class")["rank"].max().tolist() == [5, 5]
