"""``HtmlReport``: what a browser shows is the text given (``<`` and ``&`` escaped, not parsed
as tags); tables format floats and show NaN as an en dash."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import pandas as pd

from shortcutlab.utils.html import HtmlReport


class _Shown(HTMLParser):
    """The text a browser would show in the body, and the tags it would parse."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tags: list[str] = []
        self._skip = False

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)
        self._skip = tag in ("style", "title")

    def handle_endtag(self, tag) -> None:
        self._skip = False

    def handle_data(self, data) -> None:
        if not self._skip and data.strip():
            self.text.append(data.strip())


def _shown(report: HtmlReport) -> _Shown:
    parser = _Shown()
    parser.feed(report.render())
    return parser


def test_paragraphs_and_headings_show_their_text_as_given() -> None:
    report = HtmlReport("a & b")
    report.heading("<i>x</i> vs y")
    report.paragraph("p < 0.05 and n > 3 <b>", note=True)
    shown = _shown(report)
    assert shown.text == ["a & b", "<i>x</i> vs y", "p < 0.05 and n > 3 <b>"]
    assert "i" not in shown.tags and "b" not in shown.tags


def test_table_cells_show_as_given_with_floats_formatted() -> None:
    report = HtmlReport("t")
    frame = pd.DataFrame({"acc": [0.12345, math.nan], "model": ["a<b>", "c&d"]},
                         index=pd.Index(["<x", "y"], name="row"))
    report.table(frame)
    shown = _shown(report)
    assert "b" not in shown.tags
    for text in ("<x", "0.123", "a<b>", "–", "c&d"):
        assert text in shown.text, (text, shown.text)
