"""Resumable runs: jobs in hashed directories, several backends, collection.

The runner knows no benchmark: each area registers its job kind with
:func:`register_job_kind` (DiagViB-6: :func:`shortcutlab.diagvib.jobs.register`).
"""

from shortcutlab.runner.backends import BACKENDS, RunSummary, SlurmOptions, run_jobs
from shortcutlab.runner.collect import collect, collect_epochs, write_table
from shortcutlab.runner.jobs import (
    Job,
    JobFileError,
    JobOutput,
    Outcome,
    job_kinds,
    job_status,
    register_job_kind,
    run_one,
)

__all__ = [
    "BACKENDS", "Job", "JobFileError", "JobOutput", "Outcome", "RunSummary", "SlurmOptions",
    "collect", "collect_epochs", "job_kinds", "job_status", "register_job_kind", "run_jobs",
    "run_one", "write_table",
]
