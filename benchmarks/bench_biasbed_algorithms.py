"""Training-step cost of the BiasBed algorithms relative to ERM, in one process, one CPU thread.

Every algorithm trains small_cnn on the same DiagViB-6 batches (128x128, ZGO/shape-texture/0);
the script prints the median seconds per ``update`` and the ratio to ERM measured in the same
process, plus InfoDrop's extra cost per wrapped layer and the Stylized re-rendering share. With
``--device cuda`` (if available) it also times the GPU path of InfoDrop, which must run there.

    .venv/bin/python benchmarks/bench_biasbed_algorithms.py [--quick] [--device cuda]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import torch  # noqa: E402
from torch.utils.data import default_collate  # noqa: E402

from shortcutlab.diagvib.dataset import DiagvibDataset  # noqa: E402
from shortcutlab.diagvib.studies import make_experiment  # noqa: E402
from shortcutlab.train.algorithms import create_algorithm  # noqa: E402
from shortcutlab.train.algorithms.base import AlgorithmContext  # noqa: E402
from shortcutlab.train.config import TrainConfig  # noqa: E402

torch.set_num_threads(1)

SETTINGS = [
    ("erm", {}),
    ("padain", {"p": 0.01}),
    ("padain", {"p": 1.0}),
    ("infodrop", {}),  # the reference: mask after the stem block
    ("infodrop", {"placement": "conv", "layers": 1}),
    ("infodrop", {"placement": "conv", "layers": 2}),
    ("sagnet", {}),
    ("stylized", {}),
    ("debiased", {}),
]


def batches(ds: DiagvibDataset, n_batches: int, batch_size: int) -> list[dict[str, torch.Tensor]]:
    out = []
    for b in range(n_batches):
        items = ds.__getitems__(list(range(b * batch_size, (b + 1) * batch_size)))
        out.append(default_collate(items))  # as the trainer's DataLoader batches them
    return out


def time_steps(
    name: str, hparams: dict, data: list, ctx: AlgorithmContext, device: torch.device
) -> float:
    torch.manual_seed(0)
    cfg = TrainConfig(algorithm=name, hparams=hparams)
    algo = create_algorithm(name, 3, cfg, ctx).to(device).train()
    times = []
    for step, batch in enumerate(data):
        batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
        algo.step = step
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        algo.update(batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])  # the first step warms caches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    device = torch.device(args.device)
    steps = 4 if args.quick else 10
    spec = make_experiment("ZGO/shape-texture/0", scale=0.05)
    ds = DiagvibDataset(spec, "train")
    data = batches(ds, steps, args.batch_size)
    ctx = AlgorithmContext(train_dataset=ds)
    print(
        f"device {device}, batch {args.batch_size} x 3x128x128, small_cnn, {steps} steps, "
        "median seconds per update"
    )
    base = None
    for name, hp in SETTINGS:
        if name in ("stylized", "debiased") and device.type != "cpu":
            continue  # re-rendering runs on the CPU generator; the GPU only trains
        sec = time_steps(name, hp, data, ctx, device)
        base = sec if base is None else base
        label = name + ("" if not hp else " " + ",".join(f"{k}={v}" for k, v in hp.items()))
        print(f"  {label:<24} {sec * 1000:8.1f} ms/step   x{sec / base:5.2f} vs erm")
    # how much of Stylized is the re-rendering itself
    algo = create_algorithm("stylized", 3, TrainConfig(algorithm="stylized"), ctx)
    start = time.perf_counter()
    for step, batch in enumerate(data):
        algo.step = step
        algo.stylize(batch)
    render = (time.perf_counter() - start) / len(data)
    print(f"  stylized re-rendering alone: {render * 1000:.1f} ms/batch")


if __name__ == "__main__":
    main()
