"""The backend registry: what ``run_jobs(..., backend=name)`` runs the jobs with.

Backends are a registry like models and job kinds (:func:`register_backend`, the
``shortcutlab.backends`` entry-point group). A backend is a function ``fn(jobs, out, context) ->
Iterator[Outcome]`` (:data:`~shortcutlab.runner.backend_api.BackendFunction`, settings in a
:class:`~shortcutlab.runner.backend_api.BackendContext`) that yields one outcome per job, as
:func:`run_one` returns it, registered with an optional check that says when it cannot run here.
Four are built in and registered here: ``serial`` (in this process, below), ``processes`` (a local
process pool, :mod:`.local_processes`), ``ray`` and ``slurm`` (:mod:`.cluster_backends`). Every
built-in backend runs :func:`shortcutlab.runner.jobs.run_one` per job, so the run directories,
``done`` markers and error files are the same whatever runs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shortcutlab.errors import RunnerError
from shortcutlab.runner.backend_api import (
    BackendCheck,
    BackendContext,
    BackendFunction,
    job_function,
)
from shortcutlab.runner.cluster_backends import (
    ray_backend,
    ray_unavailable,
    slurm_backend,
    slurm_unavailable,
)
from shortcutlab.runner.jobs import Job, Outcome, run_one
from shortcutlab.runner.local_processes import processes_backend
from shortcutlab.utils.registry import Registry

#: A backend's name: one of :func:`list_backends` (annotations only; run_jobs checks it).
Backend = str


ENTRY_POINT_GROUP = "shortcutlab.backends"

#: The registered backends; an entry point of the group is a backend function (registered
#: under its name) or a module whose import registers backends.
BACKENDS: Registry[BackendFunction] = Registry(
    "backend", error=RunnerError, group=ENTRY_POINT_GROUP, accepts=callable)


@dataclass(frozen=True)
class CheckedBackend:
    """A backend function registered with its availability check; called like the function,
    so that :data:`BACKENDS` holds backend functions either way."""

    run: BackendFunction
    check: BackendCheck

    def __call__(self, jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
        return self.run(jobs, out, context)


def register_backend(name: str, fn: BackendFunction, *, check: BackendCheck | None = None,
                     override: bool = False) -> BackendFunction:
    """Make ``run_jobs(..., backend=name)`` run jobs with ``fn`` (see :data:`BackendFunction`);
    ``check`` (see :data:`BackendCheck`) says when it cannot run here, in its own words. A taken
    name is refused (RunnerError) unless ``override=True``; returns what was registered."""
    return BACKENDS.register(name, fn if check is None else CheckedBackend(fn, check),
                             override=override)


def backend_unavailable(name: str, context: BackendContext | None = None) -> str | None:
    """Why the backend ``name`` cannot run here with ``context``'s settings (its registered
    check's one line), or None when it can or has no check; RunnerError listing the registered
    backends when ``name`` is none of them."""
    check = getattr(BACKENDS.get(name), "check", None)
    return check(context or BackendContext()) if check is not None else None


def list_backends() -> list[str]:
    """Sorted names of the registered backends."""
    return BACKENDS.names()


def _serial(jobs: list[Job], out: Path, context: BackendContext) -> Iterator[Outcome]:
    for job in jobs:
        yield run_one(job, out, context.device, job_function(job), notes=context.notes)


register_backend("serial", _serial)
register_backend("processes", processes_backend)
register_backend("ray", ray_backend, check=ray_unavailable)
register_backend("slurm", slurm_backend, check=slurm_unavailable)
