"""How results show themselves: ``print(result)`` and Jupyter's HTML use the class's own float
format (a p-value of 1e-6 must not read 0.000) and show NaN as an en dash."""

from __future__ import annotations

import math

import pandas as pd

from shortcutlab.utils.display import ShowsResult


class _PValues(ShowsResult):
    _float_format = "{:.3g}"  # as stats.compare: p-values of 1e-6 next to ranks of 2.5

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        frame = pd.DataFrame({"rank": [2.5, 1.0], "p": [1.2e-6, math.nan]}, index=["a", "b"])
        return "Friedman test", frame, ["n = 5"]


def test_text_and_html_use_the_class_float_format() -> None:
    text, page = str(_PValues()), _PValues()._repr_html_()
    for shown in (text, page):
        assert "1.2e-06" in shown and "2.5" in shown and "0.000" not in shown
        assert "–" in shown and "nan" not in shown.lower().replace("friedman", "")
    assert text.splitlines()[0] == "Friedman test" and text.splitlines()[-1] == "n = 5"
    assert repr(_PValues()) == text
