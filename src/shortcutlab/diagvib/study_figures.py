"""Pictures of the DiagViB-6 studies drawn from their specifications (paper figs. 1, 3 and A1).

* :func:`cell_shares` — the pure function behind the pictures: an experiment spec -> the 3×3
  table of each cell's share of the training images and of the test images (rows = classes of
  the predicted factor, columns = classes of the correlated one), read from the spec's cell
  weights; :func:`cell_images` counts the same cells in the spec's class table;
* :func:`study_overview_figure` — Fig. 3: one 3×3 panel per study, training cells ×, sized by
  their share (area ∝ share, so FGO-5/10/20 show growing off-diagonal crosses), test cells ○,
  and each class's share of the training images beside its row (CGO-1's 2:1:1);
* :func:`study_example_figure` — Fig. 1: the same grid for one experiment, filled with one
  image of the experiment's own dataset per cell (the first image of that cell in the training
  split, or in the test split for a cell outside training), framed by its role;
* :func:`textures_figure` — Fig. A1: the five textures the generator uses, one tile each;
* :func:`write_study_figures` — the three figures and ``cell_shares.csv`` for one factor pair
  and dataset sample (``shortcutlab diagvib study-figures``).

Nothing here restates a study's cells: every share comes from the
:class:`~shortcutlab.diagvib.spec.ExperimentSpec` that :func:`~shortcutlab.diagvib.studies.
make_experiment` builds, so the pictures show exactly what a run trains and tests on.
Figures are built without pyplot.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.sources import MASK_SIZE
from shortcutlab.diagvib.spec import N_SELECTED, ExperimentSpec, Selection, assign_classes
from shortcutlab.diagvib.studies import experiment_names, make_experiment
from shortcutlab.errors import SpecError, unknown_choice
from shortcutlab.utils.html import literal_text
from shortcutlab.utils.io import check_output_folder, output_set

if TYPE_CHECKING:
    from shortcutlab.diagvib.render import ImageGenerator
    from shortcutlab.diagvib.sources import TextureSource

#: Fig. 3's studies in the order its caption names them: "the zero SO (ZSO), the three degrees
#: of frequency GO (FGO) ..., the zero GO (ZGO), the three compositional GO (CGO-1/2/3) settings
#: and the compositional hybrid GO (CHGO)".
FIGURE3_STUDIES: tuple[str, ...] = (
    "ZSO", "FGO-5", "FGO-10", "FGO-20", "ZGO", "CGO-1", "CGO-2", "CGO-3", "CHGO")
#: Fig. 1's experiment: CGO-2, predicting shape with hue correlated. The authors' dataset
#: sample 2 selects the figure's shapes 2, 4 and 3 (its hues are red, blue and magenta).
EXAMPLE_STUDY = "CGO-2"
DEFAULT_PAIR = "shape-hue"
DEFAULT_SAMPLE = 2
DEFAULT_SELECTION: Selection = "paper"
FILES = {"fig1": "fig1.png", "fig3": "fig3.png", "figA1": "figA1.png",
         "shares": "cell_shares.csv"}
SHARE_COLUMNS = ("study", "experiment", "row_factor", "column_factor", "row", "column",
                 "row_class", "column_class", "train_share", "test_share", "train_images",
                 "test_images")

TRAIN_COLOUR = "#1f4e9c"
TEST_COLOUR = "#e07b00"
TRAIN_MARKER = 26.0  # marker size (points) of a cell holding the largest share drawn
TEST_MARKER = 30.0
PANEL_COLUMNS = 5


# ----------------------------------------------------------------------------- the shares
@dataclass(frozen=True)
class CellShares:
    """One experiment's 3×3 cells: ``train[a, b]`` / ``test[a, b]`` is the share of that split's
    images whose predicted factor has its ``a``-th selected class (``row_classes[a]``) and whose
    column factor has its ``b``-th (``column_classes[b]``); each table sums to 1."""

    experiment: str
    study: str
    rows: str
    columns: str
    row_classes: tuple[str, ...]
    column_classes: tuple[str, ...]
    train: np.ndarray
    test: np.ndarray

    def records(self, images: dict[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
        """One dict per cell (the columns of ``cell_shares.csv``); ``images`` adds the cells'
        image counts per split (as :func:`cell_images` gives them)."""
        out = []
        for a in range(N_SELECTED):
            for b in range(N_SELECTED):
                row: dict[str, Any] = {
                    "study": self.study, "experiment": self.experiment,
                    "row_factor": self.rows, "column_factor": self.columns, "row": a,
                    "column": b, "row_class": self.row_classes[a],
                    "column_class": self.column_classes[b],
                    "train_share": float(self.train[a, b]), "test_share": float(self.test[a, b])}
                if images is not None:
                    row.update({f"{split}_images": int(images[split][a, b])
                                for split in ("train", "test")})
                out.append(row)
        return out


def _column_factor(spec: ExperimentSpec, columns: str | None) -> str:
    """The factor whose classes are the columns: ``columns``, else the spec's correlated one."""
    if columns is None:
        if spec.correlated is None:
            others = [f for f in FACTORS if f != spec.predicted]
            raise SpecError(f"{spec.name}: study {spec.study} has no correlated factor; name the "
                            f"factor of the columns, one of: {', '.join(others)}")
        return spec.correlated
    if columns not in FACTORS:
        raise SpecError(unknown_choice("factor", columns, FACTORS))
    if columns == spec.predicted:
        raise SpecError(f"the columns need a factor other than the predicted {columns!r}; one "
                        f"of: {', '.join(f for f in FACTORS if f != columns)}")
    return columns


