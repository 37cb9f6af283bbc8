"""BiasBed's Table 2 comparison end to end at CPU scale: eight competitors, ten test sets.

Competitors are (algorithm, training set) pairs: pAdaIN, SagNet, InfoDrop, Debiased and ERM on
the ImageNet-like training set, and ERM on three other training sets (Stylized, two DeepAugment
variants). All are 1000-class models scored on the same ten test folders through their heads
(1000 classes, the 16 categories by logit averaging, ImageNet-A/R by their 200 classes).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.biasbed.datasets import FolderExperiment
from shortcutlab.biasbed.protocol import (
    ProtocolSettings,
    build_protocol_jobs,
    compare_algorithms,
    competitor_table,
    load_epochs,
    run_protocol,
    strict_test_sets,
)
from shortcutlab.errors import StatsError
from tests.biasbed.adain_pair import write_adain_pair
from tests.biasbed.conftest import write_folder

# its module-scoped fixtures are computed once: every test of the module on one xdist worker
pytestmark = pytest.mark.xdist_group("test_table2_protocol")

WNIDS = {"n02106662": 0, "n02123045": 1, "n04591713": 2}  # dog, cat, bottle
CATEGORIES = {"dog": 0, "cat": 1, "bottle": 2}
TEST_SETS = {  # name -> (classes, head or None for auto-detection)
    "imagenet1k": (WNIDS, None),
    "silhouette": (CATEGORIES, None),
    "edge": (CATEGORIES, None),
    "sketch": (CATEGORIES, None),
    "cue-conflict": (CATEGORIES, None),
    "stylized-imagenet": (CATEGORIES, None),
    "imagenet-a": ({"n02106662": 0, "n04591713": 2}, "imagenet-a"),
    "imagenet-r": (WNIDS, "imagenet-r"),
    "deepaug-cae": (WNIDS, None),
    "deepaug-edsr": (WNIDS, None),
}
TRAINING_SETS = {  # name -> the test set made like it (strict setting)
    "imagenet": None,
    "stylized": "stylized-imagenet",
    "cae": "deepaug-cae",
    "edsr": "deepaug-edsr",
}


@pytest.fixture(scope="module")
def table2_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("table2")
    tests = {}
    for i, (name, (classes, _)) in enumerate(TEST_SETS.items()):
        tests[name] = write_folder(root / "test" / name, classes, 2, 100 + i, size=(20, 18))
    heads = {n: h for n, (_, h) in TEST_SETS.items() if h}
    experiments = {}
    for i, (name, own) in enumerate(TRAINING_SETS.items()):
        experiments[name] = FolderExperiment(
            write_folder(root / name / "train", WNIDS, 4, 10 * i, size=(20, 18)),
            write_folder(root / name / "val", WNIDS, 2, 10 * i + 1, size=(20, 18)),
            tests, image_size=16, label_space_kind="imagenet1k", preprocess="imagenet",
            test_heads=heads, in_distribution=(own,) if own else (),
        )
    vgg, dec = write_adain_pair(root)
    out = root / "runs"
    common = {"seeds": (0, 1), "epochs": 2, "batch_size": 6, "lr": 1e-3, "preset": "biasbed"}
    planned = build_protocol_jobs([experiments["imagenet"]], ProtocolSettings(
        ("erm", "padain", "sagnet", "infodrop", "debiased"),
        hparams={"debiased": {"vgg_weights": str(vgg), "decoder_weights": str(dec)}}, **common,
    ), dataset_names=["imagenet"])
    names = [n for n in TRAINING_SETS if n != "imagenet"]
    planned += build_protocol_jobs([experiments[n] for n in names],
                                   ProtocolSettings(("erm",), **common), dataset_names=names)
    summary = run_protocol(planned, out, progress=False)
    assert len(summary.done) == 16 and not summary.failed, summary.failed
    return out, root


def test_eight_competitors_over_ten_test_sets(table2_dir: tuple[Path, Path]) -> None:
    out, _ = table2_dir
    epochs = load_epochs(out)
    result = compare_algorithms(epochs, "best_validation")
    assert sorted(result.algorithms) == sorted(
        [f"{a} on imagenet" for a in ("erm", "padain", "sagnet", "infodrop", "debiased")]
        + ["erm on stylized", "erm on cae", "erm on edsr"]
    )
    assert sorted(result.blocks) == sorted(TEST_SETS)  # not ragged: one row per competitor
    assert result.n_runs.to_numpy().min() == 2
    assert np.isfinite(result.means.to_numpy()).all()
    # 16-class test sets are scored 3-way among the categories present, A on its 2 classes
    accs = epochs[(epochs["tag"] == "all")]
    assert accs["acc"].between(0, 1).all()


def test_strict_setting_and_pingouin_df(table2_dir: tuple[Path, Path]) -> None:
    out, _ = table2_dir
    assert strict_test_sets(out) == ["deepaug-cae", "deepaug-edsr", "stylized-imagenet"]
    epochs = load_epochs(out)
    strict = compare_algorithms(epochs, exclude_test_sets=strict_test_sets(out), df="pingouin")
    assert len(strict.blocks) == 7 and "stylized-imagenet" not in strict.blocks
    assert strict.df_num == pytest.approx(7 - 2 / 7)
    # the old reading (training sets as extra blocks) is ragged for this design
    with pytest.raises(StatsError, match="ragged table"):
        compare_algorithms(epochs, compare_by="dataset")
    with pytest.raises(StatsError, match="test set to exclude"):
        compare_algorithms(epochs, exclude_test_sets=["stylized"])


def test_competitor_descriptions_name_the_recipe(table2_dir: tuple[Path, Path]) -> None:
    out, root = table2_dir
    table = competitor_table(out)
    assert len(table) == 8 and (table["runs"] == 2).all()
    erm = table[(table["algorithm"] == "erm") & (table["dataset"] == "imagenet")].iloc[0]
    assert erm["preset"] == "biasbed (lr=0.001, batch_size=6, epochs=2)"
    assert erm["train_dir"] == str((root / "imagenet" / "train").resolve())
    jobs = pd.read_csv(out / "jobs.csv")
    assert jobs["preset"].str.startswith("biasbed").all()


def test_report_cli_strict(table2_dir: tuple[Path, Path], tmp_path: Path) -> None:
    from shortcutlab.cli.main import app
    from shortcutlab.cli.output import to_json

    out, _ = table2_dir
    res = CliRunner().invoke(app, ["biasbed", "report", str(out), "--out", str(tmp_path),
                                   "--strict", "--df", "pingouin", "--nemenyi-clip", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "comparison.json").read_text())
    assert json.loads(res.stdout)["comparison"] == json.loads(to_json(data))
    assert data["n_blocks"] == 7 and data["n_algorithms"] == 8
    assert sorted(data["excluded_blocks"]) == ["deepaug-cae", "deepaug-edsr", "stylized-imagenet"]
    assert data["df_convention"] == "pingouin" and data["nemenyi_clipped"]
    html = (tmp_path / "index.html").read_text()
    assert "Strict setting: left out" in html and "erm on stylized" in html
    assert "biasbed (lr=0.001" in html
    assert (tmp_path / "competitors.csv").is_file()
