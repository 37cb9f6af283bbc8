"""TrainConfig: presets, overrides, from_sources, validation (errors name the field)."""

from __future__ import annotations

import json

import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.train.algorithms import create_algorithm, list_algorithms
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.presets import DEFAULT_VALUES, PRESETS, list_presets, register_preset


def test_defaults_and_canonical_json() -> None:
    cfg = TrainConfig()
    assert (cfg.model, cfg.algorithm, cfg.preset) == ("small_cnn", "erm", "default")
    assert TrainConfig(lr=1e-3, preset="default").to_json() == cfg.to_json()
    assert TrainConfig(lr=2e-4).to_json() != cfg.to_json()
    assert cfg.replace(seed=3).seed == 3 and cfg.seed == 0
    assert TrainConfig.from_mapping(json.loads(cfg.to_json())) == cfg
    assert json.loads(cfg.to_json())["preset"] == "default" and "head" not in cfg.to_json()


def test_the_default_preset_is_neutral() -> None:
    cfg = TrainConfig()
    assert {k: getattr(cfg, k) for k in DEFAULT_VALUES} == DEFAULT_VALUES
    assert (cfg.lr, cfg.batch_size, cfg.epochs, cfg.patience) == (1e-3, 64, 30, None)
    assert (cfg.optimizer, cfg.normalization, cfg.drop_last) == ("adam", "train", False)
    assert cfg.overrides() == {} and cfg.describe_preset() == "default"


def test_the_default_preset_takes_pytorchs_own_defaults() -> None:
    """"Neutral" means PyTorch's: Adam's lr and betas, and MultiStepLR's gamma (divide by 10)
    for a schedule a user adds; read from torch itself, not from the preset."""
    import inspect

    adam = torch.optim.Adam([torch.zeros(1, requires_grad=True)]).defaults
    cfg = TrainConfig()
    assert (cfg.lr, cfg.adam_betas, cfg.weight_decay) == (
        adam["lr"], adam["betas"], adam["weight_decay"])
    gamma = inspect.signature(torch.optim.lr_scheduler.MultiStepLR).parameters["gamma"].default
    scheduled = TrainConfig(lr_milestones=(2,))
    assert scheduled.lr_gamma == gamma == 0.1
    assert scheduled.learning_rate(2) == pytest.approx(adam["lr"] * gamma)


def test_paper_preset_is_the_authors_resnet18_config() -> None:
    # trainer/resnet18config.yml and base_trainer.py of the DiagViB-6 authors: Adam lr 2e-4,
    # betas (0.9, 0.999), mini-batch 64 (drop_last), 30 epochs, no early stopping, z-scoring;
    # registered by shortcutlab.diagvib.presets through the entry point, nothing imported here
    cfg = TrainConfig(preset="paper")
    assert (cfg.lr, cfg.adam_betas, cfg.batch_size, cfg.epochs) == (2e-4, (0.9, 0.999), 64, 30)
    assert (cfg.patience, cfg.weight_decay, cfg.drop_last) == (None, 0.0, True)
    assert cfg.normalization == "train" and cfg.overrides() == {}
    assert cfg.frozen_batchnorm == "train"  # the authors' fixed=True
    algo = create_algorithm("erm", 3, cfg)
    group = algo.optimizer.param_groups[0]
    assert isinstance(algo.optimizer, torch.optim.Adam)
    assert (group["lr"], group["betas"], group["weight_decay"]) == (2e-4, (0.9, 0.999), 0.0)