def cell_shares(spec: ExperimentSpec, columns: str | None = None) -> CellShares:
    """The 3×3 training and test shares of ``spec``'s cells (rows: the predicted factor's
    selected classes; columns: those of ``columns``, by default the correlated factor).

    Read from the spec's cell weights, a pure function of the spec: a joint factor's cells
    are its weights (summed over any further joint factors), and a factor outside the joint
    ones (the columns of ZSO, which has no correlated factor) is uniform over its 3 classes in
    every row, as :func:`~shortcutlab.diagvib.spec.assign_classes` balances it."""
    column_factor = _column_factor(spec, columns)
    joint = spec.joint_factors

    def table(split: str) -> np.ndarray:
        w = spec.weights_of(split)
        if column_factor in joint:
            axis = joint.index(column_factor)
            return w.sum(axis=tuple(i for i in range(w.ndim) if i not in (0, axis)))
        rows = w.reshape(N_SELECTED, -1).sum(axis=1)
        return np.outer(rows, np.full(N_SELECTED, 1.0 / N_SELECTED))

    return CellShares(spec.name, spec.study, spec.predicted, column_factor,
                      tuple(spec.selected[spec.predicted]), tuple(spec.selected[column_factor]),
                      table("train"), table("test"))


def cell_images(spec: ExperimentSpec, split: str, columns: str | None = None) -> np.ndarray:
    """Images per cell (3×3, as :func:`cell_shares`) in the class table of ``split``."""
    column_factor = _column_factor(spec, columns)
    local = assign_classes(spec, split).local
    key = (local[:, FACTORS.index(spec.predicted)] * N_SELECTED
           + local[:, FACTORS.index(column_factor)])
    return np.bincount(key, minlength=N_SELECTED ** 2).reshape(N_SELECTED, N_SELECTED)


def _percent(share: float) -> str:
    return f"{100 * share:.3g}%"


# ----------------------------------------------------------------------------- figure 3
def train_marker_size(share: float, reference: float) -> float:
    """Marker size (points) of a training cell: area proportional to its share, a cell with
    ``reference`` (the largest share drawn) at :data:`TRAIN_MARKER`."""
    return TRAIN_MARKER * math.sqrt(share / reference) if share > 0 else 0.0


def _cell_axes(ax: Axes, shares: CellShares) -> None:
    ax.set_xlim(-0.5, N_SELECTED - 0.5)
    ax.set_ylim(N_SELECTED - 0.5, -0.5)  # row 0 on top, as a matrix
    ax.set_aspect("equal")
    for k in range(1, N_SELECTED):
        ax.axhline(k - 0.5, color="#bbbbbb", lw=0.8)
        ax.axvline(k - 0.5, color="#bbbbbb", lw=0.8)
    ax.set_xticks(range(N_SELECTED), shares.column_classes, fontsize=7, rotation=30,
                  ha="right", rotation_mode="anchor")
    ax.set_yticks(range(N_SELECTED), shares.row_classes, fontsize=7)
    ax.tick_params(length=0)


