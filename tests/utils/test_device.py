"""Device names: auto, cpu, cuda and cuda:N, nothing else (a suffix no device reads is refused,
not dropped)."""

from __future__ import annotations

import pytest

from shortcutlab.errors import ShortcutlabError
from shortcutlab.utils.device import check_device_name, resolve_device


@pytest.mark.parametrize("name", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_the_device_names_are_accepted(name: str) -> None:
    assert check_device_name(name) == name


@pytest.mark.parametrize("name", ["auto:1", "cpu:7", "cuda:abc", "cuda:", "cuda:-1", "gpu",
                                  "cuda:1:2"])
def test_a_suffix_no_device_reads_is_refused_not_dropped(name: str) -> None:
    """``auto:1`` was CUDA device 0 (or the CPU): its ``:1`` silently dropped."""
    with pytest.raises(ShortcutlabError, match=f"unknown device {name!r}"):
        check_device_name(name)
    with pytest.raises(ShortcutlabError, match=f"unknown device {name!r}"):
        resolve_device(name)


def test_cpu_resolves_to_the_cpu() -> None:
    assert resolve_device("cpu").type == "cpu"
