"""InfoDrop as the BiasBed authors' code computes it (patch distances normalised over the whole
batch, zero padding), with the earlier per-sample / reflection behaviour as named options."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.algorithms.infodrop import InfoDropConv2d, patch_density
from shortcutlab.train.config import TrainConfig


def _image(n: int = 1, size: int = 12, seed: int = 0) -> torch.Tensor:
    """Left half flat, right half noisy."""
    g = torch.Generator().manual_seed(seed)
    x = torch.full((n, 3, size, size), 0.5)
    x[..., size // 2 :] = torch.rand(n, 3, size, size - size // 2, generator=g)
    return x


def _naive_zero_padded(x: torch.Tensor, conv: nn.Conv2d, radius: int, n_offsets: int,
                       seed: int) -> torch.Tensor:
    """The density written out position by position: zero padding by the conv's padding plus
    the radius, distances over the conv-padded frame, one mean over the whole batch."""
    offsets = torch.randint(-radius, radius + 1, (n_offsets, 2),
                            generator=torch.Generator().manual_seed(seed)).tolist()
    (k, _), (s, _), (p, _) = conv.kernel_size, conv.stride, conv.padding
    b, _, h, w = x.shape
    big = torch.zeros(b, 3, h + 2 * (p + radius), w + 2 * (p + radius), dtype=torch.float64)
    big[:, :, p + radius : p + radius + h, p + radius : p + radius + w] = x.double()
    out_h, out_w = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    d = torch.zeros(b, n_offsets, out_h, out_w, dtype=torch.float64)
    for n, (di, dj) in enumerate(offsets):
        for i in range(out_h):
            for j in range(out_w):
                for u in range(k):
                    for v in range(k):
                        r, c = radius + i * s + u, radius + j * s + v
                        diff = big[:, :, r, c] - big[:, :, r + di, c + dj]
                        d[:, n, i, j] += (diff**2).sum(dim=1)
    return torch.exp(-d / d.mean() / 2.0).mean(dim=1)


def test_default_density_is_the_reference_computation() -> None:
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
    x = torch.cat([_image(seed=0), 3.0 * _image(seed=1)])
    ours = patch_density(x, conv, radius=2, n_offsets=3,
                         generator=torch.Generator().manual_seed(5))
    expected = _naive_zero_padded(x, conv, radius=2, n_offsets=3, seed=5)
    torch.testing.assert_close(ours.double(), expected, rtol=1e-5, atol=1e-6)


def test_batch_normalisation_makes_an_images_density_depend_on_its_batch() -> None:
    conv = nn.Conv2d(3, 4, 3, padding=1)
    a, k = _image(), 3.0

    def density(x: torch.Tensor, norm: str, bandwidth: float = 1.0) -> torch.Tensor:
        return patch_density(x, conv, generator=torch.Generator().manual_seed(0),
                             distance_norm=norm, bandwidth=bandwidth)

    pair = torch.cat([a, k * a])  # the second image's distances are k^2 times the first's
    alone = density(a, "sample")
    torch.testing.assert_close(density(pair, "sample")[0], alone[0])  # independent of the batch
    in_batch = density(pair, "batch")[0]
    assert not torch.allclose(in_batch, alone[0], atol=1e-3)
    # the batch mean is (1 + k^2) / 2 times the image's own: the same as a wider bandwidth
    torch.testing.assert_close(in_batch, density(a, "sample", math.sqrt((1 + k * k) / 2))[0])
    torch.testing.assert_close(density(a, "batch"), alone)  # a batch of one: no difference
    # and so do the drop probabilities
    probs = {}
    for norm in ("batch", "sample"):
        layer = InfoDropConv2d(conv, distance_norm=norm).train()
        layer.reseed(0, 0)
        probs[norm] = layer.drop_probability(pair)[0]
    assert (probs["batch"] - probs["sample"]).abs().max() > 1e-3


def test_zero_padding_sees_the_border_and_reflection_does_not() -> None:
    conv = nn.Conv2d(3, 4, 3, padding=1)
    flat = torch.full((1, 3, 16, 16), 0.7)

    def density(padding: str) -> torch.Tensor:
        return patch_density(flat, conv, generator=torch.Generator().manual_seed(1),
                             patch_padding=padding)[0]

    reflect, zeros = density("reflect"), density("zeros")
    assert torch.equal(reflect, torch.ones_like(reflect))  # a flat image looks flat everywhere
    r = 3 + 1  # radius + the conv's reach
    assert torch.equal(zeros[r:-r, r:-r], torch.ones_like(zeros[r:-r, r:-r]))
    border = torch.ones_like(zeros, dtype=torch.bool)
    border[r:-r, r:-r] = False
    assert float(zeros[border].min()) < 0.9  # patches compared with the zero padding
    assert zeros[0, 0] < zeros[0, 8] and zeros[8, 0] < zeros[8, 8]


def test_infodrop_defaults_follow_the_reference_and_options_keep_the_earlier_behaviour() -> None:
    algo = create_algorithm("infodrop", 3, TrainConfig(algorithm="infodrop", model="small_cnn"))
    (block,) = algo.drop_layers
    assert (block.distance_norm, block.patch_padding) == ("batch", "zeros")
    hp = {"distance_norm": "sample", "patch_padding": "reflect", "placement": "conv"}
    old = create_algorithm("infodrop", 3, TrainConfig(algorithm="infodrop", model="small_cnn",
                                                      hparams=hp))
    assert {(layer.distance_norm, layer.patch_padding) for layer in old.drop_layers} == {
        ("sample", "reflect")}
    with pytest.raises(TrainError, match=r"valid choices: batch, sample") as err:
        create_algorithm("infodrop", 3, TrainConfig(algorithm="infodrop", model="small_cnn",
                                                    hparams={"distance_norm": "image"}))
    assert "\n" not in str(err.value)
    with pytest.raises(TrainError, match=r"valid choices: zeros, reflect"):
        create_algorithm("infodrop", 3, TrainConfig(algorithm="infodrop", model="small_cnn",
                                                    hparams={"patch_padding": "edge"}))


@pytest.mark.parametrize(("drop_rate", "draws"), [(0.1, 1), (1.5, 24), (1.0, 16)])
def test_the_number_of_draws_is_drop_rate_times_the_positions_rounded_down(
        drop_rate: float, draws: int) -> None:
    """The reference draws ``int(drop_rate * h * w)`` positions with replacement; a position
    of normalised weight q is then dropped with probability 1 - (1 - q)^draws. On a flat 4x4
    map (q = 1/16) with drop_rate 0.1 that is one draw, 6.25 % (1.6 draws gave 9.81 %)."""
    from shortcutlab.train.algorithms.infodrop import drop_probability

    got = drop_probability(torch.full((2, 4, 4), 0.5), drop_rate, temperature=0.03)
    torch.testing.assert_close(got, torch.full((2, 1, 4, 4), 1 - (1 - 1 / 16) ** draws))
