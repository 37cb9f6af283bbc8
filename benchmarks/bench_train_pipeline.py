"""Does the data pipeline starve training? Images/s delivered vs images/s consumed.

Delivered: a DataLoader over a DiagViB-6 training split (rendered on the fly) with 0, 1 and 2
workers. Consumed: one training step (forward + backward + Adam) of small_cnn and resnet18 on
CPU on a pre-rendered batch, i.e. with no data cost at all. Run: .venv/bin/python
benchmarks/bench_train_pipeline.py [--quick]
"""

from __future__ import annotations

import sys
import time

import torch
from torch.utils.data import DataLoader

from shortcutlab.diagvib.dataset import DiagvibDataset
from shortcutlab.diagvib.studies import make_experiment
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.config import TrainConfig

BATCH = 32


def delivered(ds: DiagvibDataset, workers: int, n_images: int) -> float:
    """Images/s a DataLoader delivers (first batch excluded: worker start-up)."""
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers,
                        generator=torch.Generator().manual_seed(0))
    it = iter(loader)
    next(it)
    count, start = 0, time.perf_counter()
    for batch in it:
        count += len(batch["y"])
        if count >= n_images:
            break
    return count / (time.perf_counter() - start)


def consumed(model: str, batch: dict, steps: int) -> float:
    """Images/s one training step consumes on CPU (data already in memory)."""
    algo = create_algorithm("erm", 3, TrainConfig(model=model, batch_size=BATCH))
    algo.train()
    algo.update(batch)
    start = time.perf_counter()
    for _ in range(steps):
        algo.update(batch)
    return steps * BATCH / (time.perf_counter() - start)


def main() -> None:
    quick = "--quick" in sys.argv
    torch.set_num_threads(1)  # 2 shared cores: one for the model, the other for loading
    spec = make_experiment("ZGO/hue-shape/0", scale=0.1)
    ds = DiagvibDataset(spec, "train")
    n = 128 if quick else 512
    print(f"DiagViB-6 ZGO/hue-shape/0 train split, {len(ds)} images, batch {BATCH}, "
          f"torch threads {torch.get_num_threads()}")
    rates = {}
    for workers in (0, 1, 2):
        rates[f"loader w={workers}"] = delivered(ds, workers, n)
        rate = rates[f"loader w={workers}"]
        print(f"  delivered by DataLoader, {workers} workers: {rate:8.1f} img/s")
    batch = next(iter(DataLoader(ds, batch_size=BATCH)))
    for model, steps in (("small_cnn", 20 if quick else 60), ("resnet18", 3 if quick else 10)):
        rates[model] = consumed(model, batch, steps)
        print(f"  consumed by {model:9s} training step (CPU):  {rates[model]:8.1f} img/s")
    best = max(rates[f"loader w={w}"] for w in (0, 1, 2))
    for model in ("small_cnn", "resnet18"):
        print(f"  ratio delivered(best)/consumed {model}: {best / rates[model]:.2f} "
              f"({'pipeline keeps up' if best >= rates[model] else 'PIPELINE IS THE BOTTLENECK'})")


if __name__ == "__main__":
    main()
