"""How result objects show themselves: ``print(result)`` (a title line, the headline table,
a hint of what else there is) and ``_repr_html_`` (the same as HTML, for Jupyter), so that a
notebook shows the numbers that matter instead of nested DataFrame reprs."""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd


def _cells(frame: pd.DataFrame, float_format: str) -> pd.DataFrame:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return "–" if value != value else float_format.format(value)
        return str(value)

    return frame.map(cell)


def result_text(title: str, frame: pd.DataFrame, notes: Sequence[str] = (),
                float_format: str = "{:.3f}") -> str:
    """``title``, the table (floats with ``float_format``, NaN as "–"), then ``notes``."""
    body = _cells(frame, float_format).to_string() if len(frame) else "(no rows)"
    return "\n".join([title, body, *notes])


def result_html(title: str, frame: pd.DataFrame, notes: Sequence[str] = (),
                float_format: str = "{:.3f}") -> str:
    """:func:`result_text` as one HTML fragment (escaped)."""
    table = _cells(frame, float_format).to_html(escape=True, border=0) if len(frame) else ""
    extra = "".join(f"<br><small>{html.escape(n)}</small>" for n in notes)
    return f"<div><strong>{html.escape(title)}</strong>{table}{extra}</div>"
