"""Inspection figures of the ASR, VAE and Factor-VAE baselines (paper appendix figs. A2-A4, A9).

For every finished job of a run folder trained by ``asr``, ``vae`` or ``factor_vae``,
:func:`write_inspection` draws on a few test images of its experiment:

- VAEs: reconstructions (input above, decoder output of the latent mean below; fig. A3) and
  latent traversals (one row per latent dimension, most informative first by its mean KL on
  those images, the mean code of one image with that dimension swept over -2.5..2.5; fig. A2);
- ASR: the lens outputs (input, lens output and the amplified absolute difference; figs. A4, A9).

The figures need the selected checkpoint (lowest validation loss). The runner keeps no weights,
so the first inspection of a job retrains it with ``keep_best_state`` (training is a pure
function of the job on a given device; the page states whether the validation loss matches the
job's) and caches the checkpoint as ``<job>/model.pt``; later inspections load that file.
Output: ``<run>/inspect/index.html`` (figures embedded) and ``<run>/inspect/<job_id>/*.png``.
The DiagViB-6 report links that page (:func:`inspection_section`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from shortcutlab.errors import DiagvibError
from shortcutlab.runner.jobs import JOB_FILE, RESULT_FILE, Job, is_done, read_job
from shortcutlab.utils.html import HtmlReport, figure_to_png
from shortcutlab.utils.io import atomic_path, write_bytes

if TYPE_CHECKING:
    import torch

    from shortcutlab.train.algorithms.base import Algorithm


class _Vae(Protocol):
    """What the VAE figures use of a trained ``vae`` / ``factor_vae`` algorithm."""

    network: Any  # has encode(x) -> (mu, logvar) and decode(z) -> logits

    def pixels(self, x: torch.Tensor) -> torch.Tensor: ...

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor: ...


class _Asr(Protocol):
    """What the lens figure uses of a trained ``asr`` algorithm."""

    def pixels(self, x: torch.Tensor) -> torch.Tensor: ...

    def lens_output(self, x: torch.Tensor) -> torch.Tensor: ...

#: Algorithms whose runs get inspection figures.
INSPECTABLE = ("asr", "vae", "factor_vae")
WEIGHTS_FILE = "model.pt"
INSPECT_DIR = "inspect"
TRAVERSAL_VALUES = tuple(np.linspace(-2.5, 2.5, 7).round(3).tolist())


# --------------------------------------------------------------------------- figures


def to_image(t: torch.Tensor) -> np.ndarray:
    """(3, H, W) tensor in [0, 1] -> (H, W, 3) numpy array."""
    return t.detach().cpu().clamp(0, 1).permute(1, 2, 0).numpy()


def figure_grid(rows: Sequence[Sequence[np.ndarray]], row_labels: Sequence[str],
                col_labels: Sequence[str] = (), title: str = "", size: float = 1.3) -> Figure:
    n_rows, n_cols = len(rows), max(len(r) for r in rows)
    fig = Figure(figsize=(size * n_cols + 0.8, size * n_rows + (0.5 if title else 0.2)),
                 layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for i, row in enumerate(rows):
        for j in range(n_cols):
            ax = axes[i][j]
            ax.set_xticks([])
            ax.set_yticks([])
            if j < len(row):
                ax.imshow(row[j], interpolation="nearest", vmin=0, vmax=1)
            else:
                ax.set_axis_off()
            if j == 0:
                ax.set_ylabel(row_labels[i], fontsize=8)
            if i == 0 and j < len(col_labels):
                ax.set_title(col_labels[j], fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def reconstruction_figure(algo: _Vae, x: torch.Tensor) -> Figure:
    """Inputs (top row) and the VAE's reconstructions from their latent means (bottom row);
    ``x`` is a batch of normalised images."""
    import torch

    with torch.no_grad():
        recon = algo.reconstruct(x)
        pixels = algo.pixels(x)
    return figure_grid([[to_image(p) for p in pixels], [to_image(r) for r in recon]],
                       ["input", "reconstruction"], title="VAE reconstructions (cf. paper fig. A3)")


def latent_order(algo: _Vae, x: torch.Tensor) -> list[int]:
    """Latent dimensions by decreasing mean KL divergence over the images ``x`` (the most
    informative first, as disentanglement papers order traversals)."""
    import torch

    with torch.no_grad():
        mu, logvar = algo.network.encode(x)
        kl = 0.5 * (mu.pow(2) + logvar.exp() - 1.0 - logvar).mean(0)
    return [int(i) for i in torch.argsort(kl, descending=True)]


def traversal_figure(algo: _Vae, x: torch.Tensor, index: int = 0,
                     values: Sequence[float] = TRAVERSAL_VALUES,
                     dims: Sequence[int] | None = None) -> Figure:
    """Latent traversal of image ``x[index]``: one row per latent dimension (``dims``, default
    :func:`latent_order`), its mean code with that dimension set to each of ``values``."""
    import torch

    dims = list(dims) if dims is not None else latent_order(algo, x)
    with torch.no_grad():
        mu = algo.network.encode(x[index : index + 1])[0][0]
        rows = []
        for d in dims:
            codes = mu.repeat(len(values), 1)
            codes[:, d] = torch.tensor(values, dtype=codes.dtype, device=codes.device)
            rows.append([to_image(im) for im in torch.sigmoid(algo.network.decode(codes))])
    return figure_grid(rows, [f"z{d}" for d in dims], [f"{v:+.1f}" for v in values],
                       title="Latent traversal (cf. paper fig. A2)", size=1.0)


def lens_figure(algo: _Asr, x: torch.Tensor, gain: float = 4.0) -> Figure:
    """ASR: inputs, lens outputs and ``gain`` x their absolute difference."""
    import torch

    with torch.no_grad():
        pixels = algo.pixels(x)
        out = algo.lens_output(x)
    diff = ((out - pixels).abs() * gain).clamp(0, 1)
    return figure_grid([[to_image(t) for t in ts] for ts in (pixels, out, diff)],
                       ["input", "lens output", f"|difference| x{gain:g}"],
                       title="ASR lens outputs (cf. paper figs. A4, A9)")


def figures_for(algo: Algorithm, x: torch.Tensor, traversals: int = 2) -> dict[str, Figure]:
    """The figures of one trained algorithm on normalised images ``x``, by file stem."""
    name = getattr(algo, "name", "")
    if name == "asr":
        return {"lens": lens_figure(cast(_Asr, algo), x)}
    if name in ("vae", "factor_vae"):
        vae = cast(_Vae, algo)
        figs = {"reconstructions": reconstruction_figure(vae, x)}
        order = latent_order(vae, x)
        for i in range(min(traversals, len(x))):
            figs[f"traversal-{i}"] = traversal_figure(vae, x, i, dims=order)
        return figs
    raise DiagvibError(f"no inspection figures for algorithm {name!r}; valid choices: "
                       f"{', '.join(INSPECTABLE)}")


# --------------------------------------------------------------------------- jobs


def inspectable_jobs(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Finished job folders of ``run_dir`` trained by an algorithm in :data:`INSPECTABLE`."""
    root = Path(run_dir)
    if not root.is_dir():
        raise DiagvibError(f"run folder not found: {root}")
    found = []
    for path in sorted(p.parent for p in root.glob(f"*/{JOB_FILE}")):
        if is_done(path) and read_job(path).train.algorithm in INSPECTABLE:
            found.append(path)
    return found


