"""Statistics conventions of BiasBed's published numbers, on the paper's Table 2.

The textbook stays the default; ``df="pingouin"`` reproduces pingouin's Iman-Davenport degrees of
freedom, ``nemenyi_clip`` old scikit-posthocs' [0.001, 0.9] range, ``exclude_blocks`` / the
strict setting drops the test sets made like a competitor's training data.
"""

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import StatsError
from shortcutlab.stats import compare, friedman_test
from shortcutlab.stats.compare import strict_blocks
from shortcutlab.stats.posthoc import nemenyi_p_values
from tests.stats.test_stats_published import wide_table

IN_DISTRIBUTION = {
    "Stylized ERM": "Stylized ImageNet",
    "DAug. ERM (CAE)": "DeepAug (CAE)",
    "DAug. ERM (EDSR)": "DeepAug (EDSR)",
}
STRICT = ["Stylized ImageNet", "DeepAug (CAE)", "DeepAug (EDSR)"]


def test_textbook_is_the_default():
    result = compare(wide_table())
    assert result.df_convention == "textbook"
    assert result.p_value == pytest.approx(1.400e-6, rel=1e-3)
    strict = compare(wide_table(), exclude_blocks=STRICT)
    # At the exact F (4.9566...); 3.776e-4 is the p-value at F rounded to 4.957.
    assert strict.p_value == pytest.approx(3.7743e-4, abs=5e-9)
    assert (strict.df_num, strict.df_den) == (7, 42)


def test_pingouin_degrees_of_freedom_reproduce_the_paper():
    all_ten = compare(wide_table(), df="pingouin")
    assert all_ten.df_num == pytest.approx(7 - 2 / 10)
    assert all_ten.df_den == pytest.approx(9 * (7 - 2 / 10))
    assert all_ten.p_value == pytest.approx(1.916e-6, rel=1e-3)
    strict = compare(wide_table(), df="pingouin", exclude_blocks=STRICT)
    assert strict.F == pytest.approx(4.957, abs=1e-3)  # the paper prints 4.98 (unrounded scores)
    assert strict.p_value == pytest.approx(4.7796e-4, abs=5e-9)  # the paper prints 0.00045
    # Same F as the textbook; only the reference distribution changes.
    assert strict.F == compare(wide_table(), exclude_blocks=STRICT).F


def test_pingouin_df_is_pingouins_formula():
    scores = np.array([[1, 2, 3, 4.0], [2, 1, 3, 4], [1, 3, 2, 4], [1, 2, 4, 3], [2, 1, 4, 3]])
    res = friedman_test(scores, df="pingouin")
    n, k = scores.shape
    w = res.chi2 / (n * (k - 1))  # Kendall's W as pingouin computes it
    f = w * (n - 1) / (1 - w)
    d1 = k - 1 - 2 / n
    assert res.F == pytest.approx(f)
    assert res.p_value == pytest.approx(stats.f.sf(f, d1, (n - 1) * d1))


def test_unknown_df_convention_names_choices():
    with pytest.raises(StatsError, match="textbook, pingouin"):
        compare(wide_table(), df="scipy")


def test_nemenyi_clip_bounds_like_old_scikit_posthocs():
    exact = compare(wide_table()).nemenyi.to_numpy()
    clipped = compare(wide_table(), nemenyi_clip=True).nemenyi.to_numpy()
    off = ~np.eye(len(exact), dtype=bool)
    assert exact[off].max() > 0.9 and clipped[off].max() == 0.9
    assert clipped[off].min() >= 0.001
    np.testing.assert_array_equal(np.diag(clipped), 1.0)
    mid = off & (exact > 0.001) & (exact < 0.9)
    np.testing.assert_array_equal(clipped[mid], exact[mid])
    tiny = nemenyi_p_values([1.0, 8.0, 4.5, 4.5, 4.5, 4.5, 4.5, 4.5], 40, clip=True)
    assert tiny[0, 1] == 0.001


def test_strict_blocks_from_in_distribution_marks():
    blocks = list(wide_table()["test_set"])
    assert strict_blocks(IN_DISTRIBUTION, blocks) == STRICT
    with pytest.raises(StatsError, match="valid choices"):
        strict_blocks({"Stylized ERM": "Stylized IN"}, blocks)
    algorithms = list(wide_table().columns[1:])
    assert strict_blocks(IN_DISTRIBUTION, blocks, algorithms) == STRICT
    with pytest.raises(StatsError, match="competitor"):
        strict_blocks({"Stylised ERM": "Stylized ImageNet"}, blocks, algorithms)
    with pytest.raises(StatsError, match="block to exclude"):
        compare(wide_table(), exclude_blocks=["nope"])


def test_cli_strict_pingouin(tmp_path):
    path = tmp_path / "t2.csv"
    wide_table().to_csv(path, index=False)
    args = ["stats", "compare", str(path), "--json", "--df", "pingouin", "--strict"]
    for algo, block in IN_DISTRIBUTION.items():
        args += ["--trained-on", f"{algo}={block}"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["excluded_blocks"] == STRICT and data["n_blocks"] == 7
    assert data["df_convention"] == "pingouin"
    assert data["p_value"] == pytest.approx(4.7796e-4, abs=5e-9)
    bad = CliRunner().invoke(app, ["stats", "compare", str(path), "--strict"])
    assert bad.exit_code == 2 and "--trained-on" in bad.output
    # a misspelt competitor would drop a block for an algorithm that does not compete
    typo = CliRunner().invoke(app, ["stats", "compare", str(path), "--strict", "--trained-on",
                                    "Stylised ERM=Stylized ImageNet"])
    assert typo.exit_code == 2 and "'Stylised ERM'" in typo.output
    assert "Stylized ERM" in typo.output  # the valid choices
    # --trained-on without --strict would be ignored: refused instead
    ignored = CliRunner().invoke(app, ["stats", "compare", str(path), "--trained-on",
                                       "Stylized ERM=Stylized ImageNet"])
    assert ignored.exit_code == 2 and "--strict" in ignored.output


def test_latex_caption_rounds_pingouin_degrees_of_freedom():
    caption = compare(wide_table(), df="pingouin").to_latex()
    assert "$F(6.8, 61.2) = 7.538$" in caption and "61.1999" not in caption
