"""The renderer: each factor class shows in the picture as its name says; numpy and torch
agree; images are pure functions of (seed, split, index, classes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.colors import rgb_to_hsv, to_rgb
from scipy.ndimage import map_coordinates

from shortcutlab.diagvib import render as render_module
from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.render import (
    BACKGROUND,
    ImageGenerator,
    hls_to_rgb,
    position_to_pixels,
    random_classes,
    stream_uniforms,
)
from shortcutlab.diagvib.sources import DIGIT_SIZE, SPLITS, TextureSource
from shortcutlab.errors import DiagvibError

F = {name: j for j, name in enumerate(FACTORS)}


@pytest.fixture(scope="module")
def gen() -> ImageGenerator:
    return ImageGenerator()


def _object(images: np.ndarray, threshold: int = 24) -> np.ndarray:
    """Object pixels: any channel far from the grey background."""
    return np.abs(images.astype(np.int16) - BACKGROUND).max(axis=1) > threshold


def _centroid(mask: np.ndarray) -> np.ndarray:
    centres = np.arange(mask.shape[-1]) + 0.5
    area = mask.sum(axis=(1, 2))
    return np.stack([(mask.sum(2) * centres).sum(1), (mask.sum(1) * centres).sum(1)], 1) / area[
        :, None]


def _bbox_centre(mask: np.ndarray) -> np.ndarray:
    """Centre of each mask's bounding box, in continuous pixel coordinates (row, col)."""
    out = []
    for m in mask:
        rows, cols = np.flatnonzero(m.any(1)), np.flatnonzero(m.any(0))
        out.append([(rows[0] + rows[-1] + 1) / 2, (cols[0] + cols[-1] + 1) / 2])
    return np.array(out)


def _touches_border(mask: np.ndarray) -> np.ndarray:
    return mask[:, 0].any(1) | mask[:, -1].any(1) | mask[:, :, 0].any(1) | mask[:, :, -1].any(1)


def _render(gen: ImageGenerator, classes: np.ndarray, seed: int = 0, split: str = "train"):
    idx = np.arange(len(classes))
    return (gen.render(classes, seed=seed, split=split, indices=idx),
            gen.realisations(classes, seed=seed, split=split, indices=idx))


def test_every_position_class_by_centroid(gen: ImageGenerator) -> None:
    region = np.array(get_factor("position").regions) * 128  # (9, 2, 2) pixels
    for c in range(9):
        classes = random_classes(16, seed=c, fixed={"position": get_factor("position").classes[c]})
        images, real = _render(gen, classes, seed=c)
        mask = _object(images)
        centroid = _centroid(mask)
        lo, hi = region[c, :, 0] - 4, region[c, :, 1] + 4  # clipped corners pull inwards a bit
        assert ((centroid >= lo) & (centroid <= hi)).all(), (c, centroid)
        inside = ~_touches_border(mask)
        assert inside.sum() >= 8
        # the bounding box's centre (not the centre of mass) lands on the position realisation
        centre = position_to_pixels(real["position"][inside], 128)
        # (within 1.5 px: the mask keeps pixels above 150, the box is measured above 100)
        err = np.abs(_bbox_centre(mask[inside]) - centre)
        assert err.max() < 1.5 and err.mean() < 0.6, c
    # rows are vertical: "top" means small row numbers
    top = random_classes(4, seed=1, fixed={"position": "top-center", "scale": "small"})
    images, _ = _render(gen, top)
    assert (_object(images)[:, 64:].sum(axis=(1, 2)) == 0).all()


