"""The GPU check: everything the DiagViB-6 pipeline needs to show on a CUDA machine, in one go.

Sections, in order (each one entry of the JSON result file):

* ``cuda_tests``: the three CUDA-only tests (CUDA renderer against numpy, batches made on the
  GPU, InfoDrop trained on the device), run by pytest; on a machine without CUDA they skip and
  the section says so.
* ``render``: images/s of the CUDA renderer at batch 512 and 4,096 (and the numpy path on one
  core beside it).
* ``epoch_alone`` / ``epoch_shared``: seconds per full-scale resnet18 epoch (train + val + test)
  for one job, then for ``--jobs`` jobs at once on the GPU, under CUDA MPS when
  ``nvidia-cuda-mps-control`` exists (``--mps auto``); GPU utilisation sampled by nvidia-smi.
* ``precision``: test accuracy of fp32, bf16, fp16, channels_last and bf16+channels_last over
  ``--seeds`` seeds.
* ``summary`` (always recomputed): seconds per job-epoch in aggregate and the extrapolated
  GPU-hours of the whole benchmark (1,230 runs x 30 epochs per model and seed), alone and shared.

Resumable in chunks: sections already in the result file are skipped; with
``--budget-seconds N`` a section whose estimated time does not fit in what is left is not started,
and the script exits 0 naming what remains (call it again to go on). The measuring code is
benchmarks/bench_gpu_pipeline.py's, reused.

Measured on one NVIDIA H100 (80 GB) on 2026-11-25 (by the integrator, with that script's
functions): renderer 168,243 images/s at batch 512 and 872,018 at batch 4,096; resnet18 full-scale
epoch alone 12.73 s (11.32 s after removing the trainer's per-step host synchronisation), the GPU
~25-45 % busy; 6 jobs under CUDA MPS: 30 epochs in ~650 s each, i.e. ~21.7 s per epoch each and
~3.6 s per job-epoch in aggregate, SM ~94 % busy.

    .venv/bin/python benchmarks/gpu_check.py --out gpu-check.json            # all, one H100
    .venv/bin/python benchmarks/gpu_check.py --out gpu-check.json --budget-seconds 540
    .venv/bin/python benchmarks/gpu_check.py --device cpu --scale 0.002 --quick --out cpu.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu_pipeline as pipeline

ROOT = pipeline.ROOT
CUDA_TESTS = (
    "tests/diagvib/test_render.py::test_cuda_path_agrees_with_numpy",
    "tests/diagvib/test_dataset.py::test_batches_made_on_the_gpu",
    "tests/train/test_algorithms_biasbed.py::test_infodrop_algorithm_trains_on_device",
)
SECTIONS = ("cuda_tests", "render", "epoch_alone", "epoch_shared", "precision")
# Settings that must not change between the calls that fill one result file.
SETTINGS = ("device", "scale", "jobs", "model", "precision_scale", "precision_epochs", "seeds",
            "quick")


def estimate_seconds(section: str, args: argparse.Namespace) -> float:
    """A generous guess of a section's wall time, from the H100 figures (fixed costs: process
    start, sources, the first epoch) and, on a CPU, a per-image cost; used only to decide
    whether a section fits in the budget."""
    cpu = not args.device.startswith("cuda")
    per_image = 0.05 if cpu else 2.2e-4  # seconds per image and pass of one job
    epoch_images = sum(pipeline.FULL.values()) * args.scale
    if section == "cuda_tests":
        return 60.0
    if section == "render":
        return 30.0 if args.quick else 60.0
    if section == "epoch_alone":
        return 60.0 + 2 * epoch_images * per_image
    if section == "epoch_shared":
        return 60.0 + 2 * epoch_images * per_image * args.jobs * (1.0 if cpu else 0.35)
    if section == "precision":
        runs = 5 * args.seeds * args.precision_epochs
        return 60.0 + runs * sum(pipeline.FULL.values()) * args.precision_scale * per_image
    raise ValueError(section)


def run_cuda_tests(device: str) -> dict:
    """Run the CUDA-only tests with pytest; each one's outcome (passed, failed, skipped)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
             f"--junitxml={report}", *CUDA_TESTS], cwd=ROOT, env=env, capture_output=True,
            text=True)
        if not report.exists():
            raise RuntimeError(f"pytest wrote no report: {proc.stdout[-2000:]}{proc.stderr}")
        outcomes = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            kind = next((child.tag for child in case
                         if child.tag in ("failure", "error", "skipped")), "passed")
            outcomes[name] = {"failure": "failed", "error": "failed"}.get(kind, kind)
    cuda = {k: v for k, v in outcomes.items() if "cuda" in k or "gpu" in k}
    print(f"CUDA tests on {device}: " + ", ".join(f"{k.split('::')[-1]} {v}"
                                                  for k, v in outcomes.items()), flush=True)
    return {"outcomes": outcomes, "pytest_exit": proc.returncode,
            "all_cuda_passed": bool(cuda) and all(v == "passed" for v in cuda.values())}


