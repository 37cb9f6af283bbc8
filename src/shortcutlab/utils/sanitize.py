"""JSON-ready values: strict JSON has no NaN or infinity, and ``json`` knows no numpy scalars."""

from __future__ import annotations

import math
from typing import Any, SupportsFloat

import numpy as np


def finite_or_none(value: SupportsFloat) -> float | None:
    """``float(value)``, or None when it is NaN or infinite."""
    number = float(value)
    return number if math.isfinite(number) else None


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN/inf floats replaced by None and numpy scalars by Python ones, through
    dicts, lists and tuples (tuples become lists)."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return finite_or_none(obj)
    return obj
