"""Benchmark: the factor-analysis engine on N annotated items × F factors (issue 33's target:
10 million items × 20 factors in under a minute and 4 GB).

Synthetic data: integer ids, 10 classes, F binary factors (present with probability 0.2 to
0.4), one model right with a probability that drops on factor 0. Times the whole one call
(`analyse_factors` without bootstrap: check and expand the annotations, join, per-factor
counts, worst factors overall and per class, tests, worst-group accuracy) and the peak RSS.
Run: ``.venv/bin/python benchmarks/bench_factor_analysis.py --items 10000000``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000_000)
    parser.add_argument("--factors", type=int, default=20)
    args = parser.parse_args()

    from shortcutlab.factor_analysis import analyse_factors

    print(f"machine: {os.cpu_count()} CPU cores (shared), load average {os.getloadavg()[0]:.1f}")
    gen = np.random.default_rng(0)
    n, f = args.items, args.factors
    label = gen.integers(0, 10, n)
    factors = gen.random((n, f)) < np.linspace(0.2, 0.4, f)
    annotations = pd.DataFrame(factors.astype(np.int8), columns=[f"f{i}" for i in range(f)])
    annotations.insert(0, "label", label)
    annotations.insert(0, "id", np.arange(n))
    right = gen.random(n) < np.where(factors[:, 0], 0.6, 0.9)
    predictions = pd.DataFrame({"id": np.arange(n),
                                "prediction": np.where(right, label, (label + 1) % 10)})
    del factors, right
    inputs = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    start, cpu = time.perf_counter(), time.process_time()
    report = analyse_factors(annotations, predictions, n_boot=0, k=3)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(report.worst[["factor", "count", "error_ratio"]].to_string(index=False))
    print(f"{n:,} items × {f} factors: analyse_factors {seconds:.1f} s wall, {cpu:.1f} s CPU; "
          f"peak RSS {peak:.2f} GiB ({inputs:.2f} GiB after making the inputs)")


if __name__ == "__main__":
    main()
