"""A study defined by the user, without editing the package: registered once
(:func:`shortcutlab.diagvib.spec.register_study`), it gets experiment specs, metrics and a
report like the paper's studies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shortcutlab.diagvib import spec as spec_module
from shortcutlab.diagvib.metrics import compute_metrics
from shortcutlab.diagvib.report import build_report
from shortcutlab.diagvib.spec import Study, get_study, register_study
from shortcutlab.diagvib.studies import experiment_names, make_experiment
from shortcutlab.errors import SpecError
from tests.diagvib.tables import synthetic_table


def one_extra_cell(*, seed: int, sample: int, predicted: str, correlated: str,
                   selection: str) -> tuple[np.ndarray, np.ndarray]:
    """ZGO's diagonal plus the single cell (0, 1) in training; the other cells in test."""
    train = np.eye(3, dtype=bool)
    train[0, 1] = True
    return train / train.sum(), ~train / (~train).sum()


@pytest.fixture
def user_study(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(spec_module, "_STUDIES", dict(spec_module._STUDIES))
    register_study(Study("ONE-CELL", weights=one_extra_cell, description="diagonal + (0, 1)"))
    return "ONE-CELL"


def test_a_registered_study_gets_specs(user_study: str) -> None:
    spec = make_experiment(f"{user_study}/hue-shape/0", scale=0.002)
    assert spec.study == user_study and (spec.predicted, spec.correlated) == ("hue", "shape")
    train = np.asarray(spec.weights["train"])
    assert train[0, 1] > 0 and train[1, 0] == 0 and np.isclose(train.sum(), 1.0)
    assert len(experiment_names(studies=[user_study], samples=1)) == 30


def test_a_registered_study_gets_metrics_and_a_report(user_study: str) -> None:
    table = synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1))
    mine = table[table["study"] == "ZGO"].assign(study=user_study)
    if "job_id" in mine.columns:
        mine["job_id"] = mine["job_id"].str.replace("ZGO", user_study)
    both = pd.concat([table, mine], ignore_index=True)
    metrics = compute_metrics(both)
    assert user_study in set(metrics.pairs["study"])
    faavg = metrics.aggregates[(metrics.aggregates["study"] == user_study)
                               & (metrics.aggregates["metric"] == "FAAvg")]
    assert len(faavg) == 6
    assert user_study in metrics.studies()
    report, _ = build_report(both)
    assert user_study in report.render()


def test_study_names_are_taken_once(user_study: str) -> None:
    with pytest.raises(SpecError, match="study name 'ZGO' is already registered"):
        register_study(Study("ZGO", description="another ZGO"))
    assert get_study(user_study).description == "diagonal + (0, 1)"
    with pytest.raises(SpecError, match="unknown study 'NOPE'.*ONE-CELL"):
        make_experiment("NOPE/hue-shape/0")