def test_demo_preset_keeps_the_fast_settings_and_overrides_are_recorded() -> None:
    demo = TrainConfig(preset="demo")
    assert (demo.lr, demo.batch_size, demo.epochs, demo.patience) == (3e-3, 32, 10, 4)
    assert demo.normalization == "auto" and demo.describe_preset() == "demo"
    # docs/diagvib-fidelity.md: "`eval` freezes the statistics too, the demo default" (M272)
    assert demo.frozen_batchnorm == "eval"
    custom = TrainConfig(preset="demo", lr=1e-3, patience=None)
    assert (custom.lr, custom.patience, custom.batch_size) == (1e-3, None, 32)
    assert custom.overrides() == {"lr": 1e-3, "patience": None}
    assert custom.describe_preset() == "demo (lr=0.001, patience=None)"
    # moving to another preset keeps the overrides and takes the rest from the new preset
    moved = custom.replace(preset="paper")
    assert (moved.preset, moved.lr, moved.patience, moved.batch_size) == ("paper", 1e-3, None, 64)
    assert moved.epochs == 30
    # a field the old preset left at the engine's default takes the new preset's value
    sgd = TrainConfig(epochs=3).replace(preset="biasbed")
    assert (sgd.optimizer, sgd.lr_milestones, sgd.epochs) == ("sgd", (30, 60, 90), 3)
    with pytest.raises(TrainError, match=r"^unknown training preset 'fast'; valid choices: "
                                         r"biasbed, default, demo, paper$"):
        TrainConfig(preset="fast")


