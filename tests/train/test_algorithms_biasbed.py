"""BiasBed algorithms: pAdaIN, InfoDrop, SagNet, Stylized and Debiased.

Each algorithm is trained for a few steps on tiny inputs, and its defining mechanism is checked
directly (statistics really swapped, low-information patches really dropped more, ...).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import default_collate

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.algorithms.infodrop import InfoDropConv2d, patch_density, wrap_convs
from shortcutlab.train.algorithms.padain import PermutedAdaIN, feature_modules, instance_moments
from shortcutlab.train.algorithms.sagnet import content_randomize, style_randomize
from shortcutlab.train.algorithms.stylized import debiased_targets
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import create_model
from tests.biasbed.adain_pair import write_adain_pair


def _batch(n: int = 12, size: int = 32, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        "x": torch.rand(n, 3, size, size, generator=gen),
        "y": torch.randint(0, 3, (n,), generator=gen),
    }


def _train(name: str, steps: int = 3, **hparams: object):
    cfg = TrainConfig(algorithm=name, model="small_cnn", hparams=hparams, seed=1)
    torch.manual_seed(0)
    algo = create_algorithm(name, 3, cfg)
    before = {k: v.clone() for k, v in algo.state_dict().items()}
    algo.train()
    batch = _batch()
    outs = []
    for step in range(steps):
        algo.step = step
        outs.append(algo.update(batch))
    return algo, before, outs


def _finite(loss: object) -> bool:
    """Whether a loss (a float, or a 0-d tensor on any device) is finite; ``np.isfinite`` fails
    on a CUDA tensor, which an ``update`` may return without a host sync."""
    value = loss.item() if isinstance(loss, torch.Tensor) else loss
    return bool(np.isfinite(value))


def _changed(algo: nn.Module, before: dict[str, torch.Tensor], prefix: str) -> bool:
    return any(
        not torch.equal(v, before[k])
        for k, v in algo.state_dict().items()
        if k.startswith(prefix) and v.is_floating_point()
    )


# ------------------------------------------------------------------------------------ pAdaIN
def _match_donors(y: torch.Tensor, x: torch.Tensor) -> list[int]:
    """For each sample of y, the sample of x whose channel statistics it carries."""
    ym, ys = instance_moments(y)
    xm, xs = instance_moments(x)
    ystat = torch.cat([ym, ys], 1).flatten(1)
    xstat = torch.cat([xm, xs], 1).flatten(1)
    dist = torch.cdist(ystat, xstat)
    assert float(dist.min(dim=1).values.max()) < 1e-3
    return dist.argmin(dim=1).tolist()


def test_padain_layer_swaps_statistics_keeps_content() -> None:
    x = torch.randn(8, 5, 6, 6) * torch.linspace(0.5, 3, 8).view(8, 1, 1, 1) + torch.arange(
        8.0
    ).view(8, 1, 1, 1)
    layer = PermutedAdaIN(p=1.0).train()
    layer.reseed(0, 0)
    y = layer(x)
    donors = _match_donors(y, x)
    assert sorted(donors) == list(range(8))  # a permutation of the batch
    assert donors != list(range(8))  # and not the identity
    # each sample keeps its own normalised content
    xm, xs = instance_moments(x)
    ym, ys = instance_moments(y)
    torch.testing.assert_close((y - ym) / ys, (x - xm) / xs, atol=1e-4, rtol=1e-4)
    # same seed and step: same permutation; evaluation and p=0: identity
    layer.reseed(0, 0)
    assert torch.equal(layer(x), y)
    assert torch.equal(layer.eval()(x), x)
    assert torch.equal(PermutedAdaIN(p=0.0).train()(x), x)


def test_padain_probability_is_respected() -> None:
    x = torch.randn(4, 2, 5, 5)
    layer = PermutedAdaIN(p=0.3).train()
    swapped = 0
    for step in range(200):
        layer.reseed(3, step)
        swapped += int(not torch.equal(layer(x), x))
    assert 35 <= swapped <= 85  # ~60 expected (identity permutations are rare for 4! = 24)


def test_padain_algorithm_trains_and_hooks_stages_option() -> None:
    algo, before, outs = _train("padain", p=1.0, placement="stages")
    assert algo.layer_names == ["features.2", "features.3", "features.4"]
    assert all(_finite(o["loss"]) for o in outs)
    assert _changed(algo, before, "network.")
    # hooks are live in training (p=1 changes the output) and inert in evaluation
    x = _batch()["x"]
    algo.eval()
    plain = algo.predict(x)
    for layer in algo.swap_layers:
        layer.reseed(0, 0)
    algo.train()
    algo.network.eval()  # BatchNorm in eval, swap layers still training
    assert not torch.allclose(algo.network(x), plain)
    with pytest.raises(TrainError, match="unknown module name 'nope'"):
        create_algorithm("padain", 3, TrainConfig(algorithm="padain", hparams={"layers": "nope"}))
    with pytest.raises(TrainError, match="p must be in"):
        _train("padain", p=1.5)


def test_feature_modules_for_resnet() -> None:
    with torch.device("meta"):
        model = create_model("resnet18", 3)
    assert feature_modules(model) == ["layer1", "layer2", "layer3"]


# ---------------------------------------------------------------------------------- InfoDrop
def _half_textured(n: int = 2, size: int = 32) -> torch.Tensor:
    img = torch.full((n, 3, size, size), 0.5)
    img[:, :, :, size // 2 :] = torch.rand(
        n, 3, size, size // 2, generator=torch.Generator().manual_seed(0)
    )
    return img


def test_infodrop_drops_low_information_patches_more() -> None:
    img = _half_textured()
    conv = nn.Conv2d(3, 8, 3, padding=1)
    layer = InfoDropConv2d(conv).train()
    layer.reseed(0, 0)
    density = patch_density(img, conv, generator=torch.Generator().manual_seed(0))
    assert float(density[:, :, :14].mean()) > 0.9 > 0.6 > float(density[:, :, 18:].mean())
    out, ref = layer(img), conv(img)
    dropped = (out == 0) & (ref != 0)
    flat, textured = dropped[..., :14].float().mean(), dropped[..., 18:].float().mean()
    assert flat > 0.5 and textured < 0.05
    layer.reseed(0, 0)
    assert torch.equal(layer(img), out)  # reproducible from (seed, step)
    assert torch.equal(layer.eval()(img), ref)  # identity in evaluation
    # the temperature controls how strongly the density concentrates the drops
    soft = InfoDropConv2d(conv, temperature=10.0).train()
    soft.reseed(0, 0)
    p_soft = soft.drop_probability(img)
    assert float(p_soft[..., 18:].mean()) > float(layer.drop_probability(img)[..., 18:].mean())


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
        ),
    ],
)
def test_infodrop_algorithm_trains_on_device(device: str) -> None:
    hp = {"layers": 2, "placement": "conv"}
    cfg = TrainConfig(algorithm="infodrop", model="small_cnn", hparams=hp)
    torch.manual_seed(0)
    algo = create_algorithm("infodrop", 3, cfg).to(device).train()
    assert len(algo.drop_layers) == 2
    assert isinstance(algo.network.features[0], InfoDropConv2d)
    batch = {k: v.to(device) for k, v in _batch().items()}
    before = algo.network.features[0].conv.weight.detach().clone()
    for step in range(2):
        algo.step = step
        out = algo.update(batch)
    assert _finite(out["loss"])
    assert not torch.equal(algo.network.features[0].conv.weight, before)
    assert algo.predict(batch["x"]).shape == (12, 3)


def test_infodrop_rejects_bad_layer_count() -> None:
    with pytest.raises(TrainError, match=r"n_layers must be in 1\.\.4"):
        wrap_convs(create_model("small_cnn", 3), 9)


# ------------------------------------------------------------------------------------ SagNet
def test_sagnet_randomisations() -> None:
    x = torch.randn(6, 4, 5, 5) * 2 + torch.arange(6.0).view(6, 1, 1, 1)
    perm = torch.tensor([1, 2, 3, 4, 5, 0])
    xm, xs = instance_moments(x)
    # alpha = 0: the donor's statistics; alpha = 1: unchanged
    ym, ys = instance_moments(style_randomize(x, perm, torch.zeros(6)))
    torch.testing.assert_close(ym, xm[perm], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ys, xs[perm], atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(style_randomize(x, perm, torch.ones(6)), x, atol=1e-4, rtol=1e-4)
    # alpha = 0.5 interpolates the means
    ym, _ = instance_moments(style_randomize(x, perm, torch.full((6,), 0.5)))
    torch.testing.assert_close(ym, (xm + xm[perm]) / 2, atol=1e-4, rtol=1e-4)
    # content randomisation: own statistics, the donor's normalised content
    c = content_randomize(x, perm)
    cm, cs = instance_moments(c)
    torch.testing.assert_close(cm, xm, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close((c - cm) / cs, ((x - xm) / xs)[perm], atol=1e-3, rtol=1e-3)


def test_sagnet_trains_three_parts() -> None:
    algo, before, outs = _train("sagnet")
    assert {"loss", "loss_style", "loss_adv"} <= set(outs[-1])
    for part in ("featurizer.", "content_head.", "style_head."):
        assert _changed(algo, before, part), part
    # the style head is a separately initialised copy of the content head
    w_c = algo.content_head[1].weight
    w_s = algo.style_head[1].weight
    assert w_c.shape == w_s.shape and not torch.equal(w_c, w_s)
    x = _batch()["x"]
    algo.eval()
    torch.testing.assert_close(algo.predict(x), algo.content_head(algo.featurizer(x)))
    # reproducible: same seed, same steps, same numbers
    algo2, _, outs2 = _train("sagnet")
    assert outs2 == outs


def test_sagnet_splits_resnet_and_rejects_unknown_models() -> None:
    from shortcutlab.train.algorithms.sagnet import split_for_sagnet

    model = create_model("resnet18", 3)
    f, h = split_for_sagnet(model)
    x = torch.rand(2, 3, 32, 32)
    model.eval()
    torch.testing.assert_close(h(f(x)), model(x))
    with pytest.raises(TrainError, match="supported: torchvision ResNets and small_cnn"):
        split_for_sagnet(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(3)))


# ------------------------------------------------------------------- Stylized / Debiased parts
def test_debiased_targets_interpolate_labels() -> None:
    y = torch.tensor([0, 1, 2])
    donor = torch.tensor([1, 1, 0])
    t = debiased_targets(y, donor, 3, gamma=0.8)
    expected = torch.tensor([[0.8, 0.2, 0.0], [0.0, 1.0, 0.0], [0.2, 0.0, 0.8]])
    torch.testing.assert_close(t, expected)
    with pytest.raises(TrainError, match="gamma must be in"):
        debiased_targets(y, donor, 3, gamma=1.2)


def test_donor_style_classes_copies_only_style_columns() -> None:
    from shortcutlab.diagvib.restyle import donor_style_classes

    classes = np.arange(18).reshape(3, 6)
    out = donor_style_classes(classes, np.array([2, 0, 1]), (5,))
    assert out[:, 5].tolist() == [17, 5, 11]
    assert np.array_equal(out[:, :5], classes[:, :5])


# --------------------------------------------------------- Stylized / Debiased on DiagViB-6
@pytest.fixture(scope="module")
def diagvib_train():
    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.studies import make_experiment

    spec = make_experiment("ZGO/shape-texture/0", scale=0.002)
    ds = DiagvibDataset(spec, "train")
    items = ds.__getitems__(list(range(10)))
    batch = default_collate(items)  # as the trainer's DataLoader batches them
    return ds, batch


def _context(ds):
    from shortcutlab.train.algorithms.base import AlgorithmContext

    return AlgorithmContext(train_dataset=ds)


def _render(ds, classes: np.ndarray, index: torch.Tensor) -> torch.Tensor:
    images = ds.generator.render(classes, seed=ds.render_seed, split="train", indices=index.numpy())
    return torch.as_tensor(np.asarray(images)).float() / 255


def test_stylized_changes_texture_only_and_keeps_labels(diagvib_train) -> None:
    from shortcutlab.diagvib.factors import FACTORS
    from shortcutlab.train.capabilities import Restylable

    ds, batch = diagvib_train
    tex = FACTORS.index("texture")
    # a DiagViB-6 set offers the capability; unchanged rows reproduce its images exactly
    assert isinstance(ds, Restylable)
    restyler = ds.restyler()
    torch.testing.assert_close(restyler.render(restyler.rows(batch), batch), batch["x"])
    cfg = TrainConfig(algorithm="stylized", seed=2)
    torch.manual_seed(0)
    algo = create_algorithm("stylized", 3, cfg, _context(ds)).train()
    algo.step = 4
    x, classes = algo.stylize(batch)
    old = batch["classes"].numpy()
    changed = classes[:, tex] != old[:, tex]
    assert changed.any()
    assert np.array_equal(np.delete(classes, tex, 1), np.delete(old, tex, 1))
    selected = set(ds.spec.class_indices()[tex].tolist())
    assert set(classes[:, tex].tolist()) <= selected
    torch.testing.assert_close(x, _render(ds, classes, batch["index"]))
    differs = (x - batch["x"]).flatten(1).abs().amax(1) > 0
    assert torch.equal(differs, torch.from_numpy(changed))
    # with input normalisation, re-rendered images are normalised like the batch they join
    from shortcutlab.train.normalization import ChannelStats

    algo.input_norm.set_stats(ChannelStats((0.4, 0.5, 0.6), (0.2, 0.3, 0.4), "train"))
    x_n, classes_n = algo.stylize({**batch, "x": algo.input_norm(batch["x"])})
    torch.testing.assert_close(x_n, algo.input_norm(_render(ds, classes_n, batch["index"])))
    algo.input_norm.set_stats(ChannelStats.identity())
    # the loss is the cross entropy of the stylised images with the ORIGINAL labels
    expected = torch.nn.functional.cross_entropy(algo.network(x), batch["y"])
    out = algo.update(batch)
    assert out["loss"] == pytest.approx(float(expected.detach()), rel=1e-5)
    # with the style texture+hue (the former hue=True) the hue class is randomised too
    algo_h = create_algorithm(
        "stylized", 3, TrainConfig(algorithm="stylized", hparams={"style": "texture+hue"}),
        _context(ds),
    )
    _, classes_h = algo_h.stylize(batch)
    assert (classes_h[:, FACTORS.index("hue")] != old[:, FACTORS.index("hue")]).any()
    keep = [FACTORS.index(f) for f in FACTORS if f not in ("hue", "texture")]
    assert np.array_equal(classes_h[:, keep], old[:, keep])


def test_debiased_interpolates_labels_with_the_texture_donor(diagvib_train) -> None:
    from shortcutlab.diagvib.factors import FACTORS

    ds, batch = diagvib_train
    tex = FACTORS.index("texture")
    cfg = TrainConfig(algorithm="debiased", hparams={"mix": "replace"})
    algo = create_algorithm("debiased", 3, cfg, _context(ds))
    algo.train()
    algo.step = 1
    x, targets, classes = algo.stylize(batch)
    perm = torch.randperm(10, generator=algo.generator("debiased-donor"))
    old = batch["classes"].numpy()
    assert np.array_equal(classes[:, tex], old[perm.numpy(), tex])
    assert np.array_equal(np.delete(classes, tex, 1), np.delete(old, tex, 1))
    torch.testing.assert_close(targets, debiased_targets(batch["y"], batch["y"][perm], 3, 0.8))
    torch.testing.assert_close(x, _render(ds, classes, batch["index"]))
    # ZGO training couples shape and texture: the donor's label is what its texture says
    assert (targets.max(1).values < 1).any()
    out = algo.update(batch)
    assert _finite(out["loss"])


def test_stylized_refuses_texture_prediction_and_image_folders() -> None:
    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.studies import make_experiment

    spec = make_experiment("ZGO/texture-shape/0", scale=0.002)
    ctx = _context(DiagvibDataset(spec, "train"))
    for name in ("stylized", "debiased"):
        with pytest.raises(TrainError, match="predicts 'texture'"):
            create_algorithm(name, 3, TrainConfig(algorithm=name), ctx)
    spec = make_experiment("ZGO/hue-shape/0", scale=0.002)
    ctx = _context(DiagvibDataset(spec, "train"))
    create_algorithm("stylized", 3, TrainConfig(algorithm="stylized"), ctx)  # texture only: fine
    with pytest.raises(TrainError, match="predicts 'hue'.*a style without hue"):
        create_algorithm("stylized", 3,
                         TrainConfig(algorithm="stylized", hparams={"style": "texture+hue"}), ctx)
    with pytest.raises(TrainError, match="unknown style factor 'colour'"):
        create_algorithm("stylized", 3,
                         TrainConfig(algorithm="stylized", hparams={"style": "colour"}), ctx)
    with pytest.raises(TrainError, match="needs a training set that re-renders"):
        create_algorithm("stylized", 3, TrainConfig(algorithm="stylized"))


# ------------------------------------------- Stylized / Debiased on image folders (AdaIN)
@pytest.fixture(scope="module")
def adain_weights(tmp_path_factory: pytest.TempPathFactory):
    from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer

    torch.manual_seed(0)
    net = AdaINStyleTransfer()
    for m in net.decoder.modules():  # a decoder that keeps values in a visible range
        if isinstance(m, nn.Conv2d):
            nn.init.normal_(m.weight, std=0.02)
            nn.init.constant_(m.bias, 0.5 if m.out_channels == 3 else 0.0)
    path = tmp_path_factory.mktemp("adain") / "adain.pth"
    torch.save(net.state_dict(), path)
    return path


def test_image_folder_stylized_and_debiased_use_local_adain_weights(adain_weights) -> None:
    batch = _batch(n=6, size=32)
    hp = {"style_weights": str(adain_weights)}
    sty = create_algorithm("stylized", 3, TrainConfig(algorithm="stylized", hparams=hp)).train()
    assert sty.transfer is not None and not sty.transfer.training  # frozen, always eval
    x, classes = sty.stylize(batch)
    assert classes is None and x.shape == batch["x"].shape
    assert 0.0 <= float(x.min()) and float(x.max()) <= 1.0
    assert not torch.allclose(x, batch["x"])
    frozen = {k: v.clone() for k, v in sty.transfer.state_dict().items()}
    assert _finite(sty.update(batch)["loss"])
    assert all(torch.equal(v, frozen[k]) for k, v in sty.transfer.state_dict().items())
    hp_replace = {**hp, "mix": "replace"}
    deb = create_algorithm("debiased", 3, TrainConfig(algorithm="debiased", hparams=hp_replace))
    deb.train()
    deb.step = 3
    _, targets, _ = deb.stylize(batch)
    perm = torch.randperm(6, generator=deb.generator("debiased-donor"))
    torch.testing.assert_close(targets, debiased_targets(batch["y"], batch["y"][perm], 3))


def test_adain_weights_must_be_local_and_fit(tmp_path) -> None:
    from shortcutlab.errors import DataNotFoundError

    missing = {"style_weights": str(tmp_path / "none.pth")}
    with pytest.raises(DataNotFoundError, match="local pretrained weights file"):
        create_algorithm("stylized", 3, TrainConfig(algorithm="stylized", hparams=missing))
    bad = tmp_path / "bad.pth"
    torch.save({"decoder.0.weight": torch.zeros(1)}, bad)
    with pytest.raises(TrainError, match="do not fit the AdaIN network"):
        create_algorithm(
            "debiased", 3, TrainConfig(algorithm="debiased", hparams={"style_weights": str(bad)})
        )


def test_sagnet_with_frozen_backbone_trains_only_heads() -> None:
    cfg = TrainConfig(algorithm="sagnet", model="small_cnn", freeze_backbone=True,
                      hparams={"step": "sequential"}, frozen_batchnorm="eval")
    algo = create_algorithm("sagnet", 3, cfg).train()
    assert algo.opt_f is None
    before = {k: v.clone() for k, v in algo.state_dict().items()}
    out = algo.update(_batch())
    assert _finite(out["loss"])
    assert not _changed(algo, before, "featurizer.")  # weights and BatchNorm statistics
    assert _changed(algo, before, "content_head.1.")


# ------------------------------------------------- issue 17: the reference implementations
def test_padain_sits_before_every_conv_batchnorm_like_the_reference() -> None:
    from shortcutlab.train.algorithms.padain import pre_batchnorm_modules

    with torch.device("meta"):
        rn50 = create_model("resnet50", 3)
    names = pre_batchnorm_modules(rn50)
    assert len(names) == 49  # stem + 16 bottlenecks x 3; shortcut projections excluded
    assert "bn1" in names and not any("downsample" in n for n in names)
    algo, _, _ = _train("padain", steps=1, p=1.0)
    assert algo.layer_names == ["features.1", "features.3.1", "features.4.1", "features.5.1"]
    # every conv -> BN pair swapped once in the one training step (p = 1)
    assert [layer.swaps for layer in algo.swap_layers] == [1, 1, 1, 1]


def test_padain_detaches_the_donor_statistics() -> None:
    x = torch.randn(4, 3, 5, 5, requires_grad=True)
    weights = torch.arange(25.0).view(5, 5)
    for detach, donor_grad in ((True, False), (False, True)):
        layer = PermutedAdaIN(p=1.0, detach=detach).train()
        layer.reseed(0, 0)
        y = layer(x)
        donors = _match_donors(y.detach(), x.detach())
        i = next(j for j, d in enumerate(donors) if d != j)  # a sample with another donor
        (grad,) = torch.autograd.grad((y[i] * weights).sum(), x)
        assert bool(grad[donors[i]].abs().sum() > 0) is donor_grad
        assert grad[i].abs().sum() > 0  # the sample's own content always gets gradient


def test_sagnet_randomises_before_layer3_and_adversary_moves_only_batchnorms() -> None:
    from shortcutlab.train.algorithms.sagnet import batchnorm_parameters, split_for_sagnet

    with torch.device("meta"):
        model = create_model("resnet18", 3)
    featurizer, head = split_for_sagnet(model)
    assert featurizer[-1] is model.layer2 and head[0] is model.layer3
    algo = create_algorithm(
        "sagnet", 3, TrainConfig(algorithm="sagnet", seed=1, hparams={"step": "sequential"})
    ).train()
    bn_ids = {id(p) for p in batchnorm_parameters(algo.featurizer)}
    assert {id(p) for p in algo.adv_params} == bn_ids and bn_ids
    algo.opt_f.step = lambda *a, **k: None  # freeze the content step: only the adversary moves f
    before = {n: p.detach().clone() for n, p in algo.featurizer.named_parameters()}
    algo.update(_batch())
    moved = {n for n, p in algo.featurizer.named_parameters() if not torch.equal(p, before[n])}
    assert moved and moved <= {n for n, p in algo.featurizer.named_parameters() if id(p) in bn_ids}
    everything = create_algorithm(
        "sagnet", 3, TrainConfig(algorithm="sagnet", hparams={"adv_params": "all"})
    )
    assert len(everything.adv_params) == len(list(everything.featurizer.parameters()))


def test_infodrop_dropped_positions_are_zero_after_the_stem_block() -> None:
    cfg = TrainConfig(algorithm="infodrop", model="resnet18", seed=3)
    torch.manual_seed(0)
    algo = create_algorithm("infodrop", 3, cfg)
    (block,) = algo.drop_layers
    assert block.pool is algo.network.maxpool  # min-pooled to the max-pool's output
    captured: list[torch.Tensor] = []
    algo.network.maxpool.register_forward_hook(lambda _m, _i, out: captured.append(out))
    x = _half_textured(n=2, size=64)
    algo.eval()  # BatchNorm statistics fixed; the reference keeps dropping at test time
    block.reseed(0, 0)
    algo.predict(x)
    block.drop_rate = 0.0
    algo.predict(x)
    dropped, ref = captured[0], captured[1]
    zeroed = (dropped == 0) & (ref != 0)
    assert zeroed.float().mean() > 0.05  # some positions dropped ...
    assert float(dropped[zeroed].detach().abs().max()) == 0.0  # ... exactly zero after the block
    kept = ~zeroed
    torch.testing.assert_close(dropped[kept], ref[kept])
    # low-information (flat) half is dropped more than the textured half
    assert zeroed[..., :7].float().mean() > zeroed[..., 9:].float().mean()
    off = create_algorithm(
        "infodrop", 3, TrainConfig(algorithm="infodrop", model="resnet18",
                                   hparams={"eval_drop": False})
    ).eval()
    torch.testing.assert_close(off.predict(x), off.predict(x))


def test_debiased_batches_hold_clean_and_stylised_halves(diagvib_train) -> None:
    from shortcutlab.train.algorithms.stylized import DualBatchNorm2d

    ds, batch = diagvib_train
    cfg = TrainConfig(algorithm="debiased", hparams={"labels": "paper"})
    algo = create_algorithm("debiased", 3, cfg, _context(ds))
    assert algo.hparams["alpha"] == 0.5 and algo.hparams["mix"] == "pair"
    algo.train()
    algo.step = 2
    x, targets, classes = algo.stylize(batch)
    n = len(batch["y"])
    assert x.shape[0] == 2 * n
    torch.testing.assert_close(x[:n], batch["x"])  # the clean half
    torch.testing.assert_close(x[n:], _render(ds, classes[n:], batch["index"]))  # stylised
    torch.testing.assert_close(targets[:n], torch.eye(3)[batch["y"]])
    perm = torch.randperm(n, generator=algo.generator("debiased-donor"))
    torch.testing.assert_close(targets[n:], debiased_targets(batch["y"], batch["y"][perm], 3))
    duals = [m for m in algo.network.modules() if isinstance(m, DualBatchNorm2d)]
    assert duals and len(duals) == len(algo.dual_bns)
    first = duals[0]
    main0, aux0 = first.main.running_mean.clone(), first.aux.running_mean.clone()
    assert _finite(algo.update(batch)["loss"])
    assert not torch.equal(first.main.running_mean, main0)
    assert not torch.equal(first.aux.running_mean, aux0)
    assert not torch.equal(first.main.running_mean, first.aux.running_mean)  # separate halves
    assert all(bn.split is None for bn in duals)


def test_standard_adain_weight_pair_loads_from_local_files(tmp_path) -> None:
    vgg, dec = write_adain_pair(tmp_path)
    state = torch.load(vgg, weights_only=True)
    assert "0.weight" in state and "2.weight" in state and "51.weight" in state
    hp = {"vgg_weights": str(vgg), "decoder_weights": str(dec)}
    sty = create_algorithm("stylized", 3, TrainConfig(algorithm="stylized", hparams=hp)).train()
    assert sty.transfer.layout == "adain"
    torch.testing.assert_close(sty.transfer.encoder[2].weight, state["2.weight"])
    torch.testing.assert_close(sty.transfer.encoder[29].weight, state["29.weight"])  # relu4_1 conv
    batch = _batch(n=4, size=32)
    x, _ = sty.stylize(batch)
    assert x.shape == batch["x"].shape and not torch.allclose(x, batch["x"])
    deb = create_algorithm("debiased", 3, TrainConfig(algorithm="debiased", hparams=hp)).train()
    xd, targets, _ = deb.stylize(batch)
    assert xd.shape[0] == 8 and targets.shape == (8, 3)
    assert _finite(deb.update(batch)["loss"])
    with pytest.raises(TrainError, match="do not fit the standard AdaIN"):
        create_algorithm(
            "stylized", 3,
            TrainConfig(algorithm="stylized", hparams={"vgg_weights": str(dec),
                                                       "decoder_weights": str(dec)}),
        )


def test_biasbed_recipe_is_sgd_with_a_step_schedule() -> None:
    cfg = TrainConfig(preset="biasbed", algorithm="erm")
    assert (cfg.optimizer, cfg.momentum, cfg.weight_decay) == ("sgd", 0.9, 1e-4)
    assert (cfg.batch_size, cfg.epochs, cfg.lr_milestones, cfg.lr) == (128, 100, (30, 60, 90), 0.2)
    assert cfg.describe_preset() == "biasbed"
    algo = create_algorithm(
        "sagnet", 3, cfg.replace(algorithm="sagnet", hparams={"step": "sequential"})
    )
    assert isinstance(algo.opt_c, torch.optim.SGD)
    for epoch, lr in ((0, 0.2), (29, 0.2), (30, 0.02), (60, 0.002), (99, 0.0002)):
        algo.start_epoch(epoch)
        for opt in (algo.opt_f, algo.opt_c, algo.opt_s, algo.opt_adv):
            assert opt.param_groups[0]["lr"] == pytest.approx(lr)
    # every field is serialised (and hashed), the optimiser included
    assert '"optimizer":"adam"' in TrainConfig().to_json()
    assert '"optimizer":"sgd"' in cfg.to_json()


def test_biasbed_schedule_reaches_the_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    from shortcutlab.train.algorithms.base import Algorithm
    from shortcutlab.train.trainer import train
    from tests.train.fake_data import FakeDiagvib

    seen: list[tuple[int, float]] = []
    original = Algorithm.start_epoch

    def record(self: Algorithm, epoch: int) -> None:
        original(self, epoch)
        seen.append((epoch, self.optimizer.param_groups[0]["lr"]))

    monkeypatch.setattr(Algorithm, "start_epoch", record)
    cfg = TrainConfig(preset="biasbed", epochs=3, lr=0.05, lr_milestones=(1, 2), batch_size=16,
                      normalization="none")
    train(cfg, FakeDiagvib(24), FakeDiagvib(12, split="val"), {})
    assert [e for e, _ in seen] == [0, 1, 2]
    assert [lr for _, lr in seen] == pytest.approx([0.05, 0.005, 0.0005])


def test_infodrop_min_pools_the_probabilities_like_the_reference() -> None:
    from shortcutlab.train.algorithms.infodrop import drop_probability

    density = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(0)) * 0.9 + 0.05
    pool = nn.MaxPool2d(3, 2, 1)
    t = 0.5
    got = drop_probability(density, 1.5, t, pool)
    prob = density.unsqueeze(1) ** (1 / t)
    pooled = -torch.nn.functional.max_pool2d(-prob, 3, 2, 1)  # the reference's -pool(-prob)
    q = pooled / pooled.sum(dim=(-2, -1), keepdim=True)
    k = 1.5 * 4 * 4
    torch.testing.assert_close(got, 1 - (1 - q) ** k)
    assert got.shape == (2, 1, 4, 4)


def test_sagnet_pretrained_style_head_starts_from_the_pretrained_stages(tmp_path) -> None:
    weights = tmp_path / "w.pt"
    torch.save(create_model("small_cnn", 3).state_dict(), weights)
    cfg = TrainConfig(algorithm="sagnet", pretrained=str(weights))
    algo = create_algorithm("sagnet", 3, cfg)
    content, style = algo.content_head, algo.style_head
    torch.testing.assert_close(style[0][0][0].weight, content[0][0][0].weight)  # conv stage
    assert not torch.equal(style[1].weight, content[1].weight)  # a fresh classifier
    scratch = create_algorithm("sagnet", 3, TrainConfig(algorithm="sagnet"))
    assert not torch.equal(scratch.style_head[0][0][0].weight,
                           scratch.content_head[0][0][0].weight)


def test_former_hue_and_texture_pool_hparams_map_to_style(diagvib_train) -> None:
    from shortcutlab.diagvib.restyle import style_hparams

    assert style_hparams("stylized", {"hue": True, "texture_pool": "all", "p": 0.5}) == {
        "style": "texture+hue", "style_pool": "all", "p": 0.5}
    assert style_hparams("debiased", {"hue": False}) == {}
    assert style_hparams("debiased", {"texture_pool": "all"}) == {"texture_pool": "all"}
    assert style_hparams("erm", {"hue": True}) == {"hue": True}
    with pytest.raises(TrainError, match="must be bool"):
        style_hparams("stylized", {"hue": "yes"})
    # texture_pool=all draws from every texture class, not only the experiment's three
    ds, batch = diagvib_train
    from shortcutlab.diagvib.factors import FACTOR_TABLE

    pools = ds.restyler(pool="all").pools
    assert [len(p) for p in pools.values()] == [len(FACTOR_TABLE["texture"].classes)]
    assert [len(p) for p in ds.restyler().pools.values()] == [3]


@pytest.mark.parametrize("w_adv", [0.3, 0.05])
def test_sagnet_adversarial_loss_is_w_adv_times_the_cross_entropy_with_the_uniform_label(
    w_adv: float,
) -> None:
    """SagNet's adversary (Nam et al., eq. 5): ``w_adv`` × the cross entropy of the style head's
    prediction with the uniform distribution. The reported ``loss_adv`` of a joint step is
    checked against torch's cross entropy with soft (1/C) targets on the style head's logits
    before the step; ``clip_adv`` keeps its default 0.1, so the two weights are told apart."""
    cfg = TrainConfig(algorithm="sagnet", model="small_cnn", hparams={"w_adv": w_adv}, seed=1)
    torch.manual_seed(0)
    algo = create_algorithm("sagnet", 3, cfg)
    assert algo.hparams["clip_adv"] != w_adv and algo.hparams["content"] == "identity"
    algo.train()
    batch = _batch()
    with torch.no_grad():  # identity content: the style head sees the featurizer's output
        logits = algo.style_head(algo.featurizer(batch["x"]))
    uniform = torch.full_like(logits, 1.0 / logits.shape[1])
    expected = w_adv * float(torch.nn.functional.cross_entropy(logits, uniform))
    algo.step = 0
    out = algo.update(batch)
    assert out["loss_adv"] == pytest.approx(expected, rel=1e-4)


# ------------------------------------- the style statistics against torch's own instance norm
def test_instance_moments_and_adain_match_torchs_instance_norm() -> None:
    """AdaIN's statistics are per sample *and per channel* (BiasBed eq. 1): content normalised
    by them is ``F.instance_norm`` (eps 1e-5), and AdaIN gives it the style's per-channel
    population mean and standard deviation (``torch.var_mean``, ``unbiased=False``)."""
    from shortcutlab.train.algorithms.padain import adain

    gen = torch.Generator().manual_seed(0)
    scale = torch.tensor([0.5, 2.0, 4.0]).view(1, 3, 1, 1)
    shift = torch.tensor([-3.0, 0.0, 5.0]).view(1, 3, 1, 1)
    content = torch.randn(4, 3, 5, 6, generator=gen) * scale + shift
    style = torch.randn(4, 3, 5, 6, generator=gen) * scale.flip(1) + shift.flip(1)
    mean, std = instance_moments(content)
    normalised = torch.nn.functional.instance_norm(content, eps=1e-5)
    torch.testing.assert_close((content - mean) / std, normalised, atol=1e-5, rtol=1e-5)
    s_var, s_mean = torch.var_mean(style, dim=(2, 3), unbiased=False, keepdim=True)
    expected = normalised * (s_var + 1e-5).sqrt() + s_mean
    torch.testing.assert_close(adain(content, style), expected, atol=1e-5, rtol=1e-5)


def test_sagnet_style_randomisation_interpolates_the_variances() -> None:
    """SagNet mixes the *variances* of the sample and its donor with the weight ``alpha``
    (Nam et al.: ``var = a*var_i + (1-a)*var_j``), not their standard deviations: for samples
    of standard deviation 1 and 5 and a = 0.5 the new one is sqrt(13) ≈ 3.61, not 3."""
    gen = torch.Generator().manual_seed(1)
    sigma = torch.tensor([1.0, 5.0, 2.0, 0.5, 3.0, 1.5]).view(6, 1, 1, 1)
    x = torch.randn(6, 4, 8, 8, generator=gen) * sigma + torch.arange(6.0).view(6, 1, 1, 1)
    perm = torch.tensor([1, 0, 3, 2, 5, 4])
    alpha = torch.tensor([0.5, 0.25, 0.9, 0.5, 0.0, 0.7])
    var, mean = torch.var_mean(x, dim=(2, 3), unbiased=False)
    a = alpha.view(6, 1)
    y = style_randomize(x, perm, alpha)
    y_var, y_mean = torch.var_mean(y, dim=(2, 3), unbiased=False)
    torch.testing.assert_close(y_var, a * var + (1 - a) * var[perm], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(y_mean, a * mean + (1 - a) * mean[perm], rtol=1e-4, atol=1e-4)


# ------------------------------------ mutation-testing gaps (M362-M375): refusals and defaults
def test_padain_leaves_a_1x1_map_alone() -> None:
    """A 1x1 map has no spatial statistics: its instance mean is the value itself and its std
    sqrt(eps), so swapping would replace the sample's one value by the donor's (its content
    erased). pAdaIN must pass it through unchanged and count no swap."""
    x = torch.arange(12.0).view(4, 3, 1, 1)
    layer = PermutedAdaIN(p=1.0).train()
    for step in range(3):
        layer.reseed(0, step)
        assert torch.equal(layer(x), x)
    assert layer.swaps == 0


def test_padain_stages_of_a_generic_model_are_every_conv_but_the_last() -> None:
    """For a model without known stages, statistics are swapped after every Conv2d but the last
    (the last feeds global pooling, which would reduce a swapped map to the donor's mean), and a
    model with one Conv2d is refused: it would get no swap layer at all, i.e. plain ERM."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.ReLU(),
                          nn.Conv2d(4, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 3))
    assert feature_modules(model) == ["0", "2"]
    one = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
    with pytest.raises(TrainError, match="fewer than two Conv2d"):
        feature_modules(one)


