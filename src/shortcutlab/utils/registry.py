"""The one registry policy shared by models, algorithms and job kinds.

A name is taken once: registering another object under a taken name is refused unless the
caller says ``override=True``; registering the very same object again is a no-op (so that a
module imported twice, or a decorator applied on re-import, does not fail).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TypeVar

from shortcutlab.errors import ShortcutlabError

T = TypeVar("T")


def register(
    registry: MutableMapping[str, T],
    name: str,
    obj: T,
    *,
    what: str,
    error: type[ShortcutlabError] = ShortcutlabError,
    override: bool = False,
) -> T:
    """Put ``obj`` under ``name`` in ``registry``; ``error`` (one line naming the taken name and
    ``override=True``) when ``name`` already holds another object and ``override`` is False."""
    if not name or not isinstance(name, str):
        raise error(f"a {what} needs a non-empty name, got {name!r}")
    taken = registry.get(name)
    if taken is not None and taken != obj and not override:
        raise error(
            f"{what} name {name!r} is already registered ({_label(taken)}); "
            "pick another name or pass override=True to replace it"
        )
    registry[name] = obj
    return obj


def _label(obj: object) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else type(obj).__name__
