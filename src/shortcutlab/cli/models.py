"""``shortcutlab models``: every model name ``--model`` accepts, as timm's ``list_models``."""

from __future__ import annotations

import typer

from shortcutlab.cli.output import json_option, print_json


def models(
    filter: str = typer.Option(  # "filter": the option's name, as timm's list_models(filter=)
        "*", "--filter", help="Shell-style pattern on the name, with or without its prefix "
        "(e.g. 'resnet*', 'timm:convnext*')."
    ),
    as_json: bool = json_option("Print {registered: [...], timm: [...], torchvision: [...]} "
                                "as one JSON object."),
) -> None:
    """List the models --model can name: registered ones (built-in and entry points),
    timm:<arch> (when timm is installed, the extra shortcutlab[timm]) and torchvision:<arch>.

    Any module:factory of your own works too (docs/own-model.md). Nothing is downloaded:
    weights come only from --pretrained PATH.
    """
    from shortcutlab.train.model_zoo import available, list_zoo
    from shortcutlab.train.models import list_models

    found = {"registered": list_models(filter), **list_zoo(filter)}
    if as_json:
        print_json(found)
        return
    for source, names in found.items():
        typer.echo(f"{source} ({len(names)}):")
        for name in names:
            typer.echo(f"  {name}")
    if not available()["timm"]:
        typer.echo("timm: not installed (pip install 'shortcutlab[timm]' to name timm:<arch>)")


def register(app: typer.Typer) -> None:
    app.command("models", short_help="List the model names --model accepts.")(models)