def test_padain_and_infodrop_defaults_are_the_papers() -> None:
    """pAdaIN swaps with p = 0.01 per layer (Nuriel et al., ImageNet); InfoDrop's reference
    settings (Shi et al.'s code): drop rate 1.5, temperature 0.03, bandwidth 1, radius 3, 9
    sampled offsets. The defaults must reach the layers that use them."""
    padain = create_algorithm("padain", 3, TrainConfig(algorithm="padain", model="small_cnn"))
    assert {layer.p for layer in padain.swap_layers} == {0.01}
    assert {layer.detach for layer in padain.swap_layers} == {True}
    infodrop = create_algorithm("infodrop", 3, TrainConfig(algorithm="infodrop",
                                                           model="small_cnn"))
    (block,) = infodrop.drop_layers
    assert (block.drop_rate, block.temperature, block.bandwidth, block.radius,
            block.n_offsets) == (1.5, 0.03, 1.0, 3, 9)


def test_padain_detach_hparam_reaches_the_swap_layers() -> None:
    """``detach=False`` lets the donor's statistics receive gradient; the algorithm must build
    its layers with it (not silently keep the reference's detached donor)."""
    cfg = TrainConfig(algorithm="padain", model="small_cnn", hparams={"detach": False})
    algo = create_algorithm("padain", 3, cfg)
    assert algo.swap_layers and {layer.detach for layer in algo.swap_layers} == {False}


