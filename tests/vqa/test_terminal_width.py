"""Terminal tables fit 80 columns (issue 34): ``vqa build``'s statistics header is not cut
(``imbalanced_gr…``) and the demo's VQA table wraps its columns instead of its lines."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from rich.console import Console

from shortcutlab.cli.vqa import _stats_table
from shortcutlab.demo.vqa import terminal_table
from shortcutlab.vqa.concepts import SHORTCUTS


def test_build_statistics_headers_are_whole_at_80_columns() -> None:
    columns = ["shortcut", "train_groups", "test_groups", "test_imbalanced_groups", "test_head",
               "test_tail", "train_head", "train_tail"]
    rows = [[s, 1_234, 1_234, 1_234, 123_456, 123_456, 1_234_567, 1_234_567] for s in SHORTCUTS]
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(_stats_table(pd.DataFrame(rows,
                                                                                 columns=columns)))
    text = out.getvalue()
    assert "…" not in text and "imbalanced" in text and "1,234,567" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_demo_table_wraps_columns_within_80() -> None:
    cols = ["IID", *SHORTCUTS, "OOD mean", "gap"]
    models = ["prior-qt", "prior-kw", "cnn-bow", "cnn-bow+color~shape"]
    frame = pd.DataFrame(np.random.default_rng(0).uniform(0, 100, (4, len(cols))),
                         index=pd.Index(models, name="model"), columns=cols)
    text = terminal_table(frame)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert all(c in text for c in cols) and all(m in text for m in models)
    assert f"{frame.loc['cnn-bow', 'gap']:.1f}" in text
