"""Validate shortcutlab's ImageNet-X evaluation against the authors' published tables.

Recomputes the per-factor accuracies of the four real models in the authors'
``model_predictions`` folder (DINO, ResNet50, SimCLR, ViT) and of the original
labels scored against ReaL (the ``human`` row), for top/multi factors and the three error types,
and prints the maximum absolute difference from the authors' ``accuracies_per_factor.csv``.
Then runs the Alexander-Govern test across the authors' model groups on their tables, and
every augmentation strength (crop, color jitter, Gaussian blur) against the weakest.

Then the analyses beyond the factor tables: ``worst_100_classes`` against the authors' column
(same four models and human row), figure 4's model set and families (209 models in the paper),
the family test of figure 1b, figure 17, and the paper's ten spill-over claims under the
authors' cubic-fit procedure and shortcutlab's Welch procedure; figure 2's factor shares and
figure 12's ViT prevalence shift (the numbers of docs/imagenetx-fidelity.md).

Run: ``.venv/bin/python benchmarks/validate_imagenetx.py [--data DIR]``.

Without the reference data (``--data`` lacking ``model_predictions/`` or ``results/val/``) the
check cannot run, and that is an error, not a pass: one ``error:`` line on stderr says which
folders are needed and where to get them, and the script exits with status 2. This is the
convention of every ``benchmarks/validate_*.py`` that needs reference data: 0 the numbers agree,
1 they disagree, 2 the data are missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from shortcutlab.imagenetx.predictions import Predictions

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "imagenet-x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT, help="imagenet-x reference folder")
    args = parser.parse_args()
    predictions_dir = args.data / "model_predictions"
    results_dir = args.data / "results" / "val"
    if not predictions_dir.is_dir() or not results_dir.is_dir():
        print(f"error: reference data not found under {args.data}: expected the folders "
              "model_predictions/ and results/val/ of the ImageNet-X authors' repository "
              "(github.com/facebookresearch/imagenetx, CC BY-NC; not shipped with shortcutlab). "
              "Clone it and pass --data DIR, DIR holding model_predictions/ and results/.",
              file=sys.stderr)
        return 2

    from shortcutlab.imagenetx.annotations import FACTORS, load_annotations
    from shortcutlab.imagenetx.evaluate import ERROR_TYPES, evaluate
    from shortcutlab.imagenetx.predictions import (
        combine,
        load_predictions,
        original_labels_predictions,
    )
    from shortcutlab.imagenetx.statistics import (
        alexander_govern_by_factor,
        augmentation_strength_effects,
        parse_hyperparameters,
    )

    models = load_predictions([predictions_dir])
    preds = combine([models, original_labels_predictions("human")])
    worst = 0.0
    print(f"{'factors':6s} {'error type':10s} {'models':36s} max |difference|")
    for which in ("top", "multi"):
        annotations = load_annotations(which)
        for error_type in ERROR_TYPES:
            folder = results_dir / f"{which}_factor" / "base" / error_type
            table = folder / "accuracies_per_factor.csv"
            reference = pd.read_csv(table, index_col=0)
            reference = reference[~reference.index.duplicated()]
            mine = evaluate(preds, annotations, error_type).summary()
            common = [m for m in mine.index if m in reference.index]
            assert "worst_100_classes" in reference.columns and "worst_100_classes" in mine
            diff = np.nanmax(np.abs(mine.loc[common].to_numpy()
                                    - reference.loc[common, mine.columns].to_numpy()))
            worst = max(worst, float(diff))
            print(f"{which:6s} {error_type:10s} {', '.join(common):36s} {diff:.2e}")
    print(f"maximum absolute difference over all tables: {worst:.2e}")

    human = evaluate(original_labels_predictions("human"), load_annotations("top"), "real_class")
    pose = human.table("error_ratio").loc["human", "pose"]
    print(f"original labels vs ReaL (top factor): average {human.average[0]:.6f} on "
          f"{human.n_images:,} images (package: 0.835220), pose error ratio {pose:.3f} (0.746)")

    # Alexander-Govern across the authors' model groups (paper figure 1b style), class error type.
    frames, groups = [], {}
    for group_dir in sorted((results_dir / "top_factor").iterdir()):
        table = pd.read_csv(group_dir / "class" / "accuracies_per_factor.csv", index_col=0)
        table = table[~table.index.duplicated()]
        ratios = (1 - table[list(FACTORS)]).div(1 - table["average"], axis=0)
        ratios.index = [f"{group_dir.name}/{m}" for m in ratios.index]
        frames.append(ratios)
        groups.update({m: group_dir.name for m in ratios.index})
    ratios = pd.concat(frames)
    tests = alexander_govern_by_factor(ratios, groups)
    print(f"\nAlexander-Govern across {len(set(groups.values()))} groups, {len(ratios)} models "
          "(authors' tables, top factor, class):")
    print(tests[["statistic", "pvalue", "significant"]].to_string(float_format="{:.3g}".format))

    # Augmentation strength (paper section 3.3, figure 6): the paper's ten claims are checked
    # below (_paper_analyses) with the library's two spill-over procedures; here, every
    # strength against the weakest one, factor by factor.
    parameter = {"crop": "crop", "colorjitter": "color", "gaussian_blur": "smoothing"}
    for group in parameter:
        table = ratios.loc[[m for m, g in groups.items() if g == group]]
        table.index = [m.split("/", 1)[1] for m in table.index]
        levels = np.sort(pd.Series({m: parse_hyperparameters(m).get(parameter[group])
                                    for m in table.index}).dropna().unique())
        baseline = float(levels[0] if group != "crop" else 8.0)
        per_level = augmentation_strength_effects(table, parameter[group], baseline)
        print(f"\n{group}: per-strength tests against {parameter[group]}={baseline:g}: "
              f"{int(per_level['significant'].sum())} of {len(per_level)} (strength, factor) "
              "pairs significant at 0.05")
    figure12 = _figures_2_and_12(models)
    return 0 if worst < 1e-9 and _paper_analyses(args.data / "results") and figure12 else 1


def _figures_2_and_12(models: Predictions) -> bool:
    """Figure 2's shares (annotations only) and figure 12: ViT's prevalence shift per factor,
    whose negative factors the paper names (pose, brightness, pattern, partial views)."""
    from shortcutlab.imagenetx.analyses import factor_shares
    from shortcutlab.imagenetx.annotations import load_annotations
    from shortcutlab.imagenetx.evaluate import evaluate

    shares = factor_shares()
    table = shares.pivot(index="factor", columns=["partition", "which"], values="share")
    print("\nfigure 2: share of images with each factor selected (%)")
    print((100 * table.loc[shares["factor"].unique()]).round(1).to_string())
    result = evaluate(models, load_annotations("top"), "class")
    if "ViT" not in result.models:
        print("figure 12: no ViT among the predictions")
        return False
    shift = result.table("prevalence_shift").loc["ViT"].sort_values(ascending=False)
    print("\nfigure 12: ViT prevalence shift (top factor, class):")
    print(shift.round(3).to_string())
    robust = set(shift.index[shift < 0])
    ok = robust == {"pose", "brighter", "pattern", "partial_view"}
    print(f"negative for {sorted(robust)}: the paper's four -> {'agrees' if ok else 'DIFFERS'}")
    return ok


def _paper_analyses(results: Path) -> bool:
    """Figures 1b, 4, 6 and 17 from the authors' tables with the library functions."""
    import time

    from shortcutlab.imagenetx.analyses import (
        figure4_models,
        read_result_tables,
        tailored_augmentation,
    )
    from shortcutlab.imagenetx.evaluate import error_ratio
    from shortcutlab.imagenetx.spillover import claim_verdicts
    from shortcutlab.imagenetx.statistics import alexander_govern_by_factor

    start = time.perf_counter()
    tables = read_result_tables(results, "top", "class")
    fig4 = figure4_models(tables)
    print(f"\nfigure 4 (top factor, class): {len(fig4)} models (paper: 209): "
          f"{fig4['family'].value_counts().to_dict()}")
    tests = alexander_govern_by_factor(error_ratio(fig4), fig4["family"])
    print("figure 1b, Alexander-Govern across the four families, p-values:")
    print(tests["pvalue"].to_string(float_format="{:.3g}".format))
    tailored = tailored_augmentation(tables)
    print("figure 17 (crop / color jitter / both / tailored), mean error ratio and p-value:")
    print(tailored["tests"].drop(columns=["statistic", "significant"]).to_string(
        float_format="{:.3f}".format))
    claims = claim_verdicts(tables)
    print("\nthe paper's ten spill-over claims (top factor, class):")
    print(claims.to_string(float_format="{:.3g}".format, index=False))
    cubic, welch = int(claims["reproduced_cubic"].sum()), int(claims["reproduced_welch"].sum())
    print(f"reproduced: authors' cubic procedure {cubic}/10, shortcutlab's Welch {welch}/10 "
          "(paper's statements rest on the cubic procedure)")
    print(f"figures 1b, 4, 6 (both procedures) and 17 on {len(tables)} result rows: "
          f"{time.perf_counter() - start:.1f} s")
    return len(fig4) == 209


if __name__ == "__main__":
    raise SystemExit(main())
