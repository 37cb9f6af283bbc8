"""Mixed precision of training and evaluation (``TrainConfig.precision``): ``fp32``, or autocast
to ``bf16`` or ``fp16`` (with torch's gradient scaler scaling the loss).

:func:`check_precision` refuses, in one line naming the valid choices, a precision the device
cannot run with this torch; :func:`make_grad_scaler` makes fp16's loss scaler and
:func:`autocast_for` the autocast context the trainer runs forward passes under.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import torch

from shortcutlab.errors import TrainError

#: The autocast dtype of each mixed precision (``fp32``: no autocast).
AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def precision_available(precision: str, device: torch.device) -> bool:
    """Whether torch can autocast to ``precision`` on ``device`` (and, for fp16, scale the
    loss there); fp32 always."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return precision == "fp32"
    available = getattr(torch.amp, "is_autocast_available", None)  # torch >= 2.4
    if available is not None and not available(device.type):
        return False
    if device.type == "cuda" and dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        return False
    with warnings.catch_warnings(record=True) as caught:  # torch warns and disables itself
        warnings.simplefilter("always")
        try:
            torch.autocast(device.type, dtype=dtype)
            if dtype == torch.float16 and not _grad_scaler(device).is_enabled():
                return False
        except (RuntimeError, AttributeError):  # an older torch without it on this device
            return False
    return not caught


def _grad_scaler(device: torch.device) -> Any:
    """torch's GradScaler for ``device`` (``torch.amp`` from torch 2.3, CUDA's before)."""
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type)
    if device.type != "cuda":
        raise AttributeError("no GradScaler for this device in this torch")
    return torch.cuda.amp.GradScaler()


def check_precision(precision: str, device: torch.device) -> None:
    """TrainError naming the precisions ``device`` can run, unless it can run ``precision``."""
    if not precision_available(precision, device):
        valid = [p for p in ("fp32", *AUTOCAST_DTYPES) if precision_available(p, device)]
        raise TrainError(f"precision {precision!r} is not available on device {device} with "
                         f"torch {torch.__version__}; valid choices there: {', '.join(valid)}")


def make_grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
    """The loss scaler of ``precision="fp16"`` (torch's GradScaler on ``device``), else None."""
    return _grad_scaler(device) if precision == "fp16" else None


def autocast_for(device: torch.device, precision: str, cache: bool = True) -> Any:
    """Autocast to bfloat16 (``bf16``) or float16 (``fp16``) on ``device``, else nothing;
    :func:`check_precision` has refused devices that cannot. ``cache=False`` for CUDA graphs
    (autocast's weight cache must not outlive a capture)."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype, cache_enabled=cache)