def test_sagnet_content_randomisation_detaches_the_donors_content() -> None:
    """The style head sees another sample's normalised content with its own statistics; the
    donor's content is detached, so the style loss of sample i sends no gradient to the donor's
    input (only to sample i's own mean and std)."""
    x = torch.randn(4, 3, 5, 5, generator=torch.Generator().manual_seed(0)).requires_grad_()
    perm = torch.tensor([1, 2, 3, 0])
    out = content_randomize(x, perm)
    (grad,) = torch.autograd.grad((out[0] * torch.arange(25.0).view(5, 5)).sum(), x)
    assert float(grad[1].abs().sum()) == 0.0  # the donor
    assert float(grad[0].abs().sum()) > 0.0  # the sample's own statistics


def test_infodrop_refuses_a_zero_temperature_and_zero_layers() -> None:
    """Temperature 0 divides log-densities by zero (NaN drop probabilities: every activation
    dropped); InfoDrop on 0 convolutions is plain ERM under InfoDrop's name. Both are refused."""
    conv = nn.Conv2d(3, 4, 3, padding=1)
    with pytest.raises(TrainError, match="temperature > 0"):
        InfoDropConv2d(conv, temperature=0.0)
    with pytest.raises(TrainError, match=r"n_layers must be in 1\.\.4"):
        wrap_convs(create_model("small_cnn", 3), 0)


