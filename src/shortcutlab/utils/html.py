"""A tiny builder for self-contained HTML reports.

Every area adds its section through the same few calls (heading, paragraph, table, figure);
figures are embedded as base64 PNG so one ``.html`` file reads offline in any browser. Written
by hand because the needs are small: a templating engine or a notebook exporter would be a
heavier dependency than these fifty lines.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from shortcutlab.utils.io import write_text

if TYPE_CHECKING:  # matplotlib loads where a figure is drawn, not with every report module
    from matplotlib.figure import Figure

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #444; padding-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #bbb; }
table { border-collapse: collapse; margin: .8em 0; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #f2f2f2; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; }
figcaption, .note { color: #555; font-size: .9em; }
.scroll { overflow-x: auto; }
"""


@contextmanager
def literal_text(fig: Figure | None = None) -> Iterator[None]:
    """Names are shown as typed, numbers keep their mathtext.

    Without ``fig``: every text matplotlib makes inside the block is literal, so a ``$`` in a
    block, model or factor name neither garbles it nor crashes the drawing (build figures from
    user data inside it: their layout draws them). With ``fig``: :func:`literal_names` is
    applied to it and it can be drawn inside the block, its numeric tick labels (a log axis'
    ``10^4``) rendered."""
    import matplotlib

    if fig is not None:
        from shortcutlab.utils.mpl_text import literal_names

        literal_names(fig)
    with matplotlib.rc_context({"text.parse_math": fig is not None}):
        yield


def figure_to_png(fig: Figure, dpi: int = 110) -> bytes:
    """Render a matplotlib figure to PNG bytes (no pyplot; names literal, numbers with their
    mathtext, see :func:`literal_names`)."""
    buffer = io.BytesIO()
    with literal_text(fig):
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


class HtmlReport:
    """An HTML page built from headings, paragraphs, tables and figures, in call order."""

    def __init__(self, title: str) -> None:
        self.title = title
        self._parts: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        """A section heading (``level`` 2 for sections, 3 for subsections)."""
        level = min(max(int(level), 1), 6)
        self._parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str, note: bool = False) -> None:
        """A paragraph of plain text (escaped); ``note`` prints it smaller and grey."""
        cls = ' class="note"' if note else ""
        self._parts.append(f"<p{cls}>{html.escape(text)}</p>")

    def links(self, items: list[tuple[str, str | None]]) -> None:
        """A bulleted list; items with a (relative) ``href`` become links."""
        rows = []
        for text, href in items:
            label = html.escape(text)
            if href:
                label = f'<a href="{html.escape(href, quote=True)}">{label}</a>'
            rows.append(f"<li>{label}</li>")
        self._parts.append("<ul>" + "".join(rows) + "</ul>")

    def table(self, frame: pd.DataFrame, float_format: str = "{:.3f}") -> None:
        """A DataFrame as a table; floats formatted with ``float_format``, NaN as an en dash."""

        def cell(value: object) -> str:
            if isinstance(value, float):
                return "–" if value != value else float_format.format(value)
            return str(value)

        body = frame.to_html(
            escape=True, na_rep="–", formatters={c: cell for c in frame.columns}, border=0
        )
        self._parts.append(f'<div class="scroll">{body}</div>')

    def figure(self, fig: Figure, caption: str = "", dpi: int = 110) -> None:
        """Embed a matplotlib figure as a base64 PNG, with an optional caption."""
        data = base64.b64encode(figure_to_png(fig, dpi=dpi)).decode("ascii")
        alt = html.escape(caption or "figure", quote=True)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self._parts.append(
            f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">{cap}</figure>'
        )

    def render(self) -> str:
        """The whole page as one HTML string."""
        title = html.escape(self.title)
        body = "\n".join(self._parts)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{title}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{title}</h1>\n{body}\n</body>\n</html>\n"
        )

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the page atomically to ``path``; return the path."""
        return write_text(path, self.render())
