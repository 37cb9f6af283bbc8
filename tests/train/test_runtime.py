"""Runtime options read from the environment (jobs run in other processes): a value that is
none of the choices is refused, not read as the default."""

from __future__ import annotations

import pytest

from shortcutlab.errors import TrainError
from shortcutlab.train.runtime import (
    COMPILE_ENV,
    CUDA_GRAPHS_ENV,
    compile_default,
    cuda_graphs_default,
    runtime_options,
)


@pytest.mark.parametrize("value", ["yes", "true", "2", " 1"])
def test_a_compile_setting_other_than_0_or_1_is_refused(monkeypatch, value: str) -> None:
    monkeypatch.setenv(COMPILE_ENV, value)
    with pytest.raises(TrainError, match=f"{COMPILE_ENV}=.* is no valid setting"):
        compile_default()


def test_settings_are_read_and_restored(monkeypatch) -> None:
    monkeypatch.delenv(COMPILE_ENV, raising=False)
    monkeypatch.setenv(CUDA_GRAPHS_ENV, "off")
    assert (compile_default(), cuda_graphs_default()) == (False, "off")
    with runtime_options(compile=True, cuda_graphs="auto"):
        assert (compile_default(), cuda_graphs_default()) == (True, "auto")
    assert (compile_default(), cuda_graphs_default()) == (False, "off")
    monkeypatch.setenv(CUDA_GRAPHS_ENV, "of")
    with pytest.raises(TrainError, match="cuda_graphs mode"):
        cuda_graphs_default()
