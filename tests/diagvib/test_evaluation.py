"""Scoring one's own predictions: the public mean-per-class metric, ``DiagvibDataset.eval``,
job rows that feed the benchmark metrics, and the dataset's ``transform``/``items`` options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import balanced_accuracy_score
from torch.utils.data import DataLoader

from shortcutlab.diagvib import (
    DiagvibDataset,
    compute_metrics,
    evaluate_predictions,
    job_row,
    make_experiment,
    mean_per_class_accuracy,
)
from shortcutlab.diagvib import dataset as dataset_module
from shortcutlab.diagvib.factors import FACTOR_TABLE, FACTORS
from shortcutlab.errors import DiagvibError, ShortcutlabError
from shortcutlab.train import metrics as train_metrics


class ZeroGenerator:
    """Grey images of the right shape: evaluation needs labels and tags, not pixels."""

    def render(self, classes, *, seed, split, indices, backend="numpy", device="cpu"):
        return np.full((len(indices), 3, 128, 128), 127, dtype=np.uint8)


@pytest.fixture(autouse=True)
def no_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_module, "_default_generator", ZeroGenerator)


def _imbalanced(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    target = g.choice(3, size=n, p=[0.7, 0.2, 0.1])
    preds = np.where(g.random(n) < 0.6, target, g.integers(0, 3, n))
    return preds, target


@pytest.mark.parametrize("seed", range(5))
def test_metric_matches_sklearn_balanced_accuracy_and_the_trainer(seed: int) -> None:
    preds, target = _imbalanced(seed)
    expected = balanced_accuracy_score(target, preds)
    assert mean_per_class_accuracy(preds, target) == pytest.approx(expected, abs=1e-12)
    assert mean_per_class_accuracy(preds, target, 3) == pytest.approx(expected, abs=1e-12)
    assert mean_per_class_accuracy is train_metrics.mean_per_class_accuracy  # one home
    torch_value = mean_per_class_accuracy(torch.from_numpy(preds), torch.from_numpy(target))
    assert isinstance(torch_value, torch.Tensor) and torch_value.ndim == 0
    assert float(torch_value) == pytest.approx(expected, abs=1e-6)


def test_metric_takes_scores_and_ignores_classes_only_predicted() -> None:
    target = np.array([0, 0, 1, 1, 1])
    preds = np.array([0, 2, 1, 1, 2])  # class 2 never occurs in the targets
    by_loop = np.mean([np.mean(preds[target == c] == c) for c in (0, 1)])
    assert mean_per_class_accuracy(preds, target) == pytest.approx(by_loop)
    logits = np.eye(3)[preds] * 5.0
    assert mean_per_class_accuracy(logits, target) == pytest.approx(by_loop)
    t = mean_per_class_accuracy(torch.from_numpy(logits), torch.from_numpy(target))
    assert float(t) == pytest.approx(by_loop, abs=1e-6)
    assert np.isnan(mean_per_class_accuracy(np.zeros(0, int), np.zeros(0, int)))
    # plain accuracy would differ on this unbalanced set: the trap the metric avoids
    assert float(np.mean(preds == target)) != pytest.approx(by_loop)
    with pytest.raises(ShortcutlabError, match="expected \\(5,\\)"):
        mean_per_class_accuracy(preds[:4], target)


def test_evaluate_predictions_is_flat_and_per_group() -> None:
    target = np.array([0, 0, 1, 2, 2, 2])
    preds = np.array([0, 1, 1, 2, 0, 0])
    tags = np.array(["00-id", "00-id", "11-id", "21-ood", "21-ood", "22-id"])
    results, text = evaluate_predictions(preds, target, tags)
    assert results["acc_avg"] == pytest.approx(balanced_accuracy_score(target, preds))
    assert results["acc_plain"] == pytest.approx(3 / 6)
    assert results["acc_00-id"] == pytest.approx(0.5) and results["count_00-id"] == 2
    assert results["acc_21-ood"] == 0.5 and results["acc_22-id"] == 0.0
    assert results["acc_wg"] == 0.0 and results["count_all"] == 6
    assert results["count_id"] == 4 and results["count_ood"] == 2
    assert all(isinstance(v, float) for v in results.values())
    assert "Worst cell: 22-id" in text
    with pytest.raises(DiagvibError, match="in 0..2"):
        evaluate_predictions(np.array([0, 1, 3, 2, 2, 2]), target, tags)


def _local(ds: DiagvibDataset, factor: str) -> np.ndarray:
    """Position 0..2 of each image's class of ``factor`` among the spec's selected classes."""
    selected = [FACTOR_TABLE[factor].index(c) for c in ds.spec.selected[factor]]
    return np.array([selected.index(int(c)) for c in ds.classes[:, FACTORS.index(factor)]])


def test_dataset_eval_perfect_constant_and_shuffled() -> None:
    ds = DiagvibDataset(make_experiment("ZGO/hue-shape/0", scale=0.002), "test")
    results, text = ds.eval(ds.labels)
    assert results["acc_avg"] == 1.0 and results["acc_wg"] == 1.0
    tags, counts = np.unique(ds.tags, return_counts=True)
    for tag, count in zip(tags, counts, strict=True):
        assert results[f"count_{tag}"] == count
    assert "ZGO/hue-shape/0 (test)" in text
    constant, _ = ds.eval(np.zeros(len(ds), dtype=int))
    assert constant["acc_avg"] == pytest.approx(1 / 3)
    order = np.random.default_rng(0).permutation(len(ds))
    shuffled, _ = ds.eval(ds.labels[order], indices=order)
    assert shuffled == results
    with pytest.raises(DiagvibError, match="predictions for the 20 images"):
        ds.eval(ds.labels[:-1])


def test_repeated_indices_are_refused_not_counted_twice() -> None:
    ds = DiagvibDataset(make_experiment("ZGO/hue-shape/0", scale=0.002), "test")
    # image 0 twice: scored as given, it would weigh double in its class and cell
    idx = np.array([0, 0, *range(2, len(ds))])
    with pytest.raises(DiagvibError, match="repeat an image"):
        ds.eval(ds.labels[idx], indices=idx)
    with pytest.raises(DiagvibError, match="repeat an image"):
        job_row(ds, ds.labels[idx], model="mine", indices=idx)


def test_job_rows_give_the_benchmark_metrics() -> None:
    rows = []
    for name in ("ZGO/hue-shape/0", "ZGO/shape-hue/0", "CHGO/shape-hue/0"):
        ds = DiagvibDataset(make_experiment(name, scale=0.005), "test")
        # a model that always reads hue: right when hue is predicted, a shortcut otherwise
        rows.append(job_row(ds, _local(ds, "hue"), model="mine"))
    table = pd.DataFrame(rows)
    metrics = compute_metrics(table)
    pairs = metrics.pairs.set_index(["study", "predicted", "correlated"])["mean"]
    assert pairs[("ZGO", "hue", "shape")] == 1.0
    assert pairs[("ZGO", "shape", "hue")] == 0.0
    assert rows[2]["test_acc"] == pairs[("CHGO", "shape", "hue")]
    assert any(c.startswith("test_acc@") for c in rows[2])
    chgo = metrics.chgo.set_index("factor")
    assert chgo.loc["shape", "source"] == "per-tag"
    assert chgo.loc["shape", "mean"] == pytest.approx(0.0)  # shortcut class: 0 in both studies
    with pytest.raises(DiagvibError, match="test-split"):
        job_row(DiagvibDataset(make_experiment("ZSO/hue/0", scale=0.002), "val"),
                np.zeros(17, dtype=int), model="mine")


def test_transform_and_tuple_items_for_ones_own_loop() -> None:
    spec = make_experiment("ZSO/hue/0", scale=0.002)
    ds = DiagvibDataset(spec, "train", transform=lambda x: x[:, :32, :32] * 2, items="tuple")
    x, y = ds[3]
    assert x.shape == (3, 32, 32) and float(x.max()) == pytest.approx(2 * 127 / 255)
    assert int(y) == ds.labels[3]
    xb, yb = next(iter(DataLoader(ds, batch_size=8)))
    assert xb.shape == (8, 3, 32, 32) and torch.equal(yb, torch.from_numpy(ds.labels[:8]))
    assert DiagvibDataset(spec, "train")[3]["x"].shape == (3, 128, 128)  # dicts by default
    with pytest.raises(DiagvibError, match="item kind"):
        DiagvibDataset(spec, "train", items="list")


def test_id_and_ood_accuracies_are_over_their_own_cells() -> None:
    """acc_id / acc_ood: mean per-class accuracy over the images of the -id / -ood cells only
    (sklearn's balanced accuracy on those images), not over every image."""
    target = np.array([0, 0, 1, 2, 2, 2])
    preds = np.array([0, 1, 1, 2, 0, 0])
    tags = np.array(["00-id", "00-id", "11-id", "21-ood", "21-ood", "22-id"])
    results, _ = evaluate_predictions(preds, target, tags)
    ood = np.char.endswith(tags, "-ood")
    assert results["acc_id"] == pytest.approx(balanced_accuracy_score(target[~ood], preds[~ood]))
    assert results["acc_id"] == pytest.approx(0.5)  # classes 0, 1, 2: 1/2, 1, 0
    assert results["acc_ood"] == pytest.approx(0.5)  # class 2 only: 1 of 2
    assert results["acc_avg"] == pytest.approx((1 / 2 + 1 + 1 / 3) / 3)  # all images differ


def test_negative_class_ids_and_indices_are_refused() -> None:
    """A -1 prediction (e.g. an 'abstain' code) is not a class: refused, not scored as a miss;
    a -1 index would silently take the last image's label and cell (numpy wraps it round)."""
    target = np.array([0, 0, 1, 2, 2, 2])
    tags = np.array(["00-id", "00-id", "11-id", "21-ood", "21-ood", "22-id"])
    with pytest.raises(DiagvibError, match="in 0..2"):
        evaluate_predictions(np.array([0, -1, 1, 2, 2, 2]), target, tags)
    ds = DiagvibDataset(make_experiment("ZGO/hue-shape/0", scale=0.002), "test")
    idx = np.array([-1, *range(1, len(ds))])  # image 0 missing, the last one twice
    with pytest.raises(DiagvibError, match="indices must be in"):
        ds.eval(ds.labels[idx], indices=idx)


def test_job_row_test_acc_is_mean_per_class_on_an_unbalanced_subset() -> None:
    """The paper's accuracy is the mean per-class one: on a subset of all class-0 images and
    one image each of classes 1 and 2, half of class 0 wrong, plain accuracy is far lower."""
    ds = DiagvibDataset(make_experiment("ZGO/hue-shape/0", scale=0.005), "test")
    zero = np.flatnonzero(ds.labels == 0)
    idx = np.concatenate([zero, np.flatnonzero(ds.labels == 1)[:1],
                          np.flatnonzero(ds.labels == 2)[:1]])
    preds = ds.labels[idx].copy()
    preds[: zero.size // 2] = 1
    row = job_row(ds, preds, model="mine", indices=idx)
    expected = balanced_accuracy_score(ds.labels[idx], preds)
    assert row["test_acc"] == pytest.approx(expected)
    half = 1 - (zero.size // 2) / zero.size
    assert expected == pytest.approx((half + 1 + 1) / 3)  # classes 0, 1, 2
    assert float(np.mean(preds == ds.labels[idx])) < expected - 0.1  # plain would differ
