"""Write and read a built VQA-VS split folder (``shortcutlab vqa build --out DIR``).

Files: ``samples.parquet`` (every question with split, concepts, head/tail flags and answers),
``splits.json`` (question ids per split and per OOD/head set), ``statistics.csv`` (Table 1),
``jaccard.csv``, ``coincidence.csv``, ``imbalance.csv``, three PNG figures, and ``build.json``
(configuration and sizes) written last, so its presence means the folder is complete.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.utils.io import atomic_path, write_bytes, write_json, write_text
from shortcutlab.vqa.concepts import SHORTCUTS
from shortcutlab.vqa.figures import figure_png, heatmap, imbalance_bars
from shortcutlab.vqa.splits import SPLITS, VQASplits

__all__ = ["MARKER", "read_samples", "write_splits"]

MARKER = "build.json"


def _csv(path: Path, df: pd.DataFrame, index: bool = False) -> None:
    write_text(path, df.to_csv(index=index, float_format="%.6g", lineterminator="\n"))


def write_splits(splits: VQASplits, out_dir: str | Path, figures: bool = True) -> list[Path]:
    """Write every output of the construction into ``out_dir``; returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / MARKER
    if marker.exists():
        marker.unlink()  # the folder is incomplete until the new marker is written
    s = splits.samples
    written = []
    with atomic_path(out / "samples.parquet", suffix=".parquet") as tmp:
        s.to_parquet(tmp, index=False)
    written.append(out / "samples.parquet")
    split = s["split"].to_numpy()
    ids = s["question_id"].to_numpy()
    index: dict[str, object] = {name: ids[split == name].tolist() for name in SPLITS}
    test = split == "test"
    index["ood"] = {k: ids[test & s[f"tail:{k}"].to_numpy()].tolist() for k in SHORTCUTS}
    index["head"] = {k: ids[test & s[f"head:{k}"].to_numpy()].tolist() for k in SHORTCUTS}
    written.append(write_json(out / "splits.json", index, indent=None))
    for name, df, idx in (
        ("statistics.csv", splits.statistics, False),
        ("jaccard.csv", splits.jaccard, True),
        ("coincidence.csv", splits.coincidence, True),
        ("imbalance.csv", splits.imbalance, False),
    ):
        _csv(out / name, df, idx)
        written.append(out / name)
    if figures:
        figs = {
            "jaccard.png": heatmap(splits.jaccard, "Jaccard similarity of head splits (train)",
                                   "Jaccard"),
            "coincidence.png": heatmap(splits.coincidence,
                                       "Coincidence |row ∩ col| / |row| of OOD test sets",
                                       "ratio"),
            "imbalance.png": imbalance_bars(splits.imbalance),
        }  # fmt: skip
        for name, fig in figs.items():
            written.append(write_bytes(out / name, figure_png(fig)))
    cfg = asdict(splits.config)
    cfg["concepts"]["stop_words"] = sorted(cfg["concepts"]["stop_words"])
    summary = {
        "config": cfg,
        "sizes": {name: int((split == name).sum()) for name in SPLITS},
        "ood_sizes": {k: len(v) for k, v in index["ood"].items()},  # type: ignore[union-attr]
        "shortcuts": list(SHORTCUTS),
        "files": sorted(p.name for p in written),
    }
    written.append(write_json(marker, summary))
    return written


def read_samples(splits_dir: str | Path) -> pd.DataFrame:
    """Read ``samples.parquet`` of a complete split folder (checked by ``build.json``)."""
    d = Path(splits_dir)
    if not (d / MARKER).exists() or not (d / "samples.parquet").exists():
        raise DataNotFoundError(
            f"{str(d)!r} is not a complete VQA-VS split folder (no {MARKER}); build one with "
            "`shortcutlab vqa build --data ... --out DIR`"
        )
    try:
        df = pd.read_parquet(d / "samples.parquet")
    except Exception as exc:  # pyarrow raises several types for broken files
        raise VQAError(f"{d / 'samples.parquet'}: not a readable Parquet file "
                       f"({type(exc).__name__}); build the folder again") from None
    missing = [c for c in ("question_id", "split", "answers") if c not in df.columns]
    if missing:
        raise VQAError(f"{d / 'samples.parquet'}: missing column(s) {', '.join(missing)}")
    df["answers"] = [list(a) for a in df["answers"]]
    return df


def read_summary(splits_dir: str | Path) -> dict[str, object]:
    """The ``build.json`` summary of a split folder."""
    return json.loads((Path(splits_dir) / MARKER).read_text(encoding="utf-8"))
