"""Random weights in the layout of the standard AdaIN files (``vgg_normalised.pth``: the whole
normalised VGG-19 with a leading 1x1 colour conv; ``decoder.pth``), for tests; no downloads."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

VGG_PLAN = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
            512, 512, 512, 512]
DECODER_PLAN = [256, "up", 256, 256, 256, 128, "up", 128, 64, "up", 64, 3]


def write_adain_pair(root: Path) -> tuple[Path, Path]:
    """Write ``vgg_normalised.pth`` and ``decoder.pth`` under ``root``; returns their paths."""
    torch.manual_seed(0)
    vgg: list[nn.Module] = [nn.Conv2d(3, 3, 1)]
    c = 3
    for item in VGG_PLAN:
        if item == "M":
            vgg.append(nn.MaxPool2d(2, 2, 0, ceil_mode=True))
        else:
            vgg += [nn.ReflectionPad2d(1), nn.Conv2d(c, int(item), 3), nn.ReLU()]
            c = int(item)
    dec: list[nn.Module] = []
    c = 512
    for item in DECODER_PLAN:
        if item == "up":
            dec.append(nn.Upsample(scale_factor=2, mode="nearest"))
        else:
            dec += [nn.ReflectionPad2d(1), nn.Conv2d(c, int(item), 3), nn.ReLU()]
            c = int(item)
    dec = dec[:-1]  # no ReLU after the last convolution
    for m in dec:  # a decoder that keeps values in a visible range
        if isinstance(m, nn.Conv2d):
            nn.init.normal_(m.weight, std=0.02)
            nn.init.constant_(m.bias, 0.5 if m.out_channels == 3 else 0.0)
    torch.save(nn.Sequential(*vgg).state_dict(), root / "vgg_normalised.pth")
    torch.save(nn.Sequential(*dec).state_dict(), root / "decoder.pth")
    return root / "vgg_normalised.pth", root / "decoder.pth"
