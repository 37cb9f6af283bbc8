"""The published check: BiasBed Table 2 means give χ² = 31.906, F = 7.538, CD(0.05) = 3.320."""

import numpy as np
import pandas as pd
import pytest

from shortcutlab.stats import compare, critical_difference, friedman_test, mean_ranks
from tests.stats.biasbed_table2 import ALGORITHMS, ROWS, TEST_SETS


def wide_table() -> pd.DataFrame:
    df = pd.DataFrame(np.array(ROWS).T, columns=ALGORITHMS)
    df.insert(0, "test_set", TEST_SETS)
    return df


def test_table2_textbook_statistics():
    result = compare(wide_table(), alpha=0.05)
    assert round(result.chi2, 3) == 31.906
    assert round(result.F, 3) == 7.538
    assert round(result.critical_difference, 3) == 3.320
    assert (result.df_num, result.df_den) == (7, 63)
    assert result.p_value < 1e-5 and result.significant


def test_table2_functional_forms_agree():
    scores = np.array(ROWS).T  # blocks × algorithms
    omnibus = friedman_test(scores)
    assert omnibus.chi2 == pytest.approx(31.9056, abs=1e-4)
    assert critical_difference(8, 10, 0.05) == pytest.approx(3.3202, abs=1e-4)
    # Mean ranks, 1 = best (higher accuracy): ties on ImageNet-A / DeepAug (CAE) averaged.
    ranks = dict(zip(ALGORITHMS, mean_ranks(scores), strict=True))
    assert ranks["DAug. ERM (CAE)"] == pytest.approx(2.20)
    assert ranks["Debiased"] == pytest.approx(2.70)
    assert ranks["ERM"] == pytest.approx(5.45)
    assert ranks["pAdaIN"] == pytest.approx(6.50)
    assert sum(ranks.values()) == pytest.approx(8 * 9 / 2)


def test_table2_nemenyi_pairs():
    result = compare(wide_table())
    # |R_CAE − R_pAdaIN| = 4.3 > CD: significant; Debiased vs ERM (2.75 < CD): not.
    assert result.nemenyi.loc["DAug. ERM (CAE)", "pAdaIN"] < 0.05
    assert result.nemenyi.loc["Debiased", "ERM"] > 0.05
    assert result.nemenyi.loc["ERM", "DAug. ERM (CAE)"] > 0.05  # the paper's conclusion
