"""The DiagViB-6 pipeline on an accelerator: rendering, training epochs, utilisation, GPU-hours.

Sections (all by default; ``--only`` picks some):

* ``render``: images/s of the torch path (``ImageGenerator.render_on_device``: device-resident
  class table and indices, one reused output buffer) at batch 512 and 4,096 on ``--device``,
  next to the numpy path on one CPU core in the same process.
* ``numpy``: the numpy renderer against its version at ``--baseline-rev`` (loaded from git into
  this process), same sources and batches: the "no regression" check (skipped, saying so, when
  that version draws other images: the default's do since adc8c1a).
* ``epoch``: seconds per full-scale resnet18 epoch (43,740 training images, validation 8,748 and
  test 10,000: train + val + test) for one job alone and for ``--jobs`` jobs at once (separate
  processes sharing the device), with the device's utilisation sampled by ``nvidia-smi``, and the
  extrapolated device-hours of the full benchmark (1,230 runs x 30 epochs). At ``--scale`` below
  1 the epoch is measured on a proportionally smaller experiment and scaled up (said so).
* ``cli``: ``shortcutlab diagvib render --n 20000`` end to end in a fresh process (wall and CPU
  time), with a cold and a warm source cache, writing to memory (/dev/shm) and to disk.

    .venv/bin/python benchmarks/bench_gpu_pipeline.py --device cuda --jobs 6
    .venv/bin/python benchmarks/bench_gpu_pipeline.py --device cpu --scale 0.005 --quick
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FULL = {"train": 43_740, "val": 8_748, "test": 10_000}
RUNS, EPOCHS = 1_230, 30  # the full benchmark per model and seed, the paper protocol
EXPERIMENT = "ZSO/texture/0"
BASELINE_REV = "bc11105"  # before issue 14 (the torch path): the numpy and cli baselines


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _rate(fn, n_images: int, device: str, min_time: float, clock=time.perf_counter) -> float:
    """Images per second of ``clock`` (wall time, or ``time.process_time``: CPU time of this
    one-thread process, fairer on a shared machine), best of 3 rounds of ``min_time / 3`` s."""
    fn()
    _sync(device)
    best = 0.0
    for _ in range(3):
        done, t0 = 0, clock()
        while clock() - t0 < min_time / 3:
            fn()
            done += n_images
        _sync(device)
        best = max(best, done / (clock() - t0))
    return best


def bench_render(device: str, batches: list[int], min_time: float) -> dict:
    import torch

    from shortcutlab.diagvib.render import ImageGenerator, random_classes

    gen = ImageGenerator()
    out: dict = {"device": device}
    for batch in batches:
        classes = random_classes(batch, seed=0)
        cls_t = torch.from_numpy(classes).to(device)
        idx_t = torch.arange(batch, device=device)
        buf = torch.empty((batch, 3, 128, 128), dtype=torch.uint8, device=device)
        host = np.empty((batch, 3, 128, 128), dtype=np.uint8)
        def on_device(c=cls_t, i=idx_t, o=buf):
            return gen.render_on_device(c, i, seed=0, split="train", out=o)

        def on_host(c=classes, o=host):
            return gen.render(c, seed=0, split="train", indices=np.arange(len(c)), out=o)

        torch_rate = _rate(on_device, batch, device, min_time)
        numpy_rate = _rate(on_host, batch, "cpu", min_time, time.process_time)
        out[batch] = {"torch": torch_rate, "numpy_1_core": numpy_rate}
        print(f"render batch {batch:5d}: torch on {device} {torch_rate:10,.0f} images/s | numpy "
              f"one core {numpy_rate:8,.0f} images/s | ratio {torch_rate / numpy_rate:6.2f}",
              flush=True)
    return out


def _old_renderer(rev: str) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{rev}:src/shortcutlab/diagvib/render.py"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("render_baseline")
    module.__dict__["__name__"] = "render_baseline"
    sys.modules["render_baseline"] = module
    exec(compile(source, f"render.py@{rev}", "exec"), module.__dict__)
    return module


def bench_numpy(rev: str, batches: list[int], min_time: float) -> dict:
    from shortcutlab.diagvib.render import ImageGenerator, random_classes

    new = ImageGenerator()
    old = _old_renderer(rev).ImageGenerator(new.shapes, new.textures)
    out: dict = {}
    for batch in batches:
        classes, idx = random_classes(batch, seed=1), np.arange(batch)
        if not (old.render(classes, seed=1, split="val", indices=idx)
                == new.render(classes, seed=1, split="val", indices=idx)).all():
            # the images changed since ``rev`` (adc8c1a: the authors' drawing): timing two
            # renderers that make different images says nothing about a regression
            reason = (f"the renderer at {rev} draws other images than the current one (the "
                      "generator has changed since); pass --baseline-rev a commit that draws "
                      "the same images (adc8c1a or later)")
            print(f"numpy section skipped: {reason}", file=sys.stderr, flush=True)
            return {"skipped": reason}
        rates: dict[int, list[float]] = {0: [], 1: []}
        for rnd in range(4):  # interleaved, alternating order: load hits both alike
            for k in ((0, 1) if rnd % 2 == 0 else (1, 0)):
                g = (old, new)[k]
                rates[k].append(_rate(
                    lambda g=g, c=classes, i=idx: g.render(c, seed=1, split="val", indices=i),
                    batch, "cpu", min_time / 2, time.process_time))
        a, b = (float(np.median(rates[k])) for k in (0, 1))
        out[batch] = {"baseline": a, "now": b}
        print(f"numpy renderer batch {batch:5d}: {rev} {a:8,.0f} images per CPU-second | now "
              f"{b:8,.0f} | ratio {b / a:5.3f} (medians of 4 interleaved rounds; same bytes)",
              flush=True)
    return out


def job_config(model: str, **overrides):
    """The training config a DiagViB-6 job runs by default (the preset ``diagvib run`` and the
    campaign use: the paper's, whose last incomplete batch is dropped, so every step has one
    shape and can run as a CUDA graph), with ``overrides``. Timing the engine's neutral
    ``default`` preset instead keeps the last batch and so measures an eager step no DiagViB-6
    job takes (the GPU check of 2026-11-27 did: 10.3 s per epoch against 13.8 s for each of 4
    real jobs under MPS)."""
    from shortcutlab.diagvib.presets import DIAGVIB_PRESET
    from shortcutlab.train.config import TrainConfig

    return TrainConfig(preset=DIAGVIB_PRESET, model=model, **overrides)


def epoch_child(device: str, scale: float, precision: str, channels_last: bool,
                model: str = "resnet18", cuda_graphs: str = "auto", compile: str = "0") -> None:
    """One job: ``model`` on EXPERIMENT at ``scale`` for 2 epochs; prints the second epoch's
    seconds (train + val + test), the statistics pass, how the step ran (``step_mode``) and
    the peak GPU memory as JSON. ``compile="1"``: torch.compile the network (the first epoch's
    seconds then include the compilation)."""
    import torch

    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.studies import make_experiment
    from shortcutlab.train.trainer import train

    if device == "cpu":
        torch.set_num_threads(1)
    spec = make_experiment(EXPERIMENT, scale=scale)
    sets = {s: DiagvibDataset(spec, s) for s in ("train", "val", "test")}
    marks = [time.perf_counter()]
    config = job_config(model, epochs=2, precision=precision, channels_last=channels_last)
    res = train(config, sets["train"], sets["val"], {"test": sets["test"]}, device=device,
                progress=lambda _: marks.append(time.perf_counter()), cuda_graphs=cuda_graphs,
                compile=compile == "1")
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
    print(json.dumps({"epoch_s": marks[2] - marks[1], "first_s": marks[1] - marks[0],
                      "total_s": res.train_seconds, "sizes": {k: len(v) for k, v in sets.items()},
                      "test_acc": res.test_acc["test"], "step_mode": res.step_mode,
                      "peak_gib": peak}))


def _utilisation(stop: threading.Event, samples: list[float]) -> None:
    while not stop.wait(0.5):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu",
                                  "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, timeout=10).stdout.split()
            samples.append(float(out[0]))
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return


def bench_epoch(device: str, scale: float, jobs_list: list[int], precision: str,
                channels_last: bool, model: str = "resnet18",
                env: dict[str, str] | None = None, cuda_graphs: str = "auto",
                compile: bool = False) -> dict:
    """Seconds per full-scale epoch of ``model`` for each number of concurrent jobs in
    ``jobs_list`` (separate processes, started with ``env``: e.g. a CUDA MPS pipe directory;
    None: this process's environment)."""
    out = {}
    for jobs in jobs_list:
        cmd = [sys.executable, __file__, "--child", device, str(scale), precision,
               str(int(channels_last)), model, cuda_graphs, str(int(compile))]
        stop, samples = threading.Event(), []
        monitor = threading.Thread(target=_utilisation, args=(stop, samples), daemon=True)
        if shutil.which("nvidia-smi") and device.startswith("cuda"):
            monitor.start()
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
                 for _ in range(jobs)]
        outputs = [p.communicate()[0].strip().splitlines() for p in procs]
        if any(p.returncode or not lines for p, lines in zip(procs, outputs, strict=True)):
            codes = [p.returncode for p in procs]
            raise RuntimeError(f"an epoch job failed (exit statuses {codes}); see its stderr")
        results = [json.loads(lines[-1]) for lines in outputs]
        stop.set()
        epoch = float(np.mean([r["epoch_s"] for r in results]))
        factor = FULL["train"] / results[0]["sizes"]["train"]
        full_epoch = epoch * factor
        hours = RUNS * EPOCHS * full_epoch / jobs / 3600
        util = f"{np.mean(samples):.0f} % (mean of {len(samples)} samples)" if samples else "n/a"
        note = "" if factor == 1 else f" (measured at scale {scale}: {epoch:.2f} s, x{factor:.0f})"
        print(f"{model} epoch, {jobs} job(s) at once on {device} ({precision}"
              f"{', channels_last' if channels_last else ''}): {full_epoch:8.2f} s per full-scale "
              f"epoch each{note}; utilisation {util}; full benchmark {hours:,.1f} device-hours",
              flush=True)
        peaks = [r["peak_gib"] for r in results if r.get("peak_gib") is not None]
        out[jobs] = {"epoch_s": full_epoch, "measured_s": epoch, "scale_factor": factor,
                     "utilisation": samples, "device_hours": hours,
                     "test_acc": [r["test_acc"] for r in results],
                     "step_mode": results[0].get("step_mode"),
                     "first_epoch_s": float(np.mean([r["first_s"] for r in results])),
                     "peak_gib": max(peaks) if peaks else None}
    return out


