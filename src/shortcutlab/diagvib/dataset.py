"""On-the-fly torch datasets over one split of a DiagViB-6 experiment, and export to disk.

Nothing is held in memory but the per-image class table (a few MB for 43,740 images): every
image is rendered when asked for, as a pure function of (spec hash, seed, split, index, classes),
so results do not depend on batch size, worker count or iteration order. ``__getitems__``
renders a whole DataLoader batch in one vectorised generator call. The class table and the render
seed are keyed by :meth:`ExperimentSpec.image_hash`, so paired experiments (ZGO (i, j) and
(j, i)) get identical images and differ only in their labels.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset

from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.presets import HEADS, Head
from shortcutlab.diagvib.spec import N_SELECTED, SPLITS, ExperimentSpec, assign_classes
from shortcutlab.errors import DiagvibError, SpecError, unknown_choice
from shortcutlab.utils.io import check_output_file, write_npz_streaming

if TYPE_CHECKING:
    from shortcutlab.diagvib.restyle import FactorRestyler

Backend = Literal["numpy", "torch"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)
ItemDtype = Literal["float32", "uint8"]
DTYPES: tuple[ItemDtype, ...] = get_args(ItemDtype)
ExportFormat = Literal["npz", "png"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
ItemKind = Literal["dict", "tuple"]
ITEM_KINDS: tuple[ItemKind, ...] = get_args(ItemKind)


class _Renderer(Protocol):
    def render(self, classes: np.ndarray, *, seed: int, split: str, indices: np.ndarray,
               backend: Any = ..., device: str = ...) -> Any: ...


def _default_generator() -> _Renderer:
    from shortcutlab.diagvib.render import ImageGenerator

    return ImageGenerator()


class DiagvibDataset(Dataset):
    """One split of an experiment, rendered on the fly.

    Items are dicts: ``x`` float32 (3,128,128) in [0,1], ``y`` int64 label (position of the
    predicted factor's class among its 3 selected classes), ``classes`` int64 (6,) global class
    indices in FACTORS order, ``cell`` int64 flat index of the joint (Fi, Fj) cell, ``tag`` its
    cell tag (e.g. ``"01-ood"``), ``index`` int. ``seed`` varies the pixels (not the class table).
    Pixels depend on ``(seed, spec.image_hash(), split, index, classes)``: a ZGO experiment and
    its swapped twin render the same images.
    ``dtype="uint8"`` keeps ``x`` as uint8 0..255: a quarter of the bytes through DataLoader
    workers, for consumers that convert on the accelerator.
    ``transform`` is applied to each image tensor ``x`` (e.g. a torchvision transform);
    ``items="tuple"`` gives ``(x, y)`` pairs as torchvision datasets do, for one's own loop.
    :meth:`eval` scores predictions on the split (mean-per-class accuracy per cell).
    ``head="full"``: ``y`` is the predicted factor's class index among all its classes (e.g.
    0..8 for position) and ``num_classes`` their count, for a classifier with one output per
    class as in the authors' networks (an arg-max on a class no image has counts as wrong).
    """

    num_classes = N_SELECTED

    def __init__(
        self,
        spec: ExperimentSpec,
        split: str,
        *,
        generator: _Renderer | None = None,
        backend: Backend = "numpy",
        seed: int | None = None,
        dtype: ItemDtype = "float32",
        transform: Callable[[torch.Tensor], Any] | None = None,
        items: ItemKind = "dict",
        head: Head = "selected",
    ) -> None:
        if split not in SPLITS:
            raise SpecError(unknown_choice("split", split, SPLITS))
        if backend not in BACKENDS:
            raise DiagvibError(unknown_choice("backend", backend, BACKENDS))
        if dtype not in DTYPES:
            raise DiagvibError(unknown_choice("dtype", dtype, DTYPES))
        if seed is not None and seed < 0:
            raise DiagvibError(f"seed must be >= 0 (got {seed})")
        if items not in ITEM_KINDS:
            raise DiagvibError(unknown_choice("item kind", items, ITEM_KINDS))
        if head not in HEADS:
            raise DiagvibError(unknown_choice("head", head, HEADS))
        if transform is not None and not callable(transform):
            raise DiagvibError(f"transform must be callable, got {type(transform).__name__}")
        self.transform = transform
        self.items = items
        self.spec = spec
        self.split = split
        self.backend = backend
        self.dtype = dtype
        self.seed = 0 if seed is None else int(seed)
        self.spec_hash = spec.content_hash()
        self.image_hash = spec.image_hash()
        self.render_seed = spec.render_seed(self.seed)
        self._assignment = assign_classes(spec, split)
        self.head = head
        self._labels = self._assignment.labels
        if head == "full":
            predicted = FACTORS.index(spec.predicted)
            self._labels = np.ascontiguousarray(self._assignment.classes[:, predicted])
            self.num_classes = len(FACTOR_TABLE[spec.predicted].classes)
        # Built now, not lazily: DataLoader workers then inherit it instead of each loading the
        # image sources again. For the class table alone use ``assign_classes``
        # from :mod:`shortcutlab.diagvib.spec`.
        self.generator: _Renderer = _default_generator() if generator is None else generator
        self._device_tables: dict[str, dict[str, torch.Tensor]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_device_tables"] = {}  # device copies stay in the process that made them
        return state

    # ----------------------------------------------------------------------------- tables

    @property
    def classes(self) -> np.ndarray:
        """(N, 6) global class indices, factors in FACTORS order."""
        return self._assignment.classes

    @property
    def labels(self) -> np.ndarray:
        """(N,) labels: 0..2 (``head="selected"``) or the predicted factor's class index."""
        return self._labels

    @property
    def cells(self) -> np.ndarray:
        """(N,) flat index of each image's joint cell (``3 * a + b`` for the (Fi, Fj) cell)."""
        return self._assignment.cells

    @property
    def tags(self) -> np.ndarray:
        """(N,) cell tags such as ``"01-ood"`` (``"2-id"`` for ZSO)."""
        return self._assignment.tags

    def __len__(self) -> int:
        return int(self._assignment.labels.shape[0])

    def metadata(self) -> pd.DataFrame:
        """One row per image: index, label, one class-name column per factor, tag."""
        data: dict[str, Any] = {"index": np.arange(len(self)), "label": self.labels}
        for fi, name in enumerate(FACTORS):
            data[name] = np.asarray(FACTOR_TABLE[name].classes)[self.classes[:, fi]]
        data["tag"] = self.tags
        return pd.DataFrame(data)

    # ----------------------------------------------------------------------------- rendering
    def _check_indices(self, indices: Any) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"index {int(bad)} out of range for a split of {n} images")
        return np.where(idx < 0, idx + n, idx)

    def render(self, indices: Any) -> torch.Tensor:
        """uint8 images (B, 3, 128, 128) of ``indices``, rendered in one generator call."""
        idx = self._check_indices(indices)
        images = self.generator.render(
            self.classes[idx], seed=self.render_seed, split=self.split, indices=idx,
            backend=self.backend,
        )
        return torch.as_tensor(images)

    @property
    def device_batch(self) -> Callable[[torch.Tensor, str | torch.device], dict[str, Any]] | None:
        """``device_batch(indices, device)``: a batch made on ``device`` (read on CUDA by the
        trainer's :class:`~shortcutlab.train.batches.DeviceBatches`), or None when a
        ``transform`` is set (transforms run per image on the host). See
        :meth:`batch_on_device`."""
        return None if self.transform is not None else self.batch_on_device

    def batch_on_device(self, indices: torch.Tensor, device: str | torch.device) -> dict[str, Any]:
        """``x`` uint8 (B, 3, H, W) rendered on ``device`` by the generator's torch path (equal
        to the numpy path within ±1 level; nothing passes through the host), and ``y``,
        ``classes``, ``cell`` and ``index`` as tensors there. The split's class table is copied to
        the device once. ``indices`` must be in 0..len-1: they are not checked, which would cost a
        device-to-host round trip."""
        dev = torch.device(device)
        tables = self._device_tables.get(str(dev))
        if tables is None:
            tables = {name: torch.from_numpy(np.ascontiguousarray(a)).to(dev)
                      for name, a in (("classes", self.classes), ("labels", self.labels),
                                      ("cells", self.cells))}
            self._device_tables[str(dev)] = tables
        idx = indices.to(device=dev, dtype=torch.int64)
        classes = tables["classes"][idx]
        render_on_device = getattr(self.generator, "render_on_device", None)
        if render_on_device is not None:
            x = render_on_device(classes, idx, seed=self.render_seed, split=self.split,
                                 device=dev)
        else:  # a generator without a torch path: render on the host, copy once
            x = self.render(idx.cpu().numpy()).to(dev)
        return {"x": x, "y": tables["labels"][idx], "classes": classes,
                "cell": tables["cells"][idx], "index": idx}

    def __getitems__(self, indices: list[int]) -> list[Any]:
        idx = self._check_indices(indices)
        images = self.render(idx)
        labels = torch.from_numpy(self.labels[idx])
        classes = torch.from_numpy(self.classes[idx])
        cells = torch.from_numpy(self.cells[idx])
        tags = self.tags[idx].tolist()
        # Convert per image, not as one (B,3,128,128) float block: equal-sized small blocks are
        # reused by the allocator, while a fresh 25 MB block per batch fragments the heap (peak
        # RSS over a full split +580 MB instead of +95 MB) and is slower.
        if self.dtype == "uint8":
            xs = list(images)
        else:
            xs = [images[j].to(torch.float32).div_(255.0) for j in range(len(idx))]
        if self.transform is not None:
            xs = [self.transform(x) for x in xs]
        if self.items == "tuple":
            return [(x, labels[j]) for j, x in enumerate(xs)]
        return [
            {"x": x, "y": labels[j], "classes": classes[j], "cell": cells[j], "tag": tags[j],
             "index": int(i)}
            for j, (x, i) in enumerate(zip(xs, idx, strict=True))
        ]

    def __getitem__(self, i: int) -> Any:
        return self.__getitems__([i])[0]

    def restyler(self, style: str = "", pool: str = "selected") -> FactorRestyler:
        """The restyling capability (:class:`shortcutlab.train.capabilities.Restylable`): a
        :class:`~shortcutlab.diagvib.restyle.FactorRestyler` that re-renders this split's items
        with the style factors redrawn (``style``: ``""`` = texture, or ``+``-joined factors,
        e.g. ``"texture+hue"``; ``pool``: ``selected`` classes or ``all``)."""
        from shortcutlab.diagvib.restyle import FactorRestyler

        return FactorRestyler.for_dataset(self, style, pool)

    def eval(self, y_pred: Any, indices: Any = None) -> tuple[dict[str, float], str]:
        """WILDS-style scores of ``y_pred`` (class ids or scores, one per image in order, or per
        entry of ``indices``): a flat dict (``acc_avg``, ``acc_<tag>``, ``count_<tag>``,
        ``acc_wg``, ...) and a readable string; see :mod:`shortcutlab.diagvib.evaluation`."""
        from shortcutlab.diagvib.evaluation import evaluate_dataset

        return evaluate_dataset(self, y_pred, indices)


