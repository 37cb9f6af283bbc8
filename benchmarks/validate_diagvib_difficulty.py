"""Check that texture is the hardest of the six DiagViB-6 factors to predict (paper sec. 5.1).

Renders a ZSO-like dataset (3 selected classes per factor, all six factors uniform and
independent; training images from the train digit pool, test images from the test pool), trains
one small CNN with six 3-way heads (one per factor) on one CPU thread, and prints the test
accuracy of every factor after each epoch. Chance is 1/3. Deterministic for given arguments.

    .venv/bin/python benchmarks/validate_diagvib_difficulty.py [--train 1800] [--epochs 8]

Takes about 5 minutes on one loaded CPU core with the defaults.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import torch
from torch import nn

from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.render import ImageGenerator
from shortcutlab.diagvib.studies import select_classes
from shortcutlab.utils.rng import rng


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train", type=int, default=1800, help="training images")
    parser.add_argument("--test", type=int, default=600, help="test images (test digit pool)")
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    gen = ImageGenerator()
    selected = select_classes(0, 0)
    table = np.array([[get_factor(f).index(c) for c in selected[f]] for f in FACTORS])

    def data(n: int, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        local = rng(0, "difficulty", split).integers(0, 3, (n, len(FACTORS)))
        classes = table[np.arange(len(FACTORS))[None], local]
        images = gen.render(classes, seed=0, split=split, indices=np.arange(n))
        return torch.from_numpy(images), torch.from_numpy(local)

    x_train, y_train = data(args.train, "train")
    x_test, y_test = data(args.test, "test")
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 32, 5, 2, 2), nn.ReLU(), nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(), nn.Conv2d(64, 64, 3, 2, 1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(1024, 3 * len(FACTORS)),
    )
    opt = torch.optim.Adam(net.parameters(), 2e-3)
    order = torch.Generator().manual_seed(0)
    print(f"selected classes: {selected}")
    print("epoch " + " ".join(f"{f:>9}" for f in FACTORS) + "   seconds")
    for epoch in range(args.epochs):
        perm = torch.randperm(args.train, generator=order)
        for a in range(0, args.train, 64):
            b = perm[a:a + 64]
            logits = net(x_train[b].float() / 255 - 0.5).view(-1, 3)
            loss = nn.functional.cross_entropy(logits, y_train[b].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            pred = torch.cat([net(x_test[a:a + 200].float() / 255 - 0.5)
                              .view(-1, len(FACTORS), 3).argmax(-1)
                              for a in range(0, args.test, 200)])
        acc = (pred == y_test).float().mean(0).tolist()
        print(f"{epoch:5d} " + " ".join(f"{v:9.2f}" for v in acc)
              + f"   {time.perf_counter() - start:7.1f}")
    hardest = FACTORS[int(np.argmin(acc))]
    print(f"hardest factor: {hardest} (chance 0.33)")
    return 0 if hardest == "texture" else 1


if __name__ == "__main__":
    raise SystemExit(main())