@dataclass
class Inspected:
    """One inspected job: its folder, the job, the trained algorithm, test images and a note on
    where the weights came from."""

    path: Path
    job: Job
    algorithm: Any
    images: Any
    note: str
    figures: dict[str, Path] = field(default_factory=dict)


def sample_images(test_ds: Any, n: int) -> torch.Tensor:
    """``n`` test images (evenly spaced over the test set) as a float batch in [0, 1]."""
    import torch

    from shortcutlab.train.normalization import to_unit_float

    if len(test_ds) == 0:
        raise DiagvibError("the job's test set is empty; no images to inspect")
    idx = np.unique(np.linspace(0, len(test_ds) - 1, max(1, n)).round().astype(int))
    return to_unit_float(torch.stack([test_ds[int(i)]["x"] for i in idx]))


def load_trained(path: Path, device: str = "cpu", images: int = 6) -> Inspected:
    """The job's selected checkpoint (from ``model.pt``, or retrained and cached there) and
    ``images`` normalised test images of its experiment."""
    import torch

    from shortcutlab.diagvib.jobs import train_job
    from shortcutlab.train.algorithms import create_algorithm
    from shortcutlab.utils.device import resolve_device

    job = read_job(path)
    weights = path / WEIGHTS_FILE
    torch_device = resolve_device(device)
    if weights.is_file():
        from shortcutlab.diagvib.jobs import job_datasets

        test_ds = job_datasets(job)[3]
        state = torch.load(weights, map_location="cpu", weights_only=True)
        note = f"weights from {WEIGHTS_FILE}"
    else:
        res, _, test_ds, _ = train_job(job, device, keep_best_state=True)
        state = res.best_state
        recorded = json.loads((path / RESULT_FILE).read_text(encoding="utf-8"))
        want = float(recorded.get("val_loss", math.nan))
        same = math.isclose(res.val_loss, want, rel_tol=1e-4, abs_tol=1e-6)
        note = (f"retrained on {torch_device} (the job ran on {recorded.get('device', '?')}): "
                f"selected epoch {res.best_epoch}, validation loss {res.val_loss:.4f} "
                + ("= the job's" if same else f"vs the job's {want:.4f} (device differences)"))
        with atomic_path(weights, suffix=".pt") as tmp:
            torch.save(state, tmp)
    algo = create_algorithm(job.train.algorithm, int(test_ds.num_classes), job.train)
    algo.load_state_dict(state)
    algo.to(torch_device).eval()
    x = algo.input_norm(sample_images(test_ds, images).to(torch_device))
    return Inspected(path, job, algo, x, note)