def histogram_channel_stats(
    dataset: DiagvibDataset, n: int | None = None, batch_size: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and standard deviation of pixels in [0, 1] over the first ``n`` images,
    exactly (the trainer's :func:`shortcutlab.train.normalization.channel_stats` streams float
    moments of any dataset; this one counts a DiagViB-6 split's 8-bit pixels, for reports).

    Streams batches and keeps only a 256-bin histogram per channel, so memory is constant and the
    result is exact (integer counts), identical for any batch size. The split order is a random
    shuffle, so the first ``n`` images are a random sample.
    """
    total = len(dataset) if n is None else int(n)
    if total <= 0 or total > len(dataset):
        raise DiagvibError(f"n must be in 1..{len(dataset)} (got {n})")
    if batch_size <= 0:
        raise DiagvibError(f"batch_size must be positive (got {batch_size})")
    hist = np.zeros((3, 256), dtype=np.int64)
    for start in range(0, total, batch_size):
        images = dataset.render(np.arange(start, min(start + batch_size, total))).numpy()
        for c in range(3):
            hist[c] += np.bincount(images[:, c].reshape(-1), minlength=256)
    values = np.arange(256, dtype=np.float64) / 255.0
    count = hist.sum(axis=1).astype(np.float64)
    mean = (hist * values).sum(axis=1) / count
    var = (hist * (values[None, :] - mean[:, None]) ** 2).sum(axis=1) / count
    return mean, np.sqrt(var)


# --------------------------------------------------------------------------------- export
def _metadata_arrays(ds: DiagvibDataset, n: int) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {
        "index": np.arange(n, dtype=np.int64),
        "label": ds.labels[:n].astype(np.int64),
    }
    for fi, name in enumerate(FACTORS):
        arrays[name] = np.asarray(FACTOR_TABLE[name].classes)[ds.classes[:n, fi]]
    arrays["tag"] = ds.tags[:n].astype(str)
    return arrays


Progress = Callable[[int], None] | None


def _batches(
    ds: DiagvibDataset, n: int, batch_size: int, progress: Progress
) -> Iterator[np.ndarray]:
    """Yield uint8 numpy batches over the first ``n`` images, reporting progress."""
    for start in range(0, n, batch_size):
        batch = ds.render(np.arange(start, min(start + batch_size, n))).numpy()
        if batch.ndim != 4 or batch.shape[1] != 3 or batch.dtype != np.uint8:
            raise DiagvibError(
                f"generator returned {batch.dtype} {batch.shape}, expected uint8 (B, 3, H, W)"
            )
        yield batch
        if progress is not None:
            progress(batch.shape[0])


def _write_npz(ds: DiagvibDataset, n: int, out: Path, batch_size: int, progress: Progress) -> None:
    """Stream an uncompressed .npz (loadable by ``numpy.load``) batch by batch."""
    batches = _batches(ds, n, batch_size, progress)
    first = next(batches)  # the array header needs the image size: take it from batch one
    write_npz_streaming(out, "images", (n, *first.shape[1:]), itertools.chain([first], batches),
                        _metadata_arrays(ds, n))


def _check_png_target(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DiagvibError(f"output folder {str(out)!r} already exists and is not empty")


def _write_png(ds: DiagvibDataset, n: int, out: Path, batch_size: int, progress: Progress) -> None:
    """Write ``out/images/NNNNNN.png`` and ``out/metadata.csv`` into a temporary folder, then
    rename it onto ``out`` (which must not exist or be empty)."""
    from PIL import Image

    _check_png_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        (tmp / "images").mkdir()
        width = max(6, len(str(n - 1)))
        files = [f"images/{i:0{width}d}.png" for i in range(n)]
        images = itertools.chain.from_iterable(_batches(ds, n, batch_size, progress))
        for file, img in zip(files, images, strict=True):
            Image.fromarray(np.ascontiguousarray(img.transpose(1, 2, 0))).save(tmp / file)
        arrays = _metadata_arrays(ds, n)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["file", *arrays])
        writer.writerows(zip(files, *(a.tolist() for a in arrays.values()), strict=True))
        (tmp / "metadata.csv").write_text(buf.getvalue(), encoding="utf-8")
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def export_split(
    spec: ExperimentSpec,
    split: str,
    out: str | os.PathLike[str],
    *,
    fmt: ExportFormat = "npz",
    limit: int | None = None,
    generator: _Renderer | None = None,
    seed: int | None = None,
    batch_size: int = 128,
    progress: Progress = None,
) -> Path:
    """Write the first ``limit`` images (default: all) of ``split`` to disk, atomically.

    ``npz``: arrays ``images`` uint8 (N,3,H,W) (H=W=128 by default), ``label``, ``index``, one
    class-name array per factor and ``tag``; written in batches, so memory stays bounded.
    ``png``: a folder with ``images/*.png`` and ``metadata.csv`` (file, index, label, factors,
    tag). ``progress`` is called with the number of images finished after every batch.
    """
    ds, n = prepare_export(spec, split, out, fmt=fmt, limit=limit, generator=generator,
                           seed=seed, batch_size=batch_size)
    return write_export(ds, n, out, fmt=fmt, batch_size=batch_size, progress=progress)


def write_export(ds: DiagvibDataset, n: int, out: str | os.PathLike[str], *,
                 fmt: ExportFormat = "npz", batch_size: int = 128,
                 progress: Progress = None) -> Path:
    """Write the first ``n`` images of ``ds`` as :func:`prepare_export` checked them."""
    out = Path(out)
    if fmt == "npz":
        _write_npz(ds, n, out, batch_size, progress)
    else:
        _write_png(ds, n, out, batch_size, progress)
    return out


def prepare_export(
    spec: ExperimentSpec,
    split: str,
    out: str | os.PathLike[str],
    *,
    fmt: ExportFormat = "npz",
    limit: int | None = None,
    generator: _Renderer | None = None,
    seed: int | None = None,
    batch_size: int = 128,
) -> tuple[DiagvibDataset, int]:
    """Every check of :func:`export_split` (format, split, seed, limit, a target that can take
    the file), before anything is rendered: the dataset and the number of images to write. A
    caller that shows progress calls it before opening its bar."""
    if fmt not in EXPORT_FORMATS:
        raise DiagvibError(unknown_choice("export format", fmt, EXPORT_FORMATS))
    if batch_size <= 0:
        raise DiagvibError(f"batch_size must be positive (got {batch_size})")
    if limit is not None and limit <= 0:
        raise DiagvibError(f"limit must be a positive number of images (got {limit})")
    out = Path(out)
    if fmt == "png":
        _check_png_target(out)
    else:  # refuse a target that cannot take the file before rendering the split
        check_output_file(out)
    ds = DiagvibDataset(spec, split, generator=generator, seed=seed)
    return ds, len(ds) if limit is None else min(int(limit), len(ds))
