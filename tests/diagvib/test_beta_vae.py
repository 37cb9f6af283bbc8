"""The paper's β-VAE experiment (diagvib/beta_vae.py, ``shortcutlab diagvib beta-vae``; fig. A3):
two data settings that differ only in position, one β-VAE per (β, setting), a table of test
reconstruction error and KL, determinism, and refused bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib.beta_vae import (
    CENTRE,
    COLUMNS,
    FIGURE_FILE,
    SETTINGS,
    SUMMARY_FILE,
    TABLE_FILE,
    BetaVaePlan,
    SettingSplit,
    claim_check,
    reconstruction_grid,
    reconstruction_metrics,
    train_beta_vae,
)
from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.studies import select_classes
from shortcutlab.train.algorithms import create_algorithm
from shortcutlab.train.normalization import ChannelStats

runner = CliRunner()
TINY = ["--betas", "0.5,16", "--scale", "0.001", "--epochs", "1", "--image-size", "16",
        "--images", "2", "--device", "cpu"]  # 44 training, 10 test images per setting


def _positions(ds: SettingSplit) -> set[str]:
    column = ds.classes[:, FACTORS.index("position")]
    return {FACTOR_TABLE["position"].classes[int(i)] for i in np.unique(column)}


def _class_centre(name: str) -> tuple[float, float]:
    """Pixel (row, column) of the middle of a position class's region (sevenths of the side)."""
    band = {"top": 1.5, "center": 3.5, "bottom": 5.5, "left": 1.5, "right": 5.5}
    row, col = name.split("-")
    return band[row] / 7 * 127, band[col] / 7 * 127


def _object_centres(images: torch.Tensor) -> np.ndarray:
    """(row, column) of the centroid of each image's non-background pixels."""
    mask = (images.int() - 127).abs().amax(1) > 4  # (B, H, W)
    rows, cols = torch.meshgrid(torch.arange(mask.shape[1]), torch.arange(mask.shape[2]),
                                indexing="ij")
    area = mask.sum((1, 2)).clamp(min=1)
    return torch.stack([(mask * rows).sum((1, 2)) / area,
                        (mask * cols).sum((1, 2)) / area], 1).numpy()


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_two_settings_differ_only_in_position(split: str) -> None:
    free = SettingSplit("free", split, scale=0.001, seed=3)
    fixed = SettingSplit("fixed", split, scale=0.001, seed=3)
    assert len(free) == len(fixed) >= 10
    position = FACTORS.index("position")
    # class tables: the same five other factors image by image; position three classes vs centre
    others = [i for i in range(len(FACTORS)) if i != position]
    assert np.array_equal(free.classes[:, others], fixed.classes[:, others])
    assert _positions(free) == set(select_classes(0, 0, "paper")["position"])
    assert len(_positions(free)) == 3 and CENTRE not in _positions(free)
    assert _positions(fixed) == {CENTRE}
    assert free.positions == select_classes(0, 0, "paper")["position"]
    assert fixed.positions == [CENTRE]
    # the rendered pixels: every object sits where its position class says (fixed: the centre;
    # free: three places), and each pair shows the same object (same colours and size), moved
    idx = np.arange(len(free))
    a, b = free.render(idx), fixed.render(idx)
    for ds, images in ((free, a), (fixed, b)):
        names = [FACTOR_TABLE["position"].classes[int(i)] for i in ds.classes[:, position]]
        expected = np.array([_class_centre(name) for name in names])
        assert np.abs(_object_centres(images) - expected).max() < 16
    assert np.abs(_object_centres(a) - 63.5).max(1).min() > 25  # no free object at the centre
    area_a = ((a.int() - 127).abs().amax(1) > 4).sum((1, 2)).float()
    area_b = ((b.int() - 127).abs().amax(1) > 4).sum((1, 2)).float()
    ratio = (area_a / area_b).numpy()  # sub-pixel placement moves a few edge pixels
    assert np.abs(ratio - 1).max() < 0.3 and abs(np.median(ratio) - 1) < 0.05


