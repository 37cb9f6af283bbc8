"""Algorithm registry (DomainBed style).

Every module in this package is imported on first use (``pkgutil``), so adding an algorithm is
adding a file whose class is decorated with :func:`register_algorithm`. Other packages add
algorithms without editing this one through the ``shortcutlab.algorithms`` entry-point group (as
models use ``shortcutlab.models``): the entry point is an :class:`Algorithm` subclass, registered
under the entry point's name, or a module whose import registers algorithms.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, TypeVar, cast

from shortcutlab.errors import TrainError, unknown_choice
from shortcutlab.utils.registry import register

if TYPE_CHECKING:
    from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
    from shortcutlab.train.config import TrainConfig

A = TypeVar("A", bound=type)

ENTRY_POINT_GROUP = "shortcutlab.algorithms"

_REGISTRY: dict[str, type[Algorithm]] = {}
_loaded = False


def register_algorithm(
    cls: A | None = None, *, name: str | None = None, override: bool = False
) -> A | Callable[[A], A]:
    """Class decorator registering an :class:`Algorithm` subclass under ``name`` (default: the
    class's ``name`` attribute, else its lower-cased class name). A taken name is refused
    (TrainError) unless ``override=True``."""

    def decorate(c: A) -> A:
        key = name or getattr(c, "name", None) or c.__name__.lower()
        register(_REGISTRY, key, cast("type[Algorithm]", c), what="algorithm", error=TrainError,
                 override=override)
        return c

    return decorate(cls) if cls is not None else decorate


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # name the broken plugin instead of a bare import error
            raise TrainError(
                f"cannot load algorithm entry point {ep.name!r} ({ep.value}): {exc}"
            ) from exc
        if isinstance(obj, type):
            register(_REGISTRY, ep.name, obj, what=f"algorithm (entry point {ep.value})",
                     error=TrainError)


def list_algorithms() -> list[str]:
    """Sorted names of registered algorithms."""
    _load_all()
    return sorted(_REGISTRY)


def check_algorithm_name(name: str) -> str:
    """``name`` if registered, else a TrainError listing the valid choices."""
    _load_all()
    if name not in _REGISTRY:
        raise TrainError(unknown_choice("algorithm", name, sorted(_REGISTRY)))
    return name


def get_algorithm_class(name: str) -> type[Algorithm]:
    """The registered class for ``name``."""
    return _REGISTRY[check_algorithm_name(name)]


def create_algorithm(
    name: str,
    num_classes: int,
    config: TrainConfig,
    context: AlgorithmContext | None = None,
) -> Algorithm:
    """Instantiate the algorithm ``name`` for a ``num_classes``-way task."""
    return get_algorithm_class(name)(num_classes, config, context)


__all__ = [
    "ENTRY_POINT_GROUP",
    "check_algorithm_name",
    "create_algorithm",
    "get_algorithm_class",
    "list_algorithms",
    "register_algorithm",
]