def test_every_hue_class_by_mean_hue(gen: ImageGenerator) -> None:
    for c, (lo, hi) in enumerate(r[0] for r in get_factor("hue").regions):
        classes = random_classes(12, seed=10 + c, fixed={"hue": get_factor("hue").classes[c]})
        images, real = _render(gen, classes, seed=c)
        rgb = images.transpose(0, 2, 3, 1) / 255.0
        angle = np.deg2rad(rgb_to_hsv(rgb)[..., 0] * 360)
        weight = (rgb.max(-1) - rgb.min(-1)) * _object(images)
        mean = np.rad2deg(np.arctan2((np.sin(angle) * weight).sum((1, 2)),
                                     (np.cos(angle) * weight).sum((1, 2)))) % 360
        assert (np.abs((mean - real["hue"] + 180) % 360 - 180) < 1.0).all()
        offset = (mean - lo) % 360  # red wraps: 345..375
        assert (offset <= hi - lo + 0.5).all() or (offset >= 359.5).all(), (c, mean)
        # and the picture shows the colour the class is named after: within the class's half
        # width of that colour's hue (matplotlib's named colour, an independent table)
        name = get_factor("hue").classes[c]
        named = rgb_to_hsv(np.array(to_rgb(name)))[0] * 360
        distance = np.abs((mean - named + 180) % 360 - 180)
        assert (distance <= (hi - lo) / 2 + 0.5).all(), (name, mean)


def test_every_lightness_class_by_brightness(gen: ImageGenerator) -> None:
    n = 12
    levels = []
    for c in range(4):
        name = get_factor("lightness").classes[c]
        classes = random_classes(n, seed=20, fixed={"lightness": name})
        images, real = _render(gen, classes, seed=4)
        rgb = images.transpose(0, 2, 3, 1) / 255.0
        light = (rgb.max(-1) + rgb.min(-1)) / 2  # HLS lightness
        mask = _object(images)
        levels.append((light * mask).sum((1, 2)) / mask.sum((1, 2)))
        lo, hi = np.array(get_factor("lightness").regions[c]).T
        assert ((real["lightness"] >= lo) & (real["lightness"] <= hi)).all()
    levels = np.array(levels)  # (4 classes, n images), same images apart from lightness
    assert (np.diff(levels, axis=0) > 0.05).all()  # dark < darker < brighter < bright
    assert levels[0].max() < 0.4 and levels[3].min() > 0.6


def test_every_scale_class_by_size(gen: ImageGenerator) -> None:
    sizes, ratios = [], []
    # one flat colour (texture 1 -> the dark colour): a pixel's distance from the background is
    # proportional to how much of it the object covers
    flat = ImageGenerator(gen.shapes, _constant_textures(1.0))
    for c in range(5):
        classes = random_classes(12, seed=30, fixed={"scale": get_factor("scale").classes[c],
                                                     "position": "center-center",
                                                     "lightness": "dark"})
        images, real = _render(flat, classes, seed=5)
        mask = _object(images)
        extent = np.maximum(mask.any(2).sum(1), mask.any(1).sum(1))
        dark = hls_to_rgb(real["hue"], real["lightness"][:, 0]).mean(1) * 255
        cover = (BACKGROUND - images.astype(float).mean(1)) / (BACKGROUND - dark)[:, None, None]
        sizes.append(np.sqrt(cover.sum((1, 2))))
        ratios.append(extent / (DIGIT_SIZE * real["scale"]))
    sizes = np.array(sizes)
    assert (np.diff(sizes, axis=0) > 0).all()  # monotone in the scale class, digit for digit
    ratios = np.concatenate(ratios)
    # longer side = 28 px x scale (a faint stroke end may fall below the mask threshold)
    assert ratios.min() > 0.8 and ratios.max() < 1.08 and abs(np.median(ratios) - 1) < 0.04
    # classes separated: each class's size relative to the smallest is distinct
    rel = sizes / sizes[0]
    assert (rel[1:].min(axis=1) > rel[:-1].max(axis=1)).all()


