"""Datasets for BiasBed runs: any image folders the user points to, and DiagViB-6 experiments.

An image-folder experiment is a training folder, a validation folder (same distribution as
training; used by the best-validation selection rule) and any number of named test folders, each
laid out as ``<root>/<class name>/<image files>`` (torchvision's ImageFolder layout). A *class
map* relates label spaces: it maps folder class names to labels (e.g. the 1000 ImageNet WordNet
ids to the 16 Geirhos et al. categories). With a map, the label space is the sorted set of its
targets; a folder class is labelled by the map, or by its own name when that name is already a
label (so a 16-class cue-conflict folder and a 1000-class ImageNet folder can be used together);
classes outside the label space are skipped and counted in ``skipped``. Without a map, the label
space is the training folder's class names.

Items are dicts ``{"x": float32 (3, S, S) in [0, 1], "y": int64, "index": int}``, the format
DiagViB-6 datasets use (those add ``"classes"``).

**BiasBed's own setting** (``label_space="imagenet1k"``): the model is a 1000-class ImageNet
classifier (training and validation folders hold WordNet-id class folders), and every test
folder is scored through a *head* (:mod:`.imagenet`): the 16 Geirhos categories by averaging
their member logits, ImageNet-A/R by their 200 classes, 1000-class folders (ImageNet,
ImageNet-Sketch, DeepAugment) by all logits; nothing is skipped.

Preprocessing: ``preprocess="biasbed"`` is the authors' pipeline (their ``ImageNet1k`` and
``ImageNetStylized`` loaders): training images are a RandomResizedCrop of ``image_size`` (256)
with scale (0.5, 1) and aspect ratio (0.8, 1), flipped half of the time; ImageNet-style
evaluation sets (1000-class and 200-class heads) take the centre 224/256 of the shorter side at
``image_size``; the 16-class sets (cue-conflict, edge, silhouette, sketch: their torchvision
loaders) are resized to 256 and centre-cropped to 224 (``image_size`` · 224/256).
``preprocess="imagenet"`` is torchvision's ImageNet recipe (RandomResizedCrop with its default
scale (0.08, 1) and ratio (3/4, 4/3); resize to 256/224 of the crop size and centre crop for
evaluation), ``resize`` a plain resize and centre crop. ImageNet normalisation is the training
preset's ``normalization``, which the ``biasbed`` preset sets.

``metric``: ``top1`` (the fraction of correct predictions, what BiasBed reports) or
``mean_per_class`` (recall averaged over classes); ``auto`` is ``top1`` in the ``imagenet1k``
label space and ``mean_per_class`` otherwise. Datasets carry it as ``metric``, which the trainer
reads.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from shortcutlab.errors import DataNotFoundError, ShortcutlabError, unknown_choice
from shortcutlab.utils.io import read_json_file, read_text_file

__all__ = [
    "IMAGE_EXTENSIONS",
    "LABEL_SPACES",
    "METRICS",
    "PREPROCESSING",
    "BiasbedDataError",
    "FolderExperiment",
    "ImageFolderDataset",
    "load_class_map",
    "parse_dataset",
]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".tif", ".tiff", ".webp")
#: ``map``: the class map's targets (or the training classes); ``imagenet1k``: BiasBed's setting.
LABEL_SPACES = ("map", "imagenet1k")
#: ``resize``: shorter side to the size, centre crop; ``biasbed``: the authors' pipeline;
#: ``imagenet``: torchvision's ImageNet recipe (see the module docstring).
PREPROCESSING = ("resize", "biasbed", "imagenet")
#: Accuracy of a test set: top-1, or recall averaged over classes (``auto``: see the docstring).
METRICS = ("auto", "top1", "mean_per_class")
#: The authors' RandomResizedCrop parameters (scale, ratio) for ``preprocess="biasbed"``.
BIASBED_CROP = ((0.5, 1.0), (0.8, 1.0))
#: torchvision's RandomResizedCrop defaults, for ``preprocess="imagenet"``.
TORCHVISION_CROP = ((0.08, 1.0), (3 / 4, 4 / 3))


class BiasbedDataError(ShortcutlabError):
    """Bad dataset specification, folder layout or class map."""


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a (small) file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_class_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a class map ``source class -> label`` from CSV or JSON.

    CSV: two columns ``source,target`` (a header row naming them is optional). JSON: either an
    object ``{"source": "target", ...}`` or ``{"target": ["source", ...], ...}``.
    """
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"class map file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    mapping: dict[str, str] = {}
    if suffix == ".json":
        data = read_json_file(path, "class map", BiasbedDataError)
        if not isinstance(data, dict):
            raise BiasbedDataError(f"class map {str(path)!r} must be a JSON object")
        for key, value in data.items():
            sources = [value] if isinstance(value, str) else value
            if isinstance(value, str):
                _add(mapping, str(key), value, path)
            elif isinstance(sources, list) and all(isinstance(s, str) for s in sources):
                for source in sources:
                    _add(mapping, source, str(key), path)
            else:
                raise BiasbedDataError(
                    f"class map {str(path)!r}: entry {key!r} must be a string or a list of "
                    f"strings, got {value!r}"
                )
    elif suffix == ".csv":
        text = read_text_file(path, "class map", BiasbedDataError).removeprefix("\ufeff")
        rows = [r for r in csv.reader(io.StringIO(text, newline=""))
                if r and any(c.strip() for c in r)]
        if rows and [c.strip().lower() for c in rows[0][:2]] == ["source", "target"]:
            rows = rows[1:]
        for n, row in enumerate(rows, start=1):
            if len(row) < 2 or not row[0].strip() or not row[1].strip():
                raise BiasbedDataError(
                    f"class map {str(path)!r} row {n}: need two columns source,target; got {row}"
                )
            _add(mapping, row[0].strip(), row[1].strip(), path)
    else:
        raise BiasbedDataError(
            unknown_choice("class map format", suffix or path.name, (".csv", ".json"))
        )
    if not mapping:
        raise BiasbedDataError(f"class map {str(path)!r} is empty")
    return mapping


