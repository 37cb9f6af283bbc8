"""Demo stage: the original ImageNet labels, scored against ReaL, as a model needing no images.

Reproduces the imagenet-x package's "human" row (average accuracy 0.835220 on the 46,110
filtered validation images; pose error ratio 0.746) and writes the full report.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from shortcutlab.imagenetx.predictions import original_labels_predictions
from shortcutlab.imagenetx.report import analyse, write_report
from shortcutlab.utils.io import write_json


def run_demo(out_dir: Path, console: Console) -> list[str]:
    """Evaluate the original labels against ReaL (top and multi factor) and write the report."""
    predictions = original_labels_predictions()
    lines: list[str] = []
    top = analyse(predictions, which="top", error_type="real_class", n_boot=500, notes=(
        "The model is the original ImageNet validation labels scored against the ReaL "
        "re-annotation (Beyer et al. 2020): a human baseline that needs no images (paper A.8). "
        "Images with an empty ReaL set count as wrong, as in the imagenet-x package.",))
    result = top.result
    pose = result.table("error_ratio").loc["original_labels", "pose"]
    console.print(
        f"original labels vs ReaL: average accuracy {result.average[0]:.6f} on "
        f"{result.n_images:,} images; pose error ratio {pose:.3f}; worst factor "
        f"{result.worst_factor_name[0]}"
    )
    html = write_report(top, out_dir / "top_factor", "ImageNet-X: original labels vs ReaL")
    lines.append(f"ImageNet-X report (top factor, original labels vs ReaL): {html}")
    multi = analyse(
        predictions, which="multi", error_type="real_class", n_boot=0, dataset_statistics=False
    )
    path = write_json(out_dir / "multi_factor.json", multi.to_dict())
    lines.append(f"multi-factor results of the original labels: {path}")
    lines.append(
        f"average accuracy {result.average[0]:.6f} (imagenet-x package: 0.835220), pose error "
        f"ratio {pose:.3f} (package: 0.746)"
    )
    return lines
