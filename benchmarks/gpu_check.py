"""The GPU check: everything the DiagViB-6 pipeline needs to show on a CUDA machine, in one run.

Sections, in order (each one entry of the JSON result file):

* ``cuda_tests``: the CUDA-only tests (CUDA renderer against numpy, batches made on the GPU,
  InfoDrop trained on the device, the CUDA-graph step against eager), run by pytest first. A
  failed one stops the check at once with exit status 1 and a loud line naming it (no number is
  measured on code that is broken); without CUDA they skip and the check goes on.
* ``ceiling``: what this GPU can do, measured in this process: images/s of a plain torchvision
  resnet18 training step on random 128x128 data (Adam; at batch 64 as a CUDA graph, at batch 256
  as a CUDA graph) and of its evaluation forward pass at batch 1,024, for fp32 and
  bf16 + channels_last. From them, the floor of one full-scale epoch (43,740 training + 18,748
  evaluation images) alone (batch 64) and per job-epoch when the GPU is shared (batch 256).
* ``epoch_alone`` / ``epoch_graphs_off`` / ``epoch_bf16`` / ``epoch_shared`` /
  ``epoch_shared_bf16``: seconds per full-scale epoch of ``--model`` (train + val + test;
  separate processes, the second of two epochs) with the training config a DiagViB-6 job runs
  (its preset, :func:`bench_gpu_pipeline.job_config`): one job in the paper recipe (fp32) with
  ``--cuda-graphs auto``, the same with graphs off, one job in bf16 + channels_last, and
  ``--jobs`` jobs at once under CUDA MPS (started and stopped by
  :func:`shortcutlab.runner.mps.mps_for`, ``--mps auto``) in fp32 and in bf16 + channels_last;
  each job's ``step_mode`` and peak GPU memory are recorded, and an epoch that ran eager
  although graphs were asked for on CUDA is marked ``!!`` (it is not the step a job takes).
* ``epoch_compile`` (one fp32 job with ``--compile``: its first epoch holds the compilation,
  ``first_epoch_s``), ``render`` (images/s of the CUDA renderer) and ``precision`` (test
  accuracy of fp32, bf16, fp16, channels_last, bf16 + channels_last over ``--seeds`` seeds) run
  only when named in ``--only``: the compile time is unknown, the renderer's figure known, and
  the precision runs do not fit in one 9-minute window.
* ``summary`` (always recomputed, and printed): every epoch time as a ratio to the ceiling of
  its recipe, and the GPU-hours of the whole benchmark (1,230 runs x 30 epochs) each implies.

The default sections take about 5–6 minutes on an H100 or H200 (under the 9 minutes of one GPU
window). Resumable in chunks: sections already in the result file are skipped; with
``--budget-seconds N`` a section whose estimated time does not fit in what is left is not
started, and the script exits 0 naming what remains (call it again to go on). The epoch code is
benchmarks/bench_gpu_pipeline.py's, reused.

    .venv/bin/python benchmarks/gpu_check.py --out gpu-check.json            # one GPU window
    .venv/bin/python benchmarks/gpu_check.py --out gpu-check.json --budget-seconds 540
    .venv/bin/python benchmarks/gpu_check.py --device cpu --scale 0.002 --quick --out cpu.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu_pipeline as pipeline

from shortcutlab.runner.mps import mps_for

ROOT = pipeline.ROOT
CUDA_TESTS = (
    "tests/diagvib/test_render.py::test_cuda_path_agrees_with_numpy",
    "tests/diagvib/test_dataset.py::test_batches_made_on_the_gpu",
    "tests/train/test_algorithms_biasbed.py::test_infodrop_algorithm_trains_on_device",
    "tests/train/test_step_modes.py::test_cuda_graph_step_matches_eager_on_cuda",
)
SECTIONS = ("cuda_tests", "ceiling", "epoch_alone", "epoch_graphs_off", "epoch_bf16",
            "epoch_shared", "epoch_shared_bf16", "epoch_compile", "render", "precision")
DEFAULT_SECTIONS = SECTIONS[:7]
#: The epoch sections: (precision, channels_last, cuda_graphs, shared by --jobs, compile).
EPOCHS = {"epoch_alone": ("fp32", False, "auto", False, False),
          "epoch_graphs_off": ("fp32", False, "off", False, False),
          "epoch_bf16": ("bf16", True, "auto", False, False),
          "epoch_shared": ("fp32", False, "auto", True, False),
          "epoch_shared_bf16": ("bf16", True, "auto", True, False),
          "epoch_compile": ("fp32", False, "auto", False, True)}
RECIPES = {"fp32": ("fp32", False), "bf16+channels_last": ("bf16", True)}
# Settings that must not change between the calls that fill one result file.
SETTINGS = ("device", "scale", "jobs", "model", "precision_scale", "precision_epochs", "seeds",
            "quick")


def estimate_seconds(section: str, args: argparse.Namespace) -> float:
    """A generous guess of a section's wall time, from the H100/H200 figures (fixed costs:
    process start, sources, the statistics pass and the first epoch) and, on a CPU, a per-image
    cost; used only to decide whether a section fits in the budget."""
    cpu = not args.device.startswith("cuda")
    per_image = 0.05 if cpu else 2.2e-4  # seconds per image and pass of one job
    epoch_images = sum(pipeline.FULL.values()) * args.scale
    if section == "cuda_tests":
        return 60.0
    if section == "ceiling":
        return 10.0 if args.quick else 40.0
    if section == "render":
        return 30.0 if args.quick else 60.0
    if section in EPOCHS:
        jobs = args.jobs if EPOCHS[section][3] else 1
        compile_s = (120.0 if cpu else 60.0) if EPOCHS[section][4] else 0.0
        return 40.0 + compile_s + 3 * epoch_images * per_image * jobs * (
            1.0 if cpu or jobs == 1 else 0.5)
    if section == "precision":
        runs = 5 * args.seeds * args.precision_epochs
        return 60.0 + runs * sum(pipeline.FULL.values()) * args.precision_scale * per_image
    raise ValueError(section)


def run_cuda_tests(device: str) -> dict:
    """Run the CUDA-only tests with pytest; each one's outcome (passed, failed, skipped)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)}
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
            "output_tail": proc.stdout[-3000:] if proc.returncode else "",
            "all_cuda_passed": bool(cuda) and all(v == "passed" for v in cuda.values())}


