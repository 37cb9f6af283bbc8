"""Choose the torch device: CUDA when present, else CPU."""

from __future__ import annotations

import torch

from shortcutlab.errors import ShortcutlabError, unknown_choice

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def check_device_name(name: str) -> str:
    """``name`` if it names a device (auto, cpu, cuda, cuda:N), whether or not this machine
    has it: for jobs that run on other machines (a SLURM or Ray cluster). Any other suffix
    (``auto:1``, ``cpu:7``, ``cuda:x``) is refused: nothing would read it."""
    kind, _, index = name.partition(":")
    if name not in DEVICE_CHOICES and not (kind == "cuda" and index.isdigit()):
        raise ShortcutlabError(unknown_choice("device", name, (*DEVICE_CHOICES, "cuda:N")))
    return name


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when available; ``cuda`` without a GPU is an error, not a fallback."""
    base = check_device_name(name).split(":")[0]
    if base == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if base == "cuda" and not torch.cuda.is_available():
        raise ShortcutlabError("--device cuda was requested but no CUDA GPU is available; use cpu")
    return torch.device(name)
