"""Run an image classifier over a local ImageNet validation folder and write a predictions CSV.

The model is named as for training (:mod:`shortcutlab.train.models`): a registered name,
``timm:<arch>`` / ``torchvision:<arch>`` (:mod:`shortcutlab.train.model_zoo`) or
``module:factory``; weights are read only from a local file
(``torch.load(weights_only=True)``) and must fit exactly, head included, since predictions of a
randomly initialised head would be meaningless. Nothing is downloaded.

Preprocessing is the model's: a ``transform`` (any callable PIL image -> tensor, e.g. timm's
``create_transform(**resolve_data_config({}, model=model))``) or a timm-style data config
(``input_size``, ``crop_pct``, ``interpolation``, ``mean``, ``std``); the default is the
torchvision recipe (resize 256, centre-crop 224, ImageNet mean/std).

The folder may be flat (``ILSVRC2012_val_00000001.JPEG``, ...) or hold class sub-folders; images
are found recursively and identified by file name. The CSV (``file_name, predicted_class,
predicted_probability``, sorted by file name) is what :mod:`shortcutlab.imagenetx.predictions`
reads.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset, default_collate

from shortcutlab.errors import DataNotFoundError, ImagenetXError, unknown_choice
from shortcutlab.imagenetx.annotations import val_image_index
from shortcutlab.train.normalization import IMAGENET_MEAN, IMAGENET_STD
from shortcutlab.utils.device import resolve_device
from shortcutlab.utils.display import result_html
from shortcutlab.utils.imagenet import NUM_CLASSES
from shortcutlab.utils.io import check_output_file, write_text
from shortcutlab.utils.progress import progress_bar

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")
MEAN, STD = IMAGENET_MEAN, IMAGENET_STD
CROP_PCT = 0.875  # 224 / 256
INTERPOLATIONS = ("bilinear", "bicubic", "nearest")
CROP_MODES = ("center", "squash")  # timm's; "border" (letterbox) is refused, not replaced


def _walk(root: Path) -> list[Path]:
    """Every file under ``root``, following symlinked folders (class folders are often links;
    ``Path.rglob`` skips them) but entering each real folder once (a link cycle ends)."""
    seen: set[tuple[int, int]] = set()
    found: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        info = os.stat(folder)
        if (info.st_dev, info.st_ino) in seen:
            dirs.clear()
            continue
        seen.add((info.st_dev, info.st_ino))
        found += [Path(folder, name) for name in names]
    return found


def find_images(root: str | os.PathLike[str]) -> list[Path]:
    """Image files under ``root`` (recursively), sorted by file name; names must be unique
    ImageNet validation names (``ILSVRC2012_val_00000001.JPEG``), the ones
    :mod:`~shortcutlab.imagenetx.predictions` reads."""
    root = Path(root)
    if not root.is_dir():
        raise DataNotFoundError(
            f"ImageNet validation folder {str(root)!r} does not exist; point --imagenet-val at "
            "your local copy (flat ILSVRC2012_val_*.JPEG files or class sub-folders)"
        )
    files = sorted(
        (p for p in _walk(root) if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()),
        key=lambda p: (p.name, str(p)),
    )
    if not files:
        raise DataNotFoundError(f"no .JPEG/.jpg/.png images found under {root}")
    names = [p.name for p in files]
    repeated = sorted({a for a, b in zip(names, names[1:], strict=False) if a == b})
    if repeated:
        raise ImagenetXError(
            f"image file names must be unique under {root}; repeated: {', '.join(repeated[:5])}"
        )
    unknown = [p for p, i in zip(files, val_image_index(np.asarray(names)), strict=True) if i < 0]
    if unknown:
        raise ImagenetXError(
            f"{len(unknown)} of {len(files)} images under {root} are not named as ImageNet "
            f"validation images (first: {str(unknown[0].relative_to(root))!r}); expected "
            "ILSVRC2012_val_00000001.JPEG ... ILSVRC2012_val_00050000.JPEG, flat or in class "
            "sub-folders (the names imagenetx evaluate reads)"
        )
    return files


def eval_transform(
    image_size: int = 224,
    crop_pct: float = CROP_PCT,
    interpolation: str = "bilinear",
    mean: tuple[float, ...] = MEAN,
    std: tuple[float, ...] = STD,
    crop_mode: str = "center",
):
    """Resize the short side to ``floor(image_size / crop_pct)`` (256 for 224), centre-crop,
    normalise: timm's evaluation transform for the same data config. ``crop_mode="squash"``
    resizes both sides to that size (aspect ratio not kept) before the crop, as timm does."""
    from torchvision import transforms

    if interpolation not in INTERPOLATIONS:
        raise ImagenetXError(unknown_choice("interpolation", interpolation, INTERPOLATIONS))
    if not 0 < crop_pct <= 1:
        raise ImagenetXError(f"crop_pct must be in (0, 1], got {crop_pct}")
    if crop_mode not in CROP_MODES:
        raise ImagenetXError(unknown_choice("crop_mode", crop_mode, CROP_MODES))
    mode = transforms.InterpolationMode(interpolation)
    scaled = math.floor(image_size / crop_pct)
    return transforms.Compose(
        [
            transforms.Resize((scaled, scaled) if crop_mode == "squash" else scaled,
                              interpolation=mode),
            transforms.CenterCrop(image_size),
            transforms.ToTensor(),
            transforms.Normalize(tuple(mean), tuple(std)),
        ]
    )


def transform_from_config(config: Mapping[str, object]):
    """:func:`eval_transform` of a timm-style data config (``input_size`` (C, H, W) or
    ``image_size``, ``crop_pct``, ``crop_mode``, ``interpolation``, ``mean``, ``std``; missing
    keys keep the defaults), e.g. a model's ``pretrained_cfg`` saved as JSON."""
    known = {"input_size", "image_size", "crop_pct", "crop_mode", "interpolation", "mean", "std"}
    size = config.get("input_size", config.get("image_size", 224))
    if isinstance(size, list | tuple) and len(size) >= 2 and size[-1] != size[-2]:
        raise ImagenetXError(f"bad data config (input_size): {list(size)} is not square; the "
                             "centre crop is square (give input_size [3, N, N])")
    try:
        side = int(size[-1] if isinstance(size, list | tuple) else size)  # type: ignore[arg-type]
        return eval_transform(
            side, float(config.get("crop_pct") or CROP_PCT),  # type: ignore[arg-type]
            str(config.get("interpolation") or "bilinear"),
            tuple(config.get("mean", MEAN)), tuple(config.get("std", STD)),  # type: ignore[arg-type]
            str(config.get("crop_mode") or "center"),
        )
    except (TypeError, ValueError) as exc:
        used = ", ".join(sorted(known & set(config)))
        raise ImagenetXError(f"bad data config ({used}): {exc}") from None


