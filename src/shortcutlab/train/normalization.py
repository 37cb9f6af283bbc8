"""Per-channel input normalisation: statistics of the training split, or ImageNet's.

The DiagViB-6 authors z-score every input channel with the mean and (population) standard
deviation of the training split's pixels, and reuse those statistics for validation and test.
:func:`channel_stats` computes them by streaming the training dataset in batches, so the split is
never held in memory; per-batch means and sums of squared deviations are merged in float64 (Chan
et al.), which is numerically stable and deterministic for a given batch size (other batch sizes
agree to about 1e-15). The trainer always uses :data:`STATS_BATCH_SIZE`, so runtime options never
change the statistics.

:class:`InputNormalization` applies them on the device as a per-channel affine map; every
:class:`~shortcutlab.train.algorithms.base.Algorithm` owns one (``algorithm.input_norm``, its
buffers travel with the state dict) and the trainer applies it to every batch before ``update``
and ``predict``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from shortcutlab.errors import TrainError

Source = Literal["train", "imagenet", "none"]

STATS_BATCH_SIZE = 256
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class ChannelStats:
    """Per-channel mean and standard deviation of inputs in [0, 1], and where they came from."""

    mean: tuple[float, ...]
    std: tuple[float, ...]
    source: Source

    @classmethod
    def imagenet(cls) -> ChannelStats:
        """The ImageNet statistics torchvision's pretrained models expect."""
        return cls(IMAGENET_MEAN, IMAGENET_STD, "imagenet")

    @classmethod
    def identity(cls, channels: int = 3) -> ChannelStats:
        """No normalisation: inputs stay in [0, 1]."""
        return cls((0.0,) * channels, (1.0,) * channels, "none")


def to_unit_float(x: torch.Tensor) -> torch.Tensor:
    """Images as floating point in [0, 1]: uint8 (0..255) images are divided by 255."""
    return x.float().div_(255.0) if x.dtype == torch.uint8 else x


def _images(batch: Any) -> torch.Tensor:
    x = batch["x"] if isinstance(batch, dict) else batch[0]
    if not isinstance(x, torch.Tensor) or x.ndim != 4:
        raise TrainError("a dataset item's 'x' must be an image tensor (C, H, W)")
    return to_unit_float(x)


def channel_stats(
    dataset: Dataset, *, batch_size: int = STATS_BATCH_SIZE, num_workers: int = 0
) -> ChannelStats:
    """Mean and population standard deviation of every channel over all pixels of ``dataset``.

    Items are dicts with ``x`` (C, H, W) in [0, 1] (or uint8 0..255); the dataset is read in
    order, ``batch_size`` items at a time, and only running per-channel moments are kept.
    """
    if batch_size < 1:
        raise TrainError(f"batch_size must be positive (got {batch_size})")
    if len(dataset) == 0:  # type: ignore[arg-type]
        raise TrainError("cannot compute normalisation statistics of an empty dataset")
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers)
    count = 0
    mean = m2 = torch.zeros(0, dtype=torch.float64)
    for batch in loader:
        x = _images(batch).to(torch.float64)
        n = x.shape[0] * x.shape[2] * x.shape[3]
        b_mean = x.mean(dim=(0, 2, 3))
        b_m2 = (x - b_mean.view(1, -1, 1, 1)).square().sum(dim=(0, 2, 3))
        if count == 0:
            count, mean, m2 = n, b_mean, b_m2
            continue
        if b_mean.shape != mean.shape:
            raise TrainError(f"images have {b_mean.numel()} channels after {mean.numel()}")
        total = count + n
        delta = b_mean - mean
        mean = mean + delta * (n / total)
        m2 = m2 + b_m2 + delta.square() * (count * n / total)
        count = total
    std = (m2 / count).sqrt()
    if bool((std <= 0).any()):
        raise TrainError("a channel is constant over the training set; cannot z-score it")
    return ChannelStats(tuple(mean.tolist()), tuple(std.tolist()), "train")


class InputNormalization(nn.Module):
    """``(x - mean) / std`` per channel, on whatever device the module lives on.

    Starts as the identity (mean 0, std 1: ``x`` comes back unchanged); :meth:`set_stats` loads
    statistics. ``mean`` and ``std`` are buffers of shape (1, C, 1, 1), so they are saved with
    the algorithm's state dict.
    """

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, stats: ChannelStats | None = None) -> None:
        super().__init__()
        stats = stats or ChannelStats.identity()
        self.register_buffer("mean", torch.zeros(1, len(stats.mean), 1, 1))
        self.register_buffer("std", torch.ones(1, len(stats.std), 1, 1))
        self.set_stats(stats)

    def set_stats(self, stats: ChannelStats) -> None:
        """Load ``stats`` (keeps the buffers' device)."""
        device = self.mean.device
        self.mean = torch.tensor(stats.mean, dtype=torch.float32, device=device).view(1, -1, 1, 1)
        self.std = torch.tensor(stats.std, dtype=torch.float32, device=device).view(1, -1, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        """Back to [0, 1] pixel values (for algorithms that work in pixel space)."""
        return x * self.std + self.mean
