"""A comparison that reads well in a notebook (issue 34): the verdict and the ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd

from shortcutlab.stats.compare import compare


def test_print_and_html_show_the_verdict_and_ranking() -> None:
    rng = np.random.default_rng(0)
    scores = pd.DataFrame({"block": [f"d{i}" for i in range(8)],
                           **{a: rng.random(8) + k for k, a in enumerate("ABC")}})
    result = compare(scores)
    text = str(result)
    assert text == repr(result) and len(text.splitlines()) <= 8
    lines = text.splitlines()
    assert lines[0].startswith("3 algorithms on 8 blocks differ (Iman-Davenport F=")
    assert [ln.split()[0] for ln in lines[3:6]] == ["C", "B", "A"]  # best first
    assert f"{result.critical_difference:.3f}" in lines[0]
    assert "<table" in result._repr_html_() and "mean_rank" in result._repr_html_()
