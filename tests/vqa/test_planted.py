"""The planted-shortcut data: nine OOD sets that are distinct populations, concepts that do not
depend on the answer, and each shortcut's prior failing on its own set only."""

import numpy as np
import pandas as pd
import pytest

from shortcutlab.errors import VQAError
from shortcutlab.vqa.concepts import SHORTCUTS, compute_concepts
from shortcutlab.vqa.planted import planted_study
from shortcutlab.vqa.synthetic import ANSWERS, CONCEPTS, synthetic_vqa

# its module-scoped fixtures are computed once: every test of the module on one xdist worker
pytestmark = pytest.mark.xdist_group("test_planted")

OVERLAP_BOUND = 0.05  # largest coincidence |A n B| / |A| allowed between two OOD test sets


@pytest.fixture(scope="module")
def study():
    return planted_study(per_population=1280)


def test_ood_sets_are_distinct_populations(study):
    coi = study["splits"].coincidence.to_numpy()
    off = coi[~np.eye(len(SHORTCUTS), dtype=bool)]
    assert np.nanmax(off) <= OVERLAP_BOUND
    sizes = study["splits"].statistics.set_index("shortcut")["test_tail"]
    assert (sizes >= 20).all(), sizes.to_dict()  # nine non-trivial sets
    pop = study["population"]
    for k in SHORTCUTS:  # each set is (almost) only its own population
        assert pop.loc[k, k] >= 1 - OVERLAP_BOUND, (k, pop.loc[k].to_dict())


def test_key_objects_and_keywords_do_not_depend_on_the_answer():
    """The same objects (question words) give the same key object (keyword) whatever the
    answer (in easy-VQA a yes/no question's key object was decided by its answer)."""
    t = synthetic_vqa(per_population=320)
    objects = t["objects"].map("|".join).to_numpy()
    words = t["question"].to_numpy()
    ours = compute_concepts(t, CONCEPTS)
    assert ours.groupby(objects)["KO"].nunique().max() == 1
    assert ours.groupby(objects)["KOP"].nunique().max() == 1
    assert ours.groupby(words)["KW"].nunique().max() == 1
    shared = t.groupby(objects)["answer"].nunique()
    assert (shared > 1).sum() >= 16  # object lists that come with several answers exist


def test_each_prior_fails_on_its_own_set_and_not_on_the_others(study):
    acc = study["accuracy"]
    for k in SHORTCUTS:
        own = acc.loc[f"{k} prior", k]
        others = acc.loc[f"{k} prior", [s for s in SHORTCUTS if s != k]]
        assert own == 0.0, k  # its own OOD set holds exactly the answers it does not predict
        assert others.min() >= 0.1 and others.mean() >= own + 0.15, (k, others.to_dict())
    with pytest.raises(VQAError, match="multiple of 64"):
        synthetic_vqa(per_population=100)


def _slots(t):
    """The table's five slots (question type, first and second word, first and second object);
    a slot a population does not plant holds a token of its own or is empty."""
    words = t["question"].str.rstrip("?").str.split()
    return {"qt": t["question_type"], "w1": words.str[1], "w2": words.str[2],
            "o1": t["objects"].str[0], "o2": t["objects"].str[1]}


def test_planted_cells_have_the_majority_share_and_each_slot_alone_is_balanced():
    """As the docstring of :func:`synthetic_vqa` states: in each cell of planted values
    ``round(0.8 * per_cell)`` questions have the planted answer, the rest spread evenly over
    the three other answers; a composite shortcut is a Latin square, so each of its slots
    alone is exactly balanced over the four answers (only the combination predicts)."""
    from shortcutlab.vqa.synthetic import _SLOTS

    t = synthetic_vqa(per_population=320)
    slots = _slots(t)
    for population, planted in _SLOTS.items():
        rows = t["population"] == population
        cells = t[rows].groupby([slots[s][rows] for s in planted])["answer"]
        per_cell = 320 // 4 ** len(planted)
        n_major = round(0.8 * per_cell)
        for key, answers in cells:
            counts = answers.value_counts()
            assert len(answers) == per_cell and counts.iloc[0] == n_major, (population, key)
            top = counts.index[0]
            others = counts.reindex([a for a in ANSWERS if a != top], fill_value=0)
            spread = per_cell - n_major
            assert others.sum() == spread and others.max() - others.min() <= 1, (population, key)
            assert others.min() >= spread // 3
        if len(planted) < 2:
            continue
        for s in planted:
            table = pd.crosstab(slots[s][rows], t.loc[rows, "answer"])
            assert table.shape == (4, 4) and (table == 320 // 16).all().all(), (population, s)


def test_population_shares_of_each_ood_set_are_fractions(study):
    pop = study["population"]
    assert ((pop >= 0) & (pop <= 1)).all().all()
    np.testing.assert_allclose(pop.sum(axis=1).to_numpy(), 1.0)
