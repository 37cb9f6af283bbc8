"""Matplotlib text that shows names as typed and numbers with their mathtext (kept apart from
:mod:`shortcutlab.utils.html` so that reading a report's tables never imports matplotlib)."""

from __future__ import annotations

from typing import Any

from matplotlib.category import StrCategoryFormatter
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, Formatter, FuncFormatter


def escape_math(text: str) -> str:
    """``text`` shown literally by matplotlib even where mathtext is on (``$`` -> ``\\$``)."""
    return text.replace("$", r"\$")


def literal_names(fig: Figure) -> Figure:
    """Make ``fig`` safe to draw with mathtext on: every text from data (titles, labels,
    legends, annotations, tick labels set from names or categories) literal; the tick labels a
    numeric formatter writes (``$\\mathdefault{10^{4}}$`` on a log axis) keep their mathtext.

    Tick labels are remade at every draw, so the axes' name formatters are wrapped to escape
    ``$`` (once); every other text stops parsing mathtext."""
    ticks: set[int] = set()  # tick labels parse mathtext: names are escaped by their formatter
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            major, minor = axis.get_major_formatter(), axis.get_minor_formatter()
            if _writes_names(major):
                axis.set_major_formatter(LiteralFormatter(major))
            if _writes_names(minor):
                axis.set_minor_formatter(LiteralFormatter(minor))
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                ticks.update((id(tick.label1), id(tick.label2)))
            ticks.add(id(axis.offsetText))
    for text in fig.findobj(Text):
        text.set_parse_math(id(text) in ticks)
    return fig


def _writes_names(formatter: Formatter) -> bool:
    """Whether a tick formatter writes names (fixed labels, categories, a function's)."""
    return isinstance(formatter, FixedFormatter | StrCategoryFormatter | FuncFormatter)


class LiteralFormatter(Formatter):
    """Another formatter's tick labels with ``$`` escaped: shown as typed."""

    def __init__(self, inner: Formatter) -> None:
        self.inner = inner

    def __call__(self, x: float, pos: int | None = None) -> str:
        return escape_math(str(self.inner(x, pos)))

    def format_ticks(self, values: Any) -> list[str]:
        return [escape_math(str(v)) for v in self.inner.format_ticks(values)]

    def set_locs(self, locs: Any) -> None:
        self.inner.set_locs(locs)

    def set_axis(self, axis: Any) -> None:
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def get_offset(self) -> str:
        return escape_math(str(self.inner.get_offset()))