def plot_study_cells(shares: CellShares, ax: Axes, reference: float | None = None) -> Axes:
    """One study's panel of Fig. 3 on ``ax``: × on every training cell (area ∝ its share of
    the training images, the share printed in the cell's corner), ○ on every test cell, each
    class's share of the training images right of its row. ``reference``: the share drawn at
    full size (default the largest of this panel; give one value to every panel of a figure
    so that sizes compare across panels)."""
    ref = float(shares.train.max()) if reference is None else float(reference)
    _cell_axes(ax, shares)
    for a in range(N_SELECTED):
        for b in range(N_SELECTED):
            if shares.test[a, b] > 0:
                ax.plot(b, a, marker="o", ms=TEST_MARKER, mfc="none", mec=TEST_COLOUR, mew=1.4,
                        ls="none", gid=f"test {a} {b}")
            share = float(shares.train[a, b])
            if share > 0:
                size = train_marker_size(share, ref)
                ax.plot(b, a, marker="x", ms=size, mew=max(1.0, size / 9), color=TRAIN_COLOUR,
                        ls="none", gid=f"train {a} {b}")
                ax.text(b + 0.46, a + 0.46, _percent(share), ha="right", va="bottom",
                        fontsize=5.5, color=TRAIN_COLOUR, gid=f"train share {a} {b}")
        ax.text(N_SELECTED - 0.4, a, _percent(float(shares.train[a].sum())), ha="left",
                va="center", fontsize=6.5, color="#555555", clip_on=False, gid=f"row share {a}")
    ax.set_title(shares.study, fontsize=10, fontweight="bold")
    return ax


def _legend_handles() -> list[Any]:
    return [
        Line2D([], [], marker="x", ls="none", ms=9, mew=2, color=TRAIN_COLOUR,
               label="training cell (area ∝ its share of the training images, in its corner)"),
        Line2D([], [], marker="o", ls="none", ms=10, mfc="none", mew=1.4, mec=TEST_COLOUR,
               label="test cell"),
        Line2D([], [], ls="none", label="right of a row: the class's share of the training "
               "images"),
    ]


