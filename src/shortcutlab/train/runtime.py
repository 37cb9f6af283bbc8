"""Runtime options of training that never change a job's id: CUDA graphs and ``torch.compile``.

They reach :func:`shortcutlab.train.trainer.train` as its ``cuda_graphs``/``compile`` arguments
or, where jobs run in other processes (the runner's workers, Ray, SLURM), through environment
variables that :func:`runtime_options` sets for the duration of a run and those processes
inherit. No torch here: the command line sets them before anything heavy is imported.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from shortcutlab.errors import TrainError, unknown_choice

#: ``cuda_graphs`` choices: ``auto`` captures the training step as a CUDA graph where it is safe
#: (see :func:`shortcutlab.train.step_modes.cuda_graph_plan`), ``off`` never does.
CUDA_GRAPH_MODES = ("auto", "off")
#: The environment variables carrying the options to jobs run in other processes.
CUDA_GRAPHS_ENV = "SHORTCUTLAB_CUDA_GRAPHS"
COMPILE_ENV = "SHORTCUTLAB_COMPILE"


def check_cuda_graphs(mode: str) -> str:
    """``mode`` if it is one of :data:`CUDA_GRAPH_MODES`, else a TrainError naming them."""
    if mode not in CUDA_GRAPH_MODES:
        raise TrainError(unknown_choice("cuda_graphs mode", mode, CUDA_GRAPH_MODES))
    return mode


def cuda_graphs_default() -> str:
    """The ``cuda_graphs`` mode of this process: :data:`CUDA_GRAPHS_ENV`, else ``auto``."""
    return check_cuda_graphs(os.environ.get(CUDA_GRAPHS_ENV) or "auto")


def compile_default() -> bool:
    """Whether to ``torch.compile`` the network in this process (:data:`COMPILE_ENV` = 1)."""
    value = os.environ.get(COMPILE_ENV) or "0"
    if value not in ("0", "1"):
        raise TrainError(f"{COMPILE_ENV}={value!r} is no valid setting; valid choices: 0, 1")
    return value == "1"


@contextmanager
def runtime_options(*, cuda_graphs: str | None = None, compile: bool | None = None
                    ) -> Iterator[None]:
    """Set the runtime options (None: leave as they are) for this process and every process
    it starts inside the block; the environment is restored afterwards."""
    wanted: dict[str, str] = {}
    if cuda_graphs is not None:
        wanted[CUDA_GRAPHS_ENV] = check_cuda_graphs(cuda_graphs)
    if compile is not None:
        wanted[COMPILE_ENV] = "1" if compile else "0"
    before = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
