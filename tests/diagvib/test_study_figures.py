"""Paper figs. 1, 3 and A1 drawn from the studies' specs (``shortcutlab diagvib study-figures``):
the cell shares equal the class tables, the markers and images follow them, bad input is one
line. Images come from a tiny generator (square digits, flat textures, 32 px) so that no image
source loads."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib import sources
from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.render import ImageGenerator
from shortcutlab.diagvib.spec import ExperimentSpec, assign_classes
from shortcutlab.diagvib.study_figures import (
    FIGURE3_STUDIES,
    CellShares,
    cell_images,
    cell_shares,
    example_cells,
    study_example_figure,
    study_overview_figure,
    study_specs,
    textures_figure,
    train_marker_size,
)
from shortcutlab.errors import SpecError

runner = CliRunner()
EYE = np.eye(3, dtype=bool)


def _tiny_shapes() -> sources.ShapeSource:
    mask = np.zeros((sources.MASK_SIZE, sources.MASK_SIZE), np.uint8)
    mask[8:32, 12:28] = 1
    return sources.ShapeSource(np.repeat(mask[None], 100, axis=0), np.repeat(np.arange(10), 10))


def _tiny_textures() -> sources.TextureSource:
    levels = np.linspace(0.1, 0.9, 5)
    return sources.TextureSource([np.full((48, 48), v, np.float32) for v in levels],
                                 origin="tiny")


@pytest.fixture(scope="module")
def generator() -> ImageGenerator:
    return ImageGenerator(_tiny_shapes(), _tiny_textures(), image_size=32)


@pytest.fixture(scope="module")
def specs() -> dict[str, ExperimentSpec]:
    """The nine studies of shape-hue on the authors' sample 2 (CGO cells (0, 2), (1, 2),
    (2, 1); CHGO's shortcut class 0), at a tenth of the paper's sizes."""
    return {s.study: s for s in study_specs("shape-hue", sample=2, selection="paper",
                                            scale=0.1)}


def _class_table(spec: ExperimentSpec, split: str, column: str = "hue") -> np.ndarray:
    """Images per (shape, ``column``) cell, counted in the spec's class table."""
    local = assign_classes(spec, split).local
    rows, cols = local[:, FACTORS.index("shape")], local[:, FACTORS.index(column)]
    return np.bincount(rows * 3 + cols, minlength=9).reshape(3, 3)


def test_shares_equal_the_class_tables_of_all_nine_studies(specs) -> None:
    assert tuple(specs) == FIGURE3_STUDIES
    for study, spec in specs.items():
        shares = cell_shares(spec, "hue")
        assert (shares.rows, shares.columns) == ("shape", "hue")
        assert shares.row_classes == ("2", "4", "3")  # the shapes of the paper's Fig. 1
        assert shares.column_classes == ("red", "blue", "magenta")
        for split, table in (("train", shares.train), ("test", shares.test)):
            counts = _class_table(spec, split)
            n = counts.sum()
            assert n == spec.sizes[split]
            # the same cells, and each share within one image of the table's
            assert ((table > 0) == (counts > 0)).all(), (study, split)
            assert np.abs(table - counts / n).max() <= 1 / n, (study, split)


def test_shares_follow_the_papers_cell_rules(specs) -> None:
    def share(study: str) -> CellShares:
        return cell_shares(specs[study], "hue")

    zso = share("ZSO")  # no correlated factor: hue uniform in every row
    assert np.allclose(zso.train, 1 / 9) and np.allclose(zso.test, 1 / 9)
    zgo = share("ZGO")
    assert np.allclose(zgo.train, EYE / 3) and np.allclose(zgo.test, ~EYE / 6)
    for f in (5, 10, 20):  # f % of every class, split over its two off-diagonal cells
        fgo = share(f"FGO-{f}")
        assert np.allclose(fgo.train[EYE], (1 - f / 100) / 3)
        assert np.allclose(fgo.train[~EYE], f / 100 / 3 / 2)
        assert np.allclose(fgo.train.sum(axis=1), 1 / 3)
        assert np.allclose(fgo.test, ~EYE / 6)
    added = [(0, 2), (1, 2), (2, 1)]  # the authors' CGO cells of sample 2, in order
    for c, balance in ((1, (2, 1, 1)), (2, (2, 2, 1)), (3, (1, 1, 1))):
        cgo = share(f"CGO-{c}")
        cells = EYE.copy()
        for a, b in added[:c]:
            cells[a, b] = True
        assert np.allclose(cgo.train, cells / (3 + c))  # every training cell equally often
        assert np.allclose(cgo.train.sum(axis=1), np.array(balance) / sum(balance))
        assert np.allclose(cgo.test, ~cells / (6 - c))
    chgo = share("CHGO")  # class 0 only with its shortcut, the others over the other hues
    train = np.zeros((3, 3))
    train[0, 0], train[1:, 1:] = 1 / 3, 1 / 6
    assert np.allclose(chgo.train, train) and np.allclose(chgo.test, (train == 0) / 4)


