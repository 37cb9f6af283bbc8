"""The classifier head (``full``: one output per class of the predicted factor, as the authors'
networks; ``selected``: 3 outputs) and the other open choices recorded in DiagViB-6 jobs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shortcutlab.diagvib.dataset import DiagvibDataset
from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.diagvib.jobs import DiagvibParams, build_jobs, job_datasets, job_settings
from shortcutlab.diagvib.studies import make_experiment
from shortcutlab.errors import DiagvibError, RunnerError
from shortcutlab.train.config import TrainConfig


class _NoRender:
    def render(self, *args, **kwargs):
        raise AssertionError("no image is needed")


def _authors_per_class_accuracy(pred: np.ndarray, true: np.ndarray, k: int) -> float:
    """utils/metrics.py of the authors: confusion matrix over all k outputs, recall per class,
    nanmean (classes without targets drop out)."""
    cm = np.bincount(k * true + pred, minlength=k * k).reshape(k, k).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.nanmean(np.diag(cm) / cm.sum(axis=1)))


def test_full_head_labels_are_the_factor_classes_and_scored_as_the_authors_do() -> None:
    spec = make_experiment("ZSO/position/0", scale=0.002, selection="paper")
    sel = DiagvibDataset(spec, "test", generator=_NoRender())
    full = DiagvibDataset(spec, "test", generator=_NoRender(), head="full")
    k = len(FACTOR_TABLE["position"].classes)
    assert (sel.num_classes, full.num_classes) == (3, k) and k == 9
    chosen = spec.class_indices()[FACTORS.index("position")]
    assert np.array_equal(full.labels, chosen[sel.labels])
    assert len(set(full.labels.tolist())) == 3  # only the selected classes occur
    preds = full.labels.copy()
    unused = next(c for c in range(k) if c not in chosen)
    preds[: len(preds) // 4] = unused  # a class no image has: wrong, as in the authors' code
    results, _ = full.eval(preds)
    assert results["acc_avg"] < 0.9
    assert results["acc_avg"] == pytest.approx(_authors_per_class_accuracy(preds, full.labels, k))
    with pytest.raises(DiagvibError, match="unknown head 'wide'; valid choices: selected, full"):
        DiagvibDataset(spec, "test", generator=_NoRender(), head="wide")


def test_head_is_a_job_option_and_part_of_the_job_id() -> None:
    full = build_jobs("small_cnn", ["ZSO"], ["shape-hue"], [0], scale=0.002)
    selected = build_jobs("small_cnn", ["ZSO"], ["shape-hue"], [0], scale=0.002,
                          head="selected")
    demo = build_jobs("small_cnn", ["ZSO"], ["shape-hue"], [0], scale=0.002,
                      train_config=TrainConfig(preset="demo"))
    heads = [DiagvibParams.of(jobs[0]).head for jobs in (full, selected, demo)]
    assert heads == ["full", "selected", "selected"]  # the demo preset keeps the 3-output head
    assert "head" not in full[0].train.model_dump()  # a DiagViB-6 parameter, not training's
    assert full[0].job_id != selected[0].job_id
    _, train_ds, _, test_ds = job_datasets(full[0])
    assert train_ds.num_classes == test_ds.num_classes == len(FACTOR_TABLE["shape"].classes)
    assert job_datasets(selected[0])[1].num_classes == 3
    with pytest.raises(RunnerError, match="unknown head 'wide'; valid choices: full, selected"):
        build_jobs("small_cnn", ["ZSO"], ["shape-hue"], [0], head="wide")


def test_vae_jobs_record_their_classifier_and_settings_are_tabulated() -> None:
    vae = build_jobs("vae", ["ZSO"], ["shape-hue"], [0], scale=0.002)[0]
    assert vae.train.hparams["classifier"] == "joint"  # appendix A.2: cross entropy
    probe = build_jobs("vae", ["ZSO"], ["shape-hue"], [0], scale=0.002,
                       train_config=TrainConfig(hparams={"classifier": "probe"}))[0]
    assert probe.train.hparams["classifier"] == "probe" and probe.job_id != vae.job_id
    stored = vae.model_dump(mode="json")["train"]
    assert job_settings(stored) == {"lr": 2e-4, "batch_size": 64,
                                    "normalization": "train", "frozen_batchnorm": "",
                                    "vae_classifier": "joint", "precision": "fp32",
                                    "channels_last": False}
    rn50 = TrainConfig(model="rn50_in", frozen_batchnorm="eval").model_dump(mode="json")
    assert job_settings(rn50)["frozen_batchnorm"] == "eval"
    fast = job_settings(TrainConfig(precision="bf16", channels_last=True))  # the recipe named
    assert (fast["precision"], fast["channels_last"]) == ("bf16", True)


def test_cli_error_bars_head_and_budget(tmp_path) -> None:
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app
    from tests.diagvib.tables import synthetic_table

    runner = CliRunner()
    table = synthetic_table(studies=("ZSO",), samples=(0, 1, 2))
    path = tmp_path / "jobs.csv"
    table.to_csv(path, index=False)
    std = runner.invoke(app, ["diagvib", "metrics", str(path), "--error-bars", "std"])
    sem = runner.invoke(app, ["diagvib", "metrics", str(path)])
    assert std.exit_code == 0 and "mean ± std" in std.output
    assert sem.exit_code == 0 and "mean ± sem" in sem.output
    assert std.output != sem.output
    bad = runner.invoke(app, ["diagvib", "metrics", str(path), "--error-bars", "ci"])
    assert bad.exit_code == 2 and "unknown error bars 'ci'; valid choices: sem, std" in bad.output
    report = runner.invoke(app, ["diagvib", "report", str(path), "--out", str(tmp_path / "r"),
                                 "--error-bars", "std"])
    assert report.exit_code == 0
    assert "standard deviation (ddof 0" in (tmp_path / "r" / "index.html").read_text()
    run = ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--pairs", "hue-shape",
           "--scale", "0.002", "--device", "cpu", "--backend", "serial",
           "--out", str(tmp_path / "run")]
    wide = runner.invoke(app, [*run, "--head", "wide"])
    assert wide.exit_code == 2 and "unknown head 'wide'" in wide.output
    none = runner.invoke(app, [*run, "--head", "selected", "--budget-seconds", "0",
                               "--normalization", "imagenet", "--frozen-batchnorm", "eval"])
    assert none.exit_code == 0 and "1 jobs remain" in none.output
    [job] = [json.loads(p.read_text()) for p in (tmp_path / "run").glob("*/job.json")]
    assert job["params"]["head"] == "selected" and job["train"]["normalization"] == "imagenet"
    assert job["train"]["frozen_batchnorm"] == "eval"
    sideways = runner.invoke(app, [*run, "--frozen-batchnorm", "sideways"])
    assert sideways.exit_code == 2 and "frozen_batchnorm" in sideways.output


def test_factor_vae_jobs_record_their_classifier_too() -> None:
    """with_implied_algorithm: VAE *and* FactorVAE jobs record their ``classifier`` (``joint``
    unless given), so it is part of the job id and the job table's vae_classifier column."""
    factor = build_jobs("factor_vae", ["ZSO"], ["shape-hue"], [0], scale=0.002)[0]
    assert factor.train.algorithm == "factor_vae"
    assert factor.train.hparams["classifier"] == "joint"
    assert job_settings(factor.model_dump(mode="json")["train"])["vae_classifier"] == "joint"
    probe = build_jobs("factor_vae", ["ZSO"], ["shape-hue"], [0], scale=0.002,
                       train_config=TrainConfig(hparams={"classifier": "probe"}))[0]
    assert probe.train.hparams["classifier"] == "probe" and probe.job_id != factor.job_id


@pytest.mark.parametrize("preset", ["paper", "default", "biasbed"])
def test_every_preset_but_demo_gets_the_papers_full_head(preset: str) -> None:
    """A.2: "the output size of all the architectures are modified to predict the factor
    classes": one output per class of the factor under any preset; only demo keeps its
    3-output head (docs/diagvib-fidelity.md) (M271)."""
    jobs = build_jobs("small_cnn", ["ZSO"], ["shape-hue"], [0], scale=0.002,
                      train_config=TrainConfig(preset=preset))
    assert DiagvibParams.of(jobs[0]).head == "full"