def test_from_sources_precedence(tmp_path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("preset: demo\nlr: 0.0005\nepochs: 4\nmodel: resnet18\n")
    from_file = TrainConfig.from_sources(path)
    assert (from_file.preset, from_file.lr, from_file.epochs, from_file.batch_size) == (
        "demo", 5e-4, 4, 32)
    # the preset replaces the file's preset but keeps what the file set on top of it
    moved = TrainConfig.from_sources(path, "paper")
    assert (moved.preset, moved.lr, moved.epochs, moved.batch_size, moved.model) == (
        "paper", 5e-4, 4, 64, "resnet18")
    # overrides win over both; None means "not given"
    top = TrainConfig.from_sources(path, "paper", lr=0.1, epochs=None, patience=None)
    assert (top.lr, top.epochs, top.patience) == (0.1, 4, None)
    assert TrainConfig.from_sources(epochs=None) == TrainConfig()
    assert TrainConfig.from_sources(batch_size=8).batch_size == 8
    # an area's own base preset applies when neither the file nor preset names one
    path.write_text("lr: 0.0005\n")
    assert TrainConfig.from_sources(path, base_preset="paper").preset == "paper"
    assert TrainConfig.from_sources(path).preset == "default"
    with pytest.raises(TrainError, match=r"^unknown training preset 'fast'; valid choices: "
                                         r"biasbed, default, demo, paper$"):
        TrainConfig.from_sources(path, "fast")


def test_a_legacy_protocol_key_in_a_config_file_is_the_preset(tmp_path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text("protocol: demo\nlr: 0.01\n")
    cfg = TrainConfig.from_file(path)
    assert (cfg.preset, cfg.lr, cfg.batch_size) == ("demo", 0.01, 32)
    assert TrainConfig.from_sources(path, lr=None) == cfg
    with pytest.raises(TrainError, match="both 'preset' and its former name 'protocol'"):
        TrainConfig.from_mapping({"protocol": "demo", "preset": "paper"})
    with pytest.raises(TrainError, match="protocol: Extra inputs are not permitted"):
        TrainConfig(protocol="demo")  # only user files are read leniently, not job files


def test_a_user_registers_a_preset() -> None:
    with PRESETS.scratch():
        preset = register_preset("short", {"epochs": 2, "lr": 0.01}, "two quick epochs")
        assert "short" in list_presets() and list_presets("sh*") == ["short"]
        cfg = TrainConfig(preset="short")
        assert (cfg.epochs, cfg.lr, cfg.batch_size) == (2, 0.01, 64)
        assert dict(preset.values) == {"epochs": 2, "lr": 0.01}
        assert register_preset("short", {"epochs": 2, "lr": 0.01}, "two quick epochs") == preset
        with pytest.raises(TrainError, match="'short' is already registered"):
            register_preset("short", {"epochs": 3})
        with pytest.raises(TrainError, match=r"preset 'bad' sets unknown field\(s\) head"):
            register_preset("bad", {"head": "full"})
        with pytest.raises(TrainError, match=r"preset 'bad': .*epochs: .*greater than"):
            register_preset("bad", {"epochs": 0})
    assert "short" not in list_presets()


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
        # patience 0 would stop every run after its first epoch; momentum 1 never decays
        ("patience", 0, r"patience: .*greater than or equal to 1"),
        ("momentum", 1.0, r"momentum: .*less than 1"),
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


def test_describe_preset_of_a_stored_config_matches_the_method() -> None:
    from shortcutlab.train.config import describe_preset

    for config in (TrainConfig(), TrainConfig(lr=1e-2, epochs=6), TrainConfig(preset="demo"),
                   TrainConfig(adam_betas=(0.5, 0.9))):
        stored = json.loads(json.dumps(config.model_dump(mode="json")))
        assert describe_preset(stored) == config.describe_preset()
    assert TrainConfig(lr=1e-2, epochs=6).describe_preset() == "default (lr=0.01, epochs=6)"
    assert describe_preset({"preset": "old"}) == "old"


def test_a_job_planned_before_presets_reads_as_an_earlier_version(tmp_path) -> None:
    """A job.json whose train config still says ``protocol`` (and ``head``) is refused by the
    runner, which then lists the folder as planned by an earlier shortcutlab."""
    from shortcutlab.runner.jobs import JobFileError, read_job

    stored = {k: v for k, v in TrainConfig().model_dump(mode="json").items() if k != "preset"}
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "job.json").write_text(json.dumps({
        "experiment": "x", "kind": "noop",
        "train": {**stored, "protocol": "paper", "head": "full"}}))
    with pytest.raises(JobFileError, match=r"protocol.*earlier shortcutlab"):
        read_job(folder)


def test_stored_configs_take_their_names_as_written_and_nothing_else() -> None:
    """A job's stored config is read without looking its names up (no torch-backed
    registry); a config built any other way still refuses unknown names."""
    stored = {**TrainConfig().model_dump(mode="json"), "model": "gone_net", "algorithm": "old"}
    config = TrainConfig.from_stored(stored)
    assert (config.model, config.algorithm) == ("gone_net", "old")
    with pytest.raises(TrainError, match="unknown model 'gone_net'"):
        TrainConfig(**stored)
    with pytest.raises(TrainError, match=r"lr: .*greater than 0"):  # other fields: as usual
        TrainConfig.from_stored({**stored, "lr": -1})


def test_an_optimiser_setting_the_optimiser_ignores_is_refused() -> None:
    """Adam reads no ``momentum``, SGD no ``adam_betas``, a rate without milestones no
    ``lr_gamma``: set away from the preset's value, each is refused in one line naming what
    would use it, instead of silently doing nothing."""
    with pytest.raises(TrainError, match=r"momentum=0.5 is used by optimizer 'sgd' only"):
        TrainConfig(momentum=0.5)
    with pytest.raises(TrainError, match=r"adam_betas=\(0.5, 0.9\) is used by optimizer 'adam'"):
        TrainConfig(optimizer="sgd", adam_betas=(0.5, 0.9))
    with pytest.raises(TrainError, match=r"lr_gamma=0.5 is used with lr_milestones only"):
        TrainConfig(lr_gamma=0.5)
    for fine in (TrainConfig(optimizer="sgd", momentum=0.5), TrainConfig(adam_betas=(0.5, 0.9)),
                 TrainConfig(lr_milestones=(2,), lr_gamma=0.5),
                 TrainConfig(preset="biasbed", optimizer="adam"),  # the preset's own momentum
                 TrainConfig(optimizer="sgd", momentum=0.5).replace(optimizer="sgd", lr=0.1)):
        assert TrainConfig.from_stored(fine.model_dump(mode="json")) == fine
    stored = {**TrainConfig().model_dump(mode="json"), "momentum": 0.5}
    assert TrainConfig.from_stored(stored).momentum == 0.5  # planned before: still readable


def test_the_step_schedule_drops_the_rate_at_each_milestone_epoch() -> None:
    """learning_rate(epoch) is PyTorch's MultiStepLR (the BiasBed authors' schedule): the rate
    of 0-based epoch e is lr * gamma ** (milestones <= e), so milestone 2 changes it from the
    third epoch on."""
    config = TrainConfig(optimizer="sgd", lr=0.1, lr_milestones=(2, 4), lr_gamma=0.5)
    got = [config.learning_rate(e) for e in range(6)]
    assert got == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025, 0.025])
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    torch_rates = []
    for _ in range(6):
        torch_rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert got == pytest.approx(torch_rates)
    assert config.learning_rate(3, base=1.0) == pytest.approx(0.5)
