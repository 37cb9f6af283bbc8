"""Jobs, their hashed run directories and the ``done`` marker (DomainBed habit).

A job is (training config, experiment name + scale + benchmark seed, training seed = the
config's ``seed``). Its directory is ``<out>/<job_id>/`` with ``job_id`` the first 16 hex digits
of the sha256 of the job's canonical JSON. A finished job holds ``job.json``, ``result.json``,
``epochs.parquet`` and, written last, ``done``. Every file is written atomically, so a killed job
leaves nothing that counts as done; a crashed job leaves ``error.txt`` (the traceback) and is
retried by the next run.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shortcutlab.errors import RunnerError, ShortcutlabError, unknown_choice
from shortcutlab.train.config import TrainConfig, format_validation_error
from shortcutlab.utils.io import atomic_path, write_json, write_text

JOB_FILE, RESULT_FILE, EPOCHS_FILE, DONE_FILE, ERROR_FILE = (
    "job.json", "result.json", "epochs.parquet", "done", "error.txt",
)
ID_LENGTH = 16


class Job(BaseModel):
    """One training run. ``kind`` selects the job function (``diagvib``: train on the DiagViB-6
    experiment; ``noop``: do nothing, for overhead benchmarks and tests). ``spec``: an exact
    experiment specification (from a generated benchmark folder) used instead of
    ``make_experiment(experiment, scale, benchmark_seed)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: str
    scale: float = Field(1.0, gt=0)
    benchmark_seed: int = Field(0, ge=0)
    train: TrainConfig = Field(default_factory=TrainConfig)
    kind: str = "diagvib"
    spec: dict[str, Any] | None = None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise RunnerError(format_validation_error(exc, "job")) from None
        if self.kind not in JOB_KINDS:
            raise RunnerError(unknown_choice("job kind", self.kind, sorted(JOB_KINDS)))

    def canonical_json(self) -> str:
        """Sorted keys, no spaces: equal jobs give equal bytes, hence equal ids."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def job_id(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:ID_LENGTH]

    @property
    def seed(self) -> int:
        return self.train.seed

    def describe(self) -> dict[str, Any]:
        """study, predicted, correlated ('' if none), sample parsed from the experiment name."""
        return describe_experiment(self.experiment)


def describe_experiment(name: str) -> dict[str, Any]:
    """Parse ``STUDY/PREDICTED[-CORRELATED]/SAMPLE`` into study, predicted, correlated ('' if
    none) and sample (0 when missing or not a number)."""
    parts = name.split("/")
    middle = parts[1] if len(parts) > 1 else ""
    predicted, _, correlated = middle.partition("-")
    try:
        sample = int(parts[2]) if len(parts) > 2 else 0
    except ValueError:
        sample = 0
    return {"study": parts[0], "predicted": predicted, "correlated": correlated,
            "sample": sample}


@dataclass
class JobOutput:
    """What a job function returns: a flat JSON-ready result dict and the per-epoch table."""

    result: dict[str, Any]
    epochs: pd.DataFrame | None = None


@dataclass
class Outcome:
    """How one job ended in this run: ``done``, ``failed`` (with the error's last line) or
    ``skipped`` (already done)."""

    job_id: str
    status: str
    error: str = ""
    seconds: float = 0.0


def job_dir(out: str | Path, job: Job) -> Path:
    return Path(out) / job.job_id


def is_done(path: Path) -> bool:
    return (path / DONE_FILE).is_file()


def job_status(path: Path) -> str:
    """``done`` (marker present), ``failed`` (error.txt and no marker) or ``pending``."""
    if is_done(path):
        return "done"
    if (path / ERROR_FILE).is_file():
        return "failed"
    return "pending"


def write_job_file(out: str | Path, job: Job) -> Path:
    """Create the job's directory with ``job.json`` (so collect lists it as pending)."""
    path = job_dir(out, job)
    target = path / JOB_FILE
    text = json.dumps(job.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        write_text(target, text)
    return path


def read_job(path: Path) -> Job:
    """The job stored in ``path/job.json``."""
    try:
        return Job(**json.loads((path / JOB_FILE).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunnerError(f"cannot read {path / JOB_FILE}: {exc}") from None


# ----------------------------------------------------------------------------- job functions


def noop_job(job: Job, device: str) -> JobOutput:
    """A job that trains nothing (runner-overhead benchmark, tests); an experiment name
    containing ``fail`` raises, one containing ``sleep`` waits 0.2 s."""
    if "fail" in job.experiment:
        raise RuntimeError(f"noop job {job.experiment} failed on purpose")
    if "sleep" in job.experiment:
        time.sleep(0.2)
    epochs = pd.DataFrame(
        {"epoch": [0], "train_loss": [0.0], "val_loss": [0.0], "val_acc": [1.0],
         "test_set": ["test"], "tag": ["all"], "acc": [1.0], "n": [1]}
    )
    result = {"best_epoch": 0, "epochs_run": 1, "val_loss": 0.0, "val_acc": 1.0,
              "test_acc": 1.0, "train_seconds": 0.0}
    return JobOutput(result, epochs)


def diagvib_job(job: Job, device: str) -> JobOutput:
    """Train ``job.train`` on the DiagViB-6 experiment; test set ``test`` with per-tag accuracy."""
    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
    from shortcutlab.diagvib.spec import ExperimentSpec
    from shortcutlab.diagvib.studies import make_experiment
    from shortcutlab.train.algorithms.base import AlgorithmContext
    from shortcutlab.train.trainer import train
    from shortcutlab.utils.device import resolve_device

    if job.spec is not None:
        spec = ExperimentSpec(**job.spec)
    else:
        spec = make_experiment(job.experiment, scale=job.scale, seed=job.benchmark_seed)
    train_ds = DiagvibDataset(spec, "train")
    val_ds = DiagvibDataset(spec, "val", generator=train_ds.generator)
    test_ds = DiagvibDataset(spec, "test", generator=train_ds.generator)
    torch_device = resolve_device(device)
    context = AlgorithmContext(
        spec=spec, generator=train_ds.generator, data_seed=getattr(train_ds, "render_seed", None),
        factor_classes={f: FACTOR_TABLE[f].classes for f in FACTORS},
        train_dataset=train_ds, device=torch_device,
    )
    res = train(job.train, train_ds, val_ds, {"test": test_ds}, device=torch_device,
                context=context)
    summary = res.summary()
    summary["spec_hash"] = spec.content_hash()
    summary["device"] = str(torch_device)
    return JobOutput(summary, res.epochs)


JOB_KINDS: dict[str, Callable[[Job, str], JobOutput]] = {
    "diagvib": diagvib_job,
    "noop": noop_job,
}


def _clean(obj: Any) -> Any:
    """JSON-safe: NaN/inf become None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    return obj


def run_one(job: Job, out: str | Path, device: str = "auto") -> Outcome:
    """Run ``job`` unless its directory is done; write results atomically, ``done`` last.

    Any exception is caught, its traceback written to ``error.txt`` and reported as ``failed``.
    """
    path = write_job_file(out, job)
    if is_done(path):
        return Outcome(job.job_id, "skipped")
    (path / ERROR_FILE).unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        output = JOB_KINDS[job.kind](job, device)
        if output.epochs is not None:
            with atomic_path(path / EPOCHS_FILE, suffix=".parquet") as tmp:
                output.epochs.to_parquet(tmp, index=False)
        result = {"device": device, **_clean(output.result), "job_id": job.job_id}
        write_json(path / RESULT_FILE, result)
        write_text(path / DONE_FILE, "")
    except Exception as exc:
        write_text(path / ERROR_FILE, traceback.format_exc())
        message = str(exc) if isinstance(exc, ShortcutlabError) else f"{type(exc).__name__}: {exc}"
        return Outcome(job.job_id, "failed", message.splitlines()[-1] if message else "",
                       time.perf_counter() - start)
    return Outcome(job.job_id, "done", "", time.perf_counter() - start)


# ----------------------------------------------------------------------------- building jobs


def _load_generated(specs_dir: Path) -> dict[str, dict[str, Any]]:
    """name -> spec dict from a folder written by ``shortcutlab diagvib studies --out``."""
    import yaml

    index = specs_dir / "index.csv"
    if not index.is_file():
        raise RunnerError(
            f"{specs_dir} holds no generated benchmark (no index.csv); write one with "
            f"`shortcutlab diagvib studies --out {specs_dir}`"
        )
    table = pd.read_csv(index, keep_default_na=False)
    return {
        row["name"]: yaml.safe_load((specs_dir / row["path"]).read_text(encoding="utf-8"))
        for _, row in table.iterrows()
    }


def build_jobs(
    model: str,
    studies: Sequence[str],
    pairs: Sequence[str] | None = None,
    samples: Sequence[int] | int | None = None,
    seeds: Iterable[int] = (0,),
    scale: float = 1.0,
    train_config: TrainConfig | None = None,
    *,
    benchmark_seed: int = 0,
    specs_dir: str | Path | None = None,
) -> list[Job]:
    """One job per (experiment, training seed) for ``model``.

    ``pairs``: "predicted-correlated" strings (default all 30; ZSO uses their predicted factors);
    ``samples``: dataset sample ids (default 0..4). ``specs_dir``: use the exact specs of a
    generated benchmark folder; an experiment it lacks is an error naming the missing studies.
    """
    from shortcutlab.diagvib.studies import experiment_names

    base = (train_config or TrainConfig()).replace(model=model)
    if not studies:
        raise RunnerError("no study given; choose from the DiagViB-6 studies (e.g. --study ZSO)")
    names = experiment_names(list(studies), list(pairs) if pairs else None, samples)
    generated: dict[str, dict[str, Any]] | None = None
    if specs_dir is not None:
        generated = _load_generated(Path(specs_dir))
        missing = [n for n in names if n not in generated]
        if missing:
            have = sorted({n.split("/")[0] for n in generated})
            lacking = sorted({n.split("/")[0] for n in missing})
            raise RunnerError(
                f"study {', '.join(lacking)} was not generated in {specs_dir} (e.g. {missing[0]} "
                f"is missing); generated studies: {', '.join(have) or 'none'}"
            )
    jobs = []
    for name in names:
        for seed in seeds:
            jobs.append(Job(
                experiment=name, scale=scale, benchmark_seed=benchmark_seed,
                train=base.replace(seed=int(seed)),
                spec=generated[name] if generated is not None else None,
            ))
    return jobs
