"""The authors' image recipe (256 px, their crop) and the paper's metric (top-1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shortcutlab.biasbed.datasets import (
    BIASBED_CROP,
    TORCHVISION_CROP,
    BiasbedDataError,
    FolderExperiment,
)
from shortcutlab.train.trainer import evaluate
from tests.biasbed.conftest import write_folder

CLASSES = {"n02123045": 0, "n02106662": 1, "n04591713": 2}


def experiment(tmp_path: Path, **kw) -> FolderExperiment:
    if not (tmp_path / "train").exists():
        write_folder(tmp_path / "train", CLASSES, 2, 0, size=(300, 280))
        write_folder(tmp_path / "val", CLASSES, 1, 1, size=(300, 280))
        write_folder(tmp_path / "cue", {"cat": 0, "dog": 1, "bottle": 2}, 1, 2, size=(300, 280))
    return FolderExperiment(
        tmp_path / "train", tmp_path / "val", {"cue": tmp_path / "cue", "in": tmp_path / "val"},
        label_space_kind="imagenet1k", **kw,
    )


def test_biasbed_preprocess_is_the_authors_pipeline(tmp_path: Path, monkeypatch) -> None:
    exp = experiment(tmp_path, image_size=256, preprocess="biasbed")
    train, val, tests = exp.datasets()
    assert train.preprocess == "imagenet-train" and train.crop == BIASBED_CROP
    assert BIASBED_CROP == ((0.5, 1.0), (0.8, 1.0))
    assert train[0]["x"].shape == (3, 256, 256)
    assert val[0]["x"].shape == (3, 256, 256) and tests["in"][0]["x"].shape == (3, 256, 256)
    # 16-class sets: Resize(256) + CenterCrop(224), as the authors' torchvision loaders
    assert tests["cue"][0]["x"].shape == (3, 224, 224)
    assert exp.describe()["preprocess"] == "biasbed"
    # the crop parameters reach RandomResizedCrop
    seen = []
    import torchvision.transforms as T

    real = T.RandomResizedCrop

    def spy(size, scale, ratio):
        seen.append((size, scale, ratio))
        return real(size, scale=scale, ratio=ratio)

    monkeypatch.setattr(T, "RandomResizedCrop", spy)
    train[0]
    ours = experiment(tmp_path, image_size=32, preprocess="imagenet").datasets()[0]
    ours[0]
    assert seen == [(256, (0.5, 1.0), (0.8, 1.0)), (32, (0.08, 1.0), (3 / 4, 4 / 3))]
    assert ours.crop == TORCHVISION_CROP


class Fixed:
    """Predicts one class for every image, through the trainer's evaluate."""

    num_classes = 1000
    input_norm = staticmethod(lambda x: x)
    training = False

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def predict(self, x):
        out = torch.zeros(len(x), 1000)
        out[:, 235] = 1.0  # n02106662 (German shepherd): right for one of three classes
        return out


def test_top1_is_the_default_in_the_imagenet1k_space(tmp_path: Path) -> None:
    write_folder(tmp_path / "unbal", {"n02123045": 0, "n02106662": 1}, 1, 4, size=(20, 20))
    write_folder(tmp_path / "unbal", {"n02106662": 1}, 3, 5, size=(20, 20))  # 3 of 4 images
    exp = experiment(tmp_path, image_size=16, preprocess="resize")
    exp = FolderExperiment(exp.train_dir, exp.val_dir, {"u": tmp_path / "unbal"},
                           image_size=16, label_space_kind="imagenet1k")
    assert exp.resolved_metric() == "top1" and exp.describe()["metric"] == "top1"
    test = exp.datasets()[2]["u"]
    assert test.metric == "top1"
    top1 = evaluate(Fixed(), test, device=torch.device("cpu")).acc
    assert top1 == pytest.approx(0.75)  # 3 of 4 images are German shepherds
    per_class = FolderExperiment(exp.train_dir, exp.val_dir, {"u": tmp_path / "unbal"},
                                 image_size=16, label_space_kind="imagenet1k",
                                 metric="mean_per_class")
    assert "metric" not in per_class.describe()
    test = per_class.datasets()[2]["u"]
    assert evaluate(Fixed(), test, device=torch.device("cpu")).acc == pytest.approx(0.5)
    # other label spaces keep mean per-class accuracy unless asked
    plain = FolderExperiment(exp.train_dir, exp.val_dir, image_size=16)
    assert plain.resolved_metric() == "mean_per_class"
    with pytest.raises(BiasbedDataError, match="valid choices: auto, top1, mean_per_class"):
        FolderExperiment(exp.train_dir, exp.val_dir, metric="top5")


def test_the_biasbed_preset_normalises_with_imagenet_statistics() -> None:
    """The authors' ImageNet pipeline ends in ``Normalize`` with ImageNet's mean and std
    (0.485, 0.456, 0.406 / 0.229, 0.224, 0.225), not statistics of the training split: the
    preset's ``normalization`` is ``imagenet`` (a model trained on Stylized-ImageNet and tested
    on ImageNet sees the same input scaling)."""
    from shortcutlab.train.config import TrainConfig

    cfg = TrainConfig(preset="biasbed", algorithm="erm")
    assert cfg.normalization == "imagenet"
    assert (cfg.optimizer, cfg.momentum, cfg.weight_decay, cfg.lr_gamma) == ("sgd", 0.9, 1e-4,
                                                                             0.1)
