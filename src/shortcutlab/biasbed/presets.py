"""BiasBed's training preset, ``biasbed``: the authors' ImageNet recipe (Kalischek et al.).

SGD momentum 0.9, weight decay 1e-4, batch 128, 100 epochs with the learning rate divided by 10
at epochs 30, 60 and 90, lr 0.2 (their ERM and SagNet configs use 1e-4: the BiasBed protocol
sets that per algorithm), ImageNet normalisation; the folder datasets add RandomResizedCrop for
training. Registered on import, which the ``shortcutlab.presets`` entry point does.
"""

from __future__ import annotations

from shortcutlab.train.presets import register_preset

BIASBED = register_preset("biasbed", {
    "lr": 0.2,
    "adam_betas": (0.9, 0.999),
    "batch_size": 128,
    "epochs": 100,
    "patience": None,
    "weight_decay": 1e-4,
    "drop_last": False,
    "normalization": "imagenet",
    "optimizer": "sgd",
    "momentum": 0.9,
    "lr_milestones": (30, 60, 90),
    "lr_gamma": 0.1,
    "frozen_batchnorm": "eval",
}, "BiasBed: the authors' ImageNet recipe (SGD 0.2, wd 1e-4, batch 128, 100 epochs, steps)")