def test_the_kl_term_is_weighted_by_beta() -> None:
    """The loss the runs train is recon + β·KL (the head is a probe: its cross entropy stays
    out), and with the same start and batches a larger β ends with less KL."""
    plan = BetaVaePlan.make([1.0], scale=0.001, epochs=3, image_size=16, lr=1e-2, device="cpu")
    x = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    batch = {"x": x, "y": torch.zeros(4, dtype=torch.long)}
    for beta in (0.5, 16.0):
        config = plan.config(beta)
        assert config.hparams == {"beta": beta, "lr": 1e-2, "classifier": "probe"}
        assert (config.batch_size, config.model_kwargs) == (64, {"image_size": 16})
        torch.manual_seed(0)
        terms = create_algorithm("vae", 3, config).losses(batch)
        assert torch.allclose(terms["vae"], terms["recon"] + beta * terms["kl"])
    train = plan.split("free", "train")
    test = plan.split("free", "test")
    stats = ChannelStats.identity()
    kl = {}
    for beta in (0.01, 100.0):
        algo, terms = train_beta_vae(plan.config(beta), train, stats, torch.device("cpu"))
        kl[beta] = reconstruction_metrics(algo, test, torch.device("cpu"))["kl"]
        assert math.isfinite(terms["train_kl"]) and math.isfinite(terms["train_bce"])
    assert kl[100.0] < 0.5 * kl[0.01], kl