def _add(mapping: dict[str, str], source: str, target: str, path: Path) -> None:
    if source in mapping and mapping[source] != target:
        raise BiasbedDataError(
            f"class map {str(path)!r} maps {source!r} to both {mapping[source]!r} and {target!r}"
        )
    mapping[source] = target


def to_rgb(im: Image.Image) -> Image.Image:
    """``im`` as 8-bit RGB; 16-bit greyscale (PIL modes ``I;16*`` and ``I``, as 16-bit PNG, TIFF
    and PPM files open) scaled from 0-65535 to 0-255, which ``convert`` would clip at 255."""
    if im.mode == "I" or im.mode.startswith("I;16"):
        wide = np.asarray(im, dtype=np.float64).clip(0, 65535)
        return Image.fromarray(np.round(wide * (255 / 65535)).astype(np.uint8)).convert("RGB")
    return im.convert("RGB")


def list_classes(root: Path) -> list[str]:
    if not root.is_dir():
        raise DataNotFoundError(
            f"image folder {str(root)!r} does not exist; it must hold one subfolder per class"
        )
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise BiasbedDataError(f"image folder {str(root)!r} has no class subfolders")
    return classes


class ImageFolderDataset(Dataset):
    """Images under ``root/<class>/`` labelled in ``labels`` through an optional class map.

    Images are resized (shorter side) and centre-cropped to ``image_size`` squares, so batches
    stack; the file order is sorted, so ``index`` is stable across machines; hidden files and
    folders (names starting with ``.``) are skipped. ``preprocess``:
    ``resize`` (that), ``imagenet-eval`` (shorter side to ``image_size * 256 / 224``, centre
    crop) or ``imagenet-train`` (RandomResizedCrop with ``crop`` = (scale, ratio) and
    horizontal flip). ``seed``: with ``imagenet-train``, the crop and flip of the k-th load of
    item i are a pure function of (seed, i, k), drawn from a generator of their own, so the
    number of DataLoader workers, the normalisation statistics' pass and dropout's draws do not
    change them (the counts are kept in shared memory, seen by every worker); None (the
    default): drawn from torch's global RNG, the same only for a fixed number of workers and a
    seeded global RNG. ``head``: a module
    turning the model's logits into this folder's labels (exposed as ``reduce_logits`` for the
    trainer); ``metric``: ``top1`` or ``mean_per_class`` (read by the trainer).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        labels: Sequence[str],
        class_map: Mapping[str, str] | None = None,
        image_size: int = 224,
        name: str = "",
        preprocess: str = "resize",
        head: torch.nn.Module | None = None,
        crop: tuple[tuple[float, float], tuple[float, float]] = TORCHVISION_CROP,
        metric: str = "mean_per_class",
        seed: int | None = None,
    ) -> None:
        if image_size < 1:
            raise BiasbedDataError(f"image_size must be positive, got {image_size}")
        modes = ("resize", "imagenet-eval", "imagenet-train")
        if preprocess not in modes:
            raise BiasbedDataError(unknown_choice("preprocessing", preprocess, modes))
        if metric not in METRICS[1:]:
            raise BiasbedDataError(unknown_choice("metric", metric, METRICS[1:]))
        self.preprocess = preprocess
        self.crop = crop
        self.metric = metric
        self.reduce_logits = head
        self.root = Path(root)
        self.name = name or self.root.name
        self.labels = tuple(labels)
        self.num_classes = len(self.labels)
        self.image_size = int(image_size)
        label_index = {label: i for i, label in enumerate(self.labels)}
        mapping = dict(class_map or {})
        self.samples: list[tuple[Path, int]] = []
        self.skipped: dict[str, int] = {}
        for cls in list_classes(self.root):
            files = sorted(
                p
                for p in (self.root / cls).rglob("*")
                if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
                and not any(part.startswith(".") for part in p.relative_to(self.root).parts)
            )
            target = mapping.get(cls, cls)
            if target not in label_index:
                self.skipped[cls] = len(files)
                continue
            self.samples.extend((f, label_index[target]) for f in files)
        if not self.samples and not any(self.skipped.values()):
            raise BiasbedDataError(
                f"image folder {str(self.root)!r} has no image files in its class subfolders "
                f"(files ending in {', '.join(IMAGE_EXTENSIONS)})"
            )
        if not self.samples:
            raise BiasbedDataError(
                f"image folder {str(self.root)!r} has no images in the label space; its classes "
                f"{sorted(self.skipped)[:10]} match none of the labels {list(self.labels)[:10]}"
                " (give a class map that maps them)"
            )
        self.seed = seed
        # how often each item was loaded: a tensor in shared memory, so that DataLoader workers
        # (persistent, each with a copy of the dataset) count together
        self._loads = torch.zeros(len(self.samples), dtype=torch.int64).share_memory_()

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def targets(self) -> np.ndarray:
        """Label of every image, in item order."""
        return np.array([y for _, y in self.samples], dtype=np.int64)

    def load(self, path: Path, index: int | None = None) -> torch.Tensor:
        """Decode, resize the shorter side and centre-crop one image to float (3, S, S)
        (``imagenet-train``: a random resized crop, flipped half of the time; seeded by
        (``seed``, ``index``, loads of ``index`` so far) when both are given)."""
        try:
            with Image.open(path) as src:
                im = to_rgb(src)
                if self.preprocess == "imagenet-train":
                    if self.seed is None or index is None:
                        return self._augment(im)
                    from shortcutlab.utils.rng import torch_seed

                    index = range(len(self.samples))[index]  # ds[-1] is ds[n - 1]
                    draw = int(self._loads[index])
                    self._loads[index] += 1
                    with torch.random.fork_rng(devices=[]):
                        torch.manual_seed(torch_seed(self.seed, "augment", index, draw))
                        return self._augment(im)
                from torchvision.transforms import functional as tvf

                size = self.image_size
                if self.preprocess == "imagenet-eval":
                    size = round(self.image_size * 256 / 224)
                # torchvision's Resize(size), CenterCrop(image_size), as the authors' loaders:
                # its long side (truncated) and crop offsets (rounded) are theirs to the pixel
                im = tvf.resize(im, [size], tvf.InterpolationMode.BILINEAR)
                arr = np.asarray(tvf.center_crop(im, [self.image_size]), dtype=np.uint8)
        except OSError as exc:
            raise BiasbedDataError(f"cannot read image {str(path)!r}: {exc}") from None
        return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255.0)

    def _augment(self, im: Image.Image) -> torch.Tensor:
        """A random resized crop of ``im``, flipped half of the time (torch's global RNG)."""
        from torchvision.transforms import RandomHorizontalFlip, RandomResizedCrop

        area, ratio = self.crop
        im = RandomResizedCrop(self.image_size, scale=area, ratio=ratio)(im)
        arr = np.asarray(RandomHorizontalFlip()(im), dtype=np.uint8)
        return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255.0)

    def __getitem__(self, index: int) -> dict[str, Any]:
        path, y = self.samples[index]
        x = self.load(path, index)
        return {"x": x, "y": torch.tensor(y, dtype=torch.int64), "index": index}


