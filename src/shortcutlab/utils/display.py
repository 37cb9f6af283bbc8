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


class ShowsResult:
    """Mixin of the result types: ``print(result)``, ``repr`` and Jupyter's display all come
    from the class's ``_display()`` (title, headline table, notes), numbers formatted with
    ``_float_format``. A dataclass using it is declared with ``repr=False`` (else the dataclass
    writes its own field-by-field ``__repr__`` over this one)."""

    _float_format = "{:.3f}"

    def _display(self) -> tuple[str, pd.DataFrame, list[str]]:
        raise NotImplementedError

    def __str__(self) -> str:
        return result_text(*self._display(), float_format=self._float_format)

    def __repr__(self) -> str:
        return self.__str__()

    def _repr_html_(self) -> str:
        return result_html(*self._display(), float_format=self._float_format)
