"""Check a backend before anything of a run is written: its name, and that it can run here.

:func:`shortcutlab.runner.run_jobs` refuses an unknown or unavailable backend too, but only
once it is called; a command calls :func:`check_backend` first, so a bad ``--backend`` leaves
no ``job.json`` or ``protocol.json`` behind. Whether a backend can run is the backend's own
check, registered with it (``register_backend(name, fn, check=...)``): ray and slurm say which
package or scheduler is missing, and a user's backend says why it cannot run in its own words.
"""

from __future__ import annotations

from shortcutlab.errors import RunnerError
from shortcutlab.runner.backend_api import BackendContext, SlurmOptions
from shortcutlab.runner.backends import backend_unavailable


def check_backend(backend: str, slurm_cluster: str | None = None) -> None:
    """Raise a one-line :class:`RunnerError` unless ``backend`` is registered and its check
    (if any) passes for the SLURM executor ``slurm_cluster`` (None: real SLURM, ``"local"``:
    submitit's local executor; see :class:`SlurmOptions`)."""
    context = BackendContext(slurm=SlurmOptions(cluster=slurm_cluster))
    reason = backend_unavailable(backend, context)  # an unknown name: the registered ones
    if reason is not None:
        raise RunnerError(reason)
