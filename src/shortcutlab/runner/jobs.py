"""Jobs, their hashed run directories and the ``done`` marker (DomainBed habit).

A job is (training config, experiment name + the kind's own parameters, training seed = the
config's ``seed``). Its directory is ``<out>/<job_id>/`` with ``job_id`` the first 16 hex digits
of the sha256 of the job's canonical JSON. A finished job holds ``job.json``, ``result.json``,
``epochs.parquet`` and, written last, ``done``. Every file is written atomically, so a killed job
leaves nothing that counts as done; a crashed job leaves ``error.txt`` (the traceback) and is
retried by the next run.

A job folder heals itself: a ``done`` job whose files cannot be read is *not* done; the next run
moves its files aside to ``corrupt-<time>/`` and runs it again. While a job runs, its folder
holds a claim (:mod:`shortcutlab.runner.claims`), so concurrent runs on one folder share the
work instead of doing it twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shortcutlab.errors import RunnerError, ShortcutlabError, TrainError
from shortcutlab.runner.claims import describe_claim, heartbeat, release, try_claim
from shortcutlab.runner.records import result_problem
from shortcutlab.train.config import TrainConfig, format_validation_error, stored_configs
from shortcutlab.utils.digest import content_digest
from shortcutlab.utils.io import atomic_path, write_json, write_text
from shortcutlab.utils.registry import Registry
from shortcutlab.utils.sanitize import json_safe

JOB_FILE, RESULT_FILE, EPOCHS_FILE, DONE_FILE, ERROR_FILE = (
    "job.json", "result.json", "epochs.parquet", "done", "error.txt",
)
ID_LENGTH = 16
CORRUPT_PREFIX = "corrupt-"
DEFAULT_THREADS = 1


class Job(BaseModel):
    """One training run: ``kind`` names the registered job function that runs it (see
    :func:`register_job_kind`); ``experiment``, ``spec`` and ``params`` say what to train on,
    in the kind's own terms (the kind validates them; ``params``: its settings, e.g. a
    benchmark's dataset size and seed); ``train`` how. Every field but ``inputs`` is part of the
    id (``params``, ``versions`` and ``threads`` only when not their defaults).

    ``inputs``: named local files or folders the job reads (DiagViB-6: ``mnist``, ``textures``).
    The id depends on their content (``input_digests``, computed when the job is made), not on
    their path: a moved folder keeps its jobs, an edited one gets new ones.

    ``versions``: versions of the code the kind's numbers depend on beyond the training config
    (DiagViB-6: its renderer; an algorithm whose code changed its numbers: ``algorithm``), part
    of the id: results of older code are never counted as new.

    ``threads``: torch's intra-op CPU threads while the job runs. Floating-point sums depend on
    how work is split over threads, so the count is part of the job (and of its id when not
    the default): a job's numbers do not depend on how many jobs run side by side.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment: str
    kind: str
    train: TrainConfig = Field(default_factory=TrainConfig)
    spec: dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    inputs: dict[str, str] = Field(default_factory=dict)
    input_digests: dict[str, str] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    threads: int = Field(DEFAULT_THREADS, ge=1)

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
        self._check_digests()

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Job:
        """A job as :func:`write_job_file` stored it, read back without looking up its
        training config's model and algorithm names (they were checked when the job was
        planned; see :func:`~shortcutlab.train.config.stored_configs`): reading a run folder
        imports no torch."""
        with stored_configs():
            return cls(**data)

    def _check_digests(self) -> None:
        if set(self.inputs) != set(self.input_digests):
            raise RunnerError(f"job inputs {sorted(self.inputs)} and their digests "
                              f"{sorted(self.input_digests)} do not match")

    def canonical_json(self) -> str:
        """Sorted keys, no spaces: equal jobs give equal bytes, hence equal ids. Input paths are
        left out (their digests count); jobs without inputs hash as they always did."""
        exclude = {"inputs"} | (set() if self.inputs else {"input_digests"})
        if not self.versions:
            exclude.add("versions")
        if not self.params:
            exclude.add("params")
        if self.threads == DEFAULT_THREADS:
            exclude.add("threads")
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
    def recipe_id(self) -> str:
        """A digest of how the job trains, whatever it trains on and whichever its seed: the
        fields of its id but the experiment, its spec, the training seed and the thread count
        (training config, kind, params, input contents, code versions). The jobs of one model
        in one benchmark share it; results of jobs whose recipes differ must not be averaged
        as one model's (the DiagViB-6 metrics refuse them)."""
        left_out: dict[str, Any] = {"experiment": True, "spec": True, "threads": True,
                                    "inputs": True, "train": {"seed"}}  # paths: digests count
        data = self.model_dump(mode="json", exclude=left_out)
        canon = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:ID_LENGTH]

    @property
    def seed(self) -> int:
        return self.train.seed

    def describe(self) -> dict[str, Any]:
        """The job-table columns the job's kind derives from it ({} if none)."""
        return describe_job(self)


