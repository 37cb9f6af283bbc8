"""Lazy public exports for a package ``__init__``: names load on first use (PEP 562), so
importing an area stays light and torch loads only with the names that need it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose ``exports`` map each public name
    to the submodule defining it; a loaded name is cached in the package ``namespace``.

    A name equal to its submodule's (``evaluate`` in ``evaluate``) is imported now: importing
    the submodule later would otherwise bind the package attribute to the module.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    for name, module in exports.items():
        if name == module:
            namespace[name] = getattr(importlib.import_module(f"{package}.{module}"), name)
    return __getattr__, __dir__
