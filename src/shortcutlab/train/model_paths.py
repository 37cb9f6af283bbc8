"""Models named by import path, ``module:factory`` (``--model my_models:wide_net``), or by
library, ``timm:<arch>`` / ``torchvision:<arch>`` (:mod:`shortcutlab.train.model_zoo`), and the
check that every model of a run can be built by the processes that run its jobs.

A ``module:factory`` name is imported from the working directory or ``PYTHONPATH`` the first
time it is used and registered under that name, in the process that asked and, by the same
route, in every worker process (the working directory is passed on through ``sys.path`` and
``PYTHONPATH``). ``factory(num_classes, **kw)`` returns the ``nn.Module``, as for
:func:`shortcutlab.train.register_model`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from shortcutlab.errors import RunnerError, TrainError

_FORM = "module:factory, e.g. my_models:wide_net (my_models.py in the working directory)"


def is_import_path(name: str) -> bool:
    """``module:factory`` rather than a registered name."""
    return ":" in name


def _importable_from_here() -> None:
    """Put the working directory on ``sys.path`` and ``PYTHONPATH`` (for worker processes)."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([*paths, here])


def resolve_model_path(name: str) -> Callable[..., Any]:
    """The factory that ``module:factory`` names (``factory`` may be dotted: ``Class.build``);
    a TrainError saying what failed and how to fix it otherwise."""
    module_name, _, attr = (part.strip() for part in name.partition(":"))
    if not module_name or not attr:
        raise TrainError(f"model {name!r}: expected {_FORM}")
    _importable_from_here()
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise TrainError(
            f"model {name!r}: cannot import {module_name!r} ({exc}); run from the folder that "
            "holds it or add that folder to PYTHONPATH"
        ) from None
    except Exception as exc:  # the user's module itself failed
        raise TrainError(f"model {name!r}: importing {module_name!r} failed: "
                         f"{type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TrainError(f"model {name!r}: {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TrainError(f"model {name!r}: {attr!r} is not callable; expected a factory "
                         "factory(num_classes, **kw) -> nn.Module")
    return obj


def factory_for(name: str) -> Callable[..., Any]:
    """The factory that ``module:factory`` (or ``timm:``/``torchvision:<arch>``) names, built
    once to check it (:func:`shortcutlab.train.models.check_model_name` registers it under
    that name)."""
    from shortcutlab.train import model_zoo

    factory = (model_zoo.zoo_factory(name) if model_zoo.is_zoo_name(name)
               else resolve_model_path(name))
    _check_builds(name, factory)
    return factory


def _check_builds(name: str, factory: Callable[..., Any]) -> None:
    """Build the model once (3 classes; on the meta device, no memory, falling back to the CPU
    for factories that need real tensors) so that a factory that raises or returns something
    other than an ``nn.Module`` is refused now, not inside a job whose folder is written."""
    import torch

    try:
        with torch.device("meta"):
            built = factory(num_classes=3)
    except Exception:  # some factories need real tensors: try once for real
        try:
            built = factory(num_classes=3)
        except Exception as exc:
            raise TrainError(f"model {name!r}: building it failed ({type(exc).__name__}: "
                             f"{exc}); expected factory(num_classes, **kw) -> nn.Module"
                             ) from None
    if not isinstance(built, torch.nn.Module):
        raise TrainError(f"model {name!r}: the factory returned a {type(built).__name__}, not a "
                         "torch.nn.Module; expected factory(num_classes, **kw) -> nn.Module")


def _session_only(factory: Any) -> bool:
    """Defined in a notebook or an interactive session: no fresh process can import it."""
    main = sys.modules.get("__main__")
    return (getattr(factory, "__module__", None) == "__main__"
            and not getattr(main, "__file__", None))


def check_models_reach_workers(model_names: Iterable[str], backend: str) -> None:
    """Refuse, before anything runs, models registered in a notebook for a backend whose
    workers are fresh processes (they would fail with "unknown model")."""
    models = sys.modules.get("shortcutlab.train.models")
    if models is None or backend == "serial":
        return
    for name in sorted(set(model_names)):
        if _session_only(models.REGISTRY.find(name)):
            raise RunnerError(
                f"model {name!r} is registered in this notebook/interactive session, which the "
                f"worker processes of backend {backend!r} cannot see; use backend 'serial', or "
                f"move the factory into a module and name it by import path ({_FORM})"
            )
