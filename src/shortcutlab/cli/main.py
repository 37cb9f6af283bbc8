"""Entry point: ``shortcutlab <group> <command>``.

Each command group lives in its own module and exposes a Typer ``app``; the top-level ``demo``
has a ``register(app)``, and ``report`` is the former name of ``diagvib report``, kept as an
alias. Command modules import the library inside their functions, so ``--help`` stays fast.
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
    rich_markup_mode=None,
)

# name: (help of the group, its one-line summary in the command list)
_GROUPS = {
    "diagvib": ("DiagViB-6: synthetic images with six controlled factors, studies, runs, metrics.",
                "DiagViB-6: synthetic images with six controlled factors."),
    "stats": ("BiasBed: rigorous multi-run comparison (Friedman, Iman-Davenport, Nemenyi).",
              "BiasBed statistics: Friedman, Iman-Davenport, Nemenyi."),
    "biasbed": ("BiasBed: many runs of debiasing algorithms, model selection, statistical report.",
                "BiasBed: many runs of debiasing algorithms, their report."),
    "vqa": ("VQA-VS: shortcut-specific OOD test sets and VQA accuracy.",
            "VQA-VS: shortcut-specific OOD test sets and VQA accuracy."),
    "imagenetx": ("ImageNet-X: per-factor error analysis of ImageNet models.",
                  "ImageNet-X: per-factor error analysis of ImageNet models."),
    "factors": ("Factor-annotated error analysis of any dataset's predictions.",
                "Factor-annotated error analysis of any dataset."),
}


def _print_version(value: bool) -> None:
    if value:
        from shortcutlab import __version__

        typer.echo(f"shortcutlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Find out whether a vision model takes shortcuts, and which ones."""


for _name, (_help, _summary) in _GROUPS.items():
    _group = importlib.import_module(f"shortcutlab.cli.{_name}").app
    _group.rich_markup_mode = None  # click's help wraps long option names; rich's cut them
    app.add_typer(_group, name=_name, help=_help, short_help=_summary)

importlib.import_module("shortcutlab.cli.demo").register(app)
importlib.import_module("shortcutlab.cli.models").register(app)
importlib.import_module("shortcutlab.cli.diagvib_report").register_alias(app)

wrap_commands(app)


def main() -> None:
    """The ``shortcutlab`` command (and ``python -m shortcutlab``): a process of its own, whose
    training keeps freed memory for reuse (:func:`shortcutlab.utils.malloc.keep_freed_memory`)."""
    from shortcutlab.utils.malloc import keep_freed_memory

    keep_freed_memory()
    app()


if __name__ == "__main__":
    main()
