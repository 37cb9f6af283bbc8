"""BiasBed algorithms against the authors' code: details a line-by-line review found wrong.

Each test fails on the implementation it guards against (see the commit that added it).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.config import TrainConfig


def _batch(n: int = 4, size: int = 32, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        "x": torch.rand(n, 3, size, size, generator=gen),
        "y": torch.randint(0, 3, (n,), generator=gen),
    }


@pytest.fixture(scope="module")
def negative_adain(tmp_path_factory: pytest.TempPathFactory):
    """An AdaIN network whose decoder outputs about -0.5 everywhere (as a decoder fed normalised
    images does for the darker half of the range)."""
    from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer

    torch.manual_seed(0)
    net = AdaINStyleTransfer()
    for m in net.decoder.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.normal_(m.weight, std=0.001)
            nn.init.constant_(m.bias, -0.5 if m.out_channels == 3 else 0.0)
    path = tmp_path_factory.mktemp("adain") / "adain.pth"
    torch.save(net.state_dict(), path)
    return path


@pytest.mark.parametrize("adain_input", ["normalised", "pixels"])
def test_debiased_feeds_the_decoder_output_unclamped(negative_adain, adain_input: str) -> None:
    """BiasBed's code (on normalised inputs) and Li et al.'s (on [0, 1] images) give the model the
    AdaIN decoder's output as it is; clamping it to [0, 1] wiped out every negative value of a
    normalised image."""
    hp = {"style_weights": str(negative_adain), "adain_input": adain_input}
    deb = create_algorithm("debiased", 3, TrainConfig(algorithm="debiased", hparams=hp)).train()
    batch = _batch()
    x, _, _ = deb.stylize(batch)
    styled = x[len(batch["y"]):]  # pair mix: the clean half, then the stylised half
    torch.testing.assert_close(x[: len(batch["y"])], batch["x"])
    assert float(styled.max()) < -0.4  # the decoder's -0.5, not clamped to 0
    # Stylized (Stylized-ImageNet: stylised images saved as image files) stays in [0, 1]
    sty = create_algorithm("stylized", 3, TrainConfig(algorithm="stylized", hparams={
        "style_weights": str(negative_adain)})).train()
    xs, _ = sty.stylize(batch)
    assert float(xs.min()) >= 0.0


def test_sagnet_style_head_is_initialised_like_the_model() -> None:
    """From scratch, the style head is a fresh copy initialised as the model initialises itself
    (the reference builds both heads with the ResNet's Kaiming fan-out init); resetting it with
    each layer's ``reset_parameters`` gave its convolutions PyTorch's default, ~0.6x smaller,
    init."""
    cfg = TrainConfig(algorithm="sagnet", model="resnet18", seed=2)
    algo = create_algorithm("sagnet", 3, cfg)
    for name, conv in algo.content_head.named_modules():
        if not isinstance(conv, nn.Conv2d):
            continue
        style_conv = algo.style_head.get_submodule(name)
        expected = (2.0 / (conv.out_channels * conv.kernel_size[0] * conv.kernel_size[1])) ** 0.5
        assert abs(float(style_conv.weight.detach().std()) / expected - 1) < 0.1, name
        assert abs(float(conv.weight.detach().std()) / expected - 1) < 0.1, name
        assert not torch.equal(style_conv.weight, conv.weight), name
    # reproducible: the same seed gives the same style head
    again = create_algorithm("sagnet", 3, cfg)
    for (k, v), (_, w) in zip(algo.style_head.state_dict().items(),
                              again.style_head.state_dict().items(), strict=True):
        assert torch.equal(v, w), k


def test_sagnet_adversarial_loss_is_the_papers_with_the_codes_eps_as_an_option() -> None:
    """Nam et al.'s L_adv is the cross entropy with the uniform label, -(1/K) sum_k log p_k
    (default); their code and BiasBed's take log(p_k + 1e-5), which caps the loss and shrinks
    its gradient several times over on a confident 1000-class head (``adv_eps=1e-5``)."""
    logits = torch.tensor([[12.0, 0.0, -3.0, 1.0], [0.5, 0.0, 0.2, -0.1]])
    paper = create_algorithm("sagnet", 4, TrainConfig(algorithm="sagnet"))
    expected = -torch.log_softmax(logits, 1).mean(1).mean() * 0.1
    torch.testing.assert_close(paper._adversarial_loss(logits), expected)
    code = create_algorithm("sagnet", 4, TrainConfig(algorithm="sagnet",
                                                     hparams={"adv_eps": 1e-5}))
    expected = -torch.log(logits.softmax(1) + 1e-5).mean(1).mean() * 0.1
    torch.testing.assert_close(code._adversarial_loss(logits), expected)
    assert float(code._adversarial_loss(logits)) < float(paper._adversarial_loss(logits))


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_adain_style_transfer_is_the_hand_computation(alpha: float) -> None:
    """Huang & Belongie's AdaIN transfer: both images ImageNet-normalised and encoded, the
    content features given the style features' per-channel mean and std (torch's instance norm
    and ``var_mean``), blended with the *content* features by ``alpha``, then decoded."""
    from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer

    torch.manual_seed(0)
    net = AdaINStyleTransfer()
    net.clamp = False
    for m in net.modules():  # He init: features and images of order 1 through all 30 layers
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    gen = torch.Generator().manual_seed(3)
    content = torch.rand(2, 3, 16, 16, generator=gen)
    style = torch.rand(2, 3, 16, 16, generator=gen) * 0.5 + 0.4
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    with torch.no_grad():
        f_c = net.encoder((content - mean) / std)
        f_s = net.encoder((style - mean) / std)
        s_var, s_mean = torch.var_mean(f_s, dim=(2, 3), unbiased=False, keepdim=True)
        target = F.instance_norm(f_c, eps=1e-5) * (s_var + 1e-5).sqrt() + s_mean
        expected = net.decoder(alpha * target + (1 - alpha) * f_c)
    torch.testing.assert_close(net(content, style, alpha), expected, atol=1e-4, rtol=1e-4)
    assert float(expected.abs().mean()) > 0.5  # a visible output, not ~0