@contextmanager
def mps_env(mode: str, device: str):
    """The environment for jobs sharing the GPU: with CUDA MPS started (a private pipe and log
    folder; stopped afterwards) when ``mode`` is ``on``, or ``auto`` and the control program
    exists on a CUDA device; else the plain environment. Yields (env, whether MPS is on)."""
    control = shutil.which("nvidia-cuda-mps-control")
    if mode == "off" or not device.startswith("cuda") or (mode == "auto" and control is None):
        yield dict(os.environ), False
        return
    if control is None:
        refuse("--mps on: nvidia-cuda-mps-control is not on PATH; valid choices: auto, off")
    folder = Path(tempfile.mkdtemp(prefix="gpu-check-mps-"))
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": str(folder / "pipe"),
           "CUDA_MPS_LOG_DIRECTORY": str(folder / "log")}
    for sub in ("pipe", "log"):
        (folder / sub).mkdir()
    subprocess.run([control, "-d"], env=env, check=True)
    try:
        yield env, True
    finally:
        subprocess.run([control], input="quit\n", text=True, env=env, check=False)
        time.sleep(1.0)
        shutil.rmtree(folder, ignore_errors=True)


def run_section(name: str, args: argparse.Namespace) -> dict:
    if name == "cuda_tests":
        return run_cuda_tests(args.device)
    if name == "render":
        min_time = (1.0 if args.device.startswith("cuda") else 0.3) if args.quick else 3.0
        batches = [512] if args.quick and not args.device.startswith("cuda") else [512, 4096]
        return pipeline.bench_render(args.device, batches, min_time)
    if name == "epoch_alone":
        res = pipeline.bench_epoch(args.device, args.scale, [1], "fp32", False, args.model)
        return {"jobs": 1, **res[1]}
    if name == "epoch_shared":
        with mps_env(args.mps, args.device) as (env, mps):
            res = pipeline.bench_epoch(args.device, args.scale, [args.jobs], "fp32", False,
                                       args.model, env=env)
        return {"jobs": args.jobs, "mps": mps, **res[args.jobs]}
    if name == "precision":
        return pipeline.bench_precision(args.device, args.model, args.precision_scale,
                                        args.precision_epochs, args.seeds)
    raise ValueError(name)


def summarise(sections: dict) -> dict:
    """Aggregate seconds per job-epoch and the benchmark's GPU-hours from the epoch sections;
    the bf16/fp16/channels_last accuracy change from the precision section."""
    out: dict = {}
    for key in ("epoch_alone", "epoch_shared"):
        if key in sections:
            sec = sections[key]["result"]
            util = sec.get("utilisation") or []
            out[key] = {
                "jobs": sec["jobs"], "epoch_s_each": sec["epoch_s"],
                "job_epoch_s_aggregate": sec["epoch_s"] / sec["jobs"],
                "benchmark_gpu_hours": pipeline.RUNS * pipeline.EPOCHS * sec["epoch_s"]
                / sec["jobs"] / 3600,
                "gpu_busy_percent": sum(util) / len(util) if util else None,
            }
    if "precision" in sections:
        prec = sections["precision"]["result"]
        base = prec["fp32"]["test_acc"]
        out["precision"] = {
            name: {"mean_test_acc": sum(v["test_acc"]) / len(v["test_acc"]),
                   "change_vs_fp32": sum(a - b for a, b in zip(v["test_acc"], base, strict=True))
                   / len(base)}
            for name, v in prec.items()}
    return out