def test_active_units_and_kl_from_latent_means_by_hand() -> None:
    """Burda et al.'s active units: latent dimensions whose mean varies across the test images
    by more than 0.01 (variance over images, per dimension). With codes made by hand (dimension
    0 counts the images, dimension 1 alternates +-0.5: variance 0.25; dimension 2 alternates
    +-0.05: variance 0.0025, inactive; the others constant over images but different from each
    other) exactly two are active, and the KL per image is 0.5 * sum(mu^2) at log sigma^2 = 0."""
    plan = BetaVaePlan.make([1.0], scale=0.001, epochs=1, image_size=16, device="cpu")
    test = plan.split("free", "test")
    algo = create_algorithm("vae", 3, plan.config(1.0))
    n, latent = len(test), algo.network.latent
    sign = torch.tensor([(-1.0) ** i for i in range(n)])
    mu = torch.arange(latent, dtype=torch.float32).repeat(n, 1)  # constant over images
    mu[:, 0] = torch.arange(n, dtype=torch.float32)
    mu[:, 1], mu[:, 2] = 0.5 * sign, 0.05 * sign
    assert n % 2 == 0 and n <= 256  # one batch, alternating signs balanced

    def encode(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        assert len(x) == n
        return mu, torch.zeros_like(mu)

    algo.network.encode = encode  # type: ignore[method-assign]
    metrics = reconstruction_metrics(algo, test, torch.device("cpu"))
    assert metrics["active_dims"] == 2
    assert metrics["kl"] == pytest.approx(0.5 * float(mu.double().pow(2).sum()) / n, rel=1e-6)


def test_claim_check_reads_the_table() -> None:
    table = pd.DataFrame({"beta": [1.0, 1.0, 4.0, 4.0], "setting": ["free", "fixed"] * 2,
                          "mse": [0.012, 0.010, 0.020, 0.010],
                          "mse_relative": [0.8, 0.7, 0.9, 0.95]})
    claim = claim_check(table)
    assert claim["per_beta"]["1"]["ratio_free_to_fixed"] == pytest.approx(1.2)
    assert claim["per_beta"]["4"]["ratio_free_to_fixed"] == pytest.approx(2.0)
    assert claim["fixed_better_at_every_beta"] and claim["ratio_grows_with_beta"]
    assert claim["per_beta"]["1"]["fixed_better_relative"]
    assert not claim["per_beta"]["4"]["fixed_better_relative"]
    assert not claim["fixed_better_relative_at_every_beta"]
    flipped = table.assign(mse=[0.010, 0.012, 0.010, 0.020])
    assert not claim_check(flipped)["fixed_better_at_every_beta"]
    assert not claim_check(flipped)["ratio_grows_with_beta"]


def test_the_figure_has_an_input_row_and_a_row_per_beta_for_each_setting() -> None:
    images = torch.rand(3, 3, 16, 16)
    fig = reconstruction_grid({s: images for s in SETTINGS},
                              {s: {1.0: images, 4.0: images} for s in SETTINGS},
                              {(b, s): 0.01 for b in (1.0, 4.0) for s in SETTINGS})
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 2 * 3 * 3  # 2 settings x (input + 2 β) x 3 images
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels[0] == "free: input" and labels[3] == "fixed: input"
    assert labels[1].startswith("β=1\n") and labels[2].startswith("β=4\n")


def _run(out: Path, *extra: str) -> pd.DataFrame:
    res = runner.invoke(app, ["diagvib", "beta-vae", *TINY, *extra, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return pd.read_csv(out / TABLE_FILE)


def test_the_command_writes_one_row_per_beta_and_setting_deterministically(
        tmp_path: Path) -> None:
    table = _run(tmp_path / "a")
    assert list(table.columns) == list(COLUMNS)
    assert list(zip(table["beta"], table["setting"], strict=True)) == [
        (0.5, "free"), (0.5, "fixed"), (16.0, "free"), (16.0, "fixed")]
    numbers = table.drop(columns=["setting", "positions"]).to_numpy(dtype=float)
    assert np.isfinite(numbers).all()
    assert ((table["mse"] > 0) & (table["mse"] < 1) & (table["kl"] >= 0)).all()
    assert set(table.loc[table["setting"] == "fixed", "positions"]) == {CENTRE}
    assert (table["steps"] == 1).all()
    summary = json.loads((tmp_path / "a" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["plan"]["betas"] == [0.5, 16.0] and summary["plan"]["latent"] == 12
    assert set(summary["claim"]["per_beta"]) == {"0.5", "16"}
    assert (tmp_path / "a" / FIGURE_FILE).read_bytes()[:4] == b"\x89PNG"
    # the same seed: the same bytes; another seed: other numbers
    _run(tmp_path / "b")
    assert (tmp_path / "a" / TABLE_FILE).read_bytes() == (tmp_path / "b" / TABLE_FILE).read_bytes()
    other = _run(tmp_path / "c", "--seed", "1")
    assert not np.allclose(other["mse"], table["mse"])
    res = runner.invoke(app, ["diagvib", "beta-vae", *TINY, "--out", str(tmp_path / "d"),
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [row["mse"] for row in data["table"]] == pytest.approx(list(table["mse"]), rel=1e-5)


@pytest.mark.parametrize(("args", "message"), [
    (["--betas", "1,x"], "numbers separated by commas"),
    (["--betas", "-1,4"], "each β must be a number >= 0 and <= 1000"),
    (["--betas", "4,4"], "each β must be given once"),
    (["--betas", "nan"], "each β must be a number >= 0"),
    (["--scale", "0"], "scale must be a positive number"),
    (["--scale", "500"], "use a scale from"),
    (["--epochs", "0"], "epochs must be an integer >= 1"),
    (["--lr", "0"], "learning rate must be a number > 0"),
    (["--batch-size", "0"], "batch size must be an integer >= 1"),
    (["--image-size", "48"], "valid choices: 16, 32, 64, 128"),
    (["--images", "17"], "images must be an integer >= 1 and <= 16"),
    (["--seed", "-1"], "seed must be an integer >= 0"),
    (["--device", "tpu"], "valid choices: auto, cpu, cuda"),
    (["--epochs", "two"], "Input should be a valid integer"),
])
def test_bad_input_is_one_error_line_and_writes_nothing(tmp_path: Path, args: list[str],
                                                        message: str) -> None:
    out = tmp_path / "out"
    res = runner.invoke(app, ["diagvib", "beta-vae", *TINY, *args, "--out", str(out)])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0], res.output
    assert "Traceback" not in res.output and not out.exists()


def test_an_out_that_is_a_file_is_refused_before_training(tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.write_text("x")
    res = runner.invoke(app, ["diagvib", "beta-vae", *TINY, "--out", str(out)])
    assert res.exit_code == 2 and res.output.count("Error:") == 1, res.output
    assert str(out) in res.output and out.read_text() == "x"


def test_the_command_defaults_are_the_paper_recipe_of_the_library() -> None:
    import typer

    from shortcutlab.cli.diagvib_beta_vae import parse_betas
    from shortcutlab.diagvib import beta_vae as bv

    group: Any = typer.main.get_command(app)
    command = group.commands["diagvib"].commands["beta-vae"]
    defaults = {p.name: p.default for p in command.params}
    assert parse_betas(defaults["betas"]) == list(bv.DEFAULT_BETAS)
    assert (defaults["scale"], defaults["epochs"], defaults["lr"], defaults["batch_size"],
            defaults["image_size"], defaults["images"]) == (
        bv.DEFAULT_SCALE, bv.DEFAULT_EPOCHS, 1e-4, 64, 128, bv.DEFAULT_IMAGES)
    assert (bv.DEFAULT_LR, bv.DEFAULT_BATCH_SIZE, bv.DEFAULT_IMAGE_SIZE) == (1e-4, 64, 128)


class _Pictures:
    """A stand-in test split: ``render(idx)`` gives hand-made uint8 images (as SettingSplit)."""

    def __init__(self, images: np.ndarray) -> None:
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def render(self, indices: Any) -> torch.Tensor:
        return torch.as_tensor(self.images[np.asarray(indices, dtype=np.int64).reshape(-1)])


def _hand_pictures() -> np.ndarray:
    """Two 16x16 images on the background grey 127: image 0 has a 4x4 patch that leaves the
    grey in the red channel only (255, 127, 127), image 1 a 2x2 black patch (all channels)."""
    images = np.full((2, 3, 16, 16), 127, dtype=np.uint8)
    images[0, 0, 2:6, 3:7] = 255
    images[1, :, 9:11, 9:11] = 0
    return images


def test_reconstruction_numbers_of_a_decoder_that_answers_grey_by_hand() -> None:
    """``mse`` per pixel and channel of the decoded pixel means (sigmoid of the logits),
    ``mse_object`` the same over the object's pixels (a pixel is the object's when any channel
    is more than 4 grey levels from 127), ``mse_mean_image`` the MSE of answering the given
    mean image and ``mse_relative`` = mse / mse_mean_image. A decoder whose logits are all 0
    answers 0.5 everywhere, so every number follows from the pixels by hand (numpy, float64)."""
    plan = BetaVaePlan.make([1.0], scale=0.001, epochs=1, image_size=16, device="cpu")
    algo = create_algorithm("vae", 3, plan.config(1.0))
    algo.input_norm.set_stats(ChannelStats.identity())
    latent = algo.network.latent

    def encode(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros(len(x), latent), torch.zeros(len(x), latent)

    def decode(z: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(z), 3, 16, 16)

    algo.network.encode = encode  # type: ignore[method-assign]
    algo.network.decode = decode  # type: ignore[method-assign]
    images = _hand_pictures()
    target = images.astype(np.float64) / 255
    mean = np.full((3, 16, 16), 0.25)  # a mean image far from both
    metrics = reconstruction_metrics(algo, _Pictures(images), torch.device("cpu"),  # type: ignore[arg-type]
                                     train_mean=mean)
    err = (0.5 - target) ** 2
    obj = np.zeros((2, 16, 16), dtype=bool)
    obj[0, 2:6, 3:7] = True  # 16 pixels, red only off the grey
    obj[1, 9:11, 9:11] = True  # 4 pixels
    mse_mean_image = float(((target - mean) ** 2).mean())
    assert metrics["mse"] == pytest.approx(float(err.mean()), rel=1e-5)
    assert metrics["mse_object"] == pytest.approx(
        float(err.transpose(1, 0, 2, 3)[:, obj].sum()) / (20 * 3), rel=1e-5)
    assert metrics["bce"] == pytest.approx(3 * 16 * 16 * math.log(2), rel=1e-5)
    assert metrics["mse_mean_image"] == pytest.approx(mse_mean_image, rel=1e-5)
    assert metrics["mse_relative"] == pytest.approx(float(err.mean()) / mse_mean_image,
                                                    rel=1e-5)
    assert 0 < metrics["mse_relative"] < 1  # the grey answer beats the far-off mean image


def test_mean_image_is_the_pixel_mean_in_unit_range() -> None:
    """The mean training image, pixels in [0, 1], the same over batches of any size."""
    from shortcutlab.diagvib.beta_vae import mean_image

    images = _hand_pictures()
    want = images.astype(np.float64).mean(0) / 255
    for batch in (1, 256):
        got = mean_image(_Pictures(images), batch=batch)  # type: ignore[arg-type]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.max() == pytest.approx((255 + 127) / 2 / 255)


def test_claim_check_counts_ties_as_neither_better_nor_growing() -> None:
    """Fixed reconstructs better only when its MSE is strictly lower; a free/fixed ratio that
    stays flat over β does not grow; each setting's relative MSE comes from its own row."""
    table = pd.DataFrame({"beta": [1.0, 1.0, 4.0, 4.0], "setting": ["free", "fixed"] * 2,
                          "mse": [0.010, 0.010, 0.020, 0.020],
                          "mse_relative": [0.6, 0.3, 0.7, 0.4]})
    claim = claim_check(table)
    for beta in ("1", "4"):
        per = claim["per_beta"][beta]
        assert per["ratio_free_to_fixed"] == pytest.approx(1.0)
        assert per["fixed_better"] is False and per["fixed_better_relative"] is True
    assert claim["per_beta"]["1"]["relative_free"] == pytest.approx(0.6)
    assert claim["per_beta"]["1"]["relative_fixed"] == pytest.approx(0.3)
    assert claim["per_beta"]["4"]["relative_free"] == pytest.approx(0.7)
    assert claim["fixed_better_at_every_beta"] is False
    assert claim["ratio_grows_with_beta"] is False