def test_shapes_and_textures_come_from_their_sources(gen: ImageGenerator) -> None:
    classes = random_classes(40, seed=7, split="test")
    real = gen.realisations(classes, seed=7, split="test", indices=np.arange(40))
    s = SPLITS.index("test")
    start = gen.shapes.start[s, classes[:, F["shape"]]]
    count = gen.shapes.count[s, classes[:, F["shape"]]]
    assert ((real["shape_id"] >= start) & (real["shape_id"] < start + count)).all()
    # test images never use a training digit
    train_ids = set(gen.shapes.source_index[: gen.shapes.count[0].sum()].tolist())
    assert not train_ids & set(gen.shapes.source_index[real["shape_id"]].tolist())
    tex_shape = gen.textures.shapes[classes[:, F["texture"]]]
    off = real["texture_offset"]
    assert (off >= 1).all() and (off + gen.mask_size + 1 < tex_shape).all()
    # the object's silhouette is the digit mask, scaled about its centre and moved to the position
    one = random_classes(4, seed=7, fixed={"position": "center-center", "lightness": "bright"})
    images, real = _render(gen, one)
    for k in range(4):
        got = _object(images[k:k + 1], threshold=48)[0]
        centre = position_to_pixels(real["position"][k], 128)
        # padded-mask coordinate of every pixel centre, looked up bilinearly (scipy)
        cy, cx = ((np.arange(128) + 0.5 - centre[a]) / real["scale"][k]
                  + (gen.mask_size - 1) / 2 + 1 for a in (0, 1))
        lookup = map_coordinates(gen.shapes.padded[real["shape_id"][k]].astype(float),
                                 np.meshgrid(cy, cx, indexing="ij"), order=1, cval=0.0)
        expect = lookup > 0.3  # the object threshold: 48 of a colour ~130 levels off the grey
        iou = (got & expect).sum() / (got | expect).sum()
        assert iou > 0.85, (k, iou)


def test_realisations_within_class_regions(gen: ImageGenerator) -> None:
    classes = random_classes(2000, seed=9)
    real = gen.realisations(classes, seed=9, split="train", indices=np.arange(2000))
    for name, key in (("position", "position"), ("lightness", "lightness"), ("scale", "scale")):
        reg = np.array(get_factor(name).regions)[classes[:, F[name]]]  # (B, dims, 2)
        val = real[key].reshape(len(classes), -1)
        assert ((val >= reg[..., 0]) & (val <= reg[..., 1])).all(), name
    centre = np.array([360.0, 60, 120, 180, 240, 300])[classes[:, F["hue"]]]
    assert (np.abs((real["hue"] - centre + 180) % 360 - 180) <= 15).all()
    # uniform within a region: a full spread, every image unique
    assert np.unique(real["scale"]).size == 2000
    u = stream_uniforms(0, "x", "train", np.arange(20000), 2)
    assert abs(u.mean() - 0.5) < 0.01 and np.histogram(u, 10, (0, 1))[0].min() > 3700


def test_digit_longer_side_is_28_px_at_normal_scale(gen: ImageGenerator) -> None:
    classes = random_classes(40, seed=31, fixed={"scale": "normal", "position": "center-center",
                                                 "lightness": "dark"})
    images, real = _render(gen, classes, seed=31)
    mask = _object(images, threshold=40)
    extent = np.maximum(mask.any(2).sum(1), mask.any(1).sum(1))
    assert DIGIT_SIZE == 28
    side = extent / real["scale"]
    # the box is measured above grey 100, the mask keeps pixels above 150: never longer than
    # 28 px (+ anti-aliasing), rarely much shorter
    assert side.max() <= 29.5 and abs(np.median(side) - 28) <= 1.0, side
    assert (np.abs(side - 28) <= 1.5).mean() >= 0.8, side


def test_background_is_grey_127(gen: ImageGenerator) -> None:
    classes = random_classes(8, seed=32, fixed={"position": "center-center", "scale": "small"})
    images, _ = _render(gen, classes, seed=32)
    assert BACKGROUND == 127
    assert (images[:, :, :16, :16] == 127).all() and (images[:, :, -16:, -16:] == 127).all()
    assert (images[:, :, 60:68, 60:68] != 127).any()  # the object is drawn over it


