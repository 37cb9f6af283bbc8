"""Check a backend before anything of a run is written: its name, and that it can run here.

:func:`shortcutlab.runner.run_jobs` finds an unknown or unavailable backend only once it
starts; a command calls :func:`check_backend` first, so a bad ``--backend`` leaves no
``job.json`` or ``protocol.json`` behind.
"""

from __future__ import annotations

import importlib.util

from shortcutlab.errors import RunnerError
from shortcutlab.runner.backends import BACKENDS


def check_backend(backend: str, slurm_cluster: str | None = None) -> None:
    """Raise a one-line :class:`RunnerError` unless ``backend`` is registered (:data:`BACKENDS`)
    and usable on this machine: ray importable for ``ray``; submitit importable for ``slurm``,
    and for the real SLURM executor (``slurm_cluster`` None) SLURM present (as the backend
    itself checks: submitit's ``SlurmExecutor.affinity``)."""
    BACKENDS.check(backend)  # an unknown name: one line listing the registered backends
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise RunnerError("backend ray needs the ray package: pip install 'shortcutlab[ray]'")
    if backend == "slurm":
        if importlib.util.find_spec("submitit") is None:
            raise RunnerError(
                "backend slurm needs the submitit package: pip install 'shortcutlab[slurm]'")
        import submitit

        if slurm_cluster is None and submitit.SlurmExecutor.affinity() < 0:
            raise RunnerError(
                "backend slurm: no SLURM found on this machine (sbatch missing); run from a "
                "SLURM login node, try the same submission locally with --slurm-executor local, "
                "or use --backend processes|ray")
