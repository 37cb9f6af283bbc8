"""Write and read a built VQA-VS split folder (``shortcutlab vqa build --out DIR``).

Files: ``samples.parquet`` (every question with split, concepts, head/tail flags and answers),
``splits.json`` (question ids per split and per OOD/head set), ``statistics.csv`` (Table 1),
``jaccard.csv``, ``coincidence.csv``, ``imbalance.csv``, three PNG figures, and ``build.json``
(configuration and sizes) written last, so its presence means the folder is complete.
:func:`write_answer_figures` draws the paper's Figs. 4, 8 and 10 of such a folder
(``shortcutlab vqa figures``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import pandas as pd

from shortcutlab.errors import DataNotFoundError, VQAError
from shortcutlab.utils.io import (
    atomic_path,
    check_output_folder,
    output_set,
    write_bytes,
    write_json,
    write_text,
)
from shortcutlab.vqa.concepts import SHORTCUTS, ConceptConfig
from shortcutlab.vqa.distributions import (
    GroupDistribution,
    distribution_table,
    figure_groups,
    group_distribution,
    groups_table,
)
from shortcutlab.vqa.figures import (
    answer_distributions,
    figure_png,
    heatmap,
    imbalance_bars,
    split_distributions,
)
from shortcutlab.vqa.splits import SPLITS, BuildConfig, VQASplits

__all__ = ["MARKER", "read_build_config", "read_samples", "write_answer_figures",
           "write_splits"]

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
    ood = {k: ids[test & s[f"tail:{k}"].to_numpy()].tolist() for k in SHORTCUTS}
    index["ood"] = ood
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
        "ood_sizes": {k: len(v) for k, v in ood.items()},
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


def read_build_config(splits_dir: str | Path) -> BuildConfig:
    """The :class:`BuildConfig` a complete split folder was built with (from ``build.json``;
    options a folder of an older version does not record take their defaults)."""
    d = Path(splits_dir)
    if not (d / MARKER).exists():
        read_samples(d)  # raises the error that names a folder which is not a build
    try:
        cfg = dict(cast("dict[str, Any]", read_summary(d)["config"]))
        concepts = dict(cfg.pop("concepts", {}))
        for key in ("stop_words", "question_types"):
            if key in concepts:
                concepts[key] = (frozenset if key == "stop_words" else tuple)(concepts[key])
        if "fractions" in cfg:
            cfg["fractions"] = tuple(cfg["fractions"])
        return BuildConfig(**cfg, concepts=ConceptConfig(**concepts))
    except (ValueError, TypeError, KeyError) as exc:  # JSON errors are ValueErrors
        raise VQAError(f"{d / MARKER}: not the configuration of a build ({type(exc).__name__}: "
                       f"{exc}); build the folder again") from None


def write_answer_figures(
    samples: pd.DataFrame,
    config: BuildConfig,
    out_dir: str | Path,
    groups: dict[str, str] | None = None,
    max_answers: int = 30,
) -> tuple[list[Path], pd.DataFrame]:
    """The paper's Figs. 4, 8 and 10 for the groups :func:`figure_groups` chooses (``groups``:
    ``{shortcut: concept}`` overrides), with their data: ``answer_distributions.csv`` (per
    group and answer, the four counts and the tail flag) and ``figure_groups.csv`` (per group,
    the figures drawing it, sizes, entropy and threshold). Everything is computed and checked
    before anything is written, and the files are written all or none. Returns the paths
    written and the groups table."""
    out = Path(out_dir)
    check_output_folder(out)
    chosen = figure_groups(samples, groups)
    dists: dict[tuple[str, str], GroupDistribution] = {}
    drawn: dict[tuple[str, str], list[str]] = {}
    for fig in ("4", "10", "8"):
        for s, concept in chosen[fig].items():
            key = (s, concept)
            if key not in dists:
                dists[key] = group_distribution(samples, s, concept, config)
            drawn.setdefault(key, []).append(fig)
    figs = {
        "fig4.png": answer_distributions(
            [dists[k] for k in chosen["4"].items()], max_answers,
            "A group's training vs OOD test answers, and how its tail is selected "
            "(cf. paper Fig. 4)"),
        "fig8.png": split_distributions([dists[k] for k in chosen["8"].items()], max_answers),
        "fig10.png": answer_distributions(
            [dists[k] for k in chosen["10"].items()], max_answers,
            "Per shortcut: training vs OOD test answers, and the tail selected "
            "(cf. paper Fig. 10)"),
    }  # fmt: skip
    figures = {k: " ".join(sorted(v, key=int)) for k, v in drawn.items()}  # e.g. "4 10"
    table = groups_table(dists.values(), figures)
    pngs = {name: figure_png(fig) for name, fig in figs.items()}
    written = []
    with output_set() as outputs:  # every file or none
        for name, data in pngs.items():
            written.append(outputs.write_bytes(out / name, data))
        for name, frame in (("answer_distributions.csv", distribution_table(dists.values())),
                            ("figure_groups.csv", table)):  # fmt: skip
            text = frame.to_csv(index=False, float_format="%.6g", lineterminator="\n")
            written.append(outputs.write_text(out / name, text))
    return written, table
