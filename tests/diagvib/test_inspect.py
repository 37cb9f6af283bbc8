"""Inspection figures of the ASR / VAE baselines (diagvib/inspect.py) and the command that writes
them into a run folder, linked from the report."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib.inspect import (
    INSPECT_DIR,
    WEIGHTS_FILE,
    figures_for,
    inspectable_jobs,
    inspection_section,
    latent_order,
)
from shortcutlab.errors import DiagvibError
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.config import TrainConfig
from shortcutlab.utils.html import HtmlReport

runner = CliRunner()
RUN = ["diagvib", "run", "--model", "vae", "--study", "ZSO", "--pairs", "texture-hue",
       "--scale", "0.002", "--epochs", "1", "--batch-size", "16", "--backend", "serial",
       "--device", "cpu"]


def _images(n: int = 3, size: int = 32) -> torch.Tensor:
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(0))


def _image_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.images]


def test_vae_figures_are_reconstructions_and_one_traversal_row_per_latent() -> None:
    config = TrainConfig(model="vae", algorithm="vae", model_kwargs={"image_size": 32})
    algo = create_algorithm("vae", 3, config).eval()
    x = _images()
    figs = figures_for(algo, x, traversals=2)
    assert sorted(figs) == ["reconstructions", "traversal-0", "traversal-1"]
    assert len(_image_axes(figs["reconstructions"])) == 2 * len(x)  # inputs + reconstructions
    assert len(_image_axes(figs["traversal-0"])) == 12 * 7  # latent size 12, 7 values
    order = latent_order(algo, x)
    assert sorted(order) == list(range(12))
    labels = [ax.get_ylabel() for ax in figs["traversal-0"].axes if ax.get_ylabel()]
    assert labels == [f"z{d}" for d in order]


def test_asr_figure_shows_input_lens_output_and_difference() -> None:
    config = TrainConfig(model="small_cnn", algorithm="asr", hparams={"lens_width": 4})
    algo = create_algorithm("asr", 3, config).eval()
    figs = figures_for(algo, _images(4))
    assert list(figs) == ["lens"] and len(_image_axes(figs["lens"])) == 3 * 4
    erm = create_algorithm("erm", 3, TrainConfig(model="small_cnn"))
    with pytest.raises(DiagvibError, match="valid choices: asr, vae, factor_vae"):
        figures_for(erm, _images())


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_inspect_command_writes_figures_caches_weights_and_the_report_links_them(
        tmp_path) -> None:
    out = tmp_path / "runs"
    ran = runner.invoke(app, [*RUN, "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    assert pd.read_parquet(out / "jobs.parquet")["algorithm"].tolist() == ["vae"]
    (job,) = inspectable_jobs(out)

    report_dir = tmp_path / "report"
    before = runner.invoke(app, ["diagvib", "report", str(out), "--out", str(report_dir)])
    assert before.exit_code == 0, before.output
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    assert "shortcutlab diagvib inspect RUN_DIR" in page  # not drawn yet: names the command

    first = runner.invoke(app, ["diagvib", "inspect", str(out), "--images", "3"])
    assert first.exit_code == 0, first.output
    folder = out / INSPECT_DIR / job.name
    assert sorted(p.name for p in folder.iterdir()) == [
        "reconstructions.png", "traversal-0.png", "traversal-1.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in folder.iterdir())
    assert (job / WEIGHTS_FILE).is_file()
    html = (out / INSPECT_DIR / "index.html").read_text(encoding="utf-8")
    assert "validation loss" in html and "= the job" in html  # the retrained checkpoint

    again = runner.invoke(app, ["diagvib", "inspect", str(out), "--images", "2",
                                "--traversals", "0", "--out", str(tmp_path / "fig")])
    assert again.exit_code == 0, again.output
    assert "weights from model.pt" in (tmp_path / "fig" / "index.html").read_text("utf-8")
    assert [p.name for p in (tmp_path / "fig" / job.name).iterdir()] == ["reconstructions.png"]

    runner.invoke(app, ["diagvib", "report", str(out), "--out", str(report_dir)])
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    assert 'href="../runs/inspect/index.html"' in page


def test_inspection_section_is_silent_without_such_runs(tmp_path) -> None:
    report = HtmlReport("t")
    inspection_section([tmp_path], tmp_path)(report, pd.DataFrame({"algorithm": ["erm"]}))
    assert "inspect" not in report.render()


def test_inspect_bad_input_is_named(tmp_path) -> None:
    empty = runner.invoke(app, ["diagvib", "inspect", str(tmp_path)])
    assert empty.exit_code == 2 and "holds no finished jobs of asr, vae, factor_vae" in (
        empty.output)
    missing = runner.invoke(app, ["diagvib", "inspect", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "run folder not found" in missing.output