@dataclass(frozen=True)
class FolderExperiment:
    """An image-folder experiment: train, validation and named test folders plus a class map."""

    train_dir: Path
    val_dir: Path
    test_dirs: dict[str, Path] = field(default_factory=dict)
    class_map: Path | None = None
    image_size: int = 224
    label_space_kind: str = "map"
    preprocess: str = "resize"
    test_heads: dict[str, str] = field(default_factory=dict)
    in_distribution: tuple[str, ...] = ()
    metric: str = "auto"
    #: The class map's SHA-256 when the job was planned (None: not checked): a map edited
    #: since is refused where the job runs, and a new plan of it makes new job ids.
    class_map_sha256: str | None = None

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise BiasbedDataError(unknown_choice("metric", self.metric, METRICS))
        for name in self.test_dirs:
            if name in ("train", "val") or not name:
                raise BiasbedDataError(
                    f"test set name {name!r} is reserved or empty; choose another NAME in "
                    "--test-dir NAME=DIR"
                )
        if self.label_space_kind not in LABEL_SPACES:
            raise BiasbedDataError(
                unknown_choice("label space", self.label_space_kind, LABEL_SPACES)
            )
        if self.preprocess not in PREPROCESSING:
            raise BiasbedDataError(unknown_choice("preprocessing", self.preprocess, PREPROCESSING))
        if self.label_space_kind == "imagenet1k" and self.class_map is not None:
            raise BiasbedDataError(
                "a class map and the imagenet1k label space exclude each other: the 1000-class "
                "setting maps test folders through their heads"
            )
        if self.test_heads and self.label_space_kind != "imagenet1k":
            raise BiasbedDataError("test-set heads need the imagenet1k label space")
        from shortcutlab.biasbed.imagenet import HEADS

        for name, head in self.test_heads.items():
            if name not in self.test_dirs:
                raise BiasbedDataError(
                    unknown_choice("test set with a head", name, list(self.test_dirs))
                )
            if head not in HEADS:
                raise BiasbedDataError(unknown_choice("test-set head", head, HEADS))
        for name in self.in_distribution:
            if name not in self.test_dirs:
                raise BiasbedDataError(
                    unknown_choice("in-distribution test set", name, list(self.test_dirs))
                )

    def mapping(self) -> dict[str, str] | None:
        if self.class_map is None:
            return None
        if self.class_map_sha256 is not None and (
                file_sha256(self.class_map) != self.class_map_sha256):
            raise BiasbedDataError(
                f"class map {str(self.class_map)!r} changed since this run was planned; its "
                "results would carry labels of another map: plan the run again (new job ids)")
        return load_class_map(self.class_map)

    def resolved_metric(self) -> str:
        """``top1`` or ``mean_per_class`` (``auto``: top-1 in the imagenet1k label space)."""
        if self.metric != "auto":
            return self.metric
        return "top1" if self.label_space_kind == "imagenet1k" else "mean_per_class"

    def label_space(self) -> tuple[str, ...]:
        """The labels: the class map's targets, or the training folder's class names (the 1000
        ImageNet WordNet ids in the ``imagenet1k`` setting)."""
        if self.label_space_kind == "imagenet1k":
            from shortcutlab.biasbed.imagenet import imagenet_classes

            return imagenet_classes()
        mapping = self.mapping()
        if mapping is not None:
            return tuple(sorted(set(mapping.values())))
        return tuple(list_classes(Path(self.train_dir)))

    def datasets(
        self, seed: int | None = None,
    ) -> tuple[ImageFolderDataset, ImageFolderDataset, dict[str, ImageFolderDataset]]:
        """(train, val, {test name: dataset}) in one label space (``imagenet1k``: each test
        folder in its head's labels, see :mod:`.imagenet`). ``seed``: the training set's
        augmentation seed (see :class:`ImageFolderDataset`; None: torch's global RNG)."""
        labels, mapping = self.label_space(), self.mapping()
        imagenet = self.preprocess in ("imagenet", "biasbed")
        evaluation = "imagenet-eval" if imagenet else "resize"
        crop = BIASBED_CROP if self.preprocess == "biasbed" else TORCHVISION_CROP
        metric = self.resolved_metric()

        def make(root: Path, name: str, mode: str = evaluation) -> ImageFolderDataset:
            return ImageFolderDataset(root, labels, mapping, self.image_size, name, mode,
                                      crop=crop, metric=metric)

        if self.label_space_kind == "imagenet1k":  # nothing is skipped in BiasBed's setting
            for root in (self.train_dir, self.val_dir):
                outside = sorted(set(list_classes(Path(root))) - set(labels))
                if outside:
                    raise BiasbedDataError(
                        f"image folder {str(root)!r} (imagenet1k label space) has classes "
                        f"outside its label space: {outside[:5]}; valid are the 1000 ImageNet "
                        "WordNet ids (n01440764 ...)")
        train = make(self.train_dir, "train", "imagenet-train" if imagenet else "resize")
        train.seed = seed
        if self.label_space_kind == "imagenet1k":
            tests = {name: self._head_dataset(name, root, evaluation)
                     for name, root in self.test_dirs.items()}
        else:
            tests = {name: make(root, name) for name, root in self.test_dirs.items()}
        return train, make(self.val_dir, "val"), tests

    def head_of(self, name: str) -> str:
        """The head of test set ``name``: given, or detected from its class folders."""
        from shortcutlab.biasbed.imagenet import detect_head

        return self.test_heads.get(name) or detect_head(list_classes(Path(self.test_dirs[name])))

    def _head_dataset(self, name: str, root: Path, mode: str) -> ImageFolderDataset:
        from shortcutlab.biasbed.imagenet import head_labels, make_head

        head = self.head_of(name)
        outside = sorted(set(list_classes(Path(root))) - set(head_labels(head)))
        if outside:
            raise BiasbedDataError(
                f"test folder {str(root)!r} ({head} head) has classes outside its label space: "
                f"{outside[:5]}; valid are the {head} classes"
            )
        size = self.image_size
        if self.preprocess == "biasbed" and head == "imagenet16":
            size = round(self.image_size * 224 / 256)  # the authors' Resize(256), CenterCrop(224)
        return ImageFolderDataset(root, head_labels(head), None, size, name, mode,
                                  make_head(head), metric=self.resolved_metric())

    def describe(self) -> dict[str, Any]:
        """JSON-compatible description with absolute paths (hashed into the run's job id)."""

        def absolute(path: Path) -> str:  # workers on other machines/cwds find the same data
            return str(Path(path).expanduser().resolve())

        return {
            "kind": "folders",
            "train_dir": absolute(self.train_dir),
            "val_dir": absolute(self.val_dir),
            "test_dirs": {k: absolute(v) for k, v in sorted(self.test_dirs.items())},
            "class_map": None if self.class_map is None else absolute(self.class_map),
            **({"class_map_sha256": file_sha256(self.class_map)} if self.class_map else {}),
            "image_size": self.image_size,
            # settings added later enter the description (and the job id) only when used
            **({"label_space": self.label_space_kind} if self.label_space_kind != "map" else {}),
            **({"preprocess": self.preprocess} if self.preprocess != "resize" else {}),
            **({"test_heads": dict(sorted(self.test_heads.items()))} if self.test_heads else {}),
            **({"metric": self.resolved_metric()}
               if self.resolved_metric() != "mean_per_class" else {}),
        }