def _constant_textures(value: float) -> TextureSource:
    return TextureSource([np.full((64, 64), value, np.float32)] * 5, origin=f"constant {value}")


def test_texture_polarity_bright_texture_takes_dark_colour(gen: ImageGenerator) -> None:
    """As in the authors' painter: texture value 1 gives the colour of the dark lightness value,
    texture value 0 the bright one."""
    classes = random_classes(6, seed=33, fixed={"position": "center-center", "scale": "large"})
    idx = np.arange(6)
    real = gen.realisations(classes, seed=33, split="train", indices=idx)
    dark = hls_to_rgb(real["hue"], real["lightness"][:, 0]) * 255
    bright = hls_to_rgb(real["hue"], real["lightness"][:, 1]) * 255
    for value, expect in ((1.0, dark), (0.0, bright)):
        flat = ImageGenerator(gen.shapes, _constant_textures(value))
        images = flat.render(classes, seed=33, split="train", indices=idx)
        for k in range(6):
            mask = _object(images[k:k + 1], threshold=1)[0]
            pixels = images[k][:, mask].T.astype(float)  # (n, 3)
            # the most common object colour (edges are blended with the background)
            colours, counts = np.unique(pixels, axis=0, return_counts=True)
            mode = colours[counts.argmax()]
            assert np.abs(mode - expect[k]).max() <= 1.0, (value, k, mode, expect[k])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_object_colour_rounds_to_the_nearest_level(gen: ImageGenerator, backend: str) -> None:
    """Inside the digit (mask 1) a flat texture of 0 shows the bright colour exactly, rounded to
    the nearest of the 256 levels: round(255 * colorsys.hls_to_rgb(hue, bright, 1)), the
    standard library's HLS, not the renderer's. (Truncating would darken about half the
    channels by one level; the numpy/torch comparison allows +-1 and cannot see it.)"""
    import colorsys

    flat = ImageGenerator(gen.shapes, _constant_textures(0.0))
    classes = random_classes(24, seed=34, fixed={"position": "center-center", "scale": "large"})
    idx = np.arange(24)
    images = np.asarray(flat.render(classes, seed=34, split="train", indices=idx,
                                    backend=backend))
    real = flat.realisations(classes, seed=34, split="train", indices=idx)
    checked = 0
    for k in range(24):
        want = 255 * np.array(colorsys.hls_to_rgb(real["hue"][k] / 360,
                                                  real["lightness"][k, 1], 1.0))
        clear = np.abs(want % 1 - 0.5) > 0.01  # not too close to a tie for float32
        inside = _object(images[k:k + 1], threshold=1)[0]
        colours, counts = np.unique(images[k][:, inside].T, axis=0, return_counts=True)
        mode = colours[counts.argmax()]  # the interior colour (edges blend with the grey)
        assert (mode[clear] == np.floor(want[clear] + 0.5)).all(), (k, mode, want)
        checked += int((clear & (want % 1 > 0.5)).sum())
    assert checked >= 10  # channels where rounding and truncating differ


def test_negative_class_indices_are_refused_not_wrapped(gen: ImageGenerator) -> None:
    """-1 would index the last class (numpy wraps): an image of class 9 labelled -1."""
    classes = random_classes(3, seed=0)
    for name in FACTORS:
        bad = classes.copy()
        bad[2, F[name]] = -1
        with pytest.raises(DiagvibError, match=f"unknown {name} class index -1; valid choices"):
            gen.render(bad, seed=0, split="train", indices=np.arange(3))
        with pytest.raises(DiagvibError, match=f"unknown {name} class index -1"):
            gen.render(bad, seed=0, split="train", indices=np.arange(3), backend="torch")


