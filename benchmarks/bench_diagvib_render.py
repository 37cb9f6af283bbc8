"""Throughput and peak memory of the DiagViB-6 renderer (numpy and torch paths), one CPU thread.

Baseline in the same process: a per-image painter in the style of the published DiagViB-6 code
(one Python loop iteration per image, two scikit-image rescales per image: digit mask and texture
crop), fed the same sources and realisations. Prints images/s, the ratio to the baseline, and the
peak memory of rendering one batch, measured in a fresh child process (numpy: tracemalloc's peak,
exact; torch CPU: growth of the resident set, a lower bound; CUDA: torch's peak allocation).

    .venv/bin/python benchmarks/bench_diagvib_render.py [--quick] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from shortcutlab.diagvib.render import ImageGenerator, hls_to_rgb, random_classes  # noqa: E402

torch.set_num_threads(1)


def painter_baseline(gen: ImageGenerator, classes: np.ndarray, seed: int) -> np.ndarray:
    """One image at a time, with two skimage rescales per image (the published approach)."""
    from skimage.transform import rescale

    n, size = len(classes), gen.image_size
    real = gen.realisations(classes, seed=seed, split="train", indices=np.arange(n))
    out = np.full((n, size, size, 3), 0.5, dtype=np.float64)
    s = gen.mask_size
    for i in range(n):
        mask = gen.shapes.padded[real["shape_id"][i], 1:-1, 1:-1].astype(np.float64)
        oy, ox = real["texture_offset"][i]
        crop = gen.textures.padded[classes[i, 5], oy:oy + s, ox:ox + s].astype(np.float64)
        f = real["scale"][i] * gen.zoom
        mask = rescale(mask, f, order=1, anti_aliasing=f < 1)
        crop = rescale(crop, f, order=1, anti_aliasing=f < 1)
        dark = hls_to_rgb(real["hue"][i], real["lightness"][i, 0])
        bright = hls_to_rgb(real["hue"][i], real["lightness"][i, 1])
        obj = dark + crop[..., None] * (bright - dark)
        h = mask.shape[0]
        r0 = int(round(real["position"][i, 0] * size - h / 2))
        c0 = int(round(real["position"][i, 1] * size - h / 2))
        ys, xs = slice(max(r0, 0), min(r0 + h, size)), slice(max(c0, 0), min(c0 + h, size))
        m = mask[ys.start - r0: ys.stop - r0, xs.start - c0: xs.stop - c0, None]
        o = obj[ys.start - r0: ys.stop - r0, xs.start - c0: xs.stop - c0]
        out[i, ys, xs] = m * o + (1 - m) * out[i, ys, xs]
    return (out * 255 + 0.5).astype(np.uint8).transpose(0, 3, 1, 2)


def throughput(fn, n_images: int, min_time: float, rounds: int = 5) -> tuple[float, float]:
    """(images per CPU-second, images per wall-second), each the best of ``rounds`` rounds.

    The process runs one thread, so CPU time is the time of one core; on a shared machine it is
    the fairer measure of per-core throughput (wall time also counts waiting for the core)."""
    fn(0)  # warm-up
    best_cpu, best_wall, rep = 0.0, 0.0, 1
    for _ in range(rounds):
        done, wall0, cpu0 = 0, time.perf_counter(), time.process_time()
        while True:
            fn(rep)
            done += n_images
            rep += 1
            wall = time.perf_counter() - wall0
            if wall >= min_time / rounds:
                break
        cpu = time.process_time() - cpu0
        best_cpu, best_wall = max(best_cpu, done / cpu), max(best_wall, done / wall)
    return best_cpu, best_wall


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(backend: str, device: str, batch: int) -> None:
    """Peak memory of rendering one batch, in a fresh process (prints JSON): the largest RSS
    seen by a 0.2 ms poller during rendering minus the RSS before (CUDA: torch's peak)."""
    import threading

    gen = ImageGenerator()
    classes = random_classes(batch, seed=0)
    gen.render(classes[:8], seed=0, split="train", indices=np.arange(8), backend=backend,
               device=device)
    base, peak, stop = _rss_mib(), [0.0], threading.Event()

    def poll() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_mib())
            time.sleep(0.0002)

    if backend == "numpy":  # numpy reports its allocations to tracemalloc: exact peak
        import tracemalloc

        tracemalloc.start()
        images = gen.render(classes, seed=0, split="train", indices=np.arange(batch))
        result = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        del images
        print(json.dumps({"peak_mib": result, "output_mib": batch * 3 * gen.image_size**2
                          / 2**20}))
        return
    thread = threading.Thread(target=poll)
    thread.start()
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    images = gen.render(classes, seed=0, split="train", indices=np.arange(batch),
                        backend=backend, device=device)
    peak[0] = max(peak[0], _rss_mib())
    del images
    stop.set()
    thread.join()
    result = peak[0] - base  # a lower bound: memory reused from the heap does not show
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        result = torch.cuda.max_memory_allocated() / 2**20
    out_mib = batch * 3 * gen.image_size**2 / 2**20
    print(json.dumps({"peak_mib": result, "output_mib": out_mib}))


def peak_memory(backend: str, device: str, batch: int) -> tuple[float, float]:
    res = subprocess.run([sys.executable, __file__, "--child", backend, device, str(batch)],
                         capture_output=True, text=True, check=True)
    data = json.loads(res.stdout.strip().splitlines()[-1])
    return float(data["peak_mib"]), float(data["output_mib"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer batch sizes, shorter timing")
    ap.add_argument("--device", default="cpu", help="device of the torch path (cpu or cuda)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    min_time = 1.0 if args.quick else 3.0
    batches = (64, 512) if args.quick else (32, 128, 512, 2048)
    t0 = time.perf_counter()
    gen = ImageGenerator()
    print(f"sources loaded in {time.perf_counter() - t0:.2f} s; 1 thread; "
          f"torch {torch.__version__}, numpy {np.__version__}")
    base_classes = random_classes(128, seed=0)
    base, base_wall = throughput(lambda r: painter_baseline(gen, base_classes, r), 128, min_time)
    print(f"baseline per-image painter (2 skimage rescales/image): {base:8.0f} images/CPU-s "
          f"({base_wall:.0f} images/wall-s)")
    print(f"{'path':<12}{'batch':>6}{'img/CPU-s':>11}{'x baseline':>11}{'img/wall-s':>12}"
          f"{'peak MiB':>10}{'(output MiB)':>14}")
    paths = [("numpy", "cpu"), ("torch", args.device)]
    for backend, device in paths:
        for batch in batches:
            classes = random_classes(batch, seed=1)

            def run(rep: int, classes=classes, batch=batch, backend=backend,
                    device=device) -> None:
                out = gen.render(classes, seed=rep, split="train", indices=np.arange(batch),
                                 backend=backend, device=device)
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                del out

            ips, ips_wall = throughput(run, batch, min_time)
            mem, out_mib = peak_memory(backend, device, batch)
            label = backend if backend == "numpy" else f"torch-{device}"
            print(f"{label:<12}{batch:>6}{ips:>11.0f}{ips / base:>11.1f}{ips_wall:>12.0f}"
                  f"{mem:>10.1f}{out_mib:>14.1f}")

if __name__ == "__main__":
    main()
