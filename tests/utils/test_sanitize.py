"""``json_safe`` / ``finite_or_none``: strict JSON has no NaN or infinity, ``json`` no numpy
scalars; every result file goes through these (``allow_nan=False`` would refuse the rest)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from shortcutlab.utils.sanitize import finite_or_none, json_safe


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float32("nan"),
                                   np.float64("-inf")])
def test_non_finite_numbers_become_none(value) -> None:
    assert finite_or_none(value) is None


def test_finite_numbers_stay() -> None:
    assert finite_or_none(np.float32(0.5)) == 0.5 and finite_or_none(-1e308) == -1e308


def test_json_safe_goes_through_dicts_lists_and_tuples() -> None:
    obj = {"acc": (0.5, math.nan, np.float64(math.inf)), "n": [np.int64(3), {"ok": np.bool_(True)}],
           "p": -math.inf, "name": "x"}
    safe = json_safe(obj)
    assert safe == {"acc": [0.5, None, None], "n": [3, {"ok": True}], "p": None, "name": "x"}
    assert type(safe["n"][0]) is int and type(safe["n"][1]["ok"]) is bool
    json.dumps(safe, allow_nan=False)  # strict JSON