def test_image_indices_from_2_to_the_58_are_refused(gen: ImageGenerator) -> None:
    """Draw j of image i is stream output i * 16 + j in uint64: image i + 2**60 would repeat
    image i's draws, so indices stop well below (2**58 - 1 is the largest accepted)."""
    i = np.array([5, 5 + 2**60], dtype=np.uint64)
    u = stream_uniforms(0, "diagvib-render", "train", i)
    assert (u[0] == u[1]).all()  # why the refusal matters: the counter wraps
    classes = random_classes(2, seed=0)
    ok = gen.realisations(classes, seed=0, split="train", indices=np.array([0, 2**58 - 1]))
    assert ok["scale"].shape == (2,)
    for big in (2**58, 2**60 + 5, 2**62):
        for backend in ("numpy", "torch"):
            with pytest.raises(DiagvibError, match=r"image indices must be in \[0, 2\*\*58\)"):
                gen.render(classes, seed=0, split="train", indices=np.array([0, big]),
                           backend=backend)


def test_hls_colours() -> None:
    rgb = hls_to_rgb(np.array([0.0, 120.0, 240.0, 60.0]), np.array([0.5, 0.5, 0.25, 1.0]))
    assert np.allclose(rgb, [[1, 0, 0], [0, 1, 0], [0, 0, 0.5], [1, 1, 1]])


def test_numpy_and_torch_agree(gen: ImageGenerator) -> None:
    classes = random_classes(96, seed=11)
    idx = np.arange(100, 196)
    a = gen.render(classes, seed=11, split="val", indices=idx)
    b = gen.render(classes, seed=11, split="val", indices=idx, backend="torch")
    assert isinstance(b, torch.Tensor) and b.dtype == torch.uint8 and b.shape == a.shape
    assert a.dtype == np.uint8 and a.shape == (96, 3, 128, 128)
    assert np.abs(a.astype(np.int16) - b.numpy().astype(np.int16)).max() <= 1


def test_pure_function_of_seed_split_index(gen: ImageGenerator) -> None:
    classes = random_classes(37, seed=12)
    idx = np.arange(37) * 3 + 5
    whole = gen.render(classes, seed=12, split="train", indices=idx)
    order = np.random.default_rng(0).permutation(37)
    parts = np.empty_like(whole)
    for chunk in np.array_split(order, 6):  # other batch sizes and order
        parts[chunk] = gen.render(classes[chunk], seed=12, split="train", indices=idx[chunk])
    assert (parts == whole).all()
    # the per-object window never cuts the object: a full-frame computation gives the same bytes
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(render_module, "_WINDOW_MULTIPLE", 10_000)  # windows = whole frames
        full = gen.render(classes, seed=12, split="train", indices=idx)
    assert (full == whole).all()
    assert not (gen.render(classes, seed=13, split="train", indices=idx) == whole).all()
    other = gen.render(classes, seed=12, split="test", indices=idx)
    assert (np.abs(other.astype(int) - whole).sum(axis=(1, 2, 3)) > 0).all()


def test_other_image_sizes(gen: ImageGenerator) -> None:
    small = ImageGenerator(gen.shapes, gen.textures, image_size=64)
    classes = random_classes(6, seed=2, fixed={"scale": "normal", "position": "center-center"})
    images = small.render(classes, seed=2, split="train", indices=np.arange(6))
    assert images.shape == (6, 3, 64, 64)
    mask = _object(images)
    extent = np.maximum(mask.any(2).sum(1), mask.any(1).sum(1))
    assert (np.abs(extent - DIGIT_SIZE / 2) <= 3).all()
    for bad in (16, 100.5, "128", 4096):
        with pytest.raises(DiagvibError, match="image size .* not supported; valid choices"):
            ImageGenerator(gen.shapes, gen.textures, image_size=bad)


