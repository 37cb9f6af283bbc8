"""The docs give one piece of extension advice (issue 34): extend from your own package, never
by dropping a file into shortcutlab's sources (docs/own-model.md, "Extending instead of
editing")."""

from __future__ import annotations

from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("doc", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_no_doc_says_to_edit_the_package_sources(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    assert "src/shortcutlab/train/algorithms/" not in text
    assert "src/shortcutlab/train/models" not in text


def test_the_pages_that_explain_extending_point_to_the_entry_points() -> None:
    for name in ("diagvib-benchmark.md", "biasbed-algorithms.md"):
        text = (DOCS / name).read_text(encoding="utf-8")
        assert "shortcutlab.algorithms" in text and "own-model.md#extending-instead-of-editing" \
            in text, name
