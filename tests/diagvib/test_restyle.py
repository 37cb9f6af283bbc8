"""DiagViB-6 restyling (diagvib/restyle.py): the style classes drawn per image, and the former
``hue`` / ``texture_pool`` hyper-parameters mapped to today's ``style`` without silently
changing what is asked for."""

from __future__ import annotations

import numpy as np
import pytest

from shortcutlab.diagvib.restyle import random_style_classes, style_hparams
from shortcutlab.errors import TrainError


def test_each_image_draws_its_own_style_class_uniformly_from_the_pool() -> None:
    """Stylized training redraws the texture of every image independently: over 3,000 rows
    each of the pool's 3 classes comes about a third of the time (binomial sd 0.009) and
    neighbouring rows differ often; the other columns are left as they are."""
    classes = np.tile(np.arange(6), (3000, 1))
    pool = np.array([4, 7, 9])
    out = random_style_classes(classes, {5: pool}, np.random.default_rng(0))
    assert np.array_equal(out[:, :5], classes[:, :5])
    shares = np.bincount(out[:, 5], minlength=10)[pool] / len(out)
    assert np.allclose(shares, 1 / 3, atol=0.04)
    assert (out[1:, 5] != out[:-1, 5]).mean() == pytest.approx(2 / 3, abs=0.05)
    assert np.array_equal(classes[:, 5], np.full(3000, 5))  # the input is not modified


def test_legacy_hue_with_another_style_is_refused_not_overridden() -> None:
    """hue=true means style texture+hue; with an explicit style=texture the two disagree, and
    neither may silently win."""
    with pytest.raises(TrainError, match="give hue=true or style, not both"):
        style_hparams("stylized", {"hue": True, "style": "texture"})
    with pytest.raises(TrainError, match="give hue=true or style, not both"):
        style_hparams("debiased", {"hue": True, "style": "texture+lightness"})
    assert style_hparams("stylized", {"hue": True, "style": "texture+hue"}) == {
        "style": "texture+hue"}
    assert style_hparams("debiased", {"hue": False, "style": "texture"}) == {"style": "texture"}