@pytest.mark.parametrize("name", ["stylized", "debiased"])
def test_stylising_algorithms_refuse_a_probability_above_one(name: str) -> None:
    """p is the probability that a stylised image replaces the original: p = 1.5 must be refused,
    not silently run as p = 1."""
    with pytest.raises(TrainError, match=r"p must be in \[0, 1\], got 1.5"):
        create_algorithm(name, 3, TrainConfig(algorithm=name, hparams={"p": 1.5}))


@pytest.mark.parametrize("key,value", [("w_adv", -0.1), ("clip_adv", -0.1), ("adv_eps", -1e-5),
                                       ("step", "both"), ("content", "mixed"),
                                       ("adv_params", "head")])
def test_sagnet_refuses_negative_weights_and_unknown_choices_before_building(
        key: str, value: object) -> None:
    """A negative ``w_adv`` flipped the adversarial term (the featurizer then helped the style
    head instead of fooling it), a negative ``clip_adv`` silently switched clipping off and a
    negative ``adv_eps`` silently gave the paper's loss: each is refused, as is an unknown
    choice, by the pure check a command runs before any job (no network is built)."""
    from shortcutlab.train.algorithms import check_hparams
    from shortcutlab.train.algorithms.sagnet import SagNet

    with pytest.raises(TrainError, match=key):
        SagNet._resolve_hparams({key: value})
    with pytest.raises(TrainError, match=key):
        check_hparams(TrainConfig(algorithm="sagnet", hparams={key: value}))
    zero = {"w_adv": 0.0, "clip_adv": 0.0, "adv_eps": 0.0}  # 0: no term, no clipping, paper
    assert SagNet._resolve_hparams(zero) == {**SagNet.hparams_defaults, **zero}


