"""Benchmark DiagViB-6 study specs and on-the-fly datasets.

1. spec generation: write the whole benchmark (1,230 YAML specs + index) -- target < 5 s
   (the published code: about 35 s and 23 MB of YAML);
2. memory: iterate a full 43,740-image training split through a DataLoader and compute
   streaming channel statistics, in a fresh process, and report its peak RSS -- target < 1 GB;
3. throughput: images/s delivered by a DataLoader with 0, 1 and 2 workers, against calling
   the generator directly in the same process.

Usage: python benchmarks/bench_diagvib_studies.py [--quick] [--images N] [--batch B]
``--quick`` iterates only 4,374 training images in the memory run (for smoke tests).
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def bench_specs(repeats: int = 3) -> dict[str, float]:
    """Best of ``repeats``: wall and CPU seconds to make all specs, and to write them."""
    from shortcutlab.diagvib.studies import experiment_names, make_experiment, write_benchmark

    names = experiment_names()
    best = {"make_s": float("inf"), "write_s": float("inf"), "write_cpu_s": float("inf")}
    for _ in range(repeats):
        start = time.perf_counter()
        for name in names:
            make_experiment(name)
        best["make_s"] = min(best["make_s"], time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as tmp:
            start, cpu = time.perf_counter(), time.process_time()
            write_benchmark(tmp)
            best["write_s"] = min(best["write_s"], time.perf_counter() - start)
            best["write_cpu_s"] = min(best["write_cpu_s"], time.process_time() - cpu)
            size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    return {"experiments": len(names), **best, "yaml_mb": size / 1e6,
            "speedup_vs_35s": 35.0 / best["write_s"]}


def _status_mb(field: str) -> float:
    """A ``/proc/self/status`` memory field (VmRSS, VmHWM) in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _memory_child(n_images: int | None, batch: int) -> None:
    """Runs in a fresh process: iterate the split, then streaming stats; print peak RSS."""
    import torch
    from torch.utils.data import DataLoader, Subset

    from shortcutlab.diagvib.dataset import DiagvibDataset, histogram_channel_stats
    from shortcutlab.diagvib.studies import make_experiment

    torch.set_num_threads(1)
    after_imports = _status_mb("VmRSS")
    spec = make_experiment("ZGO/hue-shape/0")
    ds = DiagvibDataset(spec, "train")  # builds the image generator (loads digits, textures)
    before = _status_mb("VmRSS")
    setup_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:  # reset the high-water mark so VmHWM measures the iteration alone
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        reset = True
    except OSError:
        reset = False
    ds_iter = ds if n_images is None else Subset(ds, range(n_images))
    start = time.perf_counter()
    seen = 0
    for b in DataLoader(ds_iter, batch_size=batch, num_workers=0):
        seen += b["x"].shape[0]
    iter_s = time.perf_counter() - start
    start = time.perf_counter()
    mean, std = histogram_channel_stats(ds, n=n_images, batch_size=batch)
    stats_s = time.perf_counter() - start
    print(json.dumps({
        "images": seen, "iter_s": iter_s, "stats_s": stats_s,
        "rss_after_imports_mb": after_imports, "rss_before_iter_mb": before,
        "setup_peak_mb": setup_peak, "iter_peak_mb": _status_mb("VmHWM") if reset else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "mean": mean.tolist(), "std": std.tolist(),
    }))