def test_bad_input(gen: ImageGenerator) -> None:
    ok = random_classes(2, seed=0)
    with pytest.raises(DiagvibError, match="unknown split 'dev'; valid choices: train, val, test"):
        gen.render(ok, seed=0, split="dev", indices=np.arange(2))
    with pytest.raises(DiagvibError, match="unknown backend 'jax'; valid choices: numpy, torch"):
        gen.render(ok, seed=0, split="train", indices=np.arange(2), backend="jax")
    with pytest.raises(DiagvibError, match=r"shape \(B, 6\)"):
        gen.render(ok[:, :5], seed=0, split="train", indices=np.arange(2))
    bad = ok.copy()
    bad[1, F["hue"]] = 6
    with pytest.raises(DiagvibError, match="unknown hue class index 6; valid choices: 0, 1"):
        gen.render(bad, seed=0, split="train", indices=np.arange(2))
    with pytest.raises(DiagvibError, match="3 indices for 2 class rows"):
        gen.render(ok, seed=0, split="train", indices=np.arange(3))
    with pytest.raises(DiagvibError, match="non-negative|must be in"):
        gen.render(ok, seed=0, split="train", indices=np.array([0, -1]))
    with pytest.raises(DiagvibError, match="seed must be a non-negative integer, got -3"):
        gen.render(ok, seed=-3, split="train", indices=np.arange(2))
    empty = gen.render(ok[:0], seed=0, split="train", indices=np.arange(0))
    assert empty.shape == (0, 3, 128, 128)


