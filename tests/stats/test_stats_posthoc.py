import numpy as np
import pytest
import scikit_posthocs as sp
from matplotlib.figure import Figure

from shortcutlab.errors import StatsError
from shortcutlab.stats.posthoc import (
    cd_cliques,
    cd_diagram,
    critical_difference,
    mean_ranks,
    nemenyi_p_values,
)


def test_mean_ranks_direction_and_ties():
    scores = np.array([[0.9, 0.5, 0.5], [0.8, 0.9, 0.1]])
    assert mean_ranks(scores).tolist() == [1.5, 1.75, 2.75]  # (1, 2.5, 2.5) and (2, 1, 3)
    assert mean_ranks(scores, lower_is_better=True).tolist() == [2.5, 2.25, 1.25]


def test_nemenyi_matches_scikit_posthocs_and_is_not_clipped():
    rng = np.random.default_rng(7)
    scores = rng.normal(size=(25, 6)) + np.linspace(0, 2.5, 6)  # strong differences
    ours = nemenyi_p_values(mean_ranks(scores), n_blocks=25)
    ref = sp.posthoc_nemenyi_friedman(scores).to_numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(ours, ours.T)
    assert np.all(np.diag(ours) == 1.0)
    off = ours[~np.eye(6, dtype=bool)]
    assert off.min() < 1e-4  # exact tail, not clipped at 0.001 like printed tables
    assert 0.9 < off.max() < 1.0


def test_nemenyi_p_equals_alpha_at_the_critical_difference():
    k, n = 5, 12
    cd = critical_difference(k, n, 0.05)
    p = nemenyi_p_values([1.0, 1.0 + cd, 3.0, 4.0, 5.0], n)
    assert p[0, 1] == pytest.approx(0.05, abs=1e-6)


def test_cliques_are_maximal_groups_within_cd():
    ranks = {"a": 1.0, "b": 1.5, "c": 2.4, "d": 3.6, "e": 3.8}
    assert cd_cliques(ranks, 1.5) == [["a", "b", "c"], ["c", "d", "e"]]
    assert cd_cliques(ranks, 0.1) == []
    assert cd_cliques(ranks, 10.0) == [["a", "b", "c", "d", "e"]]


def test_cd_diagram_draws_names_ranks_and_cd():
    ranks = {"ERM": 2.1, "SagNet": 1.4, "pAdaIN": 2.5}
    fig = cd_diagram(ranks, 0.9, title="demo")
    assert isinstance(fig, Figure)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for name in ranks:
        assert name in texts
    assert "CD = 0.900" in texts and "SagNet (1.40)" in texts
    # one thick clique bar: SagNet..pAdaIN spans 1.1 > 0.9, so two overlapping cliques
    thick = [ln for ln in fig.axes[0].lines if ln.get_linewidth() > 3]
    assert len(thick) == len(cd_cliques(ranks, 0.9)) == 2


def test_bad_alpha_and_sizes():
    with pytest.raises(StatsError, match="alpha"):
        critical_difference(4, 10, 1.5)
    with pytest.raises(StatsError, match="alpha must lie strictly between 0 and 1"):
        critical_difference(4, 10, 0.0)
    with pytest.raises(StatsError, match="needs ≥2 algorithms and ≥1 block, got k=1, N=10"):
        critical_difference(1, 10)
    with pytest.raises(StatsError, match="needs ≥2 algorithms and ≥1 block, got k=4, N=0"):
        critical_difference(4, 0)
    with pytest.raises(StatsError, match=r"a CD diagram needs ≥2 algorithms, got 1"):
        cd_diagram({"a": 1.0}, 1.0)
    with pytest.raises(StatsError, match="Nemenyi needs ≥2 algorithms and ≥1 block, got k=1"):
        nemenyi_p_values([1.0], 5)
    with pytest.raises(StatsError, match="got k=2, N=0"):
        nemenyi_p_values([1.0, 2.0], 0)
    with pytest.raises(StatsError, match="Nemenyi method 'psturng'.*exact, table"):
        nemenyi_p_values([1.0, 2.0], 5, method="psturng")


def test_a_rank_difference_of_exactly_cd_is_significant():
    """Demšar: two algorithms differ when their ranks differ by at least CD, so a clique holds
    only differences below CD (the boundary decides whether a bar joins them)."""
    ranks = {"a": 1.0, "b": 2.0, "c": 3.5}
    assert cd_cliques(ranks, 1.0) == []
    assert cd_cliques(ranks, 1.0 + 1e-9) == [["a", "b"]]
    assert cd_cliques(ranks, 1.5) == [["a", "b"]]
    assert cd_cliques(ranks, 2.5) == [["a", "b"], ["b", "c"]]  # a-c = 2.5: significant
    assert cd_cliques(ranks, 2.6) == [["a", "b", "c"]]
