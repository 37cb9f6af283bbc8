"""``shortcutlab diagvib inspect``: the ASR / VAE / Factor-VAE figures of a run folder."""

from __future__ import annotations

from pathlib import Path

import typer

from shortcutlab.cli.output import json_option, print_json


def inspect(
    run_dir: Path = typer.Argument(..., help="Run folder written by `diagvib run`."),
    out: Path = typer.Option(None, "--out", help="Folder for index.html and the PNGs "
                             "(default <run_dir>/inspect, which `diagvib report` links)."),
    images: int = typer.Option(6, help="Test images per job."),
    traversals: int = typer.Option(2, help="Latent traversals per VAE job (one per image)."),
    device: str = typer.Option("cpu", help="auto | cpu | cuda (for jobs retrained here)."),
    as_json: bool = json_option("Print {page, jobs: [the jobs drawn]} as one JSON object."),
) -> None:
    """Draw VAE reconstructions and latent traversals and ASR lens outputs (paper figs. A2-A4,
    A9) for every finished asr / vae / factor_vae job in RUN_DIR.

    A job without a cached checkpoint (<job>/model.pt) is retrained once to recover the
    checkpoint with the lowest validation loss; the page says whether it matches the job's.
    """
    from shortcutlab.diagvib.inspect import write_inspection
    from shortcutlab.utils.console import PlainConsole
    from shortcutlab.utils.device import resolve_device

    resolve_device(device)
    console = PlainConsole(stderr=True)
    jobs: list[str] = []

    def progress(job: str) -> None:
        jobs.append(str(job))
        console.print(f"inspecting job {job}")

    page = write_inspection(run_dir, out, images=images, traversals=traversals, device=device,
                            progress=progress)
    if as_json:
        print_json({"page": str(page), "jobs": jobs})
        return
    typer.echo(f"inspection written to {page}")


def register(app: typer.Typer) -> None:
    app.command(
        "inspect", short_help="Draw VAE and ASR pictures of finished jobs (figs. A2-A4, A9)."
    )(inspect)