class _ImageFiles(Dataset):
    def __init__(self, files: list[Path], transform: Callable[[Image.Image], torch.Tensor]) -> None:
        self.files = files
        self.transform = transform

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> torch.Tensor | str:
        """The image as a tensor, or a one-line message naming a file PIL cannot read (returned,
        not raised: a worker process's exception would come back with its traceback)."""
        path = self.files[index]
        try:
            with Image.open(path) as img:
                rgb = img.convert("RGB")  # decodes: a truncated file fails here
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
            return f"{path}: not a readable image ({exc}); remove or replace it"
        return self.transform(rgb)


def _collate(items: list[torch.Tensor | str]) -> torch.Tensor | str:
    """A batch of images, or the message of its first unreadable file."""
    return next((item for item in items if isinstance(item, str)), None) or default_collate(items)


def _unknown_model(name: str) -> str:
    """The one-line refusal of a bare name that names no registered model: the registered
    names, the library forms, and ``torchvision:<name>`` when torchvision has ``name``."""
    import torchvision.models as tvm

    from shortcutlab.train.models import list_models

    if name in tvm.list_models(module=tvm):
        return (f"unknown model {name!r}; torchvision's architecture is named "
                f"'torchvision:{name}' (as for training)")
    return (f"{unknown_choice('model', name, list_models())}; or timm:<arch>, "
            "torchvision:<arch>, module:factory (list them with `shortcutlab models`)")


def _load_weights(model: nn.Module, path: Path) -> None:
    from shortcutlab.train.models import read_state_dict

    state = read_state_dict(path)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0:3]
        raise ImagenetXError(
            f"weights in {path} do not fit the model exactly (a {NUM_CLASSES}-way ImageNet head "
            f"is required): {' '.join(first)}"
        ) from None


