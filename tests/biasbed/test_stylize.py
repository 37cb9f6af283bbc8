"""`biasbed stylize`: Stylized ImageNet from a content folder, style images and AdaIN weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
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


def test_style_image_of_exactly_the_size_is_kept_and_one_pixel_less_left_out(
        tmp_path: Path) -> None:
    """The authors leave out style images *smaller* than the output size: one of exactly
    ``size`` px on its shorter side is used."""
    from shortcutlab.biasbed.stylize import load_style_image

    Image.fromarray(np.zeros((32, 48, 3), np.uint8)).save(tmp_path / "exact.png")
    Image.fromarray(np.zeros((31, 48, 3), np.uint8)).save(tmp_path / "small.png")
    exact = load_style_image(tmp_path / "exact.png", 32)
    assert exact is not None and exact.shape == (3, 32, 32)
    assert load_style_image(tmp_path / "small.png", 32) is None


@pytest.mark.parametrize("shape", [(40, 60), (60, 40)])
def test_style_image_is_cropped_at_its_centre(tmp_path: Path, shape: tuple[int, int]) -> None:
    """A landscape (portrait) style image keeps its central square: here red, with blue bands
    of 10 px left and right (top and bottom) that a corner crop would take in."""
    from shortcutlab.biasbed.stylize import load_style_image

    h, w = shape
    arr = np.zeros((h, w, 3), np.uint8)
    arr[..., 2] = 255  # blue
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    arr[top:top + side, left:left + side] = (255, 0, 0)  # red centre square
    Image.fromarray(arr).save(tmp_path / "s.png")
    for size in (40, 20):
        style = load_style_image(tmp_path / "s.png", size)
        assert style is not None and style.shape == (3, size, size)
        expected = torch.tensor([1.0, 0.0, 0.0])[:, None, None].expand(3, size, size)
        torch.testing.assert_close(style, expected, atol=1 / 255, rtol=0)


def test_every_style_image_is_drawn_uniformly() -> None:
    """Each content image gets one of the ``n_styles`` images, each equally likely: the last
    one included (numpy's ``integers`` excludes ``high``)."""
    drawn = style_assignment(6000, 3, 7)
    assert drawn.shape == (6000,) and set(drawn.tolist()) == {0, 1, 2}
    counts = np.bincount(drawn, minlength=3)
    assert (np.abs(counts - 2000) < 150).all()  # ~4.6 standard deviations (sd = 36.5)
    assert set(style_assignment(50, 1, 0).tolist()) == {0}  # a single style image


def test_adain_gets_the_requested_strength_and_the_authors_content_crop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``alpha`` is the AdaIN strength of every image, and each content image is resized
    (shorter side to 256/224 of the size) and centre-cropped, pixel for pixel torchvision's
    ``Resize``/``CenterCrop`` of the authors' script, not squashed to a square. (The test
    decoder's output hardly depends on either, so what AdaIN is given is recorded.)"""
    from torchvision.transforms import CenterCrop, Compose, Resize

    content, styles, vgg, dec = _inputs(tmp_path)
    seen: list[tuple[torch.Tensor, float]] = []
    original = AdaINStyleTransfer.forward

    def spy(self, content, style, alpha=1.0):  # type: ignore[no-untyped-def]
        seen.append((content.clone(), alpha))
        return original(self, content, style, alpha)

    monkeypatch.setattr(AdaINStyleTransfer, "forward", spy)
    stylize_folder(content, styles, tmp_path / "o", vgg, dec, size=32, alpha=0.3, batch_size=4,
                   progress=False)
    assert [(len(x), alpha) for x, alpha in seen] == [(4, 0.3), (2, 0.3)]  # 6 images
    files = sorted(content.rglob("*.png"))
    got = torch.cat([x for x, _ in seen]).mul(255).round().to(torch.uint8).permute(0, 2, 3, 1)
    for path, image in zip(files, got.numpy(), strict=True):
        with Image.open(path) as im:  # 40 x 36: resized to 41 x 37 (37 = round(32 * 256 / 224))
            want = np.asarray(Compose([Resize(37), CenterCrop(32)])(im.convert("RGB")))
        np.testing.assert_array_equal(image, want)


@pytest.mark.parametrize("alpha", [1.5, -0.1, float("nan")])
def test_alpha_outside_0_1_is_refused(tmp_path: Path, alpha: float) -> None:
    from shortcutlab.biasbed.datasets import BiasbedDataError

    with pytest.raises(BiasbedDataError, match=r"alpha must lie in \[0, 1\]"):
        stylize_folder(tmp_path / "in", tmp_path / "s", tmp_path / "o", tmp_path / "v",
                       tmp_path / "d", alpha=alpha, progress=False)
    assert list(tmp_path.iterdir()) == []
