"""Every registered model x every compatible registered algorithm takes one optimisation step on
CPU at a tiny size (timm's tests over ``list_models()``, DomainBed's algorithms x datasets):
a model or algorithm added to the registries is tested here without editing this file.

Compatibility comes from the registries themselves: a model registered with its training
algorithm (:func:`~shortcutlab.train.models.implied_algorithm`) pairs only with it, and such an
algorithm only with its models; an algorithm that needs a known structure says which models it
takes (``Algorithm.supports``), and must then refuse the others with a TrainError when built.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.train import models
from shortcutlab.train.algorithms import create_algorithm, get_algorithm_class, list_algorithms
from shortcutlab.train.algorithms.base import AlgorithmContext
from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.models import _DEFAULTS, implied_algorithm, list_models

SIZE, BATCH, CLASSES = 64, 4, 3  # 64 px: the smallest side AlexNet's three poolings accept
HEAVY = {"densenet161", "wide_resnet50_2", "resnet50", "rn50_in"}
HEAVY_SIZE = 32  # ResNet-50 and DenseNet-161 reduce 32 px to 1x1: the same code path, 4x cheaper


def _structural(algorithm: str) -> bool:
    """Whether ``algorithm`` depends on the network's structure (it overrides ``supports``:
    SagNet, pAdaIN, InfoDrop reach into the layers). Heavy architectures are stepped with ERM and
    these; an algorithm that only calls the network (Stylized, Debiased) meets every code path
    of it on the light architectures already, at a fraction of the time."""
    from shortcutlab.train.algorithms.base import Algorithm

    cls = get_algorithm_class(algorithm)
    return cls.supports.__func__ is not Algorithm.supports.__func__  # type: ignore[attr-defined]


def pairs() -> list[Any]:
    implied_by = {implied_algorithm(m) for m in list_models()} - {None}
    out = []
    for model in list_models():
        own = implied_algorithm(model)
        for algorithm in list_algorithms():
            if (own or algorithm) == algorithm and (own is not None or algorithm not in implied_by):
                if model in HEAVY and algorithm != "erm" and not _structural(algorithm):
                    continue
                marks = [pytest.mark.slow] if model in HEAVY else []
                out.append(pytest.param(model, algorithm, id=f"{model}-{algorithm}", marks=marks))
    return out


def _copies(factory: Callable[..., torch.nn.Module]) -> Callable[..., torch.nn.Module]:
    """``factory``, building once per set of arguments and handing out deep copies (a fresh
    instance each call, as the factory's own: Wide ResNet-50-2's random init costs ten times
    its copy)."""
    built: dict[str, torch.nn.Module] = {}

    @functools.wraps(factory)
    def build(*args: Any, **kwargs: Any) -> torch.nn.Module:
        key = repr((args, sorted(kwargs.items())))
        if key not in built:
            built[key] = factory(*args, **kwargs)
        return copy.deepcopy(built[key])

    return build


@pytest.fixture(scope="module", autouse=True)
def built_once() -> Iterator[None]:
    """Every registered architecture built through its own factory once per module, then
    copied (the registry's entries are restored at the end)."""
    with models.REGISTRY.scratch():
        for name, factory in models.REGISTRY.items():
            models.REGISTRY.register(name, _copies(factory), override=True)
        yield


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Local weight files for what needs them: a style-transfer network (image-space Stylized
    and Debiased) and, per model that requires pretrained weights, a random state dict."""
    root = tmp_path_factory.mktemp("weights")
    files = {"style": root / "adain.pth"}
    torch.manual_seed(0)
    torch.save(AdaINStyleTransfer().state_dict(), files["style"])
    for name, defaults in _DEFAULTS.items():
        if defaults.get("requires_pretrained"):
            files[name] = root / f"{name}.pth"
            torch.save(_random_body(name), files[name])
    return files


def _random_model(name: str, num_classes: int = CLASSES) -> torch.nn.Module:
    """The registered architecture ``name``, randomly initialised (no weights file needed)."""
    return models.REGISTRY.get(name)(num_classes=num_classes)


@functools.cache
def _structure(name: str) -> torch.nn.Module:
    """One random instance per architecture, only inspected (``Algorithm.supports``), never
    trained: building DenseNet-161 once instead of once per algorithm."""
    return _random_model(name)


def _random_body(name: str) -> dict[str, torch.Tensor]:
    return _random_model(name, 1000).state_dict()


def _batch(size: int = SIZE) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "x": torch.rand(BATCH, 3, size, size, generator=g),
        "y": torch.arange(BATCH) % CLASSES,
    }


@pytest.mark.parametrize(("model", "algorithm"), pairs())
def test_one_step_of_every_model_and_algorithm(
    model: str, algorithm: str, weights: dict[str, Path]
) -> None:
    torch.manual_seed(0)
    hparams = {"style_weights": str(weights["style"])} if algorithm in ("stylized", "debiased") \
        else {}
    cfg = TrainConfig(model=model, algorithm=algorithm, hparams=hparams, batch_size=BATCH,
                      pretrained=str(weights[model]) if model in weights else None)
    if not get_algorithm_class(algorithm).supports(_structure(model)):
        with pytest.raises(TrainError):
            create_algorithm(algorithm, CLASSES, cfg, AlgorithmContext())
        return
    algo = create_algorithm(algorithm, CLASSES, cfg, AlgorithmContext())
    algo.train()
    before = {k: v.detach().clone() for k, v in algo.named_parameters() if v.requires_grad}
    size = HEAVY_SIZE if model in HEAVY else SIZE
    out = algo.update(_batch(size))
    assert torch.isfinite(torch.as_tensor(out["loss"])).all()
    params = dict(algo.named_parameters())
    changed = [k for k, v in before.items() if not torch.equal(params[k], v)]
    assert changed, "one update changed no trainable parameter"
    algo.eval()
    with torch.no_grad():
        logits = algo.predict(_batch(size)["x"])
    assert logits.shape == (BATCH, CLASSES) and torch.isfinite(logits).all()


#: a sample of the architectures named by library (train/model_zoo.py): a small timm model (when
#: the extra is installed) and a small torchvision one, one ERM step each on CPU
ZOO_SAMPLE = ["timm:test_vit", "torchvision:mobilenet_v3_small"]


@pytest.mark.parametrize("model", ZOO_SAMPLE)
def test_one_step_of_a_library_model(model: str) -> None:
    if model.startswith("timm:"):
        pytest.importorskip("timm")
    torch.manual_seed(0)
    with models.REGISTRY.scratch():
        algo = create_algorithm("erm", CLASSES, TrainConfig(model=model, batch_size=BATCH),
                                AlgorithmContext())
        algo.train()
        before = {k: v.detach().clone() for k, v in algo.named_parameters()}
        out = algo.update(_batch())
        assert torch.isfinite(torch.as_tensor(out["loss"])).all()
        params = dict(algo.named_parameters())
        assert any(not torch.equal(params[k], v) for k, v in before.items())
        algo.eval()
        with torch.no_grad():
            assert algo.predict(_batch()["x"]).shape == (BATCH, CLASSES)