def failed_tests(result: dict) -> list[str]:
    """The tests of a ``cuda_tests`` result that failed (skipped ones do not count)."""
    return [name for name, outcome in result["outcomes"].items() if outcome == "failed"]


def plain_rates(device: str, recipe: str, train_batches: tuple[int, ...], eval_batch: int,
                size: int, min_time: float) -> dict:
    """Images/s of a plain torchvision resnet18 (10 classes, Adam) on random ``size`` x
    ``size`` data: a training step at each of ``train_batches`` (as a CUDA graph on CUDA:
    the best this step can do) and an evaluation forward at ``eval_batch``."""
    import torch
    import torch.nn.functional as F
    import torchvision

    precision, channels_last = RECIPES[recipe]
    cuda = device.startswith("cuda")
    dtype = torch.bfloat16 if precision == "bf16" else None
    layout = torch.channels_last if channels_last else torch.contiguous_format
    autocast = (lambda: torch.autocast(device.split(":")[0], dtype=dtype, cache_enabled=False)
                ) if dtype else _null

    def setup(batch: int):
        torch.manual_seed(0)
        net = torchvision.models.resnet18(num_classes=10).to(device, memory_format=layout)
        x = torch.randn(batch, 3, size, size, device=device).contiguous(memory_format=layout)
        return net, x, torch.randint(0, 10, (batch,), device=device)

    out: dict = {}
    for batch in train_batches:
        net, x, y = setup(batch)
        opt = torch.optim.Adam(net.parameters(), lr=2e-4, capturable=cuda)

        def step(n=net, o=opt, inp=x, t=y) -> None:
            o.zero_grad(set_to_none=True)
            with autocast():
                loss = F.cross_entropy(n(inp), t)
            loss.backward()
            o.step()

        out[f"train_{batch}"] = pipeline._rate(_graphed(step) if cuda else step, batch, device,
                                               min_time)
    net, x, _ = setup(eval_batch)
    net.eval()

    def forward() -> None:
        with torch.inference_mode(), autocast():
            net(x)

    out[f"eval_{eval_batch}"] = pipeline._rate(forward, eval_batch, device, min_time)
    return out


