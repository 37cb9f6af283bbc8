"""What a researcher's own files and habits bring (issue 23): ``python -m shortcutlab``, job
tables of ``job_row`` through ``report``, progress on stderr and pure JSON on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from shortcutlab import __version__
from shortcutlab.cli.main import app
from tests.package_src import PACKAGE_SRC

runner = CliRunner()


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(PACKAGE_SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", **extra}


def test_python_dash_m_shortcutlab(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "shortcutlab", "--version"], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"shortcutlab {__version__}"


def test_progress_bar_draws_on_stderr(capsys) -> None:
    from shortcutlab.utils.progress import progress_bar

    with progress_bar() as bar:
        task = bar.add_task("work", total=3)
        bar.advance(task, 3)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "3/3" in captured.err


def test_job_row_table_reaches_the_report(tmp_path: Path) -> None:
    """docs/own-model.md's route: own predictions -> job_row -> a table -> `report --json`."""
    from shortcutlab.diagvib import DiagvibDataset, job_row, make_experiment

    rows = []
    for name in ("ZGO/hue-shape/0", "ZGO/shape-hue/0", "CHGO/shape-hue/0"):
        test = DiagvibDataset(make_experiment(name, scale=0.002), "test")
        rows.append(job_row(test, np.zeros(len(test), dtype=int), model="mine"))
    pd.DataFrame(rows).to_csv(tmp_path / "mine.csv", index=False)
    res = runner.invoke(app, ["diagvib", "report", str(tmp_path / "mine.csv"), "--out",
                              str(tmp_path / "rep"), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data == json.loads((tmp_path / "rep" / "metrics.json").read_text())
    assert data["jobs"]["mine"]["done"] == 3
    assert set(data["models"]["mine"]["ZGO"]["P"]) == {"hue-shape", "shape-hue"}
    html = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "mine" in html


#: Import name of each declared dependency whose distribution name differs from it.
_IMPORT_NAMES = {"pyyaml": "yaml", "imagenet-x": "imagenet_x", "easy-vqa": "easy_vqa",
                 "scikit-image": "skimage", "scikit-posthocs": "scikit_posthocs",
                 "pillow": "PIL"}


def test_every_declared_dependency_is_used_by_the_package() -> None:
    """A dependency the package never imports is weight a researcher pays for nothing
    (pyarrow is pandas' Parquet engine: used through to_parquet/read_parquet; imagenet-x's
    annotation files are read with importlib.resources)."""
    import re
    import tomllib

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    source = "\n".join(p.read_text(encoding="utf-8") for p in (root / "src").rglob("*.py"))
    unused = []
    for requirement in project["dependencies"]:
        name = re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower()
        module = _IMPORT_NAMES.get(name, name.replace("-", "_"))
        used = ("parquet(" in source if name == "pyarrow"
                else re.search(rf"^\s*(from|import) {module}\b|files\(\"{module}\"\)", source,
                               re.MULTILINE))
        if not used:
            unused.append(name)
    assert not unused, f"declared but never imported: {unused}"


def test_figures_are_readable_and_legends_hide_no_bars() -> None:
    from matplotlib.text import Text

    from shortcutlab.diagvib.figures import plot_factor_aggregates
    from shortcutlab.diagvib.metrics import compute_metrics
    from shortcutlab.vqa.figures import accuracy_bars
    from tests.diagvib.tables import synthetic_table

    fig = accuracy_bars({"model": {"iid": 60.0, "KO": 95.0, "QT": 50.0},
                         "other": {"iid": 55.0, "KO": 98.0, "QT": 40.0}})
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # beside the bars, not over them
    metrics = compute_metrics(synthetic_table(studies=("ZSO", "ZGO", "CGO-1"), samples=(0,)))
    fig = plot_factor_aggregates(metrics, "CGO")
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text()]
    assert min(sizes) >= 10  # the figure is shown ~14 in wide: 7 pt read as ~7 px