def bench_precision(device: str, model: str, scale: float, epochs: int, seeds: int,
                    experiment: str = EXPERIMENT) -> dict:
    """Test accuracy of fp32 / bf16 / fp16 (with a gradient scaler) / channels_last /
    bf16+channels_last over ``seeds`` training seeds: is the change beyond seed noise?"""
    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.studies import make_experiment
    from shortcutlab.train.trainer import train

    spec = make_experiment(experiment, scale=scale)
    sets = {s: DiagvibDataset(spec, s) for s in ("train", "val", "test")}
    variants = {"fp32": {}, "bf16": {"precision": "bf16"}, "fp16": {"precision": "fp16"},
                "channels_last": {"channels_last": True},
                "bf16+channels_last": {"precision": "bf16", "channels_last": True}}
    out: dict = {}
    for name, extra in variants.items():
        accs, secs = [], []
        for seed in range(seeds):
            config = job_config(model, epochs=epochs, seed=seed, **extra)
            res = train(config, sets["train"], sets["val"], {"test": sets["test"]},
                        device=device, device_batches=device.startswith("cuda") or None)
            accs.append(res.test_acc["test"])
            secs.append(res.train_seconds)
        out[name] = {"test_acc": accs, "seconds": secs}
        base = out["fp32"]["test_acc"]
        diff = np.array(accs) - np.array(base)
        print(f"{model} {experiment} scale {scale}, {epochs} epochs, {name:18s}: test acc "
              f"{np.mean(accs):.4f} ± {np.std(accs, ddof=1) if seeds > 1 else 0:.4f} "
              f"(per seed {', '.join(f'{a:.3f}' for a in accs)}); vs fp32 per seed "
              f"{', '.join(f'{d:+.3f}' for d in diff)}; {np.mean(secs):.1f} s per run",
              flush=True)
    return out