def bench_memory(n_images: int | None, batch: int) -> dict[str, float]:
    arg = "full" if n_images is None else str(n_images)
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", arg, "--batch", str(batch)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_throughput(n_images: int, batch: int, repeats: int = 2) -> dict[str, float]:
    import torch
    from torch.utils.data import DataLoader, Subset

    from shortcutlab.diagvib import render
    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.studies import make_experiment

    torch.set_num_threads(1)
    spec = make_experiment("CGO-2/shape-texture/0")
    ds = DiagvibDataset(spec, "train", generator=render.ImageGenerator())
    ds.render(np.arange(8))  # warm-up (sources, caches)
    results: dict[str, float] = {}
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for s in range(0, n_images, batch):
            idx = np.arange(s, min(s + batch, n_images))
            ds.generator.render(ds.classes[idx], seed=ds.render_seed, split="train", indices=idx)
        best = min(best, time.perf_counter() - start)
    results["generator_direct"] = n_images / best
    for dtype, workers in itertools.product(("float32", "uint8"), (0, 1, 2)):
        ds_t = DiagvibDataset(spec, "train", generator=ds.generator, dtype=dtype)
        best, best_steady, first = float("inf"), 0.0, float("inf")
        for _ in range(repeats):  # each pass starts its workers afresh (counted in the time)
            loader = DataLoader(Subset(ds_t, range(n_images)), batch_size=batch,
                                num_workers=workers)
            start = time.perf_counter()
            it = iter(loader)
            count = next(it)["x"].shape[0]
            t_first = time.perf_counter()
            count += sum(b["x"].shape[0] for b in it)
            end = time.perf_counter()
            assert count == n_images
            best = min(best, end - start)
            first = min(first, t_first - start)
            best_steady = max(best_steady, (n_images - batch) / (end - t_first))
        key = f"{dtype}_{workers}"
        results[key] = n_images / best
        results[f"{key}_steady"] = best_steady
        results[f"{key}_first_batch_s"] = first
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--images", type=int, default=2048, help="images per throughput run")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child is not None:
        _memory_child(None if args.memory_child == "full" else int(args.memory_child), args.batch)
        return

    specs = bench_specs()
    print(f"spec generation (best of 3): {specs['experiments']} experiments; make "
          f"{specs['make_s']:.2f} s; write YAML+index {specs['write_s']:.2f} s wall, "
          f"{specs['write_cpu_s']:.2f} s CPU ({specs['yaml_mb']:.1f} MB); "
          f"{specs['speedup_vs_35s']:.1f}x faster than the published ~35 s (target < 5 s)")
    try:
        import shortcutlab.diagvib.render  # noqa: F401
    except ModuleNotFoundError:
        print("image generator (shortcutlab.diagvib.render) not available: skipping datasets")
        return
    if not args.skip_throughput:
        thr = bench_throughput(args.images, args.batch)
        base = thr["generator_direct"]
        print(f"throughput generator direct: {base:.0f} images/s ({args.images} images, "
              f"batch {args.batch}, best of 2)")
        for dtype, w in itertools.product(("float32", "uint8"), (0, 1, 2)):
            key = f"{dtype}_{w}"
            total, steady = thr[key], thr[f"{key}_steady"]
            print(f"throughput DataLoader x={dtype}, {w} workers: {total:.0f} images/s overall "
                  f"({total / base:.2f}x direct), {steady:.0f} images/s after the first batch "
                  f"({steady / base:.2f}x); first batch after {thr[f'{key}_first_batch_s']:.2f} s")
    mem = bench_memory(4374 if args.quick else None, args.batch)
    print(f"memory: iterated {mem['images']} train images in {mem['iter_s']:.1f} s "
          f"({mem['images'] / mem['iter_s']:.0f} images/s) + streaming channel stats in "
          f"{mem['stats_s']:.1f} s; peak RSS of the whole process "
          f"{max(mem['setup_peak_mb'], mem['iter_peak_mb'] or mem['peak_rss_mb']):.0f} MB "
          f"(target < 1024 MB): after imports {mem['rss_after_imports_mb']:.0f} MB, peak while "
          f"building the generator {mem['setup_peak_mb']:.0f} MB, RSS before iterating "
          f"{mem['rss_before_iter_mb']:.0f} MB, peak while iterating + stats "
          f"{mem['iter_peak_mb'] or float('nan'):.0f} MB")
    print(f"channel mean {np.round(mem['mean'], 4).tolist()} "
          f"std {np.round(mem['std'], 4).tolist()}")


if __name__ == "__main__":
    main()
