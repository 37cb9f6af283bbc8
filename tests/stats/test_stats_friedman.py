import math

import numpy as np
import pytest
from scipy import stats

from shortcutlab.errors import StatsError
from shortcutlab.stats.friedman import friedman_chi2, friedman_test, iman_davenport
from shortcutlab.stats.posthoc import critical_difference


def test_matches_scipy_with_ties():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, size=(12, 5)).astype(float)  # many ties
    chi2, p = friedman_chi2(scores)
    ref = stats.friedmanchisquare(*scores.T)
    assert chi2 == pytest.approx(ref.statistic, rel=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-12)
    # Tie correction makes χ² larger than the uncorrected rank formula.
    r = stats.rankdata(scores, axis=1).mean(0)
    n, k = scores.shape
    raw = 12 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4)
    assert chi2 > raw


def test_two_algorithms_hand_computed():
    # A beats B in 4 blocks, loses in 1, ties in 1: ranks (1,2)x4, (2,1), (1.5,1.5).
    a = np.array([5, 5, 5, 5, 1, 3.0])
    b = np.array([1, 1, 1, 1, 5, 3.0])
    chi2, p = friedman_chi2(np.c_[a, b])
    # Mean ranks (over A-higher-ranked convention irrelevant): R = (10.5/6, 7.5/6) or swapped.
    raw = 12 * 6 / 6 * ((10.5 / 6) ** 2 + (7.5 / 6) ** 2 - 2 * 9 / 4)
    corrected = raw / (1 - 6 / (6 * 6))
    assert chi2 == pytest.approx(corrected)
    assert p == pytest.approx(stats.chi2.sf(corrected, 1))


def test_iman_davenport_formula_and_df():
    res = friedman_test(np.random.default_rng(0).normal(size=(9, 4)))
    n, k = 9, 4
    assert res.F == pytest.approx((n - 1) * res.chi2 / (n * (k - 1) - res.chi2))
    assert (res.df_num, res.df_den) == (3, 24)
    assert res.p_value == pytest.approx(stats.f.sf(res.F, 3, 24))


def test_perfect_agreement_gives_infinite_f():
    scores = np.tile([3.0, 2.0, 1.0], (5, 1))
    res = friedman_test(scores)
    assert res.chi2 == pytest.approx(10.0)  # N(k−1)
    assert math.isinf(res.F) and res.p_value == 0.0
    assert iman_davenport(0.0, 5, 3) == (0.0, 1.0)


def test_all_tied_blocks_mean_no_evidence():
    res = friedman_test(np.ones((4, 3)))
    assert (res.chi2, res.chi2_p_value, res.F, res.p_value) == (0.0, 1.0, 0.0, 1.0)


@pytest.mark.parametrize(
    ("alpha", "q_table"),
    [
        # Demšar (2006), Table 5: q_α for k = 2..10 (studentized range / √2, ∞ df).
        (0.05, [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]),
        (0.10, [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920]),
    ],
)
def test_critical_difference_matches_demsar_table(alpha, q_table):
    for k, q in zip(range(2, 11), q_table, strict=True):
        cd = critical_difference(k, 14, alpha)
        assert cd / math.sqrt(k * (k + 1) / (6 * 14)) == pytest.approx(q, abs=1e-3)


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (np.ones((5, 1)), "need at least 2 algorithms to compare, got 1"),
        (np.ones((1, 4)), r"need at least 2 blocks \(data sets\) to compare, got 1"),
        (np.array([[1.0, np.nan], [2.0, 3.0]]),
         r"1 NaN/inf value\(s\), e.g. at \(block 0, algorithm 1\)"),
        (np.ones(4), r"must be 2-D \(blocks × algorithms\), got shape \(4,\)"),
    ],
)
def test_bad_matrices(scores, message):
    with pytest.raises(StatsError, match=message):
        friedman_test(scores)


def test_unknown_df_convention_names_the_choices():
    with pytest.raises(StatsError, match="convention 'scipy'; valid choices: textbook, pingouin"):
        friedman_test(np.arange(12.0).reshape(4, 3), df="scipy")
