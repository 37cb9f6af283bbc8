"""The batches of a training run: which items make each batch, and batches made on the device.

:class:`EpochBatches` orders the training set for every epoch, a pure function of (seed, epoch)
(``rng(seed, "shuffle", epoch)``), so shuffling is the same in every process and for any number
of DataLoader workers. :class:`DeviceBatches` reads a dataset that can make its own batches on
an accelerator (a ``device_batch`` method: DiagViB-6 renders on the GPU) instead of a
DataLoader, so images never pass through the host; :class:`DeviceItems` lets the normalisation
statistics be streamed the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from shortcutlab.utils.rng import rng


class EpochBatches(Sampler[list[int]]):
    """Shuffled batches of indices, a pure function of (seed, epoch).

    A last batch of a single sample is dropped (BatchNorm cannot train on it); with
    ``drop_last`` any incomplete last batch is (as the DiagViB-6 authors' loader does), unless it
    is the only batch.
    """

    def __init__(self, n: int, batch_size: int, seed: int, drop_last: bool = False) -> None:
        self.n, self.batch_size, self.seed, self.epoch = n, batch_size, seed, 0
        self.drop_last = drop_last

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batches(self) -> list[np.ndarray]:
        """This epoch's batches, as arrays of indices."""
        order = rng(self.seed, "shuffle", self.epoch).permutation(self.n)
        chunks = [order[i : i + self.batch_size] for i in range(0, self.n, self.batch_size)]
        short = len(chunks[-1]) < self.batch_size if self.drop_last else len(chunks[-1]) == 1
        if len(chunks) > 1 and short:
            chunks.pop()
        return chunks

    def __iter__(self) -> Iterator[list[int]]:
        for chunk in self.batches():
            yield chunk.tolist()

    def __len__(self) -> int:
        return len(self.batches())


#: Evaluation batch size when batches are made on the device (``eval_batch_size=None``).
DEVICE_EVAL_BATCH_SIZE = 1024


def makes_device_batches(dataset: Dataset) -> bool:
    """Whether ``dataset`` can make its batches on an accelerator: it has a method
    ``device_batch(indices: Tensor, device) -> dict`` returning at least ``x`` (uint8 or float
    images) and ``y`` on that device (DiagViB-6 datasets render there)."""
    return callable(getattr(dataset, "device_batch", None))


class DeviceBatches:
    """Batches made on ``device`` by ``dataset.device_batch``: images never pass through the host
    and no DataLoader runs. Indices come from ``sampler`` (lists of indices, e.g.
    :class:`EpochBatches`; the epoch's whole order is copied to the device once) or, without
    one, in order, ``batch_size`` at a time."""

    def __init__(self, dataset: Dataset, device: torch.device, *, sampler: Sampler | None = None,
                 batch_size: int = DEVICE_EVAL_BATCH_SIZE) -> None:
        self.dataset, self.device, self.sampler, self.batch_size = (
            dataset, device, sampler, batch_size)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        n = len(self.dataset)  # type: ignore[arg-type]
        chunks = ([np.asarray(c, dtype=np.int64) for c in self.sampler] if self.sampler is not None
                  else [np.arange(a, min(n, a + self.batch_size)) for a in
                        range(0, n, self.batch_size)])
        if not chunks:
            return
        order = torch.from_numpy(np.concatenate(chunks)).to(self.device)
        position = 0
        for chunk in chunks:
            yield self.dataset.device_batch(  # type: ignore[attr-defined]
                order[position:position + len(chunk)], self.device)
            position += len(chunk)

    def __len__(self) -> int:
        if self.sampler is not None:
            return len(self.sampler)  # type: ignore[arg-type]
        return -(-len(self.dataset) // self.batch_size)  # type: ignore[arg-type]


class DeviceItems(Dataset):
    """A view of a device-batch dataset as items (``x`` only) for
    :func:`~shortcutlab.train.normalization.channel_stats`: each DataLoader batch is rendered on
    the device in one call."""

    def __init__(self, dataset: Dataset, device: torch.device) -> None:
        self.dataset, self.device = dataset, device

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitems__(self, indices: list[int]) -> list[dict[str, torch.Tensor]]:
        idx = torch.as_tensor(indices, dtype=torch.int64).to(self.device)
        x = self.dataset.device_batch(idx, self.device)["x"]  # type: ignore[attr-defined]
        return [{"x": image} for image in x]