def build_model(name: str, weights: str | os.PathLike[str] | None = None) -> nn.Module:
    """A 1000-class model in eval mode, named as for training (:func:`shortcutlab.train.
    create_model`: a registered name, ``timm:<arch>``, ``torchvision:<arch>`` or
    ``module:factory``), with weights from a local state-dict file (never a download)."""
    from shortcutlab.train import models as registry

    if name not in registry.list_models() and ":" not in name:  # ":": see model_paths
        raise ImagenetXError(_unknown_model(name))
    try:
        model = registry.create_model(name, NUM_CLASSES)
    except DataNotFoundError:  # a model such as rn50_in that is built from its weights
        if weights is None:
            raise ImagenetXError(
                f"model {name!r} needs its ImageNet weights: pass --weights FILE "
                "(a local state-dict file)"
            ) from None
        model = registry.create_model(name, NUM_CLASSES, pretrained=Path(weights))
    if weights is not None:
        _load_weights(model, Path(weights))
    return model.eval()


@dataclass(frozen=True)
class PredictResult:
    """What :func:`predict_folder` wrote; prints as one line saying so."""

    path: Path
    n_images: int

    def __str__(self) -> str:
        return f"predictions for {self.n_images} images written to {self.path}"

    def _repr_html_(self) -> str:
        return result_html(str(self), pd.DataFrame(),
                           ["read it with get_factor_accuracies(path) or evaluate"])


@torch.no_grad()
def predict_folder(
    model: nn.Module,
    image_root: str | os.PathLike[str],
    out: str | os.PathLike[str],
    batch_size: int = 64,
    image_size: int = 224,
    device: str = "auto",
    num_workers: int = 0,
    show_progress: bool = True,
    *,
    transform: Callable[[Image.Image], torch.Tensor] | None = None,
    data_config: Mapping[str, object] | None = None,
) -> PredictResult:
    """Predict every image under ``image_root``; write the CSV atomically to ``out``.

    Preprocessing: ``transform`` if given, else the one of ``data_config`` (timm-style), else
    :func:`eval_transform` at ``image_size``."""
    if transform is not None and data_config is not None:
        raise ImagenetXError("give a transform or a data config, not both")
    if transform is None:
        transform = (transform_from_config(data_config) if data_config is not None
                     else eval_transform(image_size))
    if batch_size < 1:
        raise ImagenetXError(f"batch size must be positive, got {batch_size}")
    check_output_file(out)  # a bad --out is refused now, not after predicting every image
    files = find_images(image_root)
    dev = resolve_device(device)
    model = model.to(dev).eval()
    # a generator of its own: the iterator's base seed (the workers' random state) is drawn
    # from it, not from torch's global RNG, which predicting leaves as it was
    loader = DataLoader(
        _ImageFiles(files, transform), batch_size=batch_size, shuffle=False,
        num_workers=num_workers, collate_fn=_collate, generator=torch.Generator().manual_seed(0),
    )
    classes = np.empty(len(files), dtype=np.int64)
    probs = np.empty(len(files), dtype=np.float64)
    done = 0
    with progress_bar(disable=not show_progress) as bar:
        task = bar.add_task("predicting", total=len(files))
        for batch in loader:
            if isinstance(batch, str):
                raise ImagenetXError(batch)
            logits = model(batch.to(dev)).float()
            if logits.ndim != 2 or logits.shape[1] != NUM_CLASSES:
                raise ImagenetXError(
                    f"model outputs shape {tuple(logits.shape)}; expected (batch, {NUM_CLASSES})"
                )
            p = torch.softmax(logits.double(), dim=1)
            top = p.max(dim=1)
            classes[done : done + len(batch)] = top.indices.cpu().numpy()
            probs[done : done + len(batch)] = top.values.cpu().numpy()
            done += len(batch)
            bar.advance(task, len(batch))
    lines = ["file_name,predicted_class,predicted_probability"]
    lines += [f"{f.name},{c},{p:.6g}" for f, c, p in zip(files, classes, probs, strict=True)]
    path = write_text(out, "\n".join(lines) + "\n")
    return PredictResult(path, len(files))
