"""``shortcutlab diagvib factors|render|traverse`` end to end (CliRunner, tiny outputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.errors import DiagvibError

runner = CliRunner()


def _fails(args: list[str]) -> str:
    """Message of a failed call: printed as ``Error: ...`` without a traceback, exit code 2."""
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.output, res.exception)
    assert "Error: " in res.output and "Traceback" not in res.output, res.output
    return res.output


def test_factors_lists_all_classes() -> None:
    res = runner.invoke(app, ["diagvib", "factors"], terminal_width=200)
    assert res.exit_code == 0, res.output
    for name in FACTORS:
        assert name in res.output
        for cls in get_factor(name).classes:
            assert cls in res.output
    assert "54,000" in res.output and "345°" in res.output


def test_render_writes_images_and_class_names(tmp_path: Path) -> None:
    out, png = tmp_path / "r.npz", tmp_path / "grid.png"
    res = runner.invoke(app, ["diagvib", "render", "--set", "hue=blue", "--set", "shape=3",
                              "--n", "5", "--seed", "4", "--split", "test", "--out", str(out),
                              "--png", str(png), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    with np.load(out) as z:
        assert z["images"].shape == (5, 3, 128, 128) and z["images"].dtype == np.uint8
        for name in FACTORS:
            assert z[name].shape == (5,)
            assert set(z[name].tolist()) <= set(get_factor(name).classes)
        assert set(z["hue"].tolist()) == {"blue"} and set(z["shape"].tolist()) == {"3"}
        first = z["images"].copy()
    assert Image.open(png).size[0] > 128
    # same seed -> same bytes; the Python API gives the same images
    again = tmp_path / "again.npz"
    runner.invoke(app, ["diagvib", "render", "--set", "shape=3", "--set", "hue=blue", "--n", "5",
                        "--seed", "4", "--split", "test", "--out", str(again), "--device", "cpu"])
    with np.load(again) as z:
        assert (z["images"] == first).all()


def test_render_bad_input_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "x.npz"
    base = ["diagvib", "render", "--out", str(out), "--png", str(tmp_path / "x.png")]
    assert "unknown factor 'colour'" in _fails(base + ["--set", "colour=red"])
    msg = _fails(base + ["--set", "hue=pink"])
    assert "unknown hue class 'pink'" in msg and "magenta" in msg
    assert "given twice" in _fails(base + ["--set", "hue=red", "--set", "hue=blue"])
    assert "positive" in _fails(base + ["--n", "0"])
    assert "unknown split 'dev'" in _fails(base + ["--split", "dev"])
    assert "does not exist" in _fails(base + ["--mnist", str(tmp_path / "none")])
    assert "unknown device" in _fails(base + ["--device", "tpu"])
    if not torch.cuda.is_available():
        assert "no CUDA GPU" in _fails(base + ["--device", "cuda"])
    assert "image size 20 not supported" in _fails(base + ["--image-size", "20"])
    assert list(tmp_path.iterdir()) == []


def test_render_with_user_sources(tmp_path: Path) -> None:
    digits = np.zeros((30, 28, 28), dtype=np.uint8)
    labels = np.repeat(np.arange(10), 3)
    for i, d in enumerate(labels):
        digits[i, 5:20, 8 + d: 12 + d + i % 3] = 255
    np.savez(tmp_path / "mnist.npz", images=digits, labels=labels)
    tex = tmp_path / "tex"
    tex.mkdir()
    for k, name in enumerate(get_factor("texture").classes):
        pattern = ((np.indices((64, 64)).sum(0) // (k + 2)) % 2 * 255).astype(np.uint8)
        Image.fromarray(pattern).save(tex / f"{name}.png")
    out = tmp_path / "u.npz"
    res = runner.invoke(app, ["diagvib", "render", "--n", "3", "--out", str(out), "--mnist",
                              str(tmp_path / "mnist.npz"), "--textures", str(tex),
                              "--device", "cpu"])
    assert res.exit_code == 0, res.output
    with np.load(out) as z:
        assert z["images"].shape == (3, 3, 128, 128)
        as_given = z["images"]
    res = runner.invoke(app, ["diagvib", "render", "--n", "3", "--out", str(out), "--mnist",
                              str(tmp_path / "mnist.npz"), "--textures", str(tex),
                              "--device", "cpu", "--equalize-textures"])
    assert res.exit_code == 0, res.output
    with np.load(out) as z:  # 0/255 stripes equalise to 1/4 and 3/4: other object colours
        assert (z["images"] != as_given).any()
    bad = tmp_path / "bad.npz"
    np.savez(bad, pictures=digits)
    assert "valid array pairs" in _fails(["diagvib", "render", "--out", str(tmp_path / "b.npz"),
                                          "--mnist", str(bad)])
    (tex / "lava.png").write_bytes(b"\x89PNG broken")  # an unreadable texture file
    msg = _fails(["diagvib", "render", "--out", str(tmp_path / "b.npz"), "--textures", str(tex)])
    assert "cannot read texture image" in msg and "lava.png" in msg
    (tex / "lava.png").unlink()
    msg = _fails(["diagvib", "render", "--out", str(tmp_path / "b.npz"), "--textures", str(tex)])
    assert "lacks lava" in msg and "tiles, wood, carpet, bricks, lava" in msg
    assert not (tmp_path / "b.npz").exists()
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_traverse_draws_the_figure(tmp_path: Path) -> None:
    out = tmp_path / "fig" / "traversal.png"
    res = runner.invoke(app, ["diagvib", "traverse", "--out", str(out)])
    assert res.exit_code == 0, res.output
    picture = np.asarray(Image.open(out).convert("RGB"))
    assert picture.shape[0] > picture.shape[1] > 400  # 10 rows x 6 columns


def test_gallery(tmp_path: Path) -> None:
    from shortcutlab.diagvib.gallery import render_gallery, traversal_classes

    classes, filled = traversal_classes()
    assert filled.sum() == 9 + 6 + 4 + 5 + 10 + 5
    for j in range(len(FACTORS)):  # each column varies only its own factor
        col = classes[filled[:, j], j]
        others = np.delete(col, j, axis=1)
        assert (others == others[0]).all() and len(set(col[:, j].tolist())) == len(col)
    lines = render_gallery(tmp_path, n=8)
    assert len(lines) == 3
    assert {p.name for p in tmp_path.iterdir()} == {"traversal.png", "samples.npz",
                                                     "samples.png"}
    with np.load(tmp_path / "samples.npz") as z:
        assert z["images"].shape == (8, 3, 128, 128) and z["texture"].shape == (8,)
        images, names = z["images"], {f: z[f].tolist() for f in FACTORS}
    # n random *training* images: the classes of random_classes(split="train") rendered from
    # the training digit pool (the same classes from the test pool look different)
    from shortcutlab.diagvib.render import ImageGenerator, class_names, random_classes

    gen, classes = ImageGenerator(), random_classes(8, seed=0, split="train")
    train = gen.render(classes, seed=0, split="train", indices=np.arange(8))
    test = gen.render(classes, seed=0, split="test", indices=np.arange(8))
    assert (images == train).all() and not (train == test).all()
    assert names == {f: list(v) for f, v in class_names(classes).items()}
    from PIL import Image

    from shortcutlab.diagvib.gallery import CAPTION_HEIGHT

    grid = np.asarray(Image.open(tmp_path / "samples.png").convert("L"))
    assert grid.shape == (128 + CAPTION_HEIGHT, 8 * 130 - 2)
    caption = grid[128:, :128]  # the first tile's class names, dark text on white
    assert (caption < 100).sum() > 50 and (caption == 255).mean() > 0.5


def test_every_command_has_help() -> None:
    for cmd in ("factors", "render", "traverse"):
        res = runner.invoke(app, ["diagvib", cmd, "--help"])
        assert res.exit_code == 0 and "Usage" in res.output


@pytest.mark.parametrize("item", ["shape=3", "texture=lava"])
def test_set_values_are_validated_before_rendering(item: str) -> None:
    from shortcutlab.diagvib.render import parse_assignments

    assert parse_assignments([item])
    factor, value = item.split("=")
    with pytest.raises(DiagvibError, match=f"unknown {factor} class '{value}x'; valid choices: "):
        parse_assignments([item + "x"])


def test_streaming_npz_matches_savez(tmp_path: Path) -> None:
    from shortcutlab.utils.io import write_npz_streaming

    data = np.arange(5 * 3 * 4 * 4, dtype=np.uint8).reshape(5, 3, 4, 4)
    write_npz_streaming(tmp_path / "s.npz", "images", data.shape, [data[:2], data[2:]],
                        {"hue": np.array(["red"] * 5)})
    with np.load(tmp_path / "s.npz") as z:
        assert (z["images"] == data).all() and z["hue"].tolist() == ["red"] * 5
    with pytest.raises(ValueError, match="4 rows written for an array of 5"):
        write_npz_streaming(tmp_path / "t.npz", "images", data.shape, [data[:4]], {})


def test_render_without_png_imports_neither_torch_nor_matplotlib(tmp_path: Path) -> None:
    """The numpy path of `diagvib render` needs neither (seconds of start-up); the buffer reused
    across chunks gives the same bytes as one call."""
    import subprocess
    import sys

    from shortcutlab.cli import diagvib_render

    if diagvib_render._may_have_cuda():
        pytest.skip("a CUDA driver is present: --device auto may need torch")
    out = tmp_path / "x.npz"
    code = ("import sys\n"
            "from shortcutlab.cli import diagvib_render\n"
            "diagvib_render.RENDER_CHUNK = 7\n"
            "from shortcutlab.cli.main import app\n"
            f"sys.argv = ['shortcutlab', 'diagvib', 'render', '--n', '30', '--out', {str(out)!r}]\n"
            "try:\n    app()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=600)
    assert run.stdout.strip().splitlines()[-1] == "[]"
    from shortcutlab.diagvib.render import ImageGenerator, random_classes

    with np.load(out) as data:
        images = data["images"]
    want = ImageGenerator().render(random_classes(30, seed=0), seed=0, split="train",
                                   indices=np.arange(30))
    assert (images == want).all()


def test_traversal_fixes_the_classes_of_paper_figure_2() -> None:
    """Paper Sec. 3.1 on Fig. 2: the other factors are fixed at (C_hue,1, C_lightn.,3,
    C_scale,5, C_shape,1, C_text.,2): the first hue, the third lightness, the fifth scale,
    the first digit and the second texture class (1-based in the paper)."""
    from shortcutlab.diagvib.gallery import traversal_classes

    classes, filled = traversal_classes()
    paper = {"hue": 0, "lightness": 2, "scale": 4, "shape": 0, "texture": 1}
    position = FACTORS.index("position")
    for name, k in paper.items():
        assert (classes[filled[:, position], position, FACTORS.index(name)] == k).all(), name


def test_render_refuses_more_images_than_its_cap(tmp_path: Path) -> None:
    """--n above MAX_RENDER_IMAGES is refused by name (the cap and the way round it), before
    any source is loaded or disk space is weighed."""
    from shortcutlab.cli.diagvib_render import MAX_RENDER_IMAGES

    out = tmp_path / "x.npz"
    msg = _fails(["diagvib", "render", "--n", str(MAX_RENDER_IMAGES + 1), "--out", str(out)])
    assert f"up to {MAX_RENDER_IMAGES:,}" in msg and "--seed" in msg, msg
    assert not out.exists()


def test_image_grid_tiles_each_image_upright_in_reading_order() -> None:
    """Tile i of ``image_grid`` is image i as (H, W, 3), row i // ncols, column i % ncols, with
    ``gap`` white pixels between tiles; images with distinct pixel values show any transposition
    or mirroring."""
    from shortcutlab.diagvib.gallery import image_grid

    images = np.arange(3 * 3 * 4 * 4, dtype=np.uint8).reshape(3, 3, 4, 4)
    grid = image_grid(images, ncols=2, gap=1)
    assert grid.shape == (2 * 4 + 1, 2 * 4 + 1, 3)
    for i, (r, c) in enumerate([(0, 0), (0, 1), (1, 0)]):
        tile = grid[r * 5: r * 5 + 4, c * 5: c * 5 + 4]
        assert (tile == images[i].transpose(1, 2, 0)).all(), i
        assert tile[0, 1, 0] == images[i, 0, 0, 1]  # first row, second column, red
    assert (grid[4, :] == 255).all() and (grid[:, 4] == 255).all()  # the gaps
    assert (grid[5:, 5:] == 255).all()  # no fourth image