def test_columns_of_a_study_without_a_correlated_factor(specs) -> None:
    zso = specs["ZSO"]
    with pytest.raises(SpecError, match="no correlated factor.*hue"):
        cell_shares(zso)
    with pytest.raises(SpecError, match="other than the predicted 'shape'"):
        cell_shares(zso, "shape")
    with pytest.raises(SpecError, match="unknown factor 'pink'"):
        cell_shares(specs["ZGO"], "pink")
    # a factor outside the joint ones is uniform in every row (what assign_classes balances)
    texture = cell_shares(specs["ZGO"], "texture")
    assert np.allclose(texture.train, 1 / 9) and texture.column_classes == tuple(
        specs["ZGO"].selected["texture"])


def test_image_counts_are_the_class_tables_rows_by_predicted_class(specs) -> None:
    """cell_images (the counts of cell_shares.csv): row a, column b = images with the a-th
    shape and the b-th hue, on the asymmetric CGO-1 / CGO-2 / CHGO cells too."""
    for study in ("CGO-1", "CGO-2", "CHGO", "FGO-5"):
        for split in ("train", "test"):
            counts = cell_images(specs[study], split, "hue")
            assert np.array_equal(counts, _class_table(specs[study], split)), (study, split)
    cgo = cell_images(specs["CGO-1"], "train")  # the added cell (0, 2): shape 0 with hue 2
    assert cgo[0, 2] > 0 and cgo[2, 0] == 0


def test_columns_outside_the_joint_factors_keep_the_predicted_classes_shares(specs) -> None:
    """CGO-1 with texture columns: each shape's share of the training images is its 2:1:1 of the
    paper (rows), split evenly over the three textures, as the class table counts them."""
    spec = specs["CGO-1"]
    texture = cell_shares(spec, "texture")
    assert np.allclose(texture.train, np.outer([0.5, 0.25, 0.25], [1 / 3] * 3))
    for split, table in (("train", texture.train), ("test", texture.test)):
        counts = _class_table(spec, split, "texture")
        assert np.abs(table - counts / counts.sum()).max() <= 1 / counts.sum(), split


def _markers(ax, kind: str) -> dict[tuple[int, int], float]:
    return {tuple(int(v) for v in line.get_gid().split()[1:]): line.get_markersize()
            for line in ax.get_lines() if (line.get_gid() or "").startswith(kind + " ")}


def test_figure3_marks_cells_by_their_shares(specs) -> None:
    shares = [cell_shares(spec, "hue") for spec in specs.values()]
    fig = study_overview_figure(shares, title="t")
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_visible() and ax.get_title()}
    assert list(panels) == list(FIGURE3_STUDIES)  # the caption's order
    reference = max(float(s.train.max()) for s in shares)
    for one in shares:
        ax = panels[one.study]
        train, test = _markers(ax, "train"), _markers(ax, "test")
        assert set(train) == {tuple(c) for c in np.argwhere(one.train > 0)}
        assert set(test) == {tuple(c) for c in np.argwhere(one.test > 0)}
        for (a, b), size in train.items():  # area proportional to the share
            assert math.isclose(size, train_marker_size(one.train[a, b], reference))
            assert math.isclose((size / train_marker_size(reference, reference)) ** 2,
                                one.train[a, b] / reference)
    off = [_markers(panels[f"FGO-{f}"], "train")[(0, 1)] for f in (5, 10, 20)]
    assert off[0] < off[1] < off[2] < _markers(panels["FGO-20"], "train")[(0, 0)]
    rows = {t.get_gid(): t.get_text() for t in panels["CGO-1"].texts
            if (t.get_gid() or "").startswith("row share")}
    assert [rows[f"row share {a}"] for a in range(3)] == ["50%", "25%", "25%"]  # 2:1:1


def test_figure1_shows_the_experiments_own_images(specs, generator) -> None:
    spec = specs["CGO-2"]
    cells = example_cells(spec, generator, seed=1)
    shares = cell_shares(spec)
    assert [(c.row, c.column) for c in cells] == [(a, b) for a in range(3) for b in range(3)]
    tables = {split: assign_classes(spec, split) for split in ("train", "test")}
    for cell in cells:
        role = "train" if shares.train[cell.row, cell.column] > 0 else "test"
        assert cell.role == role and cell.split == role
        local = tables[role].local[cell.index]
        assert (local[FACTORS.index("shape")], local[FACTORS.index("hue")]) == (cell.row,
                                                                                cell.column)
        again = generator.render(tables[role].classes[[cell.index]], seed=spec.render_seed(1),
                                 split=role, indices=[cell.index])
        assert cell.image is not None and (cell.image == again[0]).all()
    fig = study_example_figure(spec, generator, seed=1)
    frames = [p for ax in fig.axes for p in ax.patches if (p.get_gid() or "") == "frame test"]
    assert len(frames) == int((shares.test > 0).sum()) == 4
    assert sum(ax.spines["top"].get_visible() for ax in fig.axes) == 5  # training cells
    # a cell in both splits (FGO's rare ones) shows a training image, framed both ways
    fgo = example_cells(specs["FGO-5"], generator)
    assert {c.role for c in fgo if c.row != c.column} == {"train+test"}
    assert all(c.split == "train" for c in fgo)