def refuse(message: str) -> None:
    """Bad input: one line naming the problem, exit status 2."""
    print(f"gpu_check: {message}", file=sys.stderr)
    raise SystemExit(2)


def load_results(path: Path, settings: dict) -> dict:
    """The result file so far (new if absent); refuses one made with other settings."""
    if not path.exists():
        return {"settings": settings, "sections": {}}
    try:
        data = json.loads(path.read_text())
        sections = data["sections"]
        old = data["settings"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        refuse(f"{path}: not a gpu_check result file ({exc}); give another --out")
    changed = ", ".join(f"{k}={old.get(k)}" for k in SETTINGS if old.get(k) != settings[k])
    if changed:
        refuse(f"{path} was made with other settings ({changed}); give the same settings or "
               "another --out")
    return {"settings": old, "sections": sections, "machine": data.get("machine", {})}


def write_results(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def machine(device: str) -> dict:
    import torch

    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else None
    return {"device": device, "gpu": gpu, "torch": torch.__version__, "cpus": os.cpu_count(),
            "host": os.uname().nodename}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("gpu-check.json"),
                    help="result file (read to resume, rewritten after every section)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--scale", type=float, default=1.0, help="experiment scale of the epochs")
    ap.add_argument("--jobs", type=int, default=6, help="jobs sharing the GPU (epoch_shared)")
    ap.add_argument("--mps", choices=("auto", "on", "off"), default="auto",
                    help="CUDA MPS for the shared jobs (auto: when nvidia-cuda-mps-control exists)")
    ap.add_argument("--model", default="resnet18", help="model of the epoch and precision runs")
    ap.add_argument("--precision-scale", type=float, default=0.1)
    ap.add_argument("--precision-epochs", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=3, help="training seeds of the precision runs")
    ap.add_argument("--quick", action="store_true", help="shorter renderer timing")
    ap.add_argument("--budget-seconds", type=float, default=None,
                    help="start only sections whose estimate fits in this many seconds")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.scale <= 0 or args.seeds < 1 or args.precision_epochs < 1:
        ap.error("--jobs, --scale, --seeds and --precision-epochs must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    settings = {k: getattr(args, k) for k in SETTINGS}
    data = load_results(args.out, settings)
    import torch

    torch.set_num_threads(1)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        refuse("--device cuda: no CUDA GPU is visible here; valid choices: cuda (on a GPU "
               "machine), cpu")
    data["machine"] = data.get("machine") or machine(args.device)
    start = time.monotonic()
    remaining, failed = [], []
    for name in args.only:
        if name in data["sections"]:
            print(f"{name}: already in {args.out}, skipped", flush=True)
            continue
        need = estimate_seconds(name, args)
        left = None if args.budget_seconds is None else args.budget_seconds - (
            time.monotonic() - start)
        if left is not None and need > left:
            remaining.append(f"{name} (~{need:.0f} s)")
            continue
        t0 = time.monotonic()
        try:
            result = run_section(name, args)
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
            print(f"{name} FAILED: {exc}", file=sys.stderr, flush=True)
            continue
        data["sections"][name] = {"result": result, "seconds": time.monotonic() - t0,
                                  "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        data["summary"] = summarise(data["sections"])
        write_results(args.out, data)
    data["summary"] = summarise(data["sections"])
    write_results(args.out, data)
    print(json.dumps(data["summary"], indent=2), flush=True)
    if failed:
        print("failed (not recorded; run again to retry): " + "; ".join(failed), file=sys.stderr)
        return 1
    if remaining:
        print(f"budget spent; remaining: {', '.join(remaining)}; run the same command again "
              "to go on", flush=True)
    else:
        print(f"all sections done: {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
