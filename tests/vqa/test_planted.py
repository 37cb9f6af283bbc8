"""The planted-shortcut data: nine OOD sets that are distinct populations, concepts that do not
depend on the answer, and each shortcut's prior failing on its own set only."""

import numpy as np
import pytest

from shortcutlab.errors import VQAError
from shortcutlab.vqa.concepts import SHORTCUTS, compute_concepts
from shortcutlab.vqa.planted import planted_study
from shortcutlab.vqa.synthetic import CONCEPTS, synthetic_vqa

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
