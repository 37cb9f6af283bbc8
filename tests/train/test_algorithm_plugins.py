"""Algorithms from other packages: the ``shortcutlab.algorithms`` entry-point group."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint

import pytest

from shortcutlab.errors import TrainError
from shortcutlab.train import algorithms
from shortcutlab.train.algorithms.erm import ERM
from shortcutlab.train.config import TrainConfig
from shortcutlab.utils import registry


class PluginERM(ERM):
    """An algorithm living outside the package (here: in the tests)."""


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Fake entry points (``entry_points`` of the registry module) read again on a copy of the
    algorithm registry."""
    with algorithms.REGISTRY.scratch(reload=True):
        yield monkeypatch


def test_entry_point_algorithm_is_registered_and_created(isolated: pytest.MonkeyPatch) -> None:
    ep = EntryPoint("plugin_erm", f"{__name__}:PluginERM", algorithms.ENTRY_POINT_GROUP)
    isolated.setattr(registry, "entry_points", lambda group: [ep] if
                     group == algorithms.ENTRY_POINT_GROUP else [])
    assert "plugin_erm" in algorithms.list_algorithms()
    assert "erm" in algorithms.list_algorithms()  # built-ins still there
    cfg = TrainConfig(algorithm="plugin_erm", model="small_cnn")
    assert isinstance(algorithms.create_algorithm("plugin_erm", 3, cfg), PluginERM)


def test_broken_entry_point_names_itself(isolated: pytest.MonkeyPatch) -> None:
    ep = EntryPoint("broken", "no_such_module_xyz:Algo", algorithms.ENTRY_POINT_GROUP)
    isolated.setattr(registry, "entry_points", lambda group: [ep])
    with pytest.raises(TrainError, match="algorithm entry point 'broken'"):
        algorithms.list_algorithms()
