"""Empirical risk minimisation: plain cross entropy with Adam (the DiagViB-6 paper's training)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from shortcutlab.train.algorithms import register_algorithm
from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
from shortcutlab.train.config import TrainConfig


@register_algorithm
class ERM(Algorithm):
    """Minimise the mean cross entropy of the configured model."""

    name = "erm"
    graph_safe = True  # forward, backward and one optimiser step: device work only

    def __init__(
        self, num_classes: int, config: TrainConfig, context: AlgorithmContext | None = None
    ) -> None:
        super().__init__(num_classes, config, context)
        self.network = self.build_network()
        self.optimizer = self.make_optimizer(self.network.parameters())

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        loss = F.cross_entropy(self.network(batch["x"]), batch["y"])
        self.backward_and_step(loss, self.optimizer)
        return {"loss": loss.detach()}  # a tensor: the trainer sums it without a host sync

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)