@dataclass
class JobOutput:
    """What a job function returns: a flat JSON-ready result dict and the per-epoch table."""

    result: dict[str, Any]
    epochs: pd.DataFrame | None = None


@dataclass
class Outcome:
    """How one job ended in this run: ``done``, ``failed`` (with the error's last line),
    ``skipped`` (already done) or ``busy`` (claimed by another live run; ``error`` says whose).
    ``note`` reports a repair, e.g. unreadable files moved aside before the job ran again."""

    job_id: str
    status: str
    error: str = ""
    seconds: float = 0.0
    note: str = ""


def job_dir(out: str | Path, job: Job) -> Path:
    return Path(out) / job.job_id


class JobFileError(RunnerError):
    """A file of a job folder that cannot be read; the message names the file."""

    def __init__(self, target: Path, problem: str) -> None:
        self.path = Path(target)
        self.problem = problem
        super().__init__(f"{target} {problem}")


def read_json_object(target: Path) -> dict[str, Any]:
    """The JSON object in ``target``; a :class:`JobFileError` naming the file otherwise."""
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        raise JobFileError(target, "is missing") from None
    except OSError as exc:
        raise JobFileError(target, f"cannot be read ({exc.strerror or exc})") from None
    if not data.strip():
        raise JobFileError(target, "is empty")
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise JobFileError(target, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise JobFileError(target, f"is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(obj, dict):
        raise JobFileError(target, f"holds a JSON {type(obj).__name__}, not an object")
    return obj


def _check_parquet(target: Path) -> None:
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(target)
    except Exception as exc:  # pyarrow raises several types for broken files
        raise JobFileError(target, f"is not a readable Parquet file ({type(exc).__name__})"
                           ) from None


def read_result(path: Path) -> dict[str, Any]:
    """``result.json`` of the job in ``path``, checked to be a JSON object of this job with a
    readable ``epochs.parquet`` (if any); a :class:`JobFileError` naming the file otherwise."""
    result = read_json_object(path / RESULT_FILE)
    problem = result_problem(result)
    if problem is not None:
        raise JobFileError(path / RESULT_FILE, problem)
    owner = result.get("job_id", path.name)
    if owner != path.name:
        raise JobFileError(path / RESULT_FILE, f"belongs to job {owner}, not to "
                           f"{path.name} (a copied folder?)")
    if (path / EPOCHS_FILE).exists():
        _check_parquet(path / EPOCHS_FILE)
    return result


def done_problem(path: Path) -> str | None:
    """Why the results of the job in ``path`` cannot be read (a line naming the file), or
    None when :func:`read_result` reads them."""
    if (path / DONE_FILE).exists() and not (path / DONE_FILE).is_file():
        return f"{path / DONE_FILE} is a folder, not a done marker"
    try:
        read_result(path)
    except JobFileError as exc:
        return str(exc)
    return None


def last_error_line(path: Path) -> str:
    """The last line of the job's ``error.txt`` (the exception), "" when it is empty."""
    text = (path / ERROR_FILE).read_text(encoding="utf-8", errors="replace")
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def is_done(path: Path) -> bool:
    """The ``done`` marker is there and the job's result files can be read."""
    return (path / DONE_FILE).is_file() and done_problem(path) is None


def job_status(path: Path) -> str:
    """``done`` (marker present, results readable), ``corrupt`` (marker present, results
    unreadable: the next run moves them aside and reruns the job), ``failed`` (error.txt and
    no marker) or ``pending``."""
    if (path / DONE_FILE).exists():
        return "done" if done_problem(path) is None else "corrupt"
    if (path / ERROR_FILE).is_file():
        return "failed"
    return "pending"


def quarantine(path: Path) -> Path:
    """Move the job's result files (not job.json) to ``path/corrupt-<time>/``; returns it."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path / f"{CORRUPT_PREFIX}{stamp}-{os.getpid()}"
    aside.mkdir(parents=True, exist_ok=True)
    for name in (DONE_FILE, RESULT_FILE, EPOCHS_FILE, ERROR_FILE):  # done first: never done
        if (path / name).exists():
            os.replace(path / name, aside / name)
    return aside


def remove_temporaries(path: Path, older_than: float = 60.0) -> list[Path]:
    """Delete the temporary files that killed writes left in job folder ``path``: those of
    files only the claim holder writes at once, and job.json's when older than
    ``older_than`` seconds (another run may be writing one right now)."""
    removed = []
    now = time.time()
    for name in (JOB_FILE, RESULT_FILE, EPOCHS_FILE, DONE_FILE, ERROR_FILE):
        for tmp in path.glob(f".{name}.*"):
            with suppress(OSError):
                if name == JOB_FILE and now - tmp.stat().st_mtime < older_than:
                    continue
                tmp.unlink()
                removed.append(tmp)
    return removed


def write_job_file(out: str | Path, job: Job) -> Path:
    """Create the job's directory with ``job.json`` (so collect lists it as pending); an
    unreadable or different ``job.json`` is replaced."""
    path = job_dir(out, job)
    target = path / JOB_FILE
    text = json.dumps(job.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    try:
        same = target.read_bytes() == text.encode("utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        same = False
    if not same:
        write_text(target, text)
    return path


def read_job(path: Path) -> Job:
    """The job stored in ``path/job.json`` (a :class:`JobFileError` naming the file if it
    cannot be read or is no valid job), read by :meth:`Job.from_stored`: its model and
    algorithm names are not looked up (collect's caller checks the folder name is the job's
    id, which an edited file fails), so reading a run folder imports no torch."""
    data = read_json_object(path / JOB_FILE)
    try:
        return Job.from_stored(data)
    except (RunnerError, TrainError) as exc:  # TrainError: its training config's fields
        raise JobFileError(path / JOB_FILE, f"is not a valid job ({exc}; an edited job.json, "
                           "or one planned by an earlier shortcutlab whose job fields have "
                           "changed since: plan the jobs again)") from None


# ----------------------------------------------------------------------------- job kinds


JobFunction = Callable[[Job, str], JobOutput]
Describer = Callable[[Job], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    """What the runner needs of a kind of job: the function that runs one (a module-level
    function, so that worker processes can import it by name) and, optionally, a function that
    turns a job into extra job-table columns (e.g. its study, factors and dataset size, read
    from its experiment name and ``params``). The table puts those columns after
    ``algorithm``, except the ones named in ``last`` (e.g. training settings that matter less
    than the experiment), which come at its end."""

    run: JobFunction
    describe: Describer | None = None
    last: tuple[str, ...] = ()


#: Entry-point group of job kinds: an entry point is a :class:`JobKind` (registered under the
#: entry point's name) or a module whose import registers kinds. The areas declare theirs here
#: (pyproject.toml), so a kind is known in any process without anyone importing its area.
ENTRY_POINT_GROUP = "shortcutlab.job_kinds"

#: The registered job kinds; tests register fakes in ``JOB_KINDS.scratch()``.
JOB_KINDS: Registry[JobKind] = Registry(
    "job kind", error=RunnerError, group=ENTRY_POINT_GROUP,
    accepts=lambda obj: isinstance(obj, JobKind),
)


def register_job_kind(
    name: str, run: JobFunction, describe: Describer | None = None, *,
    last: tuple[str, ...] = (), override: bool = False,
) -> None:
    """Make ``Job(kind=name)`` runnable by ``run(job, device) -> JobOutput`` (``describe`` and
    ``last``: see :class:`JobKind`). Re-registering the same functions is a no-op; other
    functions under a taken name are refused (RunnerError) unless ``override=True``."""
    JOB_KINDS.register(name, JobKind(run, describe, tuple(last)), override=override)


def job_kinds() -> list[str]:
    """The names of the registered job kinds."""
    return JOB_KINDS.names()


def job_kind(name: str) -> JobKind:
    """The registered kind ``name``; an error naming the registered ones otherwise."""
    return JOB_KINDS.get(name)


def describe_job(job: Job) -> dict[str, Any]:
    """The extra table columns the describer of the job's kind derives from it ({} if none)."""
    found = JOB_KINDS.find(job.kind)
    return found.describe(job) if found is not None and found.describe else {}


@contextmanager
def job_threads(threads: int) -> Iterator[None]:
    """Run the block with torch's intra-op thread count set to ``threads``, then restore it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def os_reason(exc: OSError) -> str:
    """``No space left on device`` rather than ``[Errno 28] No space left on device: '...'``."""
    return exc.strerror or str(exc)


#: suffix of the note a worker leaves in its run's notes folder once the job's function has
#: returned, before the results are written (see :func:`run_one`'s ``notes``)
RAN_SUFFIX = ".ran"


def ran_in(notes: str | Path | None, job: Job) -> bool:
    """Whether a worker of the run whose notes folder is ``notes`` ran ``job`` to its end
    (its function returned; the results written next): the evidence that a job done on disk
    is that run's, not another's. False without a notes folder: nothing shows it."""
    return notes is not None and (Path(notes) / f"{job.job_id}{RAN_SUFFIX}").exists()


def run_name(notes: str | Path | None) -> str:
    """The name of the run whose notes folder is ``notes`` (its claims carry it), "" for
    none."""
    return Path(notes).name if notes is not None else ""


def run_one(job: Job, out: str | Path, device: str = "auto",
            run: JobFunction | None = None, *, record_device: str | None = None,
            notes: str | None = None) -> Outcome:
    """Run ``job`` unless its directory is done or claimed by a live run; write results
    atomically, ``done`` last.

    ``run``: the job function (default: the one registered for ``job.kind``; backends resolve
    it in the parent and pass it on, so worker processes need no registration of their own).
    ``record_device``: the run's name for ``device`` when this process sees the GPUs otherwise
    (a worker pinned to GPU 1 runs on ``cuda``, the run's ``cuda:1``): ``result.json``
    records it, also in place of the job's own name for ``device`` (default: ``device``), so
    that a job's recorded device does not depend on the backend that ran it.
    ``notes``: the notes folder of the run the job runs for (:mod:`~shortcutlab.runner.runs`
    makes one per run): the claim names that run (:func:`run_name`) and, once the job's
    function has returned, a note ``<job_id>.ran`` there says a worker of this run did the job
    (:func:`ran_in`), so that a run whose worker's reply is lost counts the job as its own
    only when it is. A done job whose files cannot be read is moved aside (see
    :func:`quarantine`) and run again. Any exception, an ``OSError`` such as a full disk
    included, is caught, its traceback written to ``error.txt`` when possible and reported as
    ``failed``.
    """
    run = run if run is not None else job_kind(job.kind).run
    start = time.perf_counter()
    try:
        path = write_job_file(out, job)
        if is_done(path):
            return Outcome(job.job_id, "skipped")
        token = try_claim(path, run=run_name(notes))
    except OSError as exc:
        return Outcome(job.job_id, "failed",
                       f"cannot write {job_dir(out, job)}: {os_reason(exc)}")
    if token is None:
        return Outcome(job.job_id, "busy", f"claimed by {describe_claim(path)}")
    try:
        with heartbeat(path, token):
            return _run_claimed(job, path, device, run, start, record_device, notes)
    finally:
        with suppress(OSError):
            release(path, token)


def _recorded_device(result: dict[str, Any], device: str, record_device: str | None) -> str:
    """The device ``result.json`` records: the job's own name for it (else ``device``), the
    run's name ``record_device`` when that names ``device`` as the worker sees it."""
    reported = str(result.get("device", device))
    if record_device is not None and reported in (device, f"{device}:0"):
        return record_device
    return reported


def _run_claimed(job: Job, path: Path, device: str, run: JobFunction,
                 start: float, record_device: str | None = None,
                 notes: str | None = None) -> Outcome:
    note = ""
    try:
        problem = done_problem(path) if (path / DONE_FILE).exists() else None
        if problem is None and (path / DONE_FILE).is_file():
            return Outcome(job.job_id, "skipped")  # done by another run since our check
        if problem is not None:
            aside = quarantine(path)
            note = f"{problem}; moved aside to {aside}, running the job again"
        remove_temporaries(path)
        (path / ERROR_FILE).unlink(missing_ok=True)
        job.check_inputs()
        with job_threads(job.threads):
            output = run(job, device)
        result = {"device": device, "threads": job.threads, **json_safe(output.result),
                  "job_id": job.job_id}
        result["device"] = _recorded_device(result, device, record_device)
        invalid = result_problem(result)
        if invalid is not None:  # never count a result that a later read would refuse
            raise RunnerError(f"the {job.kind} job's result {invalid}")
        if notes is not None:  # before the results: a worker ending after them leaves it
            with suppress(OSError):
                (Path(notes) / f"{job.job_id}{RAN_SUFFIX}").touch()
        if output.epochs is not None:
            with atomic_path(path / EPOCHS_FILE, suffix=".parquet") as tmp:
                output.epochs.to_parquet(tmp, index=False)
        write_json(path / RESULT_FILE, result)
        write_text(path / DONE_FILE, "")
    except Exception as exc:
        trace = traceback.format_exc()
        with suppress(OSError):
            write_text(path / ERROR_FILE, trace)
        if isinstance(exc, ShortcutlabError):
            message = str(exc)
        elif isinstance(exc, OSError):
            where = f" ({exc.filename})" if exc.filename else ""
            message = f"{type(exc).__name__}: {os_reason(exc)}{where}"
        else:
            message = f"{type(exc).__name__}: {exc}"
        return Outcome(job.job_id, "failed", message.splitlines()[-1] if message else "",
                       time.perf_counter() - start, note)
    return Outcome(job.job_id, "done", "", time.perf_counter() - start, note)
