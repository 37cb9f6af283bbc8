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
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shortcutlab.errors import RunnerError, ShortcutlabError, unknown_choice
from shortcutlab.train.config import TrainConfig, format_validation_error
from shortcutlab.utils.digest import content_digest
from shortcutlab.utils.io import atomic_path, write_json, write_text
from shortcutlab.utils.sanitize import json_safe

JOB_FILE, RESULT_FILE, EPOCHS_FILE, DONE_FILE, ERROR_FILE = (
    "job.json", "result.json", "epochs.parquet", "done", "error.txt",
)
ID_LENGTH = 16


class Job(BaseModel):
    """One training run: ``kind`` names the registered job function that runs it (see
    :func:`register_job_kind`); ``experiment``, ``scale``, ``benchmark_seed`` and ``spec`` say
    what to train on, in the kind's own terms; ``train`` how.

    ``inputs``: named local files or folders the job reads (DiagViB-6: ``mnist``, ``textures``).
    The id depends on their content (``input_digests``, computed when the job is made), not on
    their path: a moved folder keeps its jobs, an edited one gets new ones.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: str
    kind: str
    scale: float = Field(1.0, gt=0)
    benchmark_seed: int = Field(0, ge=0)
    train: TrainConfig = Field(default_factory=TrainConfig)
    spec: dict[str, Any] | None = None
    inputs: dict[str, str] = Field(default_factory=dict)
    input_digests: dict[str, str] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        inputs = {k: str(Path(v).resolve()) for k, v in (data.get("inputs") or {}).items()}
        if inputs:
            data["inputs"] = inputs
            if not data.get("input_digests"):
                data["input_digests"] = {k: content_digest(v) for k, v in inputs.items()}
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise RunnerError(format_validation_error(exc, "job")) from None
        if set(self.inputs) != set(self.input_digests):
            raise RunnerError(f"job inputs {sorted(self.inputs)} and their digests "
                              f"{sorted(self.input_digests)} do not match")

    def canonical_json(self) -> str:
        """Sorted keys, no spaces: equal jobs give equal bytes, hence equal ids. Input paths are
        left out (their digests count); jobs without inputs hash as they always did."""
        exclude = {"inputs"} | (set() if self.inputs else {"input_digests"})
        return json.dumps(self.model_dump(mode="json", exclude=exclude), sort_keys=True,
                          separators=(",", ":"))

    def check_inputs(self) -> None:
        """Raise unless every input still has the content the job was planned with."""
        for name, path in sorted(self.inputs.items()):
            if content_digest(path) != self.input_digests[name]:
                raise RunnerError(f"input {name!r} ({path}) changed since the job was planned; "
                                  "plan the jobs again (a new id keeps the results apart)")

    @property
    def job_id(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:ID_LENGTH]

    @property
    def seed(self) -> int:
        return self.train.seed

    def describe(self) -> dict[str, Any]:
        """The columns the job's kind derives from its experiment name ({} if none)."""
        return describe_job(self.kind, self.experiment)


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


# ----------------------------------------------------------------------------- job kinds


JobFunction = Callable[[Job, str], JobOutput]
Describer = Callable[[str], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    """What the runner needs of a kind of job: the function that runs one (a module-level
    function, so that worker processes can import it by name) and, optionally, a function that
    turns an experiment name into extra job-table columns (e.g. study and factors)."""

    run: JobFunction
    describe: Describer | None = None


_JOB_KINDS: dict[str, JobKind] = {}


def register_job_kind(name: str, run: JobFunction, describe: Describer | None = None) -> None:
    """Make ``Job(kind=name)`` runnable by ``run(job, device) -> JobOutput``. Re-registering
    the same functions is a no-op; another function under a taken name is an error."""
    kind = JobKind(run, describe)
    if _JOB_KINDS.get(name, kind) != kind:
        raise RunnerError(f"job kind {name!r} is already registered with another function")
    _JOB_KINDS[name] = kind


def job_kinds() -> list[str]:
    """The names of the registered job kinds."""
    return sorted(_JOB_KINDS)


def job_kind(name: str) -> JobKind:
    """The registered kind ``name``; an error naming the registered ones otherwise."""
    if name not in _JOB_KINDS:
        raise RunnerError(unknown_choice("job kind", name, job_kinds() or ["(none registered)"]))
    return _JOB_KINDS[name]


def describe_job(kind: str, experiment: str) -> dict[str, Any]:
    """The extra table columns the kind's describer derives from ``experiment`` ({} if none)."""
    found = _JOB_KINDS.get(kind)
    return found.describe(experiment) if found is not None and found.describe else {}


def run_one(job: Job, out: str | Path, device: str = "auto",
            run: JobFunction | None = None) -> Outcome:
    """Run ``job`` unless its directory is done; write results atomically, ``done`` last.

    ``run``: the job function (default: the one registered for ``job.kind``; backends resolve
    it in the parent and pass it on, so worker processes need no registration of their own).
    Any exception is caught, its traceback written to ``error.txt`` and reported as ``failed``.
    """
    run = run if run is not None else job_kind(job.kind).run
    path = write_job_file(out, job)
    if is_done(path):
        return Outcome(job.job_id, "skipped")
    (path / ERROR_FILE).unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        job.check_inputs()
        output = run(job, device)
        if output.epochs is not None:
            with atomic_path(path / EPOCHS_FILE, suffix=".parquet") as tmp:
                output.epochs.to_parquet(tmp, index=False)
        result = {"device": device, **json_safe(output.result), "job_id": job.job_id}
        write_json(path / RESULT_FILE, result)
        write_text(path / DONE_FILE, "")
    except Exception as exc:
        write_text(path / ERROR_FILE, traceback.format_exc())
        message = str(exc) if isinstance(exc, ShortcutlabError) else f"{type(exc).__name__}: {exc}"
        return Outcome(job.job_id, "failed", message.splitlines()[-1] if message else "",
                       time.perf_counter() - start)
    return Outcome(job.job_id, "done", "", time.perf_counter() - start)
