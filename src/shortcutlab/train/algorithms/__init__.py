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
from typing import TYPE_CHECKING, Any, TypeVar, cast

from shortcutlab.errors import TrainError
from shortcutlab.utils.registry import Registry

if TYPE_CHECKING:
    from shortcutlab.train.algorithms.base import Algorithm, AlgorithmContext
    from shortcutlab.train.config import TrainConfig

A = TypeVar("A", bound=type)

ENTRY_POINT_GROUP = "shortcutlab.algorithms"


def _import_builtins() -> None:
    """Import every module of this package (each registers its algorithms)."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


#: The algorithm classes: this package's modules first, then the entry-point group (an
#: Algorithm subclass, registered under its name, or a module whose import registers some).
REGISTRY: Registry[type[Algorithm]] = Registry(
    "algorithm", error=TrainError, group=ENTRY_POINT_GROUP,
    accepts=lambda obj: isinstance(obj, type), builtins=_import_builtins,
)


def register_algorithm(
    cls: A | None = None, *, name: str | None = None, override: bool = False
) -> A | Callable[[A], A]:
    """Class decorator registering an :class:`Algorithm` subclass under ``name`` (default: the
    class's ``name`` attribute, else its lower-cased class name). A taken name is refused
    (TrainError) unless ``override=True``."""

    def decorate(c: A) -> A:
        key = name or getattr(c, "name", None) or c.__name__.lower()
        REGISTRY.register(key, cast("type[Algorithm]", c), override=override)
        return c

    return decorate(cls) if cls is not None else decorate


def list_algorithms() -> list[str]:
    """Sorted names of registered algorithms."""
    return REGISTRY.names()


def check_algorithm_name(name: str) -> str:
    """``name`` if registered, else a TrainError listing the valid choices."""
    return REGISTRY.check(name)


def get_algorithm_class(name: str) -> type[Algorithm]:
    """The registered class for ``name``."""
    return REGISTRY.get(name)


def algorithm_versions(name: str) -> dict[str, str]:
    """The job ``versions`` entry of algorithm ``name``: ``{"algorithm": "<name>-<version>"}``
    once its code has changed its numbers (:attr:`Algorithm.version`), else ``{}`` (the job
    ids of algorithms that never changed stay as they were)."""
    version = get_algorithm_class(name).version
    return {"algorithm": f"{name}-{version}"} if version else {}


def check_hparams(config: TrainConfig) -> dict[str, Any]:
    """``config``'s algorithm hyper-parameters resolved against the algorithm's defaults, or the
    one-line TrainError that creating the algorithm would raise for them (an unknown key, a
    value of the wrong type or out of range): commands check before any job is written."""
    return get_algorithm_class(config.algorithm)._resolve_hparams(config.hparams)


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
    "REGISTRY",
    "algorithm_versions",
    "check_algorithm_name",
    "check_hparams",
    "create_algorithm",
    "get_algorithm_class",
    "list_algorithms",
    "register_algorithm",
]