def study_overview_figure(shares: Sequence[CellShares], *, title: str | None = None,
                          ncols: int = PANEL_COLUMNS) -> Figure:
    """Fig. 3: one :func:`plot_study_cells` panel per entry of ``shares``, in order, marker
    sizes on one scale (the largest training share of all panels at full size)."""
    if not shares:
        raise SpecError("no studies to draw")
    n = len(shares)
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig = Figure(figsize=(2.35 * ncols + 0.3, 2.45 * nrows + 0.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    reference = max(float(s.train.max()) for s in shares)
    for k, (ax, one) in enumerate(zip(axes, shares, strict=False)):
        plot_study_cells(one, ax, reference)
        ax.set_xlabel(one.columns, fontsize=8)
        if k % ncols == 0:
            ax.set_ylabel(f"{one.rows} (predicted)", fontsize=8)
    for ax in axes[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.legend(handles=_legend_handles(), loc="outside lower center", ncols=3, fontsize=7,
               frameon=False)
    return fig


# ----------------------------------------------------------------------------- figure 1
@dataclass(frozen=True)
class ExampleCell:
    """The image shown in cell (``row``, ``column``) of Fig. 1: image ``index`` of ``split``
    of the experiment (None where the cell holds no image), and the cell's shares."""

    row: int
    column: int
    split: str | None
    index: int | None
    train_share: float
    test_share: float
    image: np.ndarray | None  # (3, H, W) uint8

    @property
    def role(self) -> str:
        """``train``, ``test``, ``train+test`` (e.g. FGO's rare cells, ZSO) or ``""``."""
        return "+".join(r for r, s in (("train", self.train_share), ("test", self.test_share))
                        if s > 0)


def example_cells(spec: ExperimentSpec, generator: ImageGenerator, *,
                  columns: str | None = None, seed: int = 0) -> list[ExampleCell]:
    """One image per cell of ``spec`` (row-major): the first image of the cell in the training
    split, or for a cell outside training the first in the test split, rendered as the
    dataset renders it (pixel seed ``seed``)."""
    shares = cell_shares(spec, columns)
    rows_at, columns_at = FACTORS.index(spec.predicted), FACTORS.index(shares.columns)
    picks: dict[tuple[int, int], tuple[str, int]] = {}
    tables = {}
    for split, table in (("train", shares.train), ("test", shares.test)):
        assignment = assign_classes(spec, split)
        tables[split] = assignment.classes
        key = assignment.local[:, rows_at] * N_SELECTED + assignment.local[:, columns_at]
        cells, first = np.unique(key, return_index=True)
        for cell, index in zip(cells.tolist(), first.tolist(), strict=True):
            a, b = divmod(cell, N_SELECTED)
            if table[a, b] > 0:
                picks.setdefault((a, b), (split, index))
    images: dict[tuple[int, int], np.ndarray] = {}
    for split in ("train", "test"):
        mine = [(cell, index) for cell, (s, index) in picks.items() if s == split]
        if mine:
            idx = np.array([index for _, index in mine], dtype=np.int64)
            rendered = generator.render(tables[split][idx], seed=spec.render_seed(seed),
                                        split=split, indices=idx)
            images.update({cell: rendered[k] for k, (cell, _) in enumerate(mine)})
    out = []
    for a in range(N_SELECTED):
        for b in range(N_SELECTED):
            pick: tuple[str | None, int | None] = picks.get((a, b), (None, None))
            out.append(ExampleCell(a, b, *pick, float(shares.train[a, b]),
                                   float(shares.test[a, b]), images.get((a, b))))
    return out


def _frame(ax: Axes, role: str) -> None:
    for spine in ax.spines.values():
        spine.set_visible(False)
    if "train" in role:
        for spine in ax.spines.values():
            spine.set(visible=True, color=TRAIN_COLOUR, linewidth=3.5, linestyle="-")
    if "test" in role:
        pad = 0.045 if "train" in role else 0.0
        ax.add_patch(Rectangle((-pad, -pad), 1 + 2 * pad, 1 + 2 * pad, transform=ax.transAxes,
                               fill=False, edgecolor=TEST_COLOUR, linewidth=2.5,
                               linestyle=(0, (3, 2)), clip_on=False, gid=f"frame {role}"))


def study_example_figure(spec: ExperimentSpec, generator: ImageGenerator | None = None, *,
                         columns: str | None = None, seed: int = 0) -> Figure:
    """Fig. 1: the 3×3 cells of one experiment, each with one of its images
    (:func:`example_cells`); training cells framed solid blue, test cells dashed orange,
    under each image its split and index and the cell's share of that split."""
    from shortcutlab.diagvib.render import ImageGenerator

    gen = generator if generator is not None else ImageGenerator()
    shares = cell_shares(spec, columns)
    cells = example_cells(spec, gen, columns=shares.columns, seed=seed)
    fig = Figure(figsize=(3 * 1.75 + 0.6, 3 * 1.95 + 1.3), layout="constrained")
    axes = fig.subplots(N_SELECTED, N_SELECTED, squeeze=False)
    for cell in cells:
        ax = axes[cell.row, cell.column]
        ax.set_xticks([])
        ax.set_yticks([])
        if cell.image is not None:
            ax.imshow(cell.image.transpose(1, 2, 0), interpolation="nearest")
        else:
            ax.set_facecolor("#f4f4f4")
        _frame(ax, cell.role)
        parts = []
        if cell.train_share > 0:
            parts.append(f"train {_percent(cell.train_share)}")
        if cell.test_share > 0:
            parts.append(f"test {_percent(cell.test_share)}")
        where = f"{cell.split} image {cell.index}" if cell.index is not None else "no image"
        ax.set_xlabel(f"{' · '.join(parts) or 'not used'}\n{where}", fontsize=6.5)
        if cell.row == 0:
            ax.set_title(f"{shares.columns} {shares.column_classes[cell.column]}", fontsize=9)
        if cell.column == 0:
            ax.set_ylabel(f"{shares.rows} {shares.row_classes[cell.row]}", fontsize=9)
    fig.suptitle(f"{spec.name}: predict {shares.rows} (rows), {shares.columns} correlated "
                 f"(columns)", fontsize=10)
    handles = [
        Patch(facecolor="none", edgecolor=TRAIN_COLOUR, linewidth=3,
              label="training combination (share of the training images)"),
        Patch(facecolor="none", edgecolor=TEST_COLOUR, linewidth=2.5, linestyle=(0, (3, 2)),
              label="test combination (share of the test images)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=1, fontsize=7, frameon=False)
    return fig


# ----------------------------------------------------------------------------- figure A1
def textures_figure(textures: TextureSource | None = None) -> Figure:
    """Fig. A1: the five textures in use (default: the built-in ones), one tile each, named,
    in grey levels 0..1 as the generator reads them; a red square marks the size of the patch
    one object is coloured with."""
    from shortcutlab.diagvib.sources import load_textures

    source = textures if textures is not None else load_textures()
    names = get_factor("texture").classes
    fig = Figure(figsize=(2.0 * len(names) + 0.2, 2.75), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    patch = MASK_SIZE  # the digit canvas: one object's texture crop
    for ax, name, image in zip(axes, names, source.images, strict=True):
        ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.add_patch(Rectangle((3, 3), patch, patch, fill=False, edgecolor="#d62728", lw=1.2))
        ax.set_title(name, fontsize=10, fontweight="bold")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(f"{image.shape[1]}×{image.shape[0]} px", fontsize=7)
    fig.suptitle(f"Textures ({source.origin}); red square: the {patch}×{patch} patch one object "
                 "is coloured with", fontsize=9)
    return fig


# ----------------------------------------------------------------------------- writing
def study_specs(pair: str = DEFAULT_PAIR, *, sample: int = DEFAULT_SAMPLE,
                selection: Selection = DEFAULT_SELECTION, seed: int = 0,
                studies: Iterable[str] | None = None, scale: float = 1.0) -> list[ExperimentSpec]:
    """The experiments of ``studies`` (default :data:`FIGURE3_STUDIES`) for one
    predicted-correlated ``pair`` and dataset ``sample``, at the paper's sizes times ``scale``
    (ZSO: the pair's predicted factor alone); errors name the valid studies, factors and
    samples."""
    chosen = list(dict.fromkeys(FIGURE3_STUDIES if studies is None else studies))
    if not chosen:
        raise SpecError("no studies to draw")
    names = experiment_names(chosen, [pair], [sample])
    return [make_experiment(name, seed=seed, selection=selection, scale=scale)
            for name in names]


@dataclass(frozen=True)
class StudyFigures:
    """What :func:`write_study_figures` wrote: the files, the example experiment and every
    cell's row of ``cell_shares.csv``."""

    files: dict[str, Path]
    experiments: list[str]
    example: str
    textures: str
    rows: list[dict[str, Any]]


def _shares_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SHARE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_study_figures(
    out_dir: str | Path, *, pair: str = DEFAULT_PAIR, sample: int = DEFAULT_SAMPLE,
    selection: Selection = DEFAULT_SELECTION, seed: int = 0,
    studies: Iterable[str] | None = None, example: str = EXAMPLE_STUDY,
    generator: ImageGenerator | None = None, image_seed: int = 0, dpi: int = 110,
) -> StudyFigures:
    """Write ``fig3.png`` (the studies of one ``pair`` and ``sample``), ``fig1.png`` (study
    ``example`` on the same pair and sample, with images of ``generator``), ``figA1.png`` (the
    generator's textures) and ``cell_shares.csv`` into ``out_dir``, all or none. Every input is
    checked (studies, pair, sample, selection, the folder) before anything is drawn."""
    specs = study_specs(pair, sample=sample, selection=selection, seed=seed, studies=studies)
    example_spec = study_specs(pair, sample=sample, selection=selection, seed=seed,
                               studies=[example])[0]
    if image_seed < 0:
        raise SpecError(f"image seed must be >= 0 (got {image_seed})")
    check_output_folder(out_dir)
    if generator is None:
        from shortcutlab.diagvib.render import ImageGenerator

        generator = ImageGenerator()
    columns = pair.split("-")[1]
    shares = [cell_shares(s, columns) for s in specs]
    rows = [row for spec, one in zip(specs, shares, strict=True)
            for row in one.records({split: cell_images(spec, split, columns)
                                    for split in ("train", "test")})]
    what = f"{selection} selection, dataset sample {sample}"
    figures = {
        "fig3": study_overview_figure(
            shares, title=f"DiagViB-6 studies: predict {shares[0].rows}, {columns} correlated "
            f"({what})"),
        "fig1": study_example_figure(example_spec, generator, columns=columns, seed=image_seed),
        "figA1": textures_figure(generator.textures),
    }
    out = Path(out_dir)
    files = {key: out / name for key, name in FILES.items()}
    with output_set() as outputs:
        for key, fig in figures.items():
            with literal_text(fig):
                fig.savefig(outputs.path(files[key], ".png"), format="png", dpi=dpi)
        outputs.write_text(files["shares"], _shares_csv(rows))
    return StudyFigures(files, [s.name for s in specs], example_spec.name,
                        generator.textures.origin, rows)
