"""A tiny fake dataset with the DiagViB item format (DomainBed habit): no rendering needed.

The label is written into the image (a bright square whose channel is the label), plus a
"correlated" class ``b`` that tags each item ``f"{y}{b}-id"`` or ``-ood``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from shortcutlab.utils.rng import rng


class FakeDiagvib(Dataset):
    """``n`` items of size ``size``; ``split`` changes the noise, ``ood`` makes b != y."""

    num_classes = 3

    def __init__(self, n: int = 48, size: int = 32, split: str = "train", ood: bool = False,
                 seed: int = 0) -> None:
        g = rng(seed, "fake", split)
        self.labels = np.arange(n) % 3
        shift = g.integers(1, 3, n) if ood else np.zeros(n, dtype=np.int64)
        self.correlated = (self.labels + shift) % 3
        pairs = zip(self.labels, self.correlated, strict=True)
        self.tags = np.array([f"{a}{b}-{'id' if a == b else 'ood'}" for a, b in pairs])
        self.size, self.seed, self.split = size, seed, split

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        g = rng(self.seed, "pixels", self.split, int(i))
        x = g.random((3, self.size, self.size), dtype=np.float32) * 0.5
        s = self.size // 4
        x[self.labels[i], s : 3 * s, s : 3 * s] += 0.5
        classes = np.zeros(6, dtype=np.int64)
        classes[1], classes[4] = self.labels[i], self.correlated[i]
        return {"x": torch.from_numpy(x), "y": torch.tensor(self.labels[i], dtype=torch.int64),
                "classes": torch.from_numpy(classes), "index": int(i)}


class GreyObjects(Dataset):
    """DiagViB-like images: a small square on a uniform grey (0.5) background, ``size`` pixels.

    The label is the square's lightness (three levels with jitter); one random channel is a bit
    brighter (a nuisance "hue"); positions are random. Almost every pixel is background, so the
    raw inputs are far from centred: the setting of the BatchNorm validation collapse.
    """

    num_classes = 3

    def __init__(self, n: int = 240, size: int = 32, obj: int = 6, split: str = "train",
                 seed: int = 0) -> None:
        g = rng(seed, "grey-objects", split)
        self.labels = np.arange(n) % 3
        self.size, self.obj = size, obj
        self.pos = g.integers(0, size - obj, (n, 2))
        self.bright = g.integers(0, 3, n)
        self.jitter = g.random(n) * 0.1

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        x = np.full((3, self.size, self.size), 0.5, dtype=np.float32)
        r, c = self.pos[i]
        light = 0.2 + 0.3 * self.labels[i] + self.jitter[i]
        colour = np.full(3, light, dtype=np.float32)
        colour[self.bright[i]] = min(1.0, light + 0.2)
        x[:, r : r + self.obj, c : c + self.obj] = colour[:, None, None]
        return {"x": torch.from_numpy(x), "y": torch.tensor(self.labels[i], dtype=torch.int64),
                "index": int(i)}
