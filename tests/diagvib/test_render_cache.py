"""A small split keeps its rendered images (later epochs render nothing); a large one does not;
the pixels are the same either way."""

from __future__ import annotations

import pickle

import numpy as np
import torch
from torch.utils.data import DataLoader

from shortcutlab.diagvib import dataset as dataset_module
from shortcutlab.diagvib.dataset import DiagvibDataset
from tests.diagvib.test_dataset import SPEC, FakeGenerator


def _epoch(ds: DiagvibDataset, batch_size: int) -> torch.Tensor:
    return torch.cat([b["x"] for b in DataLoader(ds, batch_size=batch_size, shuffle=False)])


def test_a_small_split_renders_each_image_once_with_the_same_pixels(monkeypatch) -> None:
    gen = FakeGenerator()
    ds = DiagvibDataset(SPEC, "train", generator=gen)  # 87 images, 4 MB: kept
    first = _epoch(ds, 16)
    assert sum(gen.calls) == 87
    again = _epoch(ds, 7)  # another epoch, other batches: nothing rendered again
    assert sum(gen.calls) == 87 and torch.equal(first, again)
    picked = ds.render(np.array([5, 3, 5, -1]))
    assert sum(gen.calls) == 87
    monkeypatch.setattr(dataset_module, "RENDER_CACHE_BYTES", 0)  # nothing kept
    fresh = DiagvibDataset(SPEC, "train", generator=FakeGenerator())
    assert torch.equal(fresh.render(np.array([5, 3, 5, 86])), picked)
    assert torch.equal(_epoch(fresh, 16), first)
    copy = pickle.loads(pickle.dumps(ds))  # what a DataLoader worker receives: no images
    assert copy._cache is None and not copy._cached.any()


def test_a_split_too_large_to_keep_is_rendered_on_every_access(monkeypatch) -> None:
    monkeypatch.setattr(dataset_module, "RENDER_CACHE_BYTES", 86 * 3 * 128 * 128)  # 1 short
    gen = FakeGenerator()
    ds = DiagvibDataset(SPEC, "train", generator=gen)
    first = _epoch(ds, 16)
    assert torch.equal(_epoch(ds, 16), first) and sum(gen.calls) == 2 * 87


def test_images_rendered_in_part_are_completed_on_demand() -> None:
    gen = FakeGenerator()
    ds = DiagvibDataset(SPEC, "val", generator=gen)
    ds.render(np.array([0, 1]))
    ds.render(np.array([1, 2, 2, 3]))  # only 2 and 3 are new, each rendered once
    assert gen.calls == [2, 2]
    whole = ds.render(np.arange(len(ds)))
    assert gen.calls == [2, 2, len(ds) - 4]
    fresh = DiagvibDataset(SPEC, "val", generator=FakeGenerator())
    assert torch.equal(whole, fresh.render(np.arange(len(fresh))))