def test_figure_a1_shows_each_texture_named(generator) -> None:
    fig = textures_figure(generator.textures)
    names = get_factor("texture").classes
    assert [ax.get_title() for ax in fig.axes] == list(names)
    for ax, image in zip(fig.axes, generator.textures.images, strict=True):
        assert np.array_equal(ax.get_images()[0].get_array(), image)


def _tiny_sources(monkeypatch) -> list[str]:
    """The command's default sources replaced by the tiny ones (nothing to load); returns the
    list of the sources it loads."""
    real, loaded = sources.load_textures, []

    def shapes(*args, **kwargs) -> sources.ShapeSource:
        loaded.append("shapes")
        return _tiny_shapes()

    def textures(folder=None, **kwargs) -> sources.TextureSource:
        loaded.append("textures")
        return _tiny_textures() if folder is None else real(folder, **kwargs)

    monkeypatch.setattr(sources, "load_shapes", shapes)
    monkeypatch.setattr(sources, "load_textures", textures)
    return loaded


def test_command_writes_the_figures_and_the_shares(tmp_path, monkeypatch) -> None:
    _tiny_sources(monkeypatch)
    folder = tmp_path / "tex"
    folder.mkdir()
    for k, name in enumerate(get_factor("texture").classes):
        Image.fromarray(np.full((48, 48), 40 * k, np.uint8)).save(folder / f"{name}.png")
    out = tmp_path / "figs"
    res = runner.invoke(app, ["diagvib", "study-figures", "--out", str(out), "--study", "ZGO",
                              "--study", "FGO-5", "--image-size", "32", "--textures",
                              str(folder), "--json"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == [
        "cell_shares.csv", "fig1.png", "fig3.png", "figA1.png"]
    for name in ("fig1.png", "fig3.png", "figA1.png"):
        assert min(Image.open(out / name).size) > 100
    with open(out / "cell_shares.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["experiment"] for r in rows[::9]] == ["ZGO/shape-hue/2", "FGO-5/shape-hue/2"]
    fgo = {(int(r["row"]), int(r["column"])): r for r in rows[9:]}
    assert float(fgo[0, 1]["train_share"]) == pytest.approx(0.05 / 6)
    assert int(fgo[0, 1]["train_images"]) + int(fgo[0, 2]["train_images"]) == 729  # 5 %
    data = json.loads(res.stdout)
    assert data["textures"] == str(folder.resolve()) and data["example"] == "CGO-2/shape-hue/2"
    assert data["shares"] == [{k: type(v)(r[k]) for k, v in row.items()}
                              for row, r in zip(data["shares"], rows, strict=True)]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--pair", "shape-pink"], "unknown factor 'pink'; valid choices: position, hue"),
    (["--pair", "hue-hue"], "the correlated factor must be one of: position, lightness"),
    (["--study", "CGO-4"], "unknown study 'CGO-4'; valid choices: ZSO, ZGO, CGO-1"),
    (["--example", "custom"], "unknown study 'custom'; valid choices: ZSO"),
    (["--sample", "7"], "unknown dataset sample 7; valid choices: 0, 1, 2, 3, 4"),
    (["--selection", "best"], "unknown selection 'best'; valid choices: seeded, paper"),
    (["--textures", "{tmp}/nowhere"], "texture folder"),
    (["--textures", "{tmp}/bad"], "cannot read texture image"),
    (["--out", "{tmp}/taken"], "a file is where a folder should go"),
])
def test_command_refuses_bad_input_in_one_line(tmp_path, monkeypatch, args, fragment) -> None:
    loaded = _tiny_sources(monkeypatch)
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in get_factor("texture").classes:
        (bad / f"{name}.png").write_bytes(b"not an image")
    (tmp_path / "taken").write_text("x")
    out = tmp_path / "out"
    res = runner.invoke(app, ["diagvib", "study-figures", "--out", str(out), "--image-size",
                              "32", *(a.format(tmp=tmp_path) for a in args)])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0] and "Traceback" not in res.output
    assert not out.exists() and (tmp_path / "taken").read_text() == "x"
    if "--textures" not in args:  # refused before any image source loads
        assert loaded == []
