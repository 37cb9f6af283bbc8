"""``range_problem``: the one-line message naming a bad number's valid range (used by the β-VAE
plan and ``biasbed samples``)."""

from __future__ import annotations

import math

import pytest

from shortcutlab.utils.checks import range_problem


@pytest.mark.parametrize("value, kind", [
    (1, {}), (32, {}), (2.5, {}), (4.0, {"integer": True}), (1e-9, {"low_open": True}),
])
def test_values_in_range_pass(value, kind) -> None:
    assert range_problem("x", value, 0 if kind.get("low_open") else 1, 32, **kind) is None


@pytest.mark.parametrize("value, kind, message", [
    (0, {"integer": True}, "--n must be an integer >= 1 and <= 32 (got 0)"),
    (33, {"integer": True}, "--n must be an integer >= 1 and <= 32 (got 33)"),
    (2.5, {"integer": True}, "--n must be an integer >= 1 and <= 32 (got 2.5)"),
    (math.nan, {}, "--n must be a number >= 1 and <= 32 (got nan)"),
    (math.inf, {}, "--n must be a number >= 1 and <= 32 (got inf)"),
    (True, {}, "--n must be a number >= 1 and <= 32 (got True)"),
    ("3", {}, "--n must be a number >= 1 and <= 32 (got '3')"),
])
def test_values_out_of_range_name_the_range_and_the_value(value, kind, message) -> None:
    assert range_problem("--n", value, 1, 32, **kind) == message


def test_an_open_lower_end_and_no_upper_end() -> None:
    assert range_problem("lr", 0.0, 0.0, 1.0, low_open=True) == \
        "lr must be a number > 0 and <= 1 (got 0.0)"
    assert range_problem("seed", 10**12, 0, integer=True) is None
    assert range_problem("seed", -1, 0, integer=True) == "seed must be an integer >= 0 (got -1)"
    assert range_problem("scale", math.inf, 0) == "scale must be a number >= 0 (got inf)"
