"""A report built from one's own predictions (``job_row`` records, issue 34) describes no
checkpoint selection and no training recipe that never happened; a run's report still does."""

from __future__ import annotations

import pandas as pd
import pytest

from shortcutlab.diagvib.report import build_report, predictions_only
from tests.diagvib.tables import synthetic_table

RUN = "the checkpoint with the lowest validation loss"
RECIPE = "Adam 2e-4, batch 64"


def _own(table: pd.DataFrame) -> pd.DataFrame:
    """What job_row gives: the scores, none of the training columns."""
    keep = ["job_id", "model", "algorithm", "study", "predicted", "correlated", "sample", "seed",
            "experiment", "status", "test_acc"]
    return table[[c for c in keep if c in table.columns]]


def test_predictions_only_report_names_no_training() -> None:
    table = _own(synthetic_table(models=("mine",), studies=("ZSO", "ZGO")))
    report, metrics = build_report(table)
    html = report.render()
    assert predictions_only(metrics.table) == ["mine"]
    assert RUN not in html and RECIPE not in html
    assert "of the predictions given for mine" in html and "job_row" in html


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_mixed_report_says_which_model_is_which() -> None:
    run = synthetic_table(models=("resnet18",), studies=("ZSO", "ZGO"))
    assert "scale" in run.columns
    own = _own(synthetic_table(models=("mine",), studies=("ZSO", "ZGO")))
    report, metrics = build_report(pd.concat([run, own], ignore_index=True))
    html = report.render()
    assert predictions_only(metrics.table) == ["mine"]
    assert f"{RUN} (the paper&#x27;s rule) for resnet18, and of the predictions given for mine" \
        in html
    assert RECIPE in html and "every model trained here" in html
