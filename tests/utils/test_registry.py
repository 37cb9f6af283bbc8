"""One registry policy for models, algorithms and job kinds: a taken name is refused unless the
caller says ``override=True``; registering the same object again is a no-op."""

from __future__ import annotations

import pytest
from torch import nn

from shortcutlab.errors import RunnerError, TrainError
from shortcutlab.runner import jobs
from shortcutlab.train import algorithms, models
from shortcutlab.train.algorithms.erm import ERM


def _net(num_classes: int) -> nn.Module:
    return nn.Linear(2, num_classes)


def _other_net(num_classes: int) -> nn.Module:
    return nn.Linear(3, num_classes)


class _OtherERM(ERM):
    pass


def _run(job: jobs.Job, device: str) -> jobs.JobOutput:
    raise AssertionError("never run")


def _run_too(job: jobs.Job, device: str) -> jobs.JobOutput:
    raise AssertionError("never run")


@pytest.fixture
def registries(monkeypatch: pytest.MonkeyPatch) -> None:
    algorithms.list_algorithms()
    monkeypatch.setattr(models, "_REGISTRY", dict(models._REGISTRY))
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms._REGISTRY))
    monkeypatch.setattr(jobs, "_JOB_KINDS", dict(jobs._JOB_KINDS))


@pytest.mark.usefixtures("registries")
def test_models_refuse_a_taken_name_unless_overridden() -> None:
    with pytest.raises(TrainError, match=r"model name 'resnet18' is already registered.*"
                                         r"override=True"):
        models.register_model(_net, name="resnet18")
    assert models._REGISTRY["resnet18"] is not _net
    models.register_model(_net, name="fresh")
    models.register_model(_net, name="fresh")  # the same function again: a no-op
    with pytest.raises(TrainError, match="'fresh'"):
        models.register_model(_other_net, name="fresh")
    models.register_model(_other_net, name="fresh", override=True)
    assert models._REGISTRY["fresh"] is _other_net


@pytest.mark.usefixtures("registries")
def test_algorithms_refuse_a_taken_name_unless_overridden() -> None:
    with pytest.raises(TrainError, match=r"algorithm name 'erm' is already registered"):
        algorithms.register_algorithm(_OtherERM, name="erm")
    assert algorithms.get_algorithm_class("erm") is ERM
    algorithms.register_algorithm(ERM)  # the same class under its own name: a no-op
    algorithms.register_algorithm(_OtherERM, name="erm", override=True)
    assert algorithms.get_algorithm_class("erm") is _OtherERM


@pytest.mark.usefixtures("registries")
def test_job_kinds_refuse_a_taken_name_unless_overridden() -> None:
    jobs.register_job_kind("k", _run)
    jobs.register_job_kind("k", _run)
    with pytest.raises(RunnerError, match=r"job kind name 'k' is already registered"):
        jobs.register_job_kind("k", _run_too)
    jobs.register_job_kind("k", _run_too, override=True)
    assert jobs.job_kind("k").run is _run_too
