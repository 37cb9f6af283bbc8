"""The model registry: every registered model builds and runs; weights only from local files."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
import torch
from torch import nn

from shortcutlab.errors import DataNotFoundError, TrainError
from shortcutlab.train import models
from shortcutlab.train.models import (
    create_model,
    get_head,
    list_models,
    register_model,
    split_model,
)

PAPER_MODELS = {"alexnet", "resnet18", "resnet50", "wide_resnet50_2", "densenet161"}


def tiny_factory(num_classes: int) -> nn.Module:
    """Used by the entry-point test."""
    return nn.Sequential(nn.Flatten(), nn.LazyLinear(num_classes))


def test_registry_has_the_paper_models_and_small_ones() -> None:
    names = list_models()
    assert PAPER_MODELS | {"small_cnn", "rn50_in"} <= set(names)
    assert list_models("resnet*") == ["resnet18", "resnet50"]


# Initialising these on CPU costs seconds each; their forward is checked on the meta device
# (shapes only), the others run a real forward pass.
HEAVY = {"resnet50", "wide_resnet50_2", "densenet161"}


@pytest.mark.parametrize("name", [n for n in list_models() if n != "rn50_in"])
def test_every_model_outputs_num_classes(name: str) -> None:
    torch.manual_seed(0)
    device = torch.device("meta" if name in HEAVY else "cpu")
    with device:
        model = create_model(name, 3).eval()
    with torch.no_grad():
        out = model(torch.rand(2, 3, 64, 64, device=device))
    assert out.shape == (2, 3)
    assert get_head(model).out_features == 3
    if device.type == "cpu":
        assert torch.isfinite(out).all()


def test_small_cnn_keeps_position_information() -> None:
    """The head sees a spatial map, so moving a blob changes the features (no global pooling)."""
    model = create_model("small_cnn", 3).eval()
    features, _ = split_model(model)
    a, b = torch.zeros(1, 3, 128, 128), torch.zeros(1, 3, 128, 128)
    a[..., 10:30, 10:30] = 1
    b[..., 90:110, 90:110] = 1
    with torch.no_grad():
        fa, fb = features(a), features(b)
    assert fa.shape == fb.shape and fa.shape[1] > 100
    assert not torch.allclose(fa, fb, atol=1e-3)


def test_small_cnn_halves_the_resolution_in_each_of_its_four_conv_stages() -> None:
    """"Four strided conv blocks": every convolution has stride 2, so a 128x128 image reaches
    the 4x4 pooling as a 128 / 2**4 = 8x8 map."""
    model = create_model("small_cnn", 3, width=8).eval()
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert [c.stride for c in convs] == [(2, 2)] * 4
    pool = next(m for m in model.modules() if isinstance(m, nn.AdaptiveAvgPool2d))
    seen: list[tuple[int, ...]] = []
    pool.register_forward_pre_hook(lambda _m, args: seen.append(tuple(args[0].shape[2:])))
    with torch.no_grad():
        model(torch.zeros(1, 3, 128, 128))
    assert seen == [(8, 8)]


def test_unknown_model_lists_choices() -> None:
    with pytest.raises(TrainError, match=r"unknown model 'resnet9'.*small_cnn"):
        create_model("resnet9", 3)


@pytest.mark.usefixtures("scratch_registries")
def test_register_model_decorator() -> None:

    @register_model(name="my_net")
    def _build(num_classes: int, hidden: int = 4) -> nn.Module:
        return nn.Sequential(
            nn.Flatten(), nn.Linear(3 * 8 * 8, hidden), nn.Linear(hidden, num_classes)
        )

    assert "my_net" in list_models("my_*")
    model = create_model("my_net", 5, hidden=7)
    assert model(torch.rand(2, 3, 8, 8)).shape == (2, 5)
    with pytest.raises(TrainError, match="bad keyword arguments for model 'my_net'"):
        create_model("my_net", 5, nonsense=1)


def test_entry_point_models_are_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    from shortcutlab.utils import registry

    ep = EntryPoint("plugin_net", f"{__name__}:tiny_factory", models.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep] if
                        group == models.ENTRY_POINT_GROUP else [])
    with models.REGISTRY.scratch(reload=True):
        assert "plugin_net" in list_models()
        assert create_model("plugin_net", 3)(torch.rand(2, 3, 4, 4)).shape == (2, 3)
    assert "plugin_net" not in list_models()


def test_pretrained_loads_body_and_resizes_head(tmp_path) -> None:
    torch.manual_seed(1)
    source = create_model("resnet18", 1000)
    path = tmp_path / "rn18.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in source.state_dict().items()}}, path)
    model = create_model("resnet18", 3, pretrained=path)
    assert torch.equal(model.conv1.weight, source.conv1.weight)
    assert torch.equal(model.layer4[1].bn2.running_var, source.layer4[1].bn2.running_var)
    assert model.fc.out_features == 3


def test_weights_of_another_architecture_name_it(tmp_path) -> None:
    path = tmp_path / "cnn.pth"
    torch.save(create_model("small_cnn", 3).state_dict(), path)
    with pytest.raises(TrainError, match=r"not for architecture 'resnet18'.*fit small_cnn"):
        create_model("resnet18", 3, pretrained=path)


def test_missing_weights_file_and_rn50_in_without_weights(tmp_path) -> None:
    with pytest.raises(DataNotFoundError, match="not found"):
        create_model("resnet18", 3, pretrained=tmp_path / "nope.pth")
    with pytest.raises(DataNotFoundError, match="rn50_in.*needs pretrained"):
        create_model("rn50_in", 3)


def test_non_tensor_checkpoint_is_refused(tmp_path) -> None:
    path = tmp_path / "bad.pth"
    torch.save({"epoch": 3, "note": "no tensors"}, path)
    with pytest.raises(TrainError, match="state dict"):
        create_model("small_cnn", 3, pretrained=path)
    empty = tmp_path / "empty.pth"  # torch's own error for it has no message
    empty.write_bytes(b"")
    with pytest.raises(TrainError, match=r"weights_only=True\): the file is empty$"):
        create_model("small_cnn", 3, pretrained=empty)
    whole = tmp_path / "whole.pth"  # the model pickled, not its state dict
    torch.save(create_model("small_cnn", 3), whole)
    with pytest.raises(TrainError, match=r"save model.state_dict\(\) instead$") as refused:
        create_model("small_cnn", 3, pretrained=whole)
    assert "\n" not in str(refused.value)  # one line, not torch's six


def test_rn50_in_frozen_backbone_trains_only_the_head(tmp_path) -> None:
    """RN50-IN: ImageNet-style weights (1000-way head) load, backbone and its BatchNorm
    statistics stay fixed during a training step, the new 3-way head learns."""
    from shortcutlab.train.algorithms import create_algorithm
    from shortcutlab.train.config import TrainConfig

    torch.manual_seed(2)
    path = tmp_path / "rn50.pth"
    torch.save(create_model("resnet50", 1000).state_dict(), path)
    algo = create_algorithm("erm", 3, TrainConfig(model="rn50_in", pretrained=str(path), lr=0.1,
                                                  frozen_batchnorm="eval"))
    net = algo.network
    trainable = {n for n, p in net.named_parameters() if p.requires_grad}
    assert trainable == {"fc.weight", "fc.bias"}
    before = {k: v.clone() for k, v in net.state_dict().items()}
    algo.train()
    algo.update({"x": torch.rand(4, 3, 64, 64), "y": torch.tensor([0, 1, 2, 0])})
    after = net.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"fc.weight", "fc.bias"}


def test_rn50_in_frozen_batchnorm_train_mode_updates_running_statistics(tmp_path) -> None:
    """``frozen_batchnorm="train"`` (the paper protocol, the authors' ``fixed=True``): the frozen
    backbone's weights stay, its BatchNorm running statistics move with the batches."""
    from shortcutlab.train.algorithms import create_algorithm
    from shortcutlab.train.config import TrainConfig

    torch.manual_seed(2)
    path = tmp_path / "rn50.pth"
    torch.save(create_model("resnet50", 1000).state_dict(), path)
    cfg = TrainConfig(model="rn50_in", pretrained=str(path), lr=0.1, preset="paper")
    assert cfg.frozen_batchnorm == "train"
    algo = create_algorithm("erm", 3, cfg)
    net = algo.network
    before = {k: v.clone() for k, v in net.state_dict().items()}
    algo.train()
    algo.update({"x": torch.rand(4, 3, 64, 64), "y": torch.tensor([0, 1, 2, 0])})
    changed = {k for k, v in net.state_dict().items() if not torch.equal(before[k], v)}
    assert "bn1.running_mean" in changed and "layer1.0.bn1.running_var" in changed
    assert "conv1.weight" not in changed and "bn1.weight" not in changed
