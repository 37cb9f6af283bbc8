"""Resumable runs: jobs in hashed directories, several backends, collection.

The runner knows no benchmark: each area declares its job kinds in the ``shortcutlab.job_kinds``
entry-point group (DiagViB-6: ``diagvib``), found on the first lookup, or registers one with
:func:`register_job_kind`. Backends are a registry too (:func:`register_backend`).
"""

from shortcutlab.runner.backend_api import BackendContext, SlurmOptions
from shortcutlab.runner.backends import BACKENDS, list_backends, register_backend
from shortcutlab.runner.collect import collect, collect_epochs, write_table
from shortcutlab.runner.jobs import (
    Job,
    JobFileError,
    JobKind,
    JobOutput,
    Outcome,
    job_kind,
    job_kinds,
    job_status,
    register_job_kind,
    run_one,
)
from shortcutlab.runner.runs import JobTableError, RunInterrupted, RunSummary, run_jobs

__all__ = [
    "BACKENDS", "BackendContext", "Job", "JobFileError", "JobKind", "JobOutput", "JobTableError",
    "Outcome", "RunInterrupted", "RunSummary", "SlurmOptions", "collect", "collect_epochs",
    "job_kind", "job_kinds", "job_status", "list_backends", "register_backend",
    "register_job_kind", "run_jobs", "run_one", "write_table",
]
