"""Batches made on the device (the trainer's CUDA path for DiagViB-6, checked here on CPU), and
the bf16 / channels_last switches of TrainConfig."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.train.batches import DeviceBatches, EpochBatches, makes_device_batches
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.trainer import train
from tests.train.fake_data import FakeDiagvib


class DeviceFake(FakeDiagvib):
    """FakeDiagvib that can also make whole batches "on the device" (stacked items), counting
    the calls so that the tests see which path ran."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.device_calls: list[list[int]] = []

    def device_batch(self, indices: torch.Tensor, device: torch.device) -> dict:
        self.device_calls.append(indices.tolist())
        items = [self[int(i)] for i in indices.cpu()]
        return {"x": torch.stack([it["x"] for it in items]).to(device),
                "y": torch.stack([it["y"] for it in items]).to(device),
                "index": indices.to(device)}


def _data(cls: type = DeviceFake) -> dict:
    return dict(train_ds=cls(96), val_ds=cls(24, split="val"),
                test_sets={"test": cls(30, split="test", ood=True)})


CFG = TrainConfig(model="small_cnn", model_kwargs={"width": 8}, epochs=2, batch_size=16, lr=3e-3)


def test_device_batches_give_the_same_numbers_as_the_data_loader() -> None:
    host = train(CFG, **_data(), device_batches=False)
    data = _data()
    on_device = train(CFG, **data, device_batches=True)
    assert on_device.epochs.equals(host.epochs) and on_device.input_stats == host.input_stats
    calls = data["train_ds"].device_calls
    # statistics (256 at a time) + 2 epochs of 6 training batches; evaluation in large batches
    assert len(calls) == 1 + 2 * 6 and sorted(calls[0]) == list(range(96))
    assert data["val_ds"].device_calls == [list(range(24))] * 2
    # on CPU the default is the DataLoader (auto = only on CUDA)
    auto = _data()
    train(CFG.replace(epochs=1), **auto)
    assert auto["train_ds"].device_calls == [] or torch.cuda.is_available()


def test_device_batches_follow_the_epoch_order() -> None:
    ds = DeviceFake(20)
    sampler = EpochBatches(20, 6, seed=3, drop_last=True)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        got = [b["index"].tolist() for b in DeviceBatches(ds, torch.device("cpu"),
                                                         sampler=sampler)]
        assert got == [list(c) for c in sampler] and len(got) == 3
    in_order = DeviceBatches(ds, torch.device("cpu"), batch_size=8)
    assert [b["index"].tolist() for b in in_order] == [list(range(8)), list(range(8, 16)),
                                                      list(range(16, 20))]
    assert len(in_order) == 3


def test_device_batches_need_datasets_that_make_them() -> None:
    assert makes_device_batches(DeviceFake(3)) and not makes_device_batches(FakeDiagvib(3))
    with pytest.raises(TrainError, match="device_batches=True needs .* FakeDiagvib has none"):
        train(CFG, **_data(FakeDiagvib), device_batches=True)


def test_bf16_and_channels_last_are_config_switches_off_by_default() -> None:
    assert CFG.precision == "fp32" and not CFG.channels_last
    stored = json.loads(CFG.to_json())  # every field is in the canonical config (the job id)
    assert stored["precision"] == "fp32" and stored["channels_last"] is False
    fast = CFG.replace(precision="bf16", channels_last=True)
    assert json.loads(fast.to_json())["precision"] == "bf16"
    assert TrainConfig.from_mapping(json.loads(fast.to_json())) == fast
    with pytest.raises(TrainError, match="precision"):
        TrainConfig(precision="fp8")
    base = train(CFG, **_data(), device_batches=True)
    res = train(fast, **_data(), device_batches=True)
    losses = res.epochs["train_loss"].to_numpy()
    assert np.isfinite(losses).all() and res.val_acc > 0.5
    # bf16 changes the numbers (that is why it is part of the config, hence of the job id)
    assert not np.array_equal(losses, base.epochs["train_loss"].to_numpy())
    layout = train(CFG.replace(channels_last=True, epochs=1), **_data())
    assert np.isfinite(layout.epochs["val_loss"]).all()
