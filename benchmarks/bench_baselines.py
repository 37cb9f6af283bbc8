"""The paper's ASR (RN18), VAE and Factor-VAE baselines: training-step cost relative to resnet18,
and ZSO texture accuracy at a small CPU scale.

Step cost: every baseline takes ``update`` steps on the same DiagViB-6 batches (128x128,
ZSO/texture/0, inputs z-scored as the trainer does); the script prints the median seconds per
step and the ratio to resnet18 + ERM measured in the same process, on CPU (one thread) and on
CUDA when it is available.

Accuracy (``--accuracy``): the whole pipeline (``build_jobs`` -> runner -> job table, as
``shortcutlab diagvib run --model NAME`` does) on ZSO/texture for resnet18 and the three
baselines at ``--scale``, same samples, seed and epochs; prints each model's test accuracy of the
checkpoint with the lowest validation loss (chance 1/3), per sample and on average.

    .venv/bin/python benchmarks/bench_baselines.py [--batch 16] [--steps 5]
    .venv/bin/python benchmarks/bench_baselines.py --accuracy --scale 0.01 --epochs 6 --out DIR
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import torch  # noqa: E402
from torch.utils.data import default_collate  # noqa: E402

from shortcutlab.diagvib.dataset import DiagvibDataset  # noqa: E402
from shortcutlab.diagvib.studies import make_experiment  # noqa: E402
from shortcutlab.train.algorithms import create_algorithm  # noqa: E402
from shortcutlab.train.config import TrainConfig  # noqa: E402
from shortcutlab.train.normalization import channel_stats, to_unit_float  # noqa: E402

torch.set_num_threads(1)

#: (label, model, algorithm): resnet18 + ERM first, the reference of the ratios.
BASELINES = [
    ("resnet18", "resnet18", "erm"),
    ("asr_rn18", "asr_rn18", "asr"),
    ("vae", "vae", "vae"),
    ("factor_vae", "factor_vae", "factor_vae"),
]


def step_costs(device: str, batch_size: int, steps: int) -> list[tuple[str, float]]:
    """Median seconds per training step of every baseline on the same batches."""
    spec = make_experiment("ZSO/texture/0", scale=max(0.01, 2 * batch_size * (steps + 1) / 43740))
    ds = DiagvibDataset(spec, "train")
    stats = channel_stats(ds)
    dev = torch.device(device)
    batches = []
    for b in range(steps + 1):
        items = default_collate(ds.__getitems__(list(range(b * batch_size, (b + 1) * batch_size))))
        batches.append({"x": to_unit_float(items["x"].to(dev)), "y": items["y"].to(dev)})
    out = []
    for label, model, algorithm in BASELINES:
        torch.manual_seed(0)
        algo = create_algorithm(algorithm, 3, TrainConfig(model=model, algorithm=algorithm))
        algo.input_norm.set_stats(stats)
        algo.to(dev).train()
        times = []
        for i, batch in enumerate(batches):
            batch = {"x": algo.input_norm(batch["x"]), "y": batch["y"]}
            if dev.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            algo.step = i
            algo.update(batch)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            if i > 0:  # the first step warms up allocators and kernels
                times.append(time.perf_counter() - start)
        out.append((label, statistics.median(times)))
    return out


def print_costs(device: str, batch_size: int, steps: int) -> None:
    costs = step_costs(device, batch_size, steps)
    ref = costs[0][1]
    threads = torch.get_num_threads() if device == "cpu" else "-"
    print(f"\n## step cost on {device} (batch {batch_size} x 3x128x128, median of {steps} steps, "
          f"CPU threads {threads})\n")
    print("| baseline | s / step | vs resnet18 |\n| --- | --- | --- |")
    for label, sec in costs:
        print(f"| {label} | {sec:.3f} | {sec / ref:.2f}x |")


#: ``--set small``: the same methods around the fast small_cnn (ASR: small_cnn behind a lens of
#: width 8), where the reference learns texture within minutes on one CPU core.
SMALL_SET = [
    ("small_cnn", "small_cnn", "erm", {}),
    ("asr(small_cnn)", "small_cnn", "asr", {"lens_width": 8}),
    ("vae", "vae", "vae", {}),
    ("factor_vae", "factor_vae", "factor_vae", {}),
]


def accuracy(scale: float, epochs: int, samples: list[int], out: Path, batch_size: int,
             which: str = "paper", lr: float | None = None, only: list[str] | None = None) -> None:
    """ZSO texture test accuracy of the reference and the three baselines through the pipeline
    (``which``: ``paper`` = resnet18 and the registered baselines, ``small`` = :data:`SMALL_SET`;
    ``lr``: the protocol's learning rate, the VAEs' own stays 1e-4; ``only``: these labels)."""
    from shortcutlab.diagvib.jobs import build_jobs, collect_jobs
    from shortcutlab.runner.runs import run_jobs

    settings = SMALL_SET if which == "small" else [(*b, {}) for b in BASELINES]
    print(f"\n## ZSO texture, set {which}, scale {scale:g} ({len(samples)} sample(s) {samples}), "
          f"{epochs} epochs, batch {batch_size}, lr {lr or 'paper'}, seed 0, CPU\n")
    print("| baseline | algorithm | test acc per sample | mean | val acc (mean) | best epochs "
          "| wall s |\n| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for label, model, algorithm, hparams in settings:
        if only and label not in only:
            continue
        config = TrainConfig(epochs=epochs, batch_size=batch_size, algorithm=algorithm,
                             hparams=hparams, **({"lr": lr} if lr else {}))
        jobs = build_jobs(model, ["ZSO"], ["texture-hue"], samples, [0], scale, config)
        start = time.perf_counter()
        summary = run_jobs(jobs, out, backend="serial", device="cpu", progress=False)
        took = time.perf_counter() - start
        table = collect_jobs(out)
        frame = table[table["job_id"].isin([j.job_id for j in jobs])].sort_values("sample")
        accs = " / ".join(f"{a:.3f}" for a in frame["test_acc"])
        note = f" ({len(summary.failed)} failed)" if summary.failed else ""
        print(f"| {label} | {frame['algorithm'].iloc[0]} | {accs} | "
              f"{frame['test_acc'].mean():.3f} | {frame['val_acc'].mean():.3f} | "
              f"{', '.join(str(int(e)) for e in frame['best_epoch'])} | {took:.0f}{note} |",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16, help="step-cost batch size")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per baseline")
    parser.add_argument("--accuracy", action="store_true", help="run the ZSO texture comparison")
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--samples", type=int, nargs="+", default=[0])
    parser.add_argument("--train-batch", type=int, default=32)
    parser.add_argument("--set", choices=("paper", "small"), default="paper", dest="which",
                        help="paper: resnet18 vs asr_rn18/vae/factor_vae; small: around small_cnn")
    parser.add_argument("--lr", type=float, default=None, help="protocol learning rate")
    parser.add_argument("--only", nargs="+", default=None, help="labels to run")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-baselines"))
    args = parser.parse_args(argv)
    if args.accuracy:
        from shortcutlab.runner.runs import RunInterrupted

        try:
            accuracy(args.scale, args.epochs, args.samples, args.out, args.train_batch,
                     args.which, args.lr, args.only)
        except RunInterrupted as exc:  # Ctrl-C: one line saying what finished, as the CLI does
            print(exc, file=sys.stderr)
            return 130
        return 0
    print_costs("cpu", args.batch, args.steps)
    if torch.cuda.is_available():
        print_costs("cuda", 64, max(args.steps, 20))
    else:
        print("\n(no CUDA device: GPU step costs not measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
