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


@pytest.mark.usefixtures("scratch_registries")
def test_models_refuse_a_taken_name_unless_overridden() -> None:
    with pytest.raises(TrainError, match=r"model name 'resnet18' is already registered.*"
                                         r"override=True"):
        models.register_model(_net, name="resnet18")
    assert models.REGISTRY.get("resnet18") is not _net
    models.register_model(_net, name="fresh")
    models.register_model(_net, name="fresh")  # the same function again: a no-op
    with pytest.raises(TrainError, match="'fresh'"):
        models.register_model(_other_net, name="fresh")
    models.register_model(_other_net, name="fresh", override=True)
    assert models.REGISTRY.get("fresh") is _other_net


@pytest.mark.usefixtures("scratch_registries")
def test_algorithms_refuse_a_taken_name_unless_overridden() -> None:
    with pytest.raises(TrainError, match=r"algorithm name 'erm' is already registered"):
        algorithms.register_algorithm(_OtherERM, name="erm")
    assert algorithms.get_algorithm_class("erm") is ERM
    algorithms.register_algorithm(ERM)  # the same class under its own name: a no-op
    algorithms.register_algorithm(_OtherERM, name="erm", override=True)
    assert algorithms.get_algorithm_class("erm") is _OtherERM


@pytest.mark.usefixtures("scratch_registries")
def test_job_kinds_refuse_a_taken_name_unless_overridden() -> None:
    jobs.register_job_kind("k", _run)
    jobs.register_job_kind("k", _run)
    with pytest.raises(RunnerError, match=r"job kind name 'k' is already registered"):
        jobs.register_job_kind("k", _run_too)
    jobs.register_job_kind("k", _run_too, override=True)
    assert jobs.job_kind("k").run is _run_too


# ------------------------------------------------------------------ the generic Registry
class _Boom(RunnerError):
    pass


def test_a_registry_checks_lists_and_undoes_scratch_registrations() -> None:
    from shortcutlab.utils.registry import Registry

    reg: Registry[int] = Registry("widget", error=_Boom)
    reg.register("a", 1)
    reg.register("a", 1)  # the same object again: a no-op
    with pytest.raises(_Boom, match=r"widget name 'a' is already registered"):
        reg.register("a", 2)
    with pytest.raises(_Boom, match=r"unknown widget 'b'.*a"):
        reg.get("b")
    with reg.scratch():
        reg.register("b", 2)
        assert reg.names() == ["a", "b"] and reg.get("b") == 2
    assert "b" not in reg and reg.names("a*") == ["a"] and reg.find("b") is None


def test_a_registry_loads_its_builtins_once_on_first_lookup() -> None:
    from shortcutlab.utils.registry import Registry

    calls = []
    reg: Registry[str] = Registry("widget", builtins=lambda: calls.append(reg.register("x", "X")))
    assert calls == []  # nothing imported before the first lookup
    assert reg.names() == ["x"] and reg.get("x") == "X" and "x" in reg
    assert calls == ["X"]


def test_a_broken_entry_point_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    from shortcutlab.utils import registry as registry_mod

    broken = EntryPoint("bad", "no_such_module_xyz:thing", "shortcutlab.widgets")
    good = EntryPoint("sqrt", "math:sqrt", "shortcutlab.widgets")
    monkeypatch.setattr(registry_mod, "entry_points",
                        lambda group: [good] if group == "ok" else [good, broken])
    ok = registry_mod.Registry("widget", error=_Boom, group="ok")
    import math

    assert ok.get("sqrt") is math.sqrt  # an object from an entry point, under its name
    bad = registry_mod.Registry("widget", error=_Boom, group="bad")
    with pytest.raises(_Boom, match=r"cannot load widget entry point 'bad' "
                                    r"\(no_such_module_xyz:thing\)"):
        bad.names()


def test_items_keep_registration_order_and_scratch_can_reread_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib.metadata import EntryPoint

    from shortcutlab.utils import registry as registry_mod

    found = [EntryPoint("sqrt", "math:sqrt", "g")]
    monkeypatch.setattr(registry_mod, "entry_points", lambda group: list(found))
    reg: registry_mod.Registry[object] = registry_mod.Registry("widget", error=_Boom, group="g")
    reg.register("z", 1)
    reg.register("a", 2)
    import math

    assert reg.items() == [("z", 1), ("a", 2), ("sqrt", math.sqrt)]  # built-ins, then plugins
    found.append(EntryPoint("floor", "math:floor", "g"))
    assert "floor" not in reg  # the group is read once ...
    with reg.scratch(reload=True):
        assert reg.get("floor") is math.floor  # ... unless a test asks to read it again
    assert "floor" not in reg and reg.names() == ["a", "sqrt", "z"]


def test_a_registry_refuses_an_empty_name() -> None:
    from shortcutlab.utils.registry import Registry

    reg: Registry[int] = Registry("widget", error=_Boom)
    with pytest.raises(_Boom, match=r"a widget needs a non-empty name, got ''"):
        reg.register("", 1)
    assert reg.names() == []


def test_a_module_entry_point_registers_itself_and_is_not_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An entry point naming a module (as pyproject's ``diagvib_baselines``) is imported for
    what it registers; the module itself is no model."""
    from importlib.metadata import EntryPoint

    from shortcutlab.utils import registry as registry_mod

    monkeypatch.setattr(registry_mod, "entry_points",
                        lambda group: [EntryPoint("mod", "json", "g"),
                                       EntryPoint("sqrt", "math:sqrt", "g")])
    reg: registry_mod.Registry[object] = registry_mod.Registry("widget", error=_Boom, group="g")
    assert reg.names() == ["sqrt"] and "mod" not in reg