@pytest.mark.parametrize("name,hparams,named", [
    ("infodrop", {"layers": 3}, "layers"),  # block placement: 'layers' is never read
    ("infodrop", {"placement": "conv", "after": "features.2"}, "after"),
    ("infodrop", {"placement": "stem"}, "placement"),
    ("debiased", {"p": 0.5}, "p"),  # mix=pair trains on every stylised image
    ("debiased", {"mix": "replace", "aux_bn": False}, "aux_bn"),
])
def test_a_hyper_parameter_its_placement_or_mix_never_reads_is_refused(
        name: str, hparams: dict, named: str) -> None:
    """InfoDrop's default block placement ignored ``layers`` (``layers=3`` trained the stem
    block only), and Debiased's default pair mix ignored ``p``; a value set away from its
    default where it is not read is refused before any job, naming it."""
    from shortcutlab.train.algorithms import check_hparams

    with pytest.raises(TrainError, match=named):
        check_hparams(TrainConfig(algorithm=name, hparams=hparams))
    fine = {"infodrop": {"placement": "conv", "layers": 2}, "debiased": {"mix": "replace",
                                                                          "p": 0.5}}[name]
    assert {k: check_hparams(TrainConfig(algorithm=name, hparams=fine))[k] for k in fine} == fine


@pytest.mark.parametrize("clip_adv", [0.1, 0.0])
def test_sagnet_sequential_step_clips_the_adversary_and_teaches_the_featurizer_content(
        clip_adv: float) -> None:
    """Nam et al.'s sequential step: the adversary steps on the batch-norm gradient clipped to
    norm ``clip_adv`` (0: unclipped, then larger here, as ``w_adv`` is large), and the content
    step is the only one that moves the featurizer's convolutions (the adversary moves batch
    norms only, the style step the style head only)."""
    from shortcutlab.train.algorithms.sagnet import batchnorm_parameters

    cfg = TrainConfig(algorithm="sagnet", seed=1,
                      hparams={"step": "sequential", "w_adv": 50.0, "clip_adv": clip_adv})
    torch.manual_seed(0)
    algo = create_algorithm("sagnet", 3, cfg).train()
    norms: list[float] = []
    algo.opt_adv.register_step_pre_hook(lambda *_: norms.append(float(torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(p.grad) for p in algo.adv_params])))))
    bn_ids = {id(p) for p in batchnorm_parameters(algo.featurizer)}
    convs = {n: p.detach().clone() for n, p in algo.featurizer.named_parameters()
             if id(p) not in bn_ids}
    algo.update(_batch())
    assert len(norms) == 1
    if clip_adv:
        assert norms[0] == pytest.approx(clip_adv, rel=1e-4)
    else:
        assert norms[0] > 1.0
    assert all(not torch.equal(p, convs[n]) for n, p in algo.featurizer.named_parameters()
               if n in convs)