def _null():
    import contextlib

    return contextlib.nullcontext()


def _graphed(step):
    """``step`` captured as a CUDA graph after three warm-up calls on a side stream; the
    returned function replays it."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def bench_ceiling(args: argparse.Namespace) -> dict:
    """:func:`plain_rates` for each recipe, and the epoch floors they imply at full scale."""
    quick_cpu = args.quick and not args.device.startswith("cuda")
    train_batches, eval_batch, size = ((8,), 16, 32) if quick_cpu else ((64, 256), 1024, 128)
    min_time = 0.3 if args.quick else 3.0
    evaluated = pipeline.FULL["val"] + pipeline.FULL["test"]
    out: dict = {"image_size": size}
    for recipe in RECIPES:
        rates = plain_rates(args.device, recipe, train_batches, eval_batch, size, min_time)
        alone, shared = (rates[f"train_{b}"] for b in (train_batches[0], train_batches[-1]))
        eval_rate = rates[f"eval_{eval_batch}"]
        out[recipe] = {
            "rates": rates,
            "epoch_floor_s": pipeline.FULL["train"] / alone + evaluated / eval_rate,
            "job_epoch_floor_s": pipeline.FULL["train"] / shared + evaluated / eval_rate}
        print(f"ceiling {recipe}: " + ", ".join(f"{k} {v:,.0f} images/s" for k, v in
                                                rates.items())
              + f"; one epoch >= {out[recipe]['epoch_floor_s']:.2f} s alone, "
              f"{out[recipe]['job_epoch_floor_s']:.2f} s per job-epoch shared", flush=True)
    return out


def run_epoch(name: str, args: argparse.Namespace) -> dict:
    precision, channels_last, graphs, shared, compile = EPOCHS[name]
    jobs = args.jobs if shared else 1
    on_cuda = args.device.startswith("cuda")
    with mps_for(args.mps, jobs, on_cuda=on_cuda, say=print) as mps:
        res = pipeline.bench_epoch(args.device, args.scale, [jobs], precision, channels_last,
                                   args.model, cuda_graphs=graphs, compile=compile)
    return {"jobs": jobs, "mps": mps, "precision": precision, "channels_last": channels_last,
            "cuda_graphs": graphs, "compile": compile,
            "graphs_expected": on_cuda and graphs == "auto", **res[jobs]}


def run_section(name: str, args: argparse.Namespace) -> dict:
    if name == "cuda_tests":
        return run_cuda_tests(args.device)
    if name == "ceiling":
        return bench_ceiling(args)
    if name in EPOCHS:
        return run_epoch(name, args)
    if name == "render":
        min_time = (1.0 if args.device.startswith("cuda") else 0.3) if args.quick else 3.0
        batches = [512] if args.quick and not args.device.startswith("cuda") else [512, 4096]
        return pipeline.bench_render(args.device, batches, min_time)
    if name == "precision":
        return pipeline.bench_precision(args.device, args.model, args.precision_scale,
                                        args.precision_epochs, args.seeds)
    raise ValueError(name)


def summarise(sections: dict) -> dict:
    """Per epoch section: seconds per epoch and per job-epoch in aggregate, the ratio to the
    ceiling of its recipe (alone: the batch-64 floor; shared: the per-job-epoch floor), and
    the benchmark's GPU-hours; the precision section's accuracy change against fp32."""
    out: dict = {}
    ceiling = sections.get("ceiling", {}).get("result")
    for key in EPOCHS:
        if key not in sections:
            continue
        sec = sections[key]["result"]
        util = sec.get("utilisation") or []
        aggregate = sec["epoch_s"] / sec["jobs"]
        recipe = "bf16+channels_last" if sec["precision"] == "bf16" else "fp32"
        floor = None
        if ceiling is not None:
            floor = ceiling[recipe]["job_epoch_floor_s" if sec["jobs"] > 1 else "epoch_floor_s"]
        out[key] = {
            "recipe": recipe, "jobs": sec["jobs"], "step_mode": sec.get("step_mode"),
            "epoch_s_each": sec["epoch_s"], "job_epoch_s_aggregate": aggregate,
            "ceiling_s": floor, "ratio_to_ceiling": aggregate / floor if floor else None,
            "benchmark_gpu_hours": pipeline.RUNS * pipeline.EPOCHS * aggregate / 3600,
            "gpu_busy_percent": sum(util) / len(util) if util else None,
            "peak_gib": sec.get("peak_gib"),
            "first_epoch_s": sec.get("first_epoch_s"),
            # graphs asked for on CUDA but the step ran eager: not the step a job takes
            "not_the_recipe_step": bool(sec.get("graphs_expected"))
            and sec.get("step_mode") != "graph",
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


def summary_lines(summary: dict) -> list[str]:
    """One line per epoch section: its time, its ratio to the ceiling, its GPU-hours."""
    lines = []
    for key in EPOCHS:
        if key not in summary:
            continue
        row = summary[key]
        ratio = (f"{row['ratio_to_ceiling']:.2f} x the ceiling ({row['ceiling_s']:.2f} s)"
                 if row["ratio_to_ceiling"] else "no ceiling measured")
        lines.append(
            f"{key:16s} {row['recipe']:18s} {row['jobs']} job(s), {row['step_mode']}: "
            f"{row['epoch_s_each']:.2f} s per epoch each, {row['job_epoch_s_aggregate']:.2f} s "
            f"per job-epoch = {ratio}; full benchmark {row['benchmark_gpu_hours']:,.1f} GPU-hours"
            + ("  !! ran eager although CUDA graphs were asked for: not the step a DiagViB-6 job "
               "takes" if row.get("not_the_recipe_step") else ""))
    return lines


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
            "host": os.uname().nodename,
            "date": dt.datetime.now(dt.UTC).date().isoformat()}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("gpu-check.json"),
                    help="result file (read to resume, rewritten after every section)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--scale", type=float, default=1.0, help="experiment scale of the epochs")
    ap.add_argument("--jobs", type=int, default=5, help="jobs sharing the GPU (epoch_shared)")
    ap.add_argument("--mps", choices=("auto", "off"), default="auto",
                    help="CUDA MPS for the shared jobs (auto: when nvidia-cuda-mps-control exists)")
    ap.add_argument("--model", default="resnet18", help="model of the epoch and precision runs")
    ap.add_argument("--precision-scale", type=float, default=0.1)
    ap.add_argument("--precision-epochs", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=3, help="training seeds of the precision runs")
    ap.add_argument("--quick", action="store_true",
                    help="shorter timings (and, on a CPU, a tiny ceiling step)")
    ap.add_argument("--budget-seconds", type=float, default=None,
                    help="start only sections whose estimate fits in this many seconds")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(DEFAULT_SECTIONS))
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
        if name == "cuda_tests" and failed_tests(result):
            print("!" * 78 + f"\nCUDA TESTS FAILED: {', '.join(failed_tests(result))}\n"
                  "nothing was measured; fix them first (pytest output below)\n" + "!" * 78 +
                  f"\n{result['output_tail']}", file=sys.stderr, flush=True)
            return 1
        data["sections"][name] = {"result": result, "seconds": time.monotonic() - t0,
                                  "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        data["summary"] = summarise(data["sections"])
        write_results(args.out, data)
    data["summary"] = summarise(data["sections"])
    write_results(args.out, data)
    where = data["machine"].get("gpu") or data["machine"]["device"]
    print(f"summary on {where} ({data['machine'].get('date', '')}, torch "
          f"{data['machine']['torch']}; {time.monotonic() - start:.0f} s this call):", flush=True)
    for line in summary_lines(data["summary"]):
        print("  " + line, flush=True)
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
