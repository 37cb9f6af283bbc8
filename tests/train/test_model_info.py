"""The torch-free model facts (:mod:`shortcutlab.train.model_info`) agree with the model
registry on every registered model, and answer without importing torch."""

from __future__ import annotations

import os
import subprocess
import sys

from shortcutlab.train import model_info
from shortcutlab.train.model_paths import is_import_path
from shortcutlab.train.models import freezes_backbone, implied_algorithm, list_models
from tests.package_src import PACKAGE_SRC


def test_declared_facts_match_the_registry() -> None:
    declared = dict(model_info.MODEL_INFO.items())
    # names by import path or library (timm:, torchvision:) are registered as used, by any test
    registered = [n for n in list_models() if not is_import_path(n)]
    assert sorted(declared) == registered  # every built-in and entry-point model declared
    for name, info in declared.items():
        assert info == model_info.ModelInfo(implied_algorithm(name), freezes_backbone(name)), name


def test_registry_is_the_authority_once_loaded() -> None:
    from shortcutlab.train.models import REGISTRY, register_model

    def net(num_classes: int) -> None:
        return None

    with REGISTRY.scratch():  # a model of this process, declared nowhere
        register_model(net, name="own_net", algorithm="vae")
        try:
            assert model_info.implied_algorithm("own_net") == "vae"
        finally:
            register_model(net, name="own_net", override=True)  # forgets the algorithm
    assert model_info.implied_algorithm("nope") is None
    assert model_info.freezes_backbone("nope") is False


def test_facts_answer_without_torch() -> None:
    code = ("import sys\n"
            "from shortcutlab.train.model_info import freezes_backbone, implied_algorithm\n"
            "print(implied_algorithm('vae'), implied_algorithm('asr_rn18'),"
            " implied_algorithm('resnet18'), freezes_backbone('rn50_in'),"
            " freezes_backbone('small_cnn'), implied_algorithm('timm:resnet18'),"
            " freezes_backbone('torchvision:resnet50'), 'torch' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_SRC), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=120).stdout.split()
    assert out == ["vae", "asr", "None", "True", "False", "None", "False", "False"]
