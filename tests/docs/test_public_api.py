"""Every area exports its public names (``__all__``), so docs import from the area; the light
areas (statistics, ImageNet-X analysis, DiagViB-6 metrics) work without torch."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

AREAS = ["diagvib", "stats", "biasbed", "train", "runner", "vqa", "imagenetx", "factor_analysis"]


@pytest.mark.parametrize("area", AREAS)
def test_all_names_resolve_to_objects_not_modules(area: str) -> None:
    package = importlib.import_module(f"shortcutlab.{area}")
    names = package.__all__
    assert len(names) == len(set(names)) and names
    for info in pkgutil.iter_modules(package.__path__):  # a later submodule import must not
        importlib.import_module(f"{package.__name__}.{info.name}")  # shadow a public name
    for name in names:
        value = getattr(package, name)
        assert not isinstance(value, types.ModuleType), f"shortcutlab.{area}.{name} is a module"


BLOCK_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "torchvision"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""

WITHOUT_TORCH = BLOCK_TORCH + """
import numpy as np
import pandas as pd
from shortcutlab.stats import compare
from shortcutlab.imagenetx import get_factor_accuracies, original_labels_predictions
from shortcutlab.diagvib import FACTORS, compute_metrics, evaluate_predictions
table = get_factor_accuracies(original_labels_predictions(), error_type="real_class")
assert abs(table["average"].iloc[0] - 0.835220) < 1e-6
scores = pd.DataFrame({"block": ["x", "y", "z"], "a": [0.8, 0.7, 0.9], "b": [0.6, 0.5, 0.7]})
assert compare(scores).ranks["a"] == 1.0
zso = pd.DataFrame({"model": "m", "study": "ZSO", "predicted": list(FACTORS), "correlated": "",
                    "sample": 0, "seed": 0, "status": "done", "test_acc": 0.9})
assert len(compute_metrics(zso).zso) == 6
results, _ = evaluate_predictions(np.array([0, 1]), np.array([0, 0]), np.array(["a", "b"]))
assert results["acc_avg"] == 0.5
from shortcutlab.cli.main import app
app(["stats", "compare", sys.argv[1], "--json"], standalone_mode=False)
assert "torch" not in sys.modules
"""


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_statistics_and_imagenetx_work_without_torch(tmp_path: Path) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text("dataset,a,b,c\nd1,0.8,0.7,0.6\nd2,0.9,0.6,0.5\nd3,0.7,0.65,0.6\n")
    result = subprocess.run([sys.executable, "-c", WITHOUT_TORCH, str(scores)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert '"algorithms"' in result.stdout
