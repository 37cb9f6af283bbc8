"""Networks of the DiagViB-6 paper's three non-standard baselines (appendix A.2).

- :class:`UNetLens` and :class:`ASRNet`: Automatic Shortcut Removal (Minderer et al., ICML 2020)
  as the paper adapts it: a U-Net-style *lens* that edits the image in pixel space, in front of a
  ResNet-18 feature extractor trained on the classification task.
- :class:`ConvVAE`: the convolutional VAE of the disentanglement literature the paper cites
  (Locatello et al.: 4x4 stride-2 convolutions 32-32-64-64, a 256-unit layer, a Gaussian latent;
  one more stride-2 stage per doubling of the side, so 128x128 images reach a 4x4 map) with
  latent size 12, a mirrored decoder with Bernoulli pixel outputs, and a classification head on
  the latent mean. The same network serves the VAE and the Factor-VAE; they differ in training.
- :class:`FactorDiscriminator` and :func:`permute_dims`: Factor-VAE's total-correlation
  discriminator (Kim & Mnih, ICML 2018: six 1000-unit layers, LeakyReLU 0.2) and its sampling
  from the product of marginals by permuting every latent dimension across the batch.

The model factories (:func:`asr_rn18`, :func:`vae`, :func:`factor_vae`) are registered by
:mod:`shortcutlab.diagvib.baselines`, each with the algorithm that trains it
(:func:`shortcutlab.train.models.implied_algorithm`), which ``diagvib run --model NAME`` uses.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import torchvision.models as tvm
from torch import nn

from shortcutlab.errors import TrainError

#: Latent size of both VAEs (paper appendix A.2).
LATENT_SIZE = 12


# --------------------------------------------------------------------------- ASR


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for c in (cin, cout):
        layers += [nn.Conv2d(c, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                   nn.ReLU(inplace=True)]
    return nn.Sequential(*layers)


class UNetLens(nn.Module):
    """A small U-Net that maps an image in [0, 1] to an edited image in [0, 1] of the same shape.

    Three down- and up-sampling stages with skip connections (``width``, 2x, 4x, 8x channels);
    the last 1x1 convolution is zero-initialised and its output is added to the input, so an
    untrained lens is the identity (as in Minderer et al., whose lens outputs a residual). The
    result is clamped to [0, 1], the input's range.
    """

    def __init__(self, width: int = 16, depth: int = 3) -> None:
        super().__init__()
        if depth < 1 or width < 1:
            raise TrainError(f"UNetLens needs depth >= 1 and width >= 1, got {depth}, {width}")
        chans = [width * 2**i for i in range(depth + 1)]
        self.inc = _double_conv(3, chans[0])
        self.down = nn.ModuleList(_double_conv(chans[i], chans[i + 1]) for i in range(depth))
        self.up = nn.ModuleList(
            _double_conv(chans[i + 1] + chans[i], chans[i]) for i in reversed(range(depth))
        )
        self.out = nn.Conv2d(chans[0], 3, 1)
        nn.init.zeros_(self.out.weight)
        if self.out.bias is not None:
            nn.init.zeros_(self.out.bias)

    def residual(self, x: torch.Tensor) -> torch.Tensor:
        """The edit the lens adds to ``x`` (before clamping)."""
        skips = [self.inc(x)]
        for block in self.down:
            skips.append(block(F.max_pool2d(skips[-1], 2, ceil_mode=True)))
        h = skips.pop()
        for block in self.up:
            skip = skips.pop()
            h = F.interpolate(h, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            h = block(torch.cat([h, skip], dim=1))
        return self.out(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + self.residual(x)).clamp(0.0, 1.0)


class ASRNet(nn.Module):
    """Lens + classifier. ``forward`` takes images in [0, 1] and returns the classifier's logits
    on the lens output; the ``asr`` algorithm normalises the lens output for the classifier with
    the run's input statistics instead (see :mod:`shortcutlab.diagvib.baselines.asr`)."""

    def __init__(self, lens: nn.Module, classifier: nn.Module) -> None:
        super().__init__()
        self.lens = lens
        self.classifier = classifier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.lens(x))


def asr_rn18(num_classes: int, lens_width: int = 16) -> nn.Module:
    """ASR (RN18): a U-Net lens in front of a randomly initialised torchvision ResNet-18; trained
    by the ``asr`` algorithm (least-likely adversarial + reconstruction loss for the lens)."""
    return ASRNet(UNetLens(lens_width), tvm.resnet18(weights=None, num_classes=num_classes))


# --------------------------------------------------------------------------- VAEs