def write_inspection(run_dir: str | os.PathLike[str], out: str | os.PathLike[str] | None = None,
                     *, images: int = 6, traversals: int = 2, device: str = "cpu",
                     progress: Callable[[str], None] | None = None) -> Path:
    """Draw the figures of every inspectable job of ``run_dir`` into ``out`` (default
    ``<run_dir>/inspect``): ``<job_id>/<figure>.png`` and ``index.html``; returns the page."""
    jobs = inspectable_jobs(run_dir)
    if not jobs:
        raise DiagvibError(f"{run_dir} holds no finished jobs of {', '.join(INSPECTABLE)}; run "
                           "e.g. `shortcutlab diagvib run --model vae` first")
    if images < 1 or traversals < 0:
        raise DiagvibError(f"images must be >= 1 and traversals >= 0 (got {images}, "
                           f"{traversals})")
    out_dir = Path(out) if out is not None else Path(run_dir) / INSPECT_DIR
    page = HtmlReport("DiagViB-6 baselines: reconstructions, traversals, lens outputs")
    page.paragraph("Figures on test images of each job's experiment, from the checkpoint with "
                   "the lowest validation loss (the one the report's accuracies come from).")
    for path in jobs:
        if progress is not None:
            progress(path.name)
        item = load_trained(path, device, images)
        job = item.job
        page.heading(f"{job.train.model} ({job.train.algorithm}) · {job.experiment} · "
                     f"seed {job.train.seed} · job {path.name}")
        page.paragraph(item.note, note=True)
        for stem, fig in figures_for(item.algorithm, item.images, traversals).items():
            write_bytes(out_dir / path.name / f"{stem}.png", figure_to_png(fig))
            page.figure(fig, f"{stem} ({path.name}/{stem}.png)")
    return page.write(out_dir / "index.html")


# --------------------------------------------------------------------------- report


def inspection_section(sources: Iterable[str | os.PathLike[str]],
                       out_dir: str | os.PathLike[str]) -> Callable[[HtmlReport, pd.DataFrame],
                                                                  None]:
    """A report section linking the inspection pages of the run folders in ``sources`` (relative
    to the report folder ``out_dir``); it adds nothing when no job of the table is inspectable,
    and names the command when the figures are not drawn yet."""
    runs = [Path(s) for s in sources if Path(s).is_dir()]

    def section(report: HtmlReport, table: pd.DataFrame) -> None:
        if "algorithm" not in table.columns or not table["algorithm"].isin(INSPECTABLE).any():
            return
        report.heading("ASR lens outputs, VAE reconstructions and latent traversals")
        pages = [(r, r / INSPECT_DIR / "index.html") for r in runs]
        drawn: list[tuple[str, str | None]] = [
            (str(r), os.path.relpath(p, Path(out_dir))) for r, p in pages if p.is_file()]
        if drawn:
            report.paragraph("The paper's appendix figures A2-A4 and A9 for these runs:")
            report.links(drawn)
        missing = [str(r) for r, p in pages if not p.is_file()]
        if missing or not runs:
            report.paragraph("Draw them with `shortcutlab diagvib inspect RUN_DIR` (for "
                             f"{', '.join(missing) or 'each run folder'}).", note=True)

    return section


__all__ = [
    "INSPECTABLE", "figures_for", "inspectable_jobs", "inspection_section", "latent_order",
    "lens_figure", "load_trained", "reconstruction_figure", "traversal_figure",
    "write_inspection",
]