def test_same_bytes_in_a_fresh_process(gen: ImageGenerator) -> None:
    """Image i depends only on (seed, split, i): a new interpreter rendering the same indices in
    other batches, in reverse order, gives the same bytes."""
    import hashlib
    import subprocess
    import sys

    classes = random_classes(np.arange(40, 64), seed=21, split="val")
    idx = np.arange(40, 64)
    here = hashlib.sha256(gen.render(classes, seed=21, split="val", indices=idx).tobytes())
    code = (
        "import hashlib, numpy as np\n"
        "from shortcutlab.diagvib.render import ImageGenerator, random_classes\n"
        "gen = ImageGenerator()\n"
        "idx = np.arange(40, 64)\n"
        "classes = random_classes(idx, seed=21, split='val')\n"
        "parts = [gen.render(classes[a:a + 5], seed=21, split='val', indices=idx[a:a + 5])\n"
        "         for a in range(20, -1, -5)]\n"
        "print(hashlib.sha256(np.concatenate(parts[::-1]).tobytes()).hexdigest())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=600)
    assert out.stdout.strip() == here.hexdigest()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_path_agrees_with_numpy(gen: ImageGenerator) -> None:
    classes = random_classes(64, seed=14)
    idx = np.arange(64)
    a = gen.render(classes, seed=14, split="train", indices=idx)
    b = gen.render(classes, seed=14, split="train", indices=idx, backend="torch", device="cuda")
    assert b.device.type == "cuda"
    assert np.abs(a.astype(np.int16) - b.cpu().numpy().astype(np.int16)).max() <= 1
    # realisations on the GPU are the numpy ones, bit for bit (int64 SplitMix64, float64)
    got = gen._realisations_torch(
        gen._tables(torch.device("cuda")), torch.from_numpy(classes).cuda(),
        torch.from_numpy(idx).cuda(), render_module._stream_key(14, "diagvib-render", "train"),
        SPLITS.index("train"))
    want = gen.realisations(classes, seed=14, split="train", indices=idx)
    for name, value in got.items():
        assert (value.cpu().numpy() == want[name]).all(), name
    # device-resident inputs, no host copies: the same images
    c = gen.render_on_device(torch.from_numpy(classes).cuda(), torch.from_numpy(idx).cuda(),
                             seed=14, split="train")
    assert torch.equal(c, b)


# -- the torch path designed for the GPU (checked here on CPU; on CUDA when there is one) ------


def test_torch_random_stream_is_bit_identical_to_numpy() -> None:
    idx = np.array([0, 1, 7, 123_456_789, 2**40 + 3, 2**58 - 1])
    for seed, split in ((0, "train"), (2**40, "test")):
        a = stream_uniforms(seed, "diagvib-render", split, idx)
        b = render_module.stream_uniforms_torch(seed, "diagvib-render", split,
                                                torch.from_numpy(idx))
        assert b.dtype == torch.float64 and (b.numpy() == a).all()
        assert not (a == stream_uniforms(seed + 1, "diagvib-render", split, idx)).all()


def test_device_realisations_equal_the_numpy_ones(gen: ImageGenerator) -> None:
    classes = random_classes(300, seed=3, split="test")
    idx = np.arange(1000, 1300)
    want = gen.realisations(classes, seed=3, split="test", indices=idx)
    got = gen._realisations_torch(
        gen._tables(torch.device("cpu")), torch.from_numpy(classes), torch.from_numpy(idx),
        render_module._stream_key(3, "diagvib-render", "test"), SPLITS.index("test"))
    assert set(got) == set(want) - {"shape_instance"}
    for name, value in got.items():
        assert (value.numpy() == want[name]).all(), name


def test_render_on_device_takes_device_tensors_and_chunks_freely(
        gen: ImageGenerator, monkeypatch: pytest.MonkeyPatch) -> None:
    classes = random_classes(40, seed=5)
    idx = np.arange(500, 540)
    ref = gen.render(classes, seed=5, split="train", indices=idx)
    whole = gen.render_on_device(torch.from_numpy(classes), torch.from_numpy(idx), seed=5,
                                 split="train")
    assert whole.dtype == torch.uint8 and whole.shape == (40, 3, 128, 128)
    assert np.abs(whole.numpy().astype(np.int16) - ref).max() <= 1
    # internal chunks of 3 images, a reused output buffer, bf16 autocast around the call (as in
    # training with precision="bf16"): the same bytes
    monkeypatch.setattr(render_module, "_TORCH_PIXELS", 3 * 128 * 128)
    out = torch.full((40, 3, 128, 128), 7, dtype=torch.uint8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        again = gen.render_on_device(classes, idx, seed=5, split="train", out=out)
    assert again.data_ptr() == out.data_ptr() and torch.equal(again, whole)
    with pytest.raises(DiagvibError, match="out must be a uint8 array of shape"):
        gen.render_on_device(classes, idx, seed=5, split="train", out=out[:3])


def test_torch_path_at_other_image_sizes(gen: ImageGenerator) -> None:
    classes = random_classes(12, seed=6)
    for size in (32, 200):
        other = ImageGenerator(gen.shapes, gen.textures, image_size=size)
        a = other.render(classes, seed=6, split="val", indices=np.arange(12))
        b = other.render(classes, seed=6, split="val", indices=np.arange(12), backend="torch")
        assert b.shape == (12, 3, size, size)
        assert np.abs(a.astype(np.int16) - b.numpy()).max() <= 1


def test_numpy_render_into_a_reused_buffer(gen: ImageGenerator) -> None:
    classes = random_classes(20, seed=8)
    idx = np.arange(20)
    fresh = gen.render(classes, seed=8, split="train", indices=idx)
    buffer = np.full((20, 3, 128, 128), 3, dtype=np.uint8)  # stale content must not survive
    out = gen.render(classes, seed=8, split="train", indices=idx, out=buffer)
    assert out is buffer and (out == fresh).all()
    with pytest.raises(DiagvibError, match="out must be a uint8 array"):
        gen.render(classes, seed=8, split="train", indices=idx, out=buffer.astype(np.int16))


def test_numpy_path_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from shortcutlab.diagvib.render import ImageGenerator, random_classes\n"
            "ImageGenerator().render(random_classes(4, seed=0), seed=0, split='train',\n"
            "                        indices=np.arange(4))\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=600)
    assert out.stdout.strip() == "False"
