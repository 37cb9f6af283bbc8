"""``shortcutlab diagvib ...``: the DiagViB-6 command group.

Commands live in small modules, each exposing ``register(app)``:
``diagvib_render`` (factors, render, traverse), ``diagvib_studies`` (studies, study-figures,
export), ``diagvib_run`` (run, collect), ``diagvib_metrics`` (metrics), ``diagvib_inspect``
(inspect), ``diagvib_beta_vae`` (beta-vae), ``diagvib_report`` (report).
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

for _module_name in ("diagvib_render", "diagvib_studies", "diagvib_run", "diagvib_metrics",
                     "diagvib_inspect", "diagvib_beta_vae", "diagvib_report"):
    try:
        _module = importlib.import_module(f"shortcutlab.cli.{_module_name}")
    except ModuleNotFoundError as exc:  # not written yet
        if exc.name != f"shortcutlab.cli.{_module_name}":
            raise
        continue
    _module.register(app)
