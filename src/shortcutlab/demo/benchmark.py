"""Demo stage ``benchmark``: a reduced DiagViB-6 benchmark of the small CNN, then its report.

ZSO and ZGO for every factor and all 30 ordered pairs, one dataset sample, 1 % of the paper's
dataset size, a few epochs: 36 training runs that take a few minutes on two CPU cores. The run
folder is resumable like any ``shortcutlab diagvib run``: a second demo only re-draws the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.jobs import build_jobs
from shortcutlab.diagvib.metrics import CHANCE, compute_metrics
from shortcutlab.diagvib.report import load_job_table, write_report
from shortcutlab.runner.backends import Backend
from shortcutlab.runner.runs import run_jobs
from shortcutlab.train.config import TrainConfig

DEMO_STUDIES: tuple[str, ...] = ("ZSO", "ZGO")
DEMO_SCALE = 0.01  # 437 training, 87 validation, 100 test images per experiment
DEMO_CONFIG = TrainConfig(preset="demo", model="small_cnn")


def run_benchmark_demo(
    out_dir: str | Path,
    console: Console,
    *,
    studies: Sequence[str] = DEMO_STUDIES,
    pairs: Sequence[str] | None = None,
    scale: float = DEMO_SCALE,
    config: TrainConfig = DEMO_CONFIG,
    backend: Backend = "processes",
    workers: int | None = None,
    progress: bool = True,
) -> list[str]:
    """Train ``config.model`` on ``studies`` (sample 0, seed 0), write the report; return lines
    saying what was written and what the numbers show."""
    out = Path(out_dir)
    runs = out / "runs"
    jobs = build_jobs(config.model, studies, pairs, samples=[0], seeds=[0], scale=scale,
                      train_config=config)
    console.print(f"training {config.model} on {len(jobs)} DiagViB-6 experiments "
                  f"({', '.join(studies)}; scale {scale:g}) in {runs}")
    summary = run_jobs(jobs, runs, backend=backend, workers=workers, device="cpu",
                       progress=progress)
    console.print(f"{len(summary.done)} trained, {len(summary.skipped)} already done, "
                  f"{len(summary.failed)} failed in {summary.seconds:.0f} s")
    # this demo's jobs only: the folder may hold runs of other settings (an earlier version's
    # demo, a user's own), which one report must not mix with these
    table = load_job_table(runs)
    table = table[table["job_id"].isin({job.job_id for job in jobs})]
    index = write_report(table, out / "report", title="DiagViB-6 demo: small CNN, ZSO and ZGO")
    metrics = compute_metrics(table)
    lines = [f"benchmark runs ({len(jobs)} jobs): {runs}",
             f"DiagViB-6 report: {index}"]
    if summary.failed:
        lines.append(f"{len(summary.failed)} job(s) failed: see the report's Jobs section")
    if len(metrics.unfit):
        lines.append(f"{len(metrics.unfit)} of {len(jobs)} run(s) did not fit their training data "
                     "(validation accuracy near chance): flagged with '!' in the report")
    zso = metrics.zso.set_index("factor")["mean"]
    if len(zso):
        accs = ", ".join(f"{f} {zso[f]:.2f}" for f in FACTORS if f in zso.index)
        lines.append(f"ZSO accuracy (chance {CHANCE:.2f}): {accs}")
    agg = metrics.aggregates
    zgo = agg[(agg["study"] == "ZGO") & (agg["metric"] == "FAAvg")].set_index("factor")["mean"]
    if len(zgo):
        accs = ", ".join(f"{f} {zgo[f]:.2f}" for f in FACTORS if f in zgo.index)
        lines.append(f"ZGO FAAvg, accuracy off the shortcut (low = shortcut taken): {accs}")
    for line in lines:
        console.print(line)
    return lines


def run_demo(out_dir: Path, console: Console) -> list[str]:
    """The ``benchmark`` stage of ``shortcutlab demo``."""
    return run_benchmark_demo(out_dir, console)
