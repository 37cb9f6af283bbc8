"""Resumable benchmark runs: jobs in hashed directories, several backends, collection."""

from shortcutlab.runner.backends import BACKENDS, RunSummary, SlurmOptions, run_jobs
from shortcutlab.runner.collect import collect, collect_epochs, write_table
from shortcutlab.runner.jobs import Job, JobOutput, Outcome, build_jobs, job_status, run_one

__all__ = [
    "BACKENDS", "Job", "JobOutput", "Outcome", "RunSummary", "SlurmOptions", "build_jobs",
    "collect", "collect_epochs", "job_status", "run_jobs", "run_one", "write_table",
]