def bench_cli(n: int, rev: str) -> dict:
    targets = {"memory": Path("/dev/shm"), "disk": Path(tempfile.gettempdir())}
    out = {}
    cache = tempfile.mkdtemp(prefix="bench-cache-")
    old = Path(tempfile.mkdtemp(prefix="bench-old-src-"))
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    env = {**os.environ, "SHORTCUTLAB_CACHE_DIR": cache, "OMP_NUM_THREADS": "1"}
    try:
        for label, folder in targets.items():
            if not folder.is_dir():
                continue
            for run in (f"{rev} (baseline)", "cold cache", "warm cache", "warm cache"):
                if run == "cold cache":
                    shutil.rmtree(cache, ignore_errors=True)
                run_env = {**env, "PYTHONPATH": str(old / "src")} if "baseline" in run else env
                target = folder / f"bench-render-{os.getpid()}.npz"
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "shortcutlab.cli.main", "diagvib", "render",
                                "--n", str(n), "--out", str(target), "--device", "cpu"],
                               env=run_env, check=True, capture_output=True)
                wall = time.perf_counter() - t0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                target.unlink()
                print(f"cli render --n {n} to {label:6s} ({run}): {n / wall:7,.0f} images/s wall "
                      f"({wall:5.2f} s), {n / cpu:7,.0f} images per CPU-second ({cpu:5.2f} s)",
                      flush=True)
                out.setdefault(label, []).append({"run": run, "wall_s": wall, "cpu_s": cpu})
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        device, scale, precision, layout = sys.argv[2:6]
        epoch_child(device, float(scale), precision, layout == "1", *sys.argv[6:9])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None,
                    help="cuda or cpu (default: cuda; without a CUDA device nothing is measured)")
    ap.add_argument("--only", nargs="+",
                    choices=("render", "numpy", "epoch", "cli", "precision"),
                    default=["render", "numpy", "epoch", "cli"])
    ap.add_argument("--jobs", type=int, default=6, help="concurrent jobs for the shared run")
    ap.add_argument("--scale", type=float, default=1.0, help="experiment scale for epochs")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--baseline-rev", default=BASELINE_REV,
                    help="git revision of the old renderer")
    ap.add_argument("--quick", action="store_true", help="shorter timing")
    ap.add_argument("--precision-model", default="resnet18", help="model of the precision runs")
    ap.add_argument("--precision-scale", type=float, default=0.1)
    ap.add_argument("--precision-epochs", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--experiment", default=EXPERIMENT, help="experiment of the precision runs")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    if args.device is None:
        if not torch.cuda.is_available():  # `make bench` on a CPU machine: a GPU benchmark
            print("no CUDA device: the GPU pipeline is not measured (a CPU run at tiny scale: "
                  "--device cpu --scale 0.005 --quick)")
            return
        args.device = "cuda"
    torch.set_num_threads(1)
    min_time = 1.0 if args.quick else 3.0
    print(f"device {args.device}"
          f"{' (' + torch.cuda.get_device_name() + ')' if args.device.startswith('cuda') else ''}"
          f", torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    results: dict = {}
    if "render" in args.only:
        batches = [512, 4096] if args.device.startswith("cuda") or not args.quick else [512]
        results["render"] = bench_render(args.device, batches, min_time)
    if "numpy" in args.only:
        results["numpy"] = bench_numpy(args.baseline_rev, [256, 1024], min_time)
    if "epoch" in args.only:
        results["epoch"] = bench_epoch(args.device, args.scale, sorted({1, args.jobs}),
                                       args.precision, args.channels_last)
    if "cli" in args.only:
        results["cli"] = bench_cli(20_000, args.baseline_rev)
    if "precision" in args.only:
        results["precision"] = bench_precision(args.device, args.precision_model,
                                               args.precision_scale, args.precision_epochs,
                                               args.seeds, args.experiment)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
