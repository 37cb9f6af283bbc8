"""TrainConfig validation: wrong types and unknown names give errors naming them."""

from __future__ import annotations

import pytest

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm, list_algorithms
from shortcutlab.train.config import TrainConfig


def test_defaults_and_canonical_json() -> None:
    cfg = TrainConfig()
    assert (cfg.model, cfg.algorithm) == ("small_cnn", "erm")
    assert TrainConfig(lr=1e-3).to_json() == cfg.to_json()
    assert cfg.replace(seed=3).seed == 3 and cfg.seed == 0


@pytest.mark.parametrize(
    ("field", "value", "pattern"),
    [
        ("lr", "fast", r"lr: .*'fast'"),
        ("batch_size", 12.5, r"batch_size: .*12\.5"),
        ("epochs", 0, r"epochs: .*greater than or equal to 1"),
        ("lr_rate", 0.1, r"lr_rate: Extra inputs are not permitted"),
        ("freeze_backbone", "maybe", r"freeze_backbone: .*'maybe'"),
    ],
)
def test_wrong_values_name_the_field(field: str, value: object, pattern: str) -> None:
    with pytest.raises(TrainError, match=pattern):
        TrainConfig(**{field: value})


def test_unknown_model_and_algorithm_list_choices() -> None:
    with pytest.raises(TrainError, match=r"unknown model 'vgg'; valid choices: .*resnet18"):
        TrainConfig(model="vgg")
    with pytest.raises(TrainError, match=r"unknown algorithm 'dro'; valid choices: .*erm"):
        TrainConfig(algorithm="dro")
    assert "erm" in list_algorithms()


def test_from_file(tmp_path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("model: resnet18\nlr: 0.0005\nbatch_size: 32\n")
    cfg = TrainConfig.from_file(path)
    assert (cfg.model, cfg.lr, cfg.batch_size) == ("resnet18", 0.0005, 32)
    path.write_text("- not a mapping\n")
    with pytest.raises(TrainError, match="must be a mapping"):
        TrainConfig.from_file(path)
    with pytest.raises(TrainError, match="not found"):
        TrainConfig.from_file(tmp_path / "missing.yaml")


def test_unknown_or_mistyped_hparams_of_an_algorithm() -> None:
    with pytest.raises(TrainError, match=r"unknown hyper-parameter of algorithm erm 'alpha'"):
        create_algorithm("erm", 3, TrainConfig(hparams={"alpha": 1.0}))
