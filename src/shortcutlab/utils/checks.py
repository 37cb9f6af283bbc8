"""Checks of a user's numbers that name the valid range (library functions, not only the CLI,
refuse bad values, each with its own error type: these return the message, the caller raises).

By hand because the messages must name the option as the user gave it and the whole valid
range in one line; typer's ranges cover only the CLI and pydantic's messages are several lines.
"""

from __future__ import annotations

import math
from typing import Any


def range_problem(name: str, value: Any, low: float, high: float = math.inf, *,
                  integer: bool = False, low_open: bool = False) -> str | None:
    """None when ``value`` is a finite number (a whole one with ``integer``; never a bool) from
    ``low`` (excluded with ``low_open``) to ``high``; otherwise one line naming ``name``, the
    valid range and the value given, e.g. ``--per-set must be an integer >= 1 and <= 32 (got
    0)``."""
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) and (not integer or float(value).is_integer())
          and (value > low if low_open else value >= low) and value <= high)
    if ok:
        return None
    kind = "an integer" if integer else "a number"
    lower = f"> {low:g}" if low_open else f">= {low:g}"
    upper = "" if math.isinf(high) else f" and <= {high:g}"
    return f"{name} must be {kind} {lower}{upper} (got {value!r})"
