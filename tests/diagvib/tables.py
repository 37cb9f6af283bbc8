"""A fake collected DiagViB-6 job table with a planted structure, as DomainBed's tests run
without data: the metrics, report and CLI tests read it (``from tests.diagvib.tables import
synthetic_table``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from shortcutlab.diagvib.factors import FACTORS
from shortcutlab.diagvib.metrics import STUDIES, TAG_PREFIX, MetricsError
from shortcutlab.errors import unknown_choice
from shortcutlab.utils.rng import rng


def synthetic_table(
    models: Iterable[str] = ("small_cnn",),
    studies: Iterable[str] = STUDIES,
    samples: Iterable[int] = (0, 1, 2),
    seeds: Iterable[int] = (0,),
    *,
    seed: int = 0,
    noise: float = 0.03,
) -> pd.DataFrame:
    """A fake collected job table with a planted shortcut structure, for tests.

    Factors earlier in FACTORS are "easier": in ZGO a model predicting factor i from a training
    set where it co-occurs with j keeps ~0.95 OOD accuracy when i is easier than j and drops to
    ~0.05 otherwise; each CGO step adds 0.15 and FGO-5/10/20 add 0.3/0.5/0.7 to the vulnerable
    pairs; texture is hard even without shortcuts (ZSO 0.6). CHGO rows carry per-cell columns
    ``test_acc@<a><b>-ood``: the shortcut-only class gets the ZGO accuracy (no transfer of
    generalisation opportunities, as the paper found), the other classes the CGO-2 one.
    """
    boost = {"ZGO": 0.0, "CGO-1": 0.15, "CGO-2": 0.3, "CGO-3": 0.45, "CHGO": 0.3,
             "FGO-5": 0.3, "FGO-10": 0.5, "FGO-20": 0.7}
    rows: list[dict[str, Any]] = []
    for model in models:
        for study in studies:
            if study not in STUDIES:
                raise MetricsError(unknown_choice("study", study, STUDIES))
            pairs = ([(f, "") for f in FACTORS] if study == "ZSO" else
                     [(i, j) for i in FACTORS for j in FACTORS if i != j])
            for pred, corr in pairs:
                for sample in samples:
                    for train_seed in seeds:
                        g = rng(seed, "synthetic", model, study, pred, corr, sample, train_seed)
                        easy = 0.6 if pred == "texture" else 0.97
                        if study == "ZSO":
                            base = easy
                        elif FACTORS.index(pred) < FACTORS.index(corr):
                            base = zgo = easy - 0.02
                        else:
                            zgo = 0.05
                            base = zgo + boost[study]
                        row: dict[str, Any] = {
                            "job_id": f"{model}-{study}-{pred}-{corr}-{sample}-{train_seed}",
                            "model": model, "algorithm": "erm", "study": study,
                            "predicted": pred, "correlated": corr, "sample": sample,
                            "seed": train_seed,
                            "experiment": f"{study}/{pred}-{corr}/{sample}" if corr
                            else f"{study}/{pred}/{sample}",
                            "scale": 0.01, "status": "done", "best_epoch": 3, "epochs_run": 5,
                            "val_loss": 0.1, "val_acc": 0.99, "train_seconds": 1.0,
                        }
                        if study == "CHGO":
                            a_star = sample % 3
                            b_star = (sample + 1) % 3
                            so = float(np.clip(zgo + g.normal(0, noise), 0, 1))
                            others = np.clip(base + g.normal(0, noise, 2), 0, 1)
                            cells = {f"{a_star}{b}-ood": so for b in range(3) if b != b_star}
                            rest = [a for a in range(3) if a != a_star]
                            cells.update({f"{a}{b_star}-ood": float(v)
                                          for a, v in zip(rest, others, strict=True)})
                            for tag, value in cells.items():
                                row[f"{TAG_PREFIX}{tag}"] = value
                            row["test_acc"] = float(np.mean([so, *others]))
                        else:
                            row["test_acc"] = float(np.clip(base + g.normal(0, noise), 0, 1))
                        rows.append(row)
    return pd.DataFrame(rows)
