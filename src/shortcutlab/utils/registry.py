"""The one registry policy shared by every extension point (models, algorithms, training
presets, job kinds, job backends, studies).

A name is taken once: registering another object under a taken name is refused unless the
caller says ``override=True``; registering the very same object again is a no-op (so that a
module imported twice, or a decorator applied on re-import, does not fail).

A :class:`Registry` also finds what other packages add without anyone remembering to import
them: on its first lookup it loads its Python entry-point group (``group``). An entry point is
either an object the registry accepts, registered under the entry point's name, or a module
whose import registers objects itself. shortcutlab's own areas add their models, algorithms,
presets and job kinds this way (pyproject.toml), exactly as a user's package would, so an
engine never imports an area and no entry point has to call a ``register()`` first.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from shortcutlab.errors import ShortcutlabError, unknown_choice

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


class Registry(Generic[T]):
    """Named objects of one kind, with :func:`register`'s policy and lazy entry points.

    ``what`` names the kind in messages ("model", "job kind"); ``error`` is the area's
    exception; ``group`` the entry-point group loaded on first lookup; ``accepts(obj)`` tells an
    object to register under its entry point's name from a module that registers itself
    (default: anything that is not a module); ``builtins`` is called once before the entry
    points (e.g. to import every module of a package of built-in algorithms).
    """

    def __init__(
        self,
        what: str,
        *,
        error: type[ShortcutlabError] = ShortcutlabError,
        group: str | None = None,
        accepts: Callable[[object], bool] | None = None,
        builtins: Callable[[], None] | None = None,
    ) -> None:
        self.what = what
        self.error = error
        self.group = group
        self._accepts = accepts or (lambda obj: not isinstance(obj, type(fnmatch)))
        self._builtins = builtins
        self._items: dict[str, T] = {}
        self._loaded = group is None and builtins is None

    def register(self, name: str, obj: T, *, override: bool = False) -> T:
        """Put ``obj`` under ``name`` (see :func:`register`); returns ``obj``."""
        return register(self._items, name, obj, what=self.what, error=self.error,
                        override=override)

    def load(self) -> None:
        """Import the built-ins and the entry-point group, once (a broken entry point is an
        ``error`` naming it, not a bare ImportError)."""
        if self._loaded:
            return
        self._loaded = True  # before importing: a module that registers must not recurse
        if self._builtins is not None:
            self._builtins()
        if self.group is None:
            return
        for ep in entry_points(group=self.group):
            try:
                obj = ep.load()
            except Exception as exc:
                raise self.error(
                    f"cannot load {self.what} entry point {ep.name!r} ({ep.value}): {exc}"
                ) from exc
            if self._accepts(obj):
                register(self._items, ep.name, obj, what=f"{self.what} (entry point "
                         f"{ep.value})", error=self.error)

    def names(self, pattern: str = "*") -> list[str]:
        """Sorted registered names matching a shell-style ``pattern``."""
        self.load()
        return sorted(n for n in self._items if fnmatch.fnmatchcase(n, pattern))

    def check(self, name: str) -> str:
        """``name`` if registered, else ``error`` listing the valid choices."""
        self.load()
        if name not in self._items:
            raise self.error(unknown_choice(self.what, name, sorted(self._items)))
        return name

    def get(self, name: str) -> T:
        """The object registered under ``name`` (``error`` listing the choices if none)."""
        return self._items[self.check(name)]

    def find(self, name: str) -> T | None:
        """The object under ``name``, or None."""
        self.load()
        return self._items.get(name)

    def items(self) -> list[tuple[str, T]]:
        """(name, object) pairs in registration order (built-ins first)."""
        self.load()
        return list(self._items.items())

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    @contextmanager
    def scratch(self, *, reload: bool = False) -> Iterator[Registry[T]]:
        """Registrations made inside the block are undone at its end (tests register fakes
        on a copy, never in the product's registry). ``reload``: read the entry-point group
        again on the block's first lookup (tests that fake ``entry_points``)."""
        self.load()
        saved = dict(self._items)
        if reload:
            self._loaded = False
        try:
            yield self
        finally:
            self._items.clear()
            self._items.update(saved)
            self._loaded = True


def _label(obj: object) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else type(obj).__name__
