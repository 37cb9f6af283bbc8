"""TrainConfig: protocol presets, overrides, validation (errors name the field)."""

from __future__ import annotations

import json

import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm, list_algorithms
from shortcutlab.train.config import TrainConfig


def test_defaults_and_canonical_json() -> None:
    cfg = TrainConfig()
    assert (cfg.model, cfg.algorithm) == ("small_cnn", "erm")
    assert TrainConfig(lr=2e-4, protocol="paper").to_json() == cfg.to_json()
    assert TrainConfig(lr=1e-3).to_json() != cfg.to_json()
    assert cfg.replace(seed=3).seed == 3 and cfg.seed == 0
    assert TrainConfig.from_mapping(json.loads(cfg.to_json())) == cfg


def test_paper_protocol_is_the_authors_resnet18_config() -> None:
    # trainer/resnet18config.yml and base_trainer.py of the DiagViB-6 authors: Adam lr 2e-4,
    # betas (0.9, 0.999), mini-batch 64 (drop_last), 30 epochs, no early stopping, z-scoring
    cfg = TrainConfig()
    assert cfg.protocol == "paper"
    assert (cfg.lr, cfg.adam_betas, cfg.batch_size, cfg.epochs) == (2e-4, (0.9, 0.999), 64, 30)
    assert (cfg.patience, cfg.weight_decay, cfg.drop_last) == (None, 0.0, True)
    assert cfg.normalization == "train" and cfg.overrides() == {}
    # the choices the paper leaves open, as the authors' code takes them
    assert (cfg.head, cfg.frozen_batchnorm) == ("full", "train")
    algo = create_algorithm("erm", 3, cfg)
    group = algo.optimizer.param_groups[0]
    assert isinstance(algo.optimizer, torch.optim.Adam)
    assert (group["lr"], group["betas"], group["weight_decay"]) == (2e-4, (0.9, 0.999), 0.0)


def test_demo_protocol_keeps_the_fast_settings_and_overrides_are_recorded() -> None:
    demo = TrainConfig(protocol="demo")
    assert (demo.lr, demo.batch_size, demo.epochs, demo.patience) == (3e-3, 32, 10, 4)
    assert demo.normalization == "auto" and demo.describe_protocol() == "demo"
    custom = TrainConfig(protocol="demo", lr=1e-3, patience=None)
    assert (custom.lr, custom.patience, custom.batch_size) == (1e-3, None, 32)
    assert custom.overrides() == {"lr": 1e-3, "patience": None}
    assert custom.describe_protocol() == "demo (lr=0.001, patience=None)"
    # moving to another protocol keeps the overrides and takes the rest from the new preset
    moved = custom.replace(protocol="paper")
    assert (moved.protocol, moved.lr, moved.patience, moved.batch_size) == ("paper", 1e-3, None, 64)
    assert moved.epochs == 30
    with pytest.raises(TrainError, match=r"protocol: Input should be 'paper', 'demo' or 'biasbed'"):
        TrainConfig(protocol="fast")


@pytest.mark.parametrize(
    ("field", "value", "pattern"),
    [
        ("lr", "fast", r"lr: .*'fast'"),
        ("batch_size", 12.5, r"batch_size: .*12\.5"),
        ("epochs", 0, r"epochs: .*greater than or equal to 1"),
        ("lr_rate", 0.1, r"lr_rate: Extra inputs are not permitted"),
        ("freeze_backbone", "maybe", r"freeze_backbone: .*'maybe'"),
        ("normalization", "minmax", r"normalization: Input should be 'auto', 'train'"),
        ("adam_betas", (0.9, 1.0), r"adam_betas: .*in \[0, 1\)"),
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


def test_describe_protocol_of_a_stored_config_matches_the_method() -> None:
    from shortcutlab.train.config import describe_protocol

    for config in (TrainConfig(), TrainConfig(lr=1e-3, epochs=6), TrainConfig(protocol="demo"),
                   TrainConfig(adam_betas=(0.5, 0.9))):
        stored = json.loads(json.dumps(config.model_dump(mode="json")))
        assert describe_protocol(stored) == config.describe_protocol()
    assert TrainConfig(lr=1e-3, epochs=6).describe_protocol() == "paper (lr=0.001, epochs=6)"
    assert describe_protocol({"protocol": "old"}) == "old"
