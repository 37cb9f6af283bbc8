"""Choose the torch device: CUDA when present, else CPU."""

from __future__ import annotations

import torch

from shortcutlab.errors import ShortcutlabError, unknown_choice

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when available; ``cuda`` without a GPU is an error, not a fallback."""
    base = name.split(":")[0]
    if base not in DEVICE_CHOICES:
        raise ShortcutlabError(unknown_choice("device", name, DEVICE_CHOICES))
    if base == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if base == "cuda" and not torch.cuda.is_available():
        raise ShortcutlabError("--device cuda was requested but no CUDA GPU is available; use cpu")
    return torch.device(name)
