"""Our DiagViB-6 numbers next to the paper's (section 5): resnet18, paper protocol, ZSO and ZGO.

Plans the ZSO and ZGO jobs of the chosen dataset samples with the ``paper`` training protocol
(Adam 2e-4, batch 64, 30 epochs, checkpoint of lowest validation loss, inputs z-scored with the
training split's statistics), runs them (resumable: a second call only reports), and prints P_i,
FAAvg and FAMin beside what the paper states for its ResNet-18 and the P_ij ≈ 1 − P_ji check.

Full scale needs a GPU (about 1,230 GPU-minutes per sample at 30 epochs for ZSO + ZGO on an H100
today, see BENCHMARKS.md):

    python benchmarks/validate_diagvib_paper.py --scale 1 --samples 0 1 2 3 4 --device cuda \\
        --textures /path/to/diagvib-6/textures --workers 6 --out runs/paper-rn18

On a CPU the same script is correct at small scale, e.g. ``--scale 0.01 --epochs 3 --pairs
hue-shape shape-hue`` (minutes), but its numbers then say nothing about the paper's.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.jobs import build_jobs, collect_jobs
from shortcutlab.diagvib.metrics import CHANCE, compute_metrics
from shortcutlab.diagvib.report import format_mean_err, write_report
from shortcutlab.runner.backends import run_jobs
from shortcutlab.train.config import TrainConfig

# What section 5 states for ResNet-18 (five dataset samples, 30 epochs).
PAPER_ZSO = {f: "≥ 0.99" for f in FACTORS} | {"texture": "0.62 ± 0.06"}
PAPER_ZGO = {
    "position": "never shortcut by another factor: FAAvg near its ZSO accuracy",
    "texture": "shortcut by every other factor: FAAvg below chance",
}
REFERENCE_TEXTURES = Path(__file__).resolve().parents[2] / "shared/data/diagvib6-paper/textures"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--samples", type=int, nargs="+", default=[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--pairs", nargs="+", default=None, help="default: all 30")
    parser.add_argument("--epochs", type=int, default=None, help="default: the protocol's 30")
    parser.add_argument("--textures", type=Path, default=None,
                        help="texture folder (the authors' five for a like-for-like check; "
                             f"default {REFERENCE_TEXTURES} when it exists, else built-in)")
    parser.add_argument("--mnist", type=Path, default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--backend", default="processes")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/validate-paper"))
    args = parser.parse_args()

    textures = args.textures
    if textures is None and REFERENCE_TEXTURES.is_dir():
        textures = REFERENCE_TEXTURES
    config = TrainConfig(protocol="paper", model=args.model)
    if args.epochs is not None:
        config = config.replace(epochs=args.epochs)
    jobs = build_jobs(args.model, ["ZSO", "ZGO"], args.pairs, args.samples, args.seeds,
                      args.scale, config, mnist=args.mnist, textures=textures)
    print(f"{len(jobs)} jobs: {args.model}, protocol {config.describe_protocol()}, scale "
          f"{args.scale:g}, samples {args.samples}, seeds {args.seeds}, textures "
          f"{textures or 'built-in'}; run folder {args.out}")
    summary = run_jobs(jobs, args.out, backend=args.backend, workers=args.workers,
                       device=args.device)
    print(f"{len(summary.done)} trained, {len(summary.skipped)} already done, "
          f"{len(summary.failed)} failed")
    metrics = compute_metrics(collect_jobs(args.out))
    label = metrics.labels[0]
    index = write_report(metrics.table, args.out / "report",
                         title=f"{args.model}: ZSO and ZGO with the paper protocol")

    print(f"\nZSO: P_i (mean ± standard error over {len(args.samples)} sample(s); chance "
          f"{CHANCE:.2f})")
    print(f"{'factor':<10} {'ours':>14} {'paper RN18':>14}")
    zso = metrics.zso.set_index("factor")
    for f in FACTORS:
        ours = (format_mean_err(zso.at[f, "mean"], zso.at[f, "sem"]) if f in zso.index
                else "–")
        print(f"{f:<10} {ours:>14} {PAPER_ZSO[f]:>14}")

    agg = metrics.aggregates[metrics.aggregates["study"] == "ZGO"]
    if len(agg):
        print("\nZGO: FAAvg and FAMin (accuracy on the out-of-distribution cells)")
        print(f"{'factor':<10} {'FAAvg':>14} {'FAMin':>14}  paper")
        for f in FACTORS:
            rows = agg[agg["factor"] == f].set_index("metric")
            if not len(rows):
                continue
            cells = [format_mean_err(rows.at[m, "mean"], rows.at[m, "sem"])
                     for m in ("FAAvg", "FAMin")]
            print(f"{f:<10} {cells[0]:>14} {cells[1]:>14}  {PAPER_ZGO.get(f, '')}")
        sym = metrics.symmetry[metrics.symmetry["study"] == "ZGO"]
        if len(sym):
            worst = sym.loc[sym["deviation"].abs().idxmax()]
            print(f"\nP_ij + P_ji − 1 over {len(sym)} pairs: mean |deviation| "
                  f"{sym['deviation'].abs().mean():.2f} (paper: ≈ 0 for all pairs except "
                  f"lightness/position); largest {worst['factor_i']}/{worst['factor_j']} "
                  f"{worst['deviation']:+.2f}")
    unfit = metrics.unfit[metrics.unfit["label"] == label]
    if len(unfit):
        print(f"\n{len(unfit)} run(s) did not fit their training data: "
              + ", ".join(unfit["experiment"]))
    print(f"\nreport: {index}")
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
