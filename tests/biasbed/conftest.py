"""Tiny image-folder fixtures written by the tests themselves (no downloads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def write_folder(root: Path, classes: dict[str, int], n: int, seed: int, size=(40, 36)) -> Path:
    """``root/<class>/<i>.png``: class ``c`` images are dominated by colour channel classes[c]."""
    gen = np.random.default_rng(seed)
    for name, channel in classes.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            arr = gen.integers(0, 60, (size[0], size[1], 3)).astype(np.uint8)
            arr[..., channel] += 180
            Image.fromarray(arr).save(folder / f"{i:03d}.png")
    return root


@pytest.fixture(scope="session")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An ImageNet-like 3-class train/val and two 2-class test folders plus a class map."""
    root = tmp_path_factory.mktemp("folders")
    source = {"n001": 0, "n002": 1, "n003": 1}
    write_folder(root / "train", source, 6, 0)
    write_folder(root / "val", source, 3, 1)
    write_folder(root / "cue", {"red": 0, "green": 1}, 3, 2)
    write_folder(root / "edge", {"red": 0, "green": 1, "blue": 2}, 2, 3)
    (root / "map.csv").write_text("source,target\nn001,red\nn002,green\nn003,green\n")
    (root / "map.json").write_text('{"red": ["n001"], "green": ["n002", "n003"]}')
    return {
        "root": root,
        "train": root / "train",
        "val": root / "val",
        "cue": root / "cue",
        "edge": root / "edge",
        "map": root / "map.csv",
        "map_json": root / "map.json",
    }