def _stages(image_size: int) -> int:
    """Stride-2 stages from ``image_size`` down to a 4x4 map (a power of two >= 8)."""
    if image_size < 8 or image_size & (image_size - 1):
        raise TrainError(f"VAE image_size must be a power of two >= 8, got {image_size!r}")
    return int(math.log2(image_size // 4))


class ConvVAE(nn.Module):
    """Convolutional VAE with a classification head on the latent mean.

    ``encode(x) -> (mu, logvar)`` takes normalised images (resized to ``image_size`` when their
    side differs, see :meth:`fit`); ``decode(z)`` returns pixel logits
    (Bernoulli means after a sigmoid) of shape (B, 3, image_size, image_size); ``forward(x)`` is
    the head's logits on ``mu``. The head is registered last, so it is the model's classifier
    head for :func:`shortcutlab.train.models.head_name`.
    """

    def __init__(self, num_classes: int, latent: int = LATENT_SIZE, image_size: int = 128,
                 hidden: int = 256, head_hidden: int = 256) -> None:
        super().__init__()
        if latent < 1 or hidden < 1 or head_hidden < 0:
            raise TrainError(f"ConvVAE needs latent >= 1, hidden >= 1 and head_hidden >= 0 (0: a "
                             f"linear head), got {latent}, {hidden}, {head_hidden}")
        n = _stages(image_size)
        chans = [32, 32, 64, 64] + [64] * max(0, n - 4)
        chans = chans[:n]
        self.image_size, self.latent = image_size, latent
        layers: list[nn.Module] = []
        cin = 3
        for c in chans:
            layers += [nn.Conv2d(cin, c, 4, stride=2, padding=1), nn.ReLU(inplace=True)]
            cin = c
        self.encoder = nn.Sequential(*layers, nn.Flatten(), nn.Linear(cin * 16, hidden),
                                     nn.ReLU(inplace=True), nn.Linear(hidden, 2 * latent))
        self._top = cin
        up: list[nn.Module] = []
        rev = list(reversed(chans))
        for i, c in enumerate(rev):
            cout = rev[i + 1] if i + 1 < len(rev) else 3
            up.append(nn.ConvTranspose2d(c, cout, 4, stride=2, padding=1))
            if i + 1 < len(rev):
                up.append(nn.ReLU(inplace=True))
        self.decoder_fc = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(inplace=True),
                                        nn.Linear(hidden, cin * 16), nn.ReLU(inplace=True))
        self.decoder = nn.Sequential(*up)
        if head_hidden > 0:
            self.head = nn.Sequential(nn.Linear(latent, head_hidden), nn.ReLU(inplace=True),
                                      nn.Linear(head_hidden, num_classes))
        else:
            self.head = nn.Sequential(nn.Linear(latent, num_classes))

    def fit(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` resized (bilinear, antialiased) to the side the VAE models, if it differs."""
        if tuple(x.shape[-2:]) == (self.image_size, self.image_size):
            return x
        return F.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear",
                             align_corners=False, antialias=True)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.encoder(self.fit(x)).chunk(2, dim=1)
        return mu, logvar.clamp(-20.0, 20.0)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        h = self.decoder_fc(z).view(len(z), self._top, 4, 4)
        return self.decoder(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encode(x)[0])


def vae(num_classes: int, latent: int = LATENT_SIZE, image_size: int = 128,
        head_hidden: int = 256) -> nn.Module:
    """The paper's VAE (latent 12, 128x128); trained by the ``vae`` algorithm."""
    return ConvVAE(num_classes, latent=latent, image_size=image_size, head_hidden=head_hidden)


def factor_vae(num_classes: int, latent: int = LATENT_SIZE, image_size: int = 128,
               head_hidden: int = 256) -> nn.Module:
    """The paper's Factor-VAE network (same as :func:`vae`); trained by ``factor_vae``."""
    return ConvVAE(num_classes, latent=latent, image_size=image_size, head_hidden=head_hidden)


class FactorDiscriminator(nn.Module):
    """Kim & Mnih's discriminator: 2 logits (0: a sample of q(z), 1: of the product of its
    marginals) from ``layers`` LeakyReLU(0.2) layers of ``hidden`` units."""

    def __init__(self, latent: int = LATENT_SIZE, hidden: int = 1000, layers: int = 6) -> None:
        super().__init__()
        mods: list[nn.Module] = []
        cin = latent
        for _ in range(layers):
            mods += [nn.Linear(cin, hidden), nn.LeakyReLU(0.2, inplace=True)]
            cin = hidden
        mods.append(nn.Linear(cin, 2))
        self.net = nn.Sequential(*mods)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


def permute_dims(z: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Samples of the product of q(z)'s marginals: every latent dimension (column) of the batch
    ``z`` (B, D) is shuffled across the batch with its own random permutation."""
    if z.dim() != 2:
        raise TrainError("permute_dims expects a (batch, latent) tensor, got shape "
                         f"{tuple(z.shape)}")
    b, d = z.shape
    keys = torch.rand(b, d, generator=generator, device=generator.device if generator else "cpu")
    order = keys.argsort(dim=0).to(z.device)
    return torch.gather(z, 0, order)


__all__ = [
    "LATENT_SIZE", "ASRNet", "ConvVAE", "FactorDiscriminator", "UNetLens", "asr_rn18",
    "factor_vae", "permute_dims", "vae",
]