def test_dual_batchnorm_normalises_the_clean_rows_with_main_and_the_rest_with_aux() -> None:
    """Li et al.'s auxiliary batch norm: the first ``split`` rows (clean) go through ``main``,
    the rest (stylised) through ``aux``; each keeps the running mean of its own rows."""
    from shortcutlab.train.algorithms.stylized import DualBatchNorm2d

    dual = DualBatchNorm2d(nn.BatchNorm2d(2, momentum=1.0)).train()  # running mean = batch's
    clean, styled = torch.rand(4, 2, 3, 3), torch.rand(4, 2, 3, 3) + 10.0
    dual.split = 4
    out = dual(torch.cat([clean, styled]))
    torch.testing.assert_close(dual.main.running_mean, clean.mean((0, 2, 3)))
    torch.testing.assert_close(dual.aux.running_mean, styled.mean((0, 2, 3)))
    torch.testing.assert_close(out[:4], nn.functional.batch_norm(clean, None, None, training=True))
    dual.split = None  # no split (and evaluation): main only
    dual.eval()
    torch.testing.assert_close(dual(styled), dual.main(styled))


def test_stylized_with_p_below_one_reports_unstylised_items_as_they_were(diagvib_train) -> None:
    """With ``p`` < 1 the items left as they are keep their own images and their own rows; only
    the stylised ones carry the redrawn style."""
    ds, batch = diagvib_train
    algo = create_algorithm("stylized", 3, TrainConfig(algorithm="stylized", seed=2,
                                                       hparams={"p": 0.5}), _context(ds)).train()
    algo.step = 4
    x, classes = algo.stylize(batch)
    old = batch["classes"].numpy()
    kept = (x - batch["x"]).flatten(1).abs().amax(1) == 0
    assert 0 < int(kept.sum()) < len(kept)
    assert np.array_equal(classes[kept.numpy()], old[kept.numpy()])
    torch.testing.assert_close(x, _render(ds, classes, batch["index"]))


@pytest.mark.parametrize("fresh", [True, False])
def test_sagnet_fresh_classifier_decides_whether_the_pretrained_head_is_kept(
        tmp_path, fresh: bool) -> None:
    """With ``--pretrained``, the reference drops the pretrained classifier
    (``fresh_classifier=true``, the default): the content classifier is then newly drawn;
    ``fresh_classifier=false`` keeps the file's classifier. The stages are the file's either
    way."""
    source = create_model("small_cnn", 3)
    weights = tmp_path / "w.pt"
    torch.save(source.state_dict(), weights)
    cfg = TrainConfig(algorithm="sagnet", pretrained=str(weights),
                      hparams={"fresh_classifier": fresh})
    content = create_algorithm("sagnet", 3, cfg).content_head
    torch.testing.assert_close(content[0][0][0].weight, source.features[5][0].weight)
    assert torch.equal(content[1].weight, source.head.weight) is not fresh