def parse_test_dirs(items: Sequence[str]) -> dict[str, Path]:
    """Parse ``NAME=DIR`` strings into an ordered mapping; names must be unique."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, root = item.partition("=")
        name = name.strip()
        if not sep or not name or not root.strip():
            raise BiasbedDataError(f"--test-dir expects NAME=DIR, got {item!r}")
        if name in out:
            raise BiasbedDataError(f"test set name {name!r} is given twice")
        out[name] = Path(root.strip())
    return out


DIAGVIB_PREFIX = "diagvib:"


def parse_dataset(text: str) -> str:
    """Validate a ``diagvib:<STUDY>/<predicted>-<correlated>/<sample>`` dataset name.

    Returns the experiment name (without the prefix); unknown studies or factors raise the
    DiagViB spec error that names the valid choices.
    """
    if not text.startswith(DIAGVIB_PREFIX):
        raise BiasbedDataError(
            f"unknown dataset {text!r}; use diagvib:<STUDY>/<predicted>-<correlated>/<sample> "
            "(e.g. diagvib:ZGO/shape-texture/0) or --train-dir/--val-dir/--test-dir"
        )
    from shortcutlab.diagvib.studies import parse_experiment_name

    name = text[len(DIAGVIB_PREFIX) :]
    parse_experiment_name(name)
    return name


#: Settings of the image-folder experiments left at these values are "not given".
_FOLDER_DEFAULTS: dict[str, list[object]] = {"label_space": ["map"],
                                              "metric": ["auto", "mean_per_class"]}


def folder_experiments(
    train_dirs: Sequence[str] = (),
    val_dirs: Sequence[str] = (),
    test_dirs: Sequence[str] = (),
    *,
    name: str = "folders",
    test_heads: Sequence[str] = (),
    in_distribution: Sequence[str] = (),
    class_map: str | os.PathLike[str] | None = None,
    image_size: int | None = None,
    label_space: str = "map",
    preprocess: str | None = None,
    metric: str = "auto",
    preset: str | None = None,
) -> dict[str, FolderExperiment]:
    """The image-folder experiments of ``biasbed run``, by training-set name, from its options.

    ``train_dirs``/``val_dirs``: ``DIR`` (named ``name``) or ``NAME=DIR`` items, the same names
    in both; ``test_dirs``: ``NAME=DIR``; ``test_heads``: ``NAME=HEAD``; ``in_distribution``:
    ``DATASET=TESTSET``. ``preprocess`` (None): ``biasbed`` under the ``biasbed`` preset, else
    ``resize``; ``image_size`` (None): 256 with ``biasbed`` preprocessing, else 224. No folders
    given: none, and a folder-only setting that would be ignored is refused.
    """
    if not (train_dirs or val_dirs or test_dirs):
        given = {"class_map": class_map, "test_head": test_heads, "in_distribution":
                 in_distribution, "label_space": label_space, "preprocess": preprocess,
                 "image_size": image_size, "metric": metric}
        for key, value in given.items():
            if value in (None, [], ()) or value in _FOLDER_DEFAULTS.get(key, [object()]):
                continue
            raise BiasbedDataError(f"--{key.replace('_', '-')} applies to image-folder datasets "
                                   "only and would be ignored here; give --train-dir/--val-dir/"
                                   "--test-dir too, or drop it")
        return {}
    if not train_dirs or not val_dirs or not test_dirs:
        raise BiasbedDataError("an image-folder dataset needs --train-dir, --val-dir and at "
                               "least one --test-dir NAME=DIR")
    trains = named_dirs(train_dirs, name, "--train-dir")
    vals = named_dirs(val_dirs, name, "--val-dir")
    if list(trains) != list(vals):
        raise BiasbedDataError(
            f"--train-dir names {list(trains)} and --val-dir names {list(vals)} must match")
    tests = parse_test_dirs(test_dirs)
    heads = _pairs(test_heads, "--test-head", "NAME=HEAD")
    for test, named in heads.items():
        if len(named) > 1:
            raise BiasbedDataError(f"--test-head: test set {test!r} is given twice ({named}); "
                                   "give one head per test set")
    marks = _pairs(in_distribution, "--in-distribution", "DATASET=TESTSET")
    for label in marks:
        if label not in trains:
            raise BiasbedDataError(unknown_choice("--in-distribution dataset", label,
                                                  list(trains)))
    preprocess = preprocess or ("biasbed" if preset == "biasbed" else "resize")
    image_size = image_size or (256 if preprocess == "biasbed" else 224)
    return {label: FolderExperiment(
        train_dir=root, val_dir=vals[label], test_dirs=tests,
        class_map=None if class_map is None else Path(class_map), image_size=image_size,
        label_space_kind=label_space, preprocess=preprocess,
        test_heads={k: v[0] for k, v in heads.items()},
        in_distribution=tuple(marks.get(label, [])), metric=metric,
    ) for label, root in trains.items()}


def named_dirs(items: Sequence[str], default: str, option: str) -> dict[str, Path]:
    """``DIR`` (named ``default``) or ``NAME=DIR`` items, in order; names unique."""
    out: dict[str, Path] = {}
    for item in items:
        label, sep, root = item.partition("=")
        label, root = (label.strip(), root.strip()) if sep else (default, item)
        if not label or not root:
            raise BiasbedDataError(f"{option} expects DIR or NAME=DIR, got {item!r}")
        if label in out:
            raise BiasbedDataError(f"{option}: name {label!r} is given twice (use NAME=DIR)")
        out[label] = Path(root)
    return out


def _pairs(items: Sequence[str], option: str, form: str) -> dict[str, list[str]]:
    """``KEY=VALUE`` items grouped by key, in order."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise BiasbedDataError(f"{option} expects {form}, got {item!r}")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def check_dataset_samples(datasets: Sequence[object]) -> None:
    """Refuse ``diagvib:`` datasets whose sample id is outside the benchmark's five."""
    from shortcutlab.diagvib.studies import DEFAULT_SAMPLES, parse_experiment_name

    for dataset in datasets:
        if isinstance(dataset, str):
            sample = parse_experiment_name(parse_dataset(dataset))[3]
            if not 0 <= sample < DEFAULT_SAMPLES:
                raise BiasbedDataError(f"unknown dataset sample {sample} in --dataset "
                                       f"{dataset}; valid choices: "
                                       f"{', '.join(map(str, range(DEFAULT_SAMPLES)))}")
