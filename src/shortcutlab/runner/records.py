"""The schema a job's ``result.json`` must meet before it counts as done.

A result that parses but is not a result (``{}``, an accuracy of 7.5, a loss that is a string)
would otherwise be counted, or make every later table refuse the whole run folder. Accuracies
(``val_acc`` and every ``test_acc`` key) lie in [0, 1] or are null (no test set); losses are
finite or null (a diverged run, NaN written as null); epochs and seconds are non-negative,
and the best epoch (counted from 0) is one of the epochs run.
"""

from __future__ import annotations

import math
from typing import Any

_COUNTS = ("best_epoch", "epochs_run")
_REQUIRED = (*_COUNTS, "val_loss", "val_acc", "test_acc", "train_seconds")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bad_value(key: str, value: Any) -> str | None:
    """Why ``value`` is no valid entry ``key`` of a result, or None."""
    if key in _COUNTS:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else "a whole number >= 0"
    if key == "train_seconds":
        return None if _number(value) and math.isfinite(value) and value >= 0 else \
            "a finite number of seconds >= 0"
    if value is None:
        return None
    if key.startswith(("test_acc", "val_acc")):
        return None if _number(value) and 0.0 <= value <= 1.0 else "an accuracy in [0, 1]"
    if key.endswith("_loss"):
        return None if _number(value) and math.isfinite(value) else "a finite loss"
    return None


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to about ``limit`` characters (an array's repr spans
    lines, and a failure is reported by its last line)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def result_problem(result: dict[str, Any]) -> str | None:
    """Why ``result`` (a parsed ``result.json``) is no valid job result, in a few words naming
    the key (one line); None when it is one."""
    missing = [k for k in _REQUIRED if k not in result]
    if missing:
        return f"lacks the result key(s) {', '.join(missing)}"
    if "job_id" in result and not isinstance(result["job_id"], str):
        return f"has a job_id that is no string: {_shown(result['job_id'])}"
    for key, value in result.items():
        why = _bad_value(str(key), value)
        if why is not None:
            return f"has {key} = {_shown(value)}, expected {why}"
    if result["best_epoch"] >= result["epochs_run"]:  # epochs count from 0
        return (f"has best_epoch = {result['best_epoch']} of {result['epochs_run']} epochs run, "
                "expected an epoch below epochs_run (epochs count from 0)")
    return None
