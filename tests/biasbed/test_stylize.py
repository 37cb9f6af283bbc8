"""`biasbed stylize`: Stylized ImageNet from a content folder, style images and AdaIN weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.biasbed.stylize import style_assignment, stylize_folder
from shortcutlab.cli.main import app
from shortcutlab.train.algorithms.stylized import AdaINStyleTransfer
from tests.biasbed.adain_pair import write_adain_pair
from tests.biasbed.conftest import write_folder


def _inputs(tmp_path: Path):
    content = write_folder(tmp_path / "in", {"n01": 0, "n02": 1}, 3, 0, size=(40, 36))
    styles = tmp_path / "styles"
    styles.mkdir()
    gen = np.random.default_rng(1)
    for i in range(3):
        Image.fromarray(gen.integers(0, 255, (48, 40, 3), dtype=np.uint8)).save(styles / f"{i}.png")
    Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(styles / "tiny.png")  # left out
    (tmp_path / "w").mkdir()
    vgg, dec = write_adain_pair(tmp_path / "w")
    return content, styles, vgg, dec


def test_stylize_writes_mirrored_pngs_and_resumes(tmp_path: Path) -> None:
    content, styles, vgg, dec = _inputs(tmp_path)
    out = tmp_path / "sin"
    first = stylize_folder(content, styles, out, vgg, dec, size=32, batch_size=4, progress=False)
    drawn = style_assignment(6, 4, 0)  # style 3 is tiny.png: replaced by the next usable one
    assert (first.written, first.skipped, first.styles) == (6, 0, 4)
    assert first.styles_too_small == int(3 in drawn)
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png"))
    assert names == [f"{c}/{i:03d}.png" for c in ("n01", "n02") for i in range(3)]
    img = np.asarray(Image.open(out / "n01" / "000.png"))
    assert img.shape == (32, 32, 3)
    # the image is AdaIN(content crop, its assigned style), as computed directly
    net = AdaINStyleTransfer.from_pair(vgg, dec)
    from shortcutlab.biasbed.datasets import ImageFolderDataset
    from shortcutlab.biasbed.stylize import load_style_image

    ds = ImageFolderDataset(content, ["n01", "n02"], image_size=32, preprocess="imagenet-eval")
    files = sorted(styles.glob("*.png"))
    j = int(style_assignment(6, 4, 0)[0])
    while load_style_image(files[j], 32) is None:
        j = (j + 1) % 4
    expected = net(ds[0]["x"][None], load_style_image(files[j], 32)[None], 1.0)[0]
    expected = expected.clamp(0, 1).mul(255).round().byte().permute(1, 2, 0).numpy()
    assert np.abs(img.astype(int) - expected.astype(int)).max() <= 1
    # resumable: a missing image is rebuilt, the others are skipped
    (out / "n02" / "001.png").unlink()
    again = stylize_folder(content, styles, out, vgg, dec, size=32, batch_size=4, progress=False)
    assert (again.written, again.skipped) == (1, 5)
    assert again.styles_too_small == int(drawn[4] == 3)
    assert torch.equal(torch.as_tensor(drawn), torch.as_tensor(style_assignment(6, 4, 0)))


def test_stylize_cli_and_errors(tmp_path: Path) -> None:
    content, styles, vgg, dec = _inputs(tmp_path)
    args = ["biasbed", "stylize", str(content), str(styles), "--out", str(tmp_path / "o"),
            "--vgg-weights", str(vgg), "--decoder-weights", str(dec), "--size", "32",
            "--device", "cpu"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "o").rglob("*.png"))) == 6
    again = CliRunner().invoke(app, [*args, "--json"])
    assert again.exit_code == 0, again.output
    counts = json.loads(again.stdout)
    assert counts["written"] == 0 and counts["skipped"] == 6  # resumed: nothing to redo
    bad = CliRunner().invoke(app, args[:3] + [str(tmp_path / "nope")] + args[4:])
    assert bad.exit_code == 2 and "does not exist" in bad.output


def test_16_bit_greyscale_style_image_is_scaled_not_clipped(tmp_path: Path) -> None:
    from shortcutlab.biasbed.stylize import load_style_image

    Image.fromarray(np.full((40, 40), 32768, dtype=np.uint16)).save(tmp_path / "s.png")
    style = load_style_image(tmp_path / "s.png", 16)
    assert style is not None
    assert abs(style.mean().item() - 0.5) < 0.01  # convert('RGB') clipped it to white


def test_out_inside_the_content_or_style_folder_is_refused(tmp_path: Path) -> None:
    """``--out`` equal to the content folder "skipped" every PNG content image as already
    stylised; inside it, the output became a new class of the ImageNet split (and the next build
    stylised the stylised images); inside the style folder, the next build drew stylised images
    as styles. Each is refused, writing nothing."""
    import pytest

    from shortcutlab.biasbed.datasets import BiasbedDataError

    content, styles, vgg, dec = _inputs(tmp_path)
    listing = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for out in (content, content / "sin", styles, styles / "sin"):
        with pytest.raises(BiasbedDataError, match="--out .* lies in the"):
            stylize_folder(content, styles, out, vgg, dec, size=32, progress=False)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == listing
    res = CliRunner().invoke(app, ["biasbed", "stylize", str(content), str(styles), "--out",
                                   str(content), "--vgg-weights", str(vgg), "--decoder-weights",
                                   str(dec), "--size", "32", "--device", "cpu"])
    assert res.exit_code == 2 and "lies in the content folder" in res.output
