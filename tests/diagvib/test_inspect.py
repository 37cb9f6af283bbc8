"""Inspection figures of the ASR / VAE baselines (diagvib/inspect.py) and the command that writes
them into a run folder, linked from the report."""

from __future__ import annotations

import math

import numpy as np
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
    lens_figure,
    sample_images,
    traversal_figure,
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


class _Codes:
    """A stand-in VAE network with chosen latent means and log-variances (3 latents): image
    ``i`` of :func:`_numbered` encodes to ``mu[i]`` / ``logvar[i]``; a code decodes to a 2x2
    image whose channel c is code c (sigmoid(code) after the figure's sigmoid), so the drawn
    pixels show the code."""

    latent = 3

    def __init__(self, mu: torch.Tensor, logvar: torch.Tensor) -> None:
        self.mu, self.logvar = mu, logvar

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        i = x[:, 0, 0, 0].round().long()
        return self.mu[i], self.logvar[i]

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return z[:, :, None, None].expand(-1, -1, 2, 2)


def _numbered(n: int) -> torch.Tensor:
    """n images, image i filled with the value i."""
    return torch.arange(n, dtype=torch.float32)[:, None, None, None].expand(n, 3, 2, 2)


class _StubVae:
    name = "vae"

    def __init__(self, mu: torch.Tensor, logvar: torch.Tensor) -> None:
        self.network = _Codes(mu, logvar)

    def pixels(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        return x


# latent 0: mean 0, variance e^-4 (KL 1.51); latent 1: mean 1, variance 1 (KL 0.5);
# latent 2: mean 0, variance 1 (KL 0, the prior itself)
MU = torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
LOGVAR = torch.tensor([[-4.0, 0.0, 0.0], [-4.0, 0.0, 0.0]])


def test_latent_order_is_by_decreasing_kl_to_the_prior() -> None:
    """The order of the traversal rows: the mean KL(N(mu, sigma^2) || N(0, 1)) per latent, by
    torch.distributions, largest first (a small variance counts, through -log sigma^2)."""
    std = (0.5 * LOGVAR).exp()
    kl = torch.distributions.kl_divergence(
        torch.distributions.Normal(MU, std), torch.distributions.Normal(0.0, 1.0)).mean(0)
    assert kl.tolist() == pytest.approx([0.5 * (math.exp(-4) - 1 + 4), 0.5, 0.0])
    assert latent_order(_StubVae(MU, LOGVAR), _numbered(2)) == [0, 1, 2]


def test_traversal_sweeps_one_latent_of_the_images_mean_code() -> None:
    """Row of latent d, column j: image ``index``'s mean code with latent d set to values[j]
    (the decoder of the stand-in shows the code in its channels)."""
    mu = torch.tensor([[0.3, -0.2, 0.1], [0.5, 0.4, -0.6]])
    logvar = torch.tensor([[-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]])
    values = (-1.0, 0.0, 2.0)
    fig = traversal_figure(_StubVae(mu, logvar), _numbered(2), index=1, values=values,
                           dims=[2, 0])
    images = [ax.get_images()[0].get_array() for ax in _image_axes(fig)]
    assert len(images) == 2 * len(values)
    for r, d in enumerate([2, 0]):
        for j, v in enumerate(values):
            code = mu[1].clone()
            code[d] = v
            expected = torch.sigmoid(code).numpy()
            np.testing.assert_allclose(images[r * len(values) + j][0, 0], expected, rtol=1e-6)


def test_traversals_are_capped_at_the_number_of_images() -> None:
    figs = figures_for(_StubVae(MU, LOGVAR), _numbered(2), traversals=5)
    assert sorted(figs) == ["reconstructions", "traversal-0", "traversal-1"]


def test_lens_figure_shows_the_gain_times_the_absolute_difference() -> None:
    """Third row: clamp(gain x |lens output - input|, 0, 1), a darkening as bright as a
    brightening of the same size."""

    class Lens:
        def pixels(self, x: torch.Tensor) -> torch.Tensor:
            return x

        def lens_output(self, x: torch.Tensor) -> torch.Tensor:
            return x + shift

    x = torch.full((2, 3, 2, 2), 0.5)
    shift = torch.zeros_like(x)
    shift[0] = -0.1  # darker
    shift[1] = 0.05  # brighter
    fig = lens_figure(Lens(), x, gain=4.0)
    diff = [ax.get_images()[0].get_array() for ax in _image_axes(fig)][4:]
    np.testing.assert_allclose(diff[0], 0.4, rtol=1e-5)
    np.testing.assert_allclose(diff[1], 0.2, rtol=1e-5)


def test_sample_images_are_evenly_spaced_from_the_first_to_the_last() -> None:
    items = [{"x": torch.full((3, 2, 2), i, dtype=torch.uint8)} for i in range(10)]
    x = sample_images(items, 4)
    assert x[:, 0, 0, 0].mul(255).round().tolist() == [0, 3, 6, 9]
    assert sample_images(items, 1)[:, 0, 0, 0].tolist() == [0.0]


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
