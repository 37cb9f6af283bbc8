"""The paper's β-VAE experiment (appendix A.2, fig. A3): free versus fixed object position.

The authors report that β-VAEs reconstruct DiagViB-6 images poorly at higher β and blame the
position factor: nine discrete positions with large gaps between them violate the Gaussian
assumption of the KL term. To show it they trained β-VAEs with several β on (1) data whose
position is "freely assigned to three different values" and (2) data whose position is fixed at
the image centre, and found the reconstructions of (2) "significantly better" (fig. A3, pictures
only). :func:`run_beta_vae` repeats that and adds the numbers that make the claim checkable.

Data (:class:`SettingSplit`): the two settings are the same images but for the object's place.
``free`` is a ``custom`` experiment (:func:`free_spec`) on the classes of the authors' dataset
sample 0 (``selection="paper"``): three classes of every factor, uniform and balanced as in every
study's training data, position spread evenly over that sample's three positions. ``fixed``
renders the same class table with position set to ``center-center``, with the same seed and
indices, so image ``i`` keeps its digit instance, hue, lightness, scale and texture crop. Training
images come from the training digit pool, the measured ones from the test pool.

Model and loss: the ``vae`` algorithm and ``ConvVAE`` of :mod:`shortcutlab.diagvib.baselines`
(latent 12, Bernoulli pixels, negative ELBO = reconstruction + ``beta`` x KL), with the paper's
VAE recipe (batch 64, Adam 1e-4) unless overridden, inputs z-scored with the training split's
statistics, and ``classifier="probe"``: its head sees detached codes, so the encoder learns from
the ELBO alone (a pure β-VAE). Every (β, setting) run starts from the same weights (seeded from
``seed``) and sees its batches in the same order; the weights at the end of the last epoch are
measured.

Measured on the whole test split (:func:`reconstruction_metrics`), reconstructions from the
latent mean: ``mse`` (per pixel and channel, pixels in [0, 1], at the VAE's side),
``mse_object`` (the same over the object's pixels only: target pixels away from the background
grey; most of an image is background, which every VAE rebuilds), ``bce`` (the
loss's reconstruction term per image), ``kl`` (KL(q(z|x) || N(0, I)) per image, nats),
``active_dims`` (latent dimensions whose mean varies across images by more than 0.01, Burda et
al.'s active units), ``mse_mean_image`` (the MSE of answering every test image with the mean
training image: what a VAE that ignores its input would score) and ``mse_relative`` (``mse`` /
``mse_mean_image``: 1 for a VAE that learnt nothing but the mean, 0 for a perfect one).

The settings are not equally hard for a model that learns nothing: with every object at the
centre, the mean image absorbs more of the images' variance, so the ``fixed`` setting's
``mse_mean_image`` is lower. :func:`claim_check` therefore judges the paper's claim both on
``mse`` (what fig. A3 shows) and on ``mse_relative`` (beyond that head start).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from torch.utils.data import Dataset

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.spec import CUSTOM_STUDY, ExperimentSpec
from shortcutlab.diagvib.studies import scaled_sizes, select_classes
from shortcutlab.errors import DiagvibError, unknown_choice
from shortcutlab.utils.checks import range_problem
from shortcutlab.utils.io import check_output_folder, output_set

if TYPE_CHECKING:
    import torch
    from matplotlib.figure import Figure

    from shortcutlab.diagvib.baselines.vae import VAE
    from shortcutlab.train.config import TrainConfig

#: The two data settings of fig. A3: position over three classes, or at the image centre.
SETTINGS = ("free", "fixed")
CENTRE = "center-center"
#: The authors' dataset sample whose classes the data take (``selection="paper"``).
SAMPLE = 0
#: β = 1 is the paper's VAE baseline; 4 is Higgins et al.'s usual β-VAE value; 16 a strong one.
DEFAULT_BETAS = (1.0, 4.0, 16.0)
DEFAULT_SCALE = 0.1
DEFAULT_EPOCHS = 20
#: The paper's VAE recipe (appendix A.2): batch 64, Adam 1e-4 (latent 12 is ConvVAE's default).
DEFAULT_BATCH_SIZE = 64
DEFAULT_LR = 1e-4
#: Sides the VAE may model (inputs are rendered at 128 and resized inside the model).
IMAGE_SIZES = (16, 32, 64, 128)
DEFAULT_IMAGE_SIZE = 128
DEFAULT_IMAGES = 8
MAX_IMAGES = 16
MAX_BETA = 1000.0
#: The background grey (127 of 255) and how far from it a target pixel must be (in any channel,
#: in grey levels) to count as the object's for ``mse_object``.
BACKGROUND = 127 / 255
OBJECT_LEVELS = 4
#: Burda et al.'s threshold on the variance of a latent mean across images (active units).
ACTIVE_THRESHOLD = 0.01
TABLE_FILE, SUMMARY_FILE, FIGURE_FILE = "beta_vae.csv", "beta_vae.json", "reconstructions.png"
METRICS = ("mse", "mse_object", "bce", "kl", "active_dims", "mse_mean_image", "mse_relative")
COLUMNS = ("beta", "setting", "positions", *METRICS, "train_bce", "train_kl", "steps")


# --------------------------------------------------------------------------- data


def free_spec(*, scale: float = DEFAULT_SCALE, seed: int = 0) -> ExperimentSpec:
    """The experiment of the ``free`` setting: a ``custom`` spec predicting position over the
    authors' sample-0 classes (cell weights 1/3 each); split sizes ``scaled_sizes(scale)``,
    pixels seeded by ``seed``. The ``fixed`` setting draws the same images at the centre."""
    third = [1.0 / 3] * 3
    return ExperimentSpec(
        name=f"beta-vae/free/{SAMPLE}", study=CUSTOM_STUDY, predicted="position",
        sample=SAMPLE, seed=seed, selection="paper", selected=select_classes(0, SAMPLE, "paper"),
        sizes=scaled_sizes(scale), weights={"train": third, "test": third},
    )


class SettingSplit(Dataset):
    """One split of a setting, paired with the other setting's image by image.

    Wraps the split of :func:`free_spec` as a :class:`~shortcutlab.diagvib.dataset.DiagvibDataset`
    and renders its class table, with the position column set to ``center-center`` for the
    ``fixed`` setting, through the same generator with the same seed and indices: image ``i`` of
    both settings has the same digit instance, hue, lightness, scale and texture crop, and only
    the object's place differs. Items are dicts with ``x`` (uint8 (3, H, W)) and ``y`` (the
    position's label among the setting's positions: 0..2, or 0 when fixed).
    """

    num_classes = 3

    def __init__(self, setting: str, split: str, *, scale: float = DEFAULT_SCALE, seed: int = 0,
                 generator: Any = None) -> None:
        from shortcutlab.diagvib.dataset import DiagvibDataset

        if setting not in SETTINGS:
            raise DiagvibError(unknown_choice("β-VAE setting", setting, SETTINGS))
        self.setting, self.split = setting, split
        self.base = DiagvibDataset(free_spec(scale=scale, seed=seed), split, generator=generator,
                                   seed=seed, dtype="uint8")
        self.classes = self.base.classes.copy()
        self.labels = self.base.labels.copy()
        if setting == "fixed":
            self.classes[:, FACTORS.index("position")] = FACTOR_TABLE["position"].index(CENTRE)
            self.labels[:] = 0

    @property
    def positions(self) -> list[str]:
        """The position classes of this setting, in label order."""
        if self.setting == "fixed":
            return [CENTRE]
        return list(self.base.spec.selected["position"])

    def __len__(self) -> int:
        return len(self.base)

    def render(self, indices: Any) -> torch.Tensor:
        """uint8 images (B, 3, 128, 128) of ``indices``."""
        import torch

        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        return torch.as_tensor(self.base.generator.render(
            self.classes[idx], seed=self.base.render_seed, split=self.split, indices=idx))

    def __getitems__(self, indices: list[int]) -> list[dict[str, Any]]:
        import torch

        images = self.render(indices)
        return [{"x": x, "y": torch.tensor(int(self.labels[i]))}
                for x, i in zip(images, indices, strict=True)]

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.__getitems__([int(i)])[0]


# --------------------------------------------------------------------------- the plan


def _check_number(name: str, value: Any, low: float, high: float, **kind: bool) -> None:
    problem = range_problem(name, value, low, high, **kind)
    if problem is not None:
        raise DiagvibError(problem)


@dataclass(frozen=True)
class BetaVaePlan:
    """A validated β-VAE experiment: every (β, setting) run it will train. Build it with
    :meth:`make` (all checks, nothing written), then :func:`run_beta_vae`."""

    betas: tuple[float, ...]
    scale: float
    epochs: int
    lr: float
    batch_size: int
    image_size: int
    seed: int
    images: int
    device: str

    @classmethod
    def make(cls, betas: Sequence[float] = DEFAULT_BETAS, *, scale: float = DEFAULT_SCALE,
             epochs: int = DEFAULT_EPOCHS, lr: float = DEFAULT_LR,
             batch_size: int = DEFAULT_BATCH_SIZE, image_size: int = DEFAULT_IMAGE_SIZE,
             seed: int = 0, images: int = DEFAULT_IMAGES, device: str = "cpu") -> BetaVaePlan:
        """Check every value (a DiagvibError naming the valid range otherwise)."""
        from shortcutlab.utils.device import resolve_device

        betas = tuple(betas)
        if not betas:
            raise DiagvibError("give at least one β (e.g. --betas 1,4,16)")
        for beta in betas:
            _check_number("each β", beta, 0.0, MAX_BETA)
        if len(set(betas)) != len(betas):
            raise DiagvibError(f"each β must be given once (got {', '.join(map(_fmt, betas))})")
        scaled_sizes(scale)  # names the valid range of scale
        _check_number("epochs", epochs, 1, math.inf, integer=True)
        _check_number("the learning rate", lr, 0.0, 1.0, low_open=True)
        _check_number("the batch size", batch_size, 1, 4096, integer=True)
        if image_size not in IMAGE_SIZES:
            raise DiagvibError(unknown_choice("VAE image size", image_size, IMAGE_SIZES))
        _check_number("the seed", seed, 0, 2**31 - 1, integer=True)
        _check_number("images", images, 1, MAX_IMAGES, integer=True)
        resolve_device(device)  # an unknown device, or cuda without a GPU
        return cls(tuple(float(b) for b in sorted(betas)), float(scale), int(epochs),
                   float(lr), int(batch_size), int(image_size), int(seed), int(images), device)

    def split(self, setting: str, split: str, generator: Any = None) -> SettingSplit:
        """Split ``split`` (train or test) of ``setting``."""
        return SettingSplit(setting, split, scale=self.scale, seed=self.seed,
                            generator=generator)

    def config(self, beta: float) -> TrainConfig:
        """The training config of the run with ``beta``: the ``paper`` preset, model and
        algorithm ``vae``, a probe head (the ELBO alone trains the encoder)."""
        from shortcutlab.train.config import TrainConfig

        return TrainConfig(
            preset="paper", model="vae", algorithm="vae", batch_size=self.batch_size,
            epochs=self.epochs, seed=self.seed, model_kwargs={"image_size": self.image_size},
            hparams={"beta": float(beta), "lr": self.lr, "classifier": "probe"},
        )

    @property
    def steps_per_epoch(self) -> int:
        from shortcutlab.train.batches import EpochBatches

        n = scaled_sizes(self.scale)["train"]
        return len(EpochBatches(n, self.batch_size, self.seed, drop_last=True))

    @property
    def total_steps(self) -> int:
        """Training steps of the whole experiment (for a progress bar)."""
        return len(self.betas) * len(SETTINGS) * self.epochs * self.steps_per_epoch

    def describe(self) -> dict[str, Any]:
        sizes = scaled_sizes(self.scale)
        return {"betas": list(self.betas), "scale": self.scale, "epochs": self.epochs,
                "lr": self.lr, "batch_size": self.batch_size, "image_size": self.image_size,
                "seed": self.seed, "latent": _latent(), "sample": SAMPLE,
                "train_images": sizes["train"], "test_images": sizes["test"],
                "positions": {"free": list(free_spec().selected["position"]),
                              "fixed": [CENTRE]}}


def _fmt(beta: float) -> str:
    return f"{beta:g}"


def _latent() -> int:
    from shortcutlab.diagvib.baselines.networks import LATENT_SIZE

    return LATENT_SIZE


# --------------------------------------------------------------------------- training


def _images(ds: SettingSplit, idx: np.ndarray, device: torch.device) -> torch.Tensor:
    """Images ``idx`` of ``ds`` (uint8 -> [0, 1]), rendered on the host, on ``device``."""
    from shortcutlab.train.normalization import to_unit_float

    return to_unit_float(ds.render(idx).to(device))


def train_beta_vae(config: TrainConfig, train_ds: SettingSplit, stats: Any,
                   device: torch.device,
                   on_step: Callable[[], None] | None = None) -> tuple[VAE, dict[str, float]]:
    """Train ``config`` (a ``vae`` config) on ``train_ds`` for ``config.epochs`` epochs, inputs
    normalised with ``stats``; the algorithm at the end and the last epoch's mean ``bce`` and
    ``kl`` (the training loss's terms). The trainer's own step and epoch
    (:func:`~shortcutlab.train.trainer.training_step`, eager;
    :func:`~shortcutlab.train.trainer.train_epoch`) without its per-epoch evaluation: the
    weights of the last epoch are the ones measured. Batches are rendered here, without a
    DataLoader (whose iterator draws from torch's RNG, the VAE's noise). Deterministic for the
    config on a given device: weights and sampling noise are seeded from ``config.seed`` as the
    trainer seeds them, batches come from :class:`~shortcutlab.train.batches.EpochBatches`."""
    import torch

    import shortcutlab.diagvib.baselines  # noqa: F401  (registers the vae model and algorithm)
    from shortcutlab.train.algorithms import create_algorithm
    from shortcutlab.train.batches import EpochBatches
    from shortcutlab.train.trainer import train_epoch, training_step
    from shortcutlab.utils.rng import torch_seed

    sampler = EpochBatches(len(train_ds), config.batch_size, config.seed, config.drop_last)
    means: dict[str, float] = {}
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(torch_seed(config.seed, "torch"))
        algo = create_algorithm(config.algorithm, int(train_ds.num_classes), config)
        algo.input_norm.set_stats(stats)
        algo.to(device)
        run_step = training_step(algo, config, device, why_eager="a β-VAE run steps eagerly")
        step = 0
        for epoch in range(config.epochs):
            sampler.set_epoch(epoch)
            batches = ({"x": train_ds.render(idx), "y": torch.from_numpy(train_ds.labels[idx])}
                       for idx in map(np.asarray, sampler))
            means, step = train_epoch(algo, batches, run_step, device, epoch=epoch, step=step,
                                      keys=("loss", "recon", "kl"), on_step=on_step)
    algo.eval()
    return cast("VAE", algo), {"train_bce": means["recon"], "train_kl": means["kl"]}


def mean_image(ds: SettingSplit, batch: int = 256) -> np.ndarray:
    """The mean image of ``ds``, pixels in [0, 1], float64 (3, H, W)."""
    total: np.ndarray | None = None
    for a in range(0, len(ds), batch):
        part = ds.render(np.arange(a, min(len(ds), a + batch))).numpy().sum(0, dtype=np.float64)
        total = part if total is None else total + part
    assert total is not None  # a split holds at least MIN_SPLIT_SIZE images
    return total / (255.0 * len(ds))


def reconstruction_metrics(algo: VAE, test_ds: SettingSplit, device: torch.device,
                           train_mean: np.ndarray | None = None,
                           batch: int = 256) -> dict[str, float]:
    """``mse``, ``bce``, ``kl``, ``active_dims`` (and ``mse_mean_image`` given the training
    split's :func:`mean_image`) of the trained ``algo`` on every image of ``test_ds``, decoded
    from the latent means (see the module docstring)."""
    import torch
    import torch.nn.functional as F

    net = algo.network
    sq = bce = kl = base = obj_sq = 0.0
    pixels = obj_pixels = 0
    mus = []
    mean_t = None
    if train_mean is not None:
        mean_t = net.fit(torch.as_tensor(train_mean, dtype=torch.float32)[None]).to(device)
    with torch.no_grad():
        for a in range(0, len(test_ds), batch):
            idx = np.arange(a, min(len(test_ds), a + batch))
            x = algo.input_norm(_images(test_ds, idx, device))
            mu, logvar = net.encode(x)
            logits = net.decode(mu)
            target = net.fit(algo.pixels(x))
            err = (torch.sigmoid(logits) - target).pow(2)
            sq += float(err.sum())
            obj = ((target - BACKGROUND).abs() > OBJECT_LEVELS / 255.0).any(1, keepdim=True)
            obj_sq += float((err * obj).sum())
            obj_pixels += int(obj.sum()) * target.shape[1]
            bce += float(F.binary_cross_entropy_with_logits(logits, target, reduction="sum"))
            kl += float(0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).sum())
            if mean_t is not None:
                base += float((target - mean_t).pow(2).sum())
            pixels += target.numel()
            mus.append(mu.double().cpu())
    n = len(test_ds)
    codes = torch.cat(mus)
    variance = codes.var(0, unbiased=False) if n > 1 else torch.zeros(codes.shape[1])
    out: dict[str, float] = {
        "mse": sq / pixels, "mse_object": obj_sq / max(obj_pixels, 1), "bce": bce / n,
        "kl": kl / n, "active_dims": int((variance > ACTIVE_THRESHOLD).sum())}
    if mean_t is not None:
        out["mse_mean_image"] = base / pixels
        out["mse_relative"] = out["mse"] / out["mse_mean_image"]
    return out


# --------------------------------------------------------------------------- the figure


def reconstruction_grid(inputs: dict[str, torch.Tensor],
                        reconstructions: dict[str, dict[float, torch.Tensor]],
                        mse: dict[tuple[float, str], float]) -> Figure:
    """Fig. A3 as one grid: per setting a row of test inputs, then one row of their
    reconstructions per β (labelled with the run's test MSE). ``inputs[setting]``: pixels in
    [0, 1]; ``reconstructions[setting][beta]``: the same images decoded."""
    from shortcutlab.diagvib.inspect import figure_grid, to_image

    rows, labels = [], []
    for setting in inputs:
        rows.append([to_image(im) for im in inputs[setting]])
        labels.append(f"{setting}: input")
        for beta, recon in reconstructions[setting].items():
            rows.append([to_image(im) for im in recon])
            labels.append(f"β={_fmt(beta)}\nMSE {mse[(beta, setting)]:.3g}")
    return figure_grid(rows, labels, title="β-VAE reconstructions: position free over three "
                       "classes vs fixed at the centre (cf. paper fig. A3)", size=1.1)


# --------------------------------------------------------------------------- the experiment


@dataclass
class BetaVaeResult:
    """What :func:`run_beta_vae` wrote: the table (one row per (β, setting)), the claim check,
    and the paths of the CSV, the JSON and the figure."""

    table: pd.DataFrame
    claim: dict[str, Any]
    table_path: Path
    summary_path: Path
    figure_path: Path
    seconds: float


def claim_check(table: pd.DataFrame) -> dict[str, Any]:
    """The paper's claim on ``table``, per β: is the fixed setting's test MSE lower
    (``fixed_better``), and is it lower relative to each setting's mean-image MSE
    (``fixed_better_relative``)? Over β: does the free/fixed MSE ratio grow with β?"""
    per_beta: dict[str, dict[str, Any]] = {}
    ratios = []
    for beta, rows in table.groupby("beta", sort=True):
        by = rows.set_index("setting")
        free, fixed = by.loc["free"], by.loc["fixed"]
        ratio = float(free["mse"] / fixed["mse"])
        ratios.append(ratio)
        per_beta[_fmt(float(beta))] = {
            "mse_free": float(free["mse"]), "mse_fixed": float(fixed["mse"]),
            "ratio_free_to_fixed": ratio,
            "relative_free": float(free["mse_relative"]),
            "relative_fixed": float(fixed["mse_relative"]),
            "fixed_better": bool(fixed["mse"] < free["mse"]),
            "fixed_better_relative": bool(fixed["mse_relative"] < free["mse_relative"])}
    return {"per_beta": per_beta,
            "fixed_better_at_every_beta": all(v["fixed_better"] for v in per_beta.values()),
            "fixed_better_relative_at_every_beta": all(
                v["fixed_better_relative"] for v in per_beta.values()),
            "ratio_grows_with_beta": (bool(np.all(np.diff(ratios) > 0)) if len(ratios) > 1
                                      else None)}


def describe_claim(claim: dict[str, Any]) -> str:
    """Two lines for the terminal."""
    per = claim["per_beta"]
    ratios = ", ".join(f"β={b}: {v['ratio_free_to_fixed']:.3f}" for b, v in per.items())
    better = [b for b, v in per.items() if v["fixed_better"]]
    relative = [b for b, v in per.items() if v["fixed_better_relative"]]
    text = (f"fixed position reconstructs better (test MSE) at β = {', '.join(better) or 'none'}"
            f" of {', '.join(per)}; MSE free/fixed {ratios}")
    grows = claim["ratio_grows_with_beta"]
    if grows is not None:
        text += f" ({'grows' if grows else 'does not grow'} with β)"
    return text + (f"\nrelative to each setting's mean-image MSE, fixed is better at β = "
                   f"{', '.join(relative) or 'none'}")


def _reporter(on_step: Callable[[str], None] | None, label: str) -> Callable[[], None] | None:
    if on_step is None:
        return None
    return lambda: on_step(label)


def run_beta_vae(plan: BetaVaePlan, out: str | os.PathLike[str], *,
                 on_step: Callable[[str], None] | None = None) -> BetaVaeResult:
    """Train one β-VAE per (β, setting) of ``plan`` and write ``<out>/beta_vae.csv`` (one row
    per run: :data:`COLUMNS`), ``<out>/beta_vae.json`` (the plan, the rows, the claim check,
    seconds per run) and ``<out>/reconstructions.png`` (fig. A3). ``on_step(description)`` is
    called after every training step. A folder that cannot be written is refused before any
    training; the three files are written at the end, all or none."""
    import torch

    from shortcutlab.diagvib.inspect import sample_images
    from shortcutlab.diagvib.render import ImageGenerator
    from shortcutlab.train.trainer import input_stats
    from shortcutlab.utils.device import resolve_device
    from shortcutlab.utils.html import figure_to_png

    folder = Path(out)
    check_output_folder(folder)  # before the training, not after it
    device = resolve_device(plan.device)
    start = time.perf_counter()
    generator = ImageGenerator()
    rows: dict[tuple[float, str], dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    inputs: dict[str, torch.Tensor] = {}
    recons: dict[str, dict[float, torch.Tensor]] = {}
    mse: dict[tuple[float, str], float] = {}
    for setting in SETTINGS:
        train_ds = plan.split(setting, "train", generator)
        test_ds = plan.split(setting, "test", generator)
        stats = input_stats(plan.config(plan.betas[0]), train_ds)
        train_mean = mean_image(train_ds)
        shown = sample_images(test_ds, plan.images)
        inputs[setting], recons[setting] = shown, {}
        for beta in plan.betas:
            began = time.perf_counter()
            algo, train_terms = train_beta_vae(
                plan.config(beta), train_ds, stats, device,
                _reporter(on_step, f"β={_fmt(beta)} {setting}"))
            metrics = reconstruction_metrics(algo, test_ds, device, train_mean)
            with torch.no_grad():
                recons[setting][beta] = algo.reconstruct(
                    algo.input_norm(shown.to(device))).cpu()
            mse[(beta, setting)] = metrics["mse"]
            rows[(beta, setting)] = {
                "beta": beta, "setting": setting, "positions": "+".join(train_ds.positions),
                **metrics, **train_terms, "steps": plan.epochs * plan.steps_per_epoch}
            seconds[f"{_fmt(beta)}/{setting}"] = round(time.perf_counter() - began, 2)
    table = pd.DataFrame([rows[(b, s)] for b in plan.betas for s in SETTINGS],
                         columns=list(COLUMNS))
    claim = claim_check(table)
    figure = reconstruction_grid(inputs, recons, mse)
    png = figure_to_png(figure)
    total = time.perf_counter() - start
    with output_set() as outputs:  # the three files, or none
        table_path = outputs.write_text(folder / TABLE_FILE,
                                        table.to_csv(index=False, float_format="%.6g"))
        summary_path = outputs.write_json(folder / SUMMARY_FILE, {
            "plan": plan.describe(), "device": str(device), "rows": table.to_dict("records"),
            "claim": claim, "seconds": {"runs": seconds, "total": round(total, 2)}})
        figure_path = outputs.write_bytes(folder / FIGURE_FILE, png)
    return BetaVaeResult(table, claim, table_path, summary_path, figure_path, total)


__all__ = [
    "DEFAULT_BETAS", "SETTINGS", "BetaVaePlan", "BetaVaeResult", "claim_check",
    "describe_claim", "mean_image", "reconstruction_grid", "reconstruction_metrics",
    "SettingSplit", "free_spec", "run_beta_vae", "train_beta_vae",
]
