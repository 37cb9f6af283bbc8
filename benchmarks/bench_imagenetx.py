"""Benchmark: ImageNet-X evaluation of 2,200 models × 46,110 images (target < 10 s, < 2 GB).

Compares, in the same process, with the imagenet-x package's own per-model pandas evaluation
(``imagenet_x.get_factor_accuracies``) timed on a few models and extrapolated to 2,200.
Models are synthetic (right with a model-specific probability, else a random class); the
numbers depend only on array sizes. Run: ``.venv/bin/python benchmarks/bench_imagenetx.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=2200)
    parser.add_argument("--package-models", type=int, default=8)
    args = parser.parse_args()

    import imagenet_x

    from shortcutlab.imagenetx.annotations import load_annotations, original_val_labels
    from shortcutlab.imagenetx.evaluate import evaluate
    from shortcutlab.imagenetx.predictions import Predictions

    print(f"machine: {os.cpu_count()} CPU cores (shared), load average {os.getloadavg()[0]:.1f}")
    rss_start = _rss_mb()
    annotations = load_annotations("top", "val")
    labels = original_val_labels()
    gen = np.random.default_rng(0)
    truth = labels.to_numpy()[None, :]
    classes = np.empty((args.models, len(labels)), dtype=np.int16)
    for start in range(0, args.models, 100):  # chunked, so generation does not dominate RSS
        n = len(classes[start : start + 100])
        acc = gen.uniform(0.5, 0.9, n)[:, None]
        classes[start : start + n] = np.where(
            gen.random((n, len(labels))) < acc, truth, gen.integers(0, 1000, (n, len(labels)))
        )
    predictions = Predictions(
        tuple(f"model{i}" for i in range(args.models)), labels.index.to_numpy(dtype=str), classes
    )
    print(f"predictions: {args.models} models × {len(labels):,} images "
          f"({classes.nbytes / 2**20:.0f} MiB int16); {len(annotations):,} annotated images")

    ours: dict[str, float] = {}
    for error_type in ("class", "metaclass", "real_class"):
        tracemalloc.start()
        start, cpu = time.perf_counter(), time.process_time()
        result = evaluate(predictions, annotations, error_type)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        ours[error_type] = cpu
        print(f"shortcutlab evaluate [{error_type:10s}]: {seconds:6.2f} s wall, {cpu:5.2f} s CPU "
              f"({seconds / args.models * 1e3:.2f} ms/model), peak extra memory {peak:7.0f} MiB "
              f"(per-factor, per-meta-label, error ratios, prevalence shift)")
    assert result.error_ratio.shape == (args.models, 16)
    print(f"process peak RSS: {_rss_mb():.0f} MiB (at start {rss_start:.0f} MiB; includes the "
          f"{classes.nbytes / 2**20:.0f} MiB input matrix)")

    # The package's pipeline with its annotations loaded once: read the CSVs, merge them with
    # the annotations (adding is_correct, is_correct_real, ...), aggregate per model. The slope
    # between two model counts is its cost per extra model.
    from imagenet_x.aggregate import compute_factor_accuracies

    package_annotations = imagenet_x.load_annotations()
    counts = (2, max(3, args.package_models))
    with tempfile.TemporaryDirectory() as tmp:
        order = pd.read_csv(imagenet_x.utils.get_annotation_path() / "filename_label.csv")
        position = pd.Index(predictions.file_names).get_indexer(order["file_name"])
        folders = {}
        for k in counts:
            folders[k] = Path(tmp) / f"k{k}"
            folders[k].mkdir()
            for i in range(k):
                pd.DataFrame({"file_name": order["file_name"],
                              "predicted_class": classes[i, position],
                              "predicted_probability": 0.5}).to_csv(
                    folders[k] / f"model{i}.csv", index=False)
        for error_type, column in (("class", "is_correct"), ("real_class", "is_correct_real")):
            timings, peaks = {}, {}
            for k in counts:
                tracemalloc.start()
                start = time.process_time()
                models, _ = imagenet_x.load_model_predictions(str(folders[k]))
                frame = imagenet_x.augment_model_predictions(package_annotations, models)
                reference = compute_factor_accuracies(frame, imagenet_x.FACTORS, column)
                timings[k] = time.process_time() - start
                peaks[k] = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                del frame, models
            lo, hi = counts
            per_model = (timings[hi] - timings[lo]) / (hi - lo)
            per_model_mb = (peaks[hi] - peaks[lo]) / (hi - lo)
            mine = evaluate(predictions.select(list(reference.index)), annotations,
                            error_type).summary(worst_classes=None)
            diff = np.nanmax(np.abs(mine.to_numpy() - reference.loc[mine.index,
                                                                    mine.columns].to_numpy()))
            total = per_model * args.models
            print(f"imagenet-x package  [{error_type:10s}]: {timings[lo]:.2f} s CPU for {lo} "
                  f"models, {timings[hi]:.2f} s for {hi} -> {per_model:.2f} s CPU and "
                  f"{per_model_mb:.0f} MiB per model; extrapolated to {args.models}: "
                  f"{total / 60:.1f} min and {per_model_mb * args.models / 1024:.0f} GiB, "
                  f"{total / ours[error_type]:.0f}x shortcutlab's CPU time; "
                  f"max |difference| on the same models {diff:.1e}")


if __name__ == "__main__":
    main()
