"""Any timm or torchvision architecture by name (issue 34): ``timm:<arch>``,
``torchvision:<arch>``, built with the task's number of outputs, weights only from a local file,
timm an optional extra, and ``shortcutlab models`` listing what can be named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import TrainError
from shortcutlab.train import model_zoo
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import REGISTRY, create_model

runner = CliRunner()


@pytest.fixture
def scratch():
    with REGISTRY.scratch():
        yield


@pytest.mark.usefixtures("scratch")
def test_torchvision_model_by_name_has_the_task_outputs_and_takes_local_weights(
    tmp_path: Path,
) -> None:
    name = "torchvision:mobilenet_v3_small"
    assert TrainConfig(model=name).model == name  # registered on first use, in Python
    net = create_model(name, 5)
    assert net(torch.rand(2, 3, 64, 64)).shape == (2, 5)
    torch.manual_seed(1)
    saved = create_model(name, 1000).state_dict()  # an "ImageNet" checkpoint, 1000-way head
    torch.save(saved, tmp_path / "w.pth")
    loaded = create_model(name, 5, pretrained=tmp_path / "w.pth").state_dict()
    key = "features.0.0.weight"
    assert torch.equal(loaded[key], saved[key])  # the body comes from the file, the head is new
    assert loaded["classifier.3.weight"].shape == (5, 1024)


@pytest.mark.usefixtures("scratch")
def test_torchvision_vit_takes_the_task_image_size() -> None:
    net = create_model("torchvision:vit_b_16", 3, img_size=32)  # built for 224 px otherwise
    assert net(torch.rand(1, 3, 32, 32)).shape == (1, 3)


@pytest.mark.usefixtures("scratch")
def test_timm_models_by_name_take_any_input_size() -> None:
    pytest.importorskip("timm")
    for name in ("timm:test_convnext", "timm:vit_tiny_patch16_224"):  # a ViT fixed at 224 px
        net = create_model(TrainConfig(model=name).model, 4)
        assert net(torch.rand(2, 3, 64, 64)).shape == (2, 4), name
    gray = create_model("timm:test_convnext", 2, in_chans=1)
    assert gray(torch.rand(1, 1, 64, 64)).shape == (1, 2)


def test_unknown_architecture_names_the_closest() -> None:
    with pytest.raises(TrainError, match=r"unknown torchvision model 'resnet19'.*"
                                         r"torchvision:resnet18"):
        TrainConfig(model="torchvision:resnet19")
    with pytest.raises(TrainError, match="expected one of timm:<arch>"):
        model_zoo.zoo_factory("timm:")


def test_missing_timm_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "timm", None)  # import timm -> ImportError
    with pytest.raises(TrainError, match=r"pip install 'shortcutlab\[timm\]'"):
        TrainConfig(model="timm:convnext_tiny")
    assert model_zoo.available() == {"timm": False, "torchvision": True}
    res = runner.invoke(app, ["models", "--filter", "resnet18"])
    assert res.exit_code == 0 and "shortcutlab[timm]" in res.output
    assert "torchvision:resnet18" in res.output


def test_models_command_lists_every_source() -> None:
    res = runner.invoke(app, ["models", "--filter", "resnet1*", "--json"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.output)
    assert "resnet18" in found["registered"] and "small_cnn" not in found["registered"]
    assert "torchvision:resnet18" in found["torchvision"]
    assert "torchvision:resnet50" not in found["torchvision"]
    if model_zoo.available()["timm"]:
        assert "timm:resnet18" in found["timm"]
    prefixed = json.loads(runner.invoke(app, ["models", "--filter", "torchvision:vit*",
                                              "--json"]).output)
    assert prefixed["registered"] == [] and "torchvision:vit_b_16" in prefixed["torchvision"]


@pytest.mark.parametrize("model", ["torchvision:mobilenet_v3_small", "timm:test_convnext"])
def test_library_models_train_on_a_diagvib_experiment_from_the_cli(
    model: str, tmp_path: Path
) -> None:
    if model.startswith("timm:"):
        pytest.importorskip("timm")
    res = runner.invoke(app, [
        "diagvib", "run", "--model", model, "--study", "ZSO", "--pairs", "hue-shape",
        "--samples", "0", "--scale", "0.002", "--epochs", "1", "--batch-size", "16",
        "--backend", "serial", "--device", "cpu", "--out", str(tmp_path / "runs"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["done"] == 1
