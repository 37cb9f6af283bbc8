"""Entry point: ``shortcutlab <group> <command>``.

Each command group lives in its own module and exposes a Typer ``app``; groups are imported
lazily-by-module here so a broken optional area cannot break ``--help`` of the others.
"""

from __future__ import annotations

import importlib

import typer

from shortcutlab.cli.errors import wrap_commands

app = typer.Typer(
    name="shortcutlab",
    help="Find out whether a vision model takes shortcuts, and which ones.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_GROUPS = {
    "diagvib": "DiagViB-6: synthetic images with six controlled factors, studies, runs, metrics.",
    "stats": "BiasBed: rigorous multi-run comparison (Friedman, Iman-Davenport, Nemenyi).",
    "biasbed": "BiasBed: many runs of debiasing algorithms, model selection, statistical report.",
    "vqa": "VQA-VS: shortcut-specific OOD test sets and VQA accuracy.",
    "imagenetx": "ImageNet-X: per-factor error analysis of ImageNet models.",
}

for _name, _help in _GROUPS.items():
    try:
        _module = importlib.import_module(f"shortcutlab.cli.{_name}")
    except ModuleNotFoundError as exc:  # the group's module is not written yet
        if exc.name != f"shortcutlab.cli.{_name}":
            raise
        continue
    app.add_typer(_module.app, name=_name, help=_help)

for _name in ("report", "demo"):
    try:
        _module = importlib.import_module(f"shortcutlab.cli.{_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"shortcutlab.cli.{_name}":
            raise
        continue
    _module.register(app)

wrap_commands(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
