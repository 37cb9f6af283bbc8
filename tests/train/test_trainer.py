"""The trainer: mean per-class accuracy, early stopping, best-checkpoint selection, records,
determinism across processes' runtime options."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from shortcutlab.errors import TrainError
from shortcutlab.train import algorithms
from shortcutlab.train.algorithms.base import Algorithm
from shortcutlab.train.batches import EpochBatches
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.metrics import mean_per_class_accuracy, top1_accuracy
from shortcutlab.train.trainer import (
    EPOCH_COLUMNS,
    evaluate,
    train,
    train_epoch,
)
from tests.train.fake_data import FakeDiagvib


def _reference_mpca(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    recalls = [np.mean(y_pred[y_true == c] == c) for c in sorted(set(y_true.tolist()))]
    return float(np.mean(recalls))


def test_mean_per_class_accuracy_matches_reference() -> None:
    # (preds, target), the one order: recall of class 0 is 2/3, of class 1 is 1
    preds, target = np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1])
    assert mean_per_class_accuracy(preds, target, 3) == pytest.approx((2 / 3 + 1) / 2)
    assert mean_per_class_accuracy(target, preds, 3) == pytest.approx((1 + 1 / 2) / 2)
    g = np.random.default_rng(0)
    for _ in range(20):
        y, p = g.integers(0, 3, 50), g.integers(0, 3, 50)
        assert mean_per_class_accuracy(p, y, 3) == pytest.approx(_reference_mpca(y, p))
    assert np.isnan(mean_per_class_accuracy(np.array([]), np.array([]), 3))


def test_both_accuracy_paths_skip_absent_classes_and_refuse_fractional_ids() -> None:
    """Classes 2 and 3 of a 4-way task have no targets: the recall is averaged over classes 0
    and 1 only, by numpy and by torch (a 0 for each absent class would give half of it);
    fractional "ids" are refused, not truncated to a class."""
    preds, target = np.array([0, 1, 1, 0]), np.array([0, 1, 1, 1])
    expected = (1 + 2 / 3) / 2
    assert mean_per_class_accuracy(preds, target, 4) == pytest.approx(expected)
    on_torch = mean_per_class_accuracy(torch.from_numpy(preds), torch.from_numpy(target), 4)
    assert float(on_torch) == pytest.approx(expected)
    with pytest.raises(TrainError, match="must be integer class ids"):
        mean_per_class_accuracy(np.array([0.0, 1.5, 1.0, 0.0]), target, 4)


def test_top1_accuracy_counts_hits_with_the_same_arguments() -> None:
    preds, target = np.array([0, 1, 1, 2, 2]), np.array([0, 0, 1, 2, 2])
    assert top1_accuracy(preds, target) == pytest.approx(4 / 5)
    assert top1_accuracy(preds, target, 3) == pytest.approx(4 / 5)  # the same call as ...
    assert mean_per_class_accuracy(preds, target, 3) == pytest.approx((1 / 2 + 1 + 1) / 3)
    scores = np.eye(3)[preds]  # (N, C) scores: the arg-max counts
    assert top1_accuracy(scores, target) == pytest.approx(4 / 5)
    out = top1_accuracy(torch.from_numpy(scores), torch.from_numpy(target))
    assert isinstance(out, torch.Tensor) and float(out) == pytest.approx(4 / 5)
    assert np.isnan(top1_accuracy(np.array([]), np.array([])))


def test_epoch_batches_are_a_seeded_permutation_without_singletons() -> None:
    sampler = EpochBatches(33, 8, seed=1)
    batches = list(sampler)
    flat = [i for b in batches for i in b]
    assert len(flat) == 32 and len(set(flat)) == 32 and set(flat) <= set(range(33))
    assert [len(b) for b in batches] == [8, 8, 8, 8]  # the lone 33rd sample is dropped
    assert batches == list(EpochBatches(33, 8, seed=1))
    sampler.set_epoch(1)
    assert list(sampler) != batches


@pytest.mark.parametrize(("n", "batch_size"), [(32, 8), (33, 8), (39, 8), (40, 8), (5, 8)])
def test_drop_last_batches_are_those_of_torchs_batch_sampler(n: int, batch_size: int) -> None:
    """``drop_last`` (the DiagViB-6 authors' loader) drops only an incomplete last batch: as many
    full batches as torch's ``BatchSampler(drop_last=True)`` makes (a set that divides evenly
    keeps every item); a set smaller than one batch keeps its only batch."""
    from torch.utils.data import BatchSampler, SequentialSampler

    batches = EpochBatches(n, batch_size, seed=0, drop_last=True).batches()
    reference = list(BatchSampler(SequentialSampler(range(n)), batch_size, drop_last=True))
    expected = [len(b) for b in reference] or [n]
    assert [len(b) for b in batches] == expected
    flat = np.concatenate(batches)
    assert len(set(flat.tolist())) == len(flat)


DATA = dict(
    train_ds=FakeDiagvib(96), val_ds=FakeDiagvib(24, split="val"),
    test_sets={"test": FakeDiagvib(30, split="test", ood=True)},
)
CFG = TrainConfig(model="small_cnn", model_kwargs={"width": 8}, epochs=3, batch_size=16, lr=3e-3)


def test_training_learns_and_records_every_epoch_and_tag() -> None:
    res = train(CFG, **DATA)
    assert res.test_acc["test"] > 0.9 and res.val_acc > 0.9
    frame = res.epochs
    assert list(frame.columns) == list(EPOCH_COLUMNS)
    assert sorted(frame["epoch"].unique()) == list(range(res.epochs_run))
    tags = set(frame["tag"]) - {"all"}
    assert tags == set(DATA["test_sets"]["test"].tags)
    per_epoch = frame[frame["tag"] != "all"].groupby("epoch")["n"].sum()
    assert (per_epoch == 30).all()
    # the reported numbers are those of the epoch with the lowest validation loss
    losses = frame.groupby("epoch")["val_loss"].first()
    assert res.best_epoch == int(losses.idxmin())
    best = frame[(frame["epoch"] == res.best_epoch) & (frame["tag"] == "all")].iloc[0]
    assert res.test_acc["test"] == best["acc"] and res.val_loss == best["val_loss"]
    summary = res.summary()
    assert summary["test_acc"] == res.test_acc["test"]
    assert {f"test_acc@{t}" for t in tags} <= set(summary)


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_same_config_same_numbers_whatever_the_runtime_options() -> None:
    """Loader workers and the evaluation batch size change nothing in training (train_loss,
    accuracies and counts are equal to the bit). The validation loss is equal to ~1e-12:
    per-sample losses are summed in one fixed order whatever the batch size, but a convolution
    over 7 images may use another kernel than over 256, and some torch releases of the declared
    range (2.11) differ there in the last bits of float32 logits (seen: 1e-9 absolute)."""
    cfg = CFG.replace(epochs=2)
    first = train(cfg, **DATA)
    again = train(cfg, **DATA, num_workers=1, eval_batch_size=7)
    exact = [c for c in first.epochs.columns if c != "val_loss"]
    assert first.epochs[exact].equals(again.epochs[exact])
    np.testing.assert_allclose(again.epochs["val_loss"], first.epochs["val_loss"], rtol=1e-7,
                               atol=1e-8)
    other_seed = train(cfg.replace(seed=1), **DATA)
    assert not first.epochs["train_loss"].equals(other_seed.epochs["train_loss"])


class _Frozen(Algorithm):
    """Never learns: validation loss is constant, so early stopping must trigger. Counts its
    steps in ``updates`` (subclasses script their logits by it)."""

    def __init__(self, num_classes, config, context=None) -> None:
        super().__init__(num_classes, config, context)
        self.w = torch.nn.Parameter(torch.zeros(num_classes))
        self.updates = 0

    def update(self, batch):
        self.updates += 1
        return {"loss": 1.0}

    def predict(self, x):
        return self.w.expand(len(x), -1)


@pytest.fixture
def frozen_algorithm() -> Iterator[str]:
    """``_frozen_test`` registered for one test only (the registry is restored afterwards)."""
    with algorithms.REGISTRY.scratch():
        algorithms.register_algorithm(_Frozen, name="_frozen_test")
        yield "_frozen_test"


@pytest.mark.usefixtures("frozen_algorithm")
def test_early_stopping_on_validation_loss() -> None:
    cfg = TrainConfig(algorithm="_frozen_test", epochs=10, patience=2)
    res = train(cfg, **DATA)
    assert (res.best_epoch, res.epochs_run, res.stopped_early) == (0, 3, True)
    no_patience = train(cfg.replace(patience=None, epochs=4), **DATA)
    assert no_patience.epochs_run == 4 and not no_patience.stopped_early


class _Drifting(_Frozen):
    """Moves its logits towards class 0 at every step: the validation loss grows epoch after
    epoch, so the best epoch is the first and the last weights are not the best."""

    def update(self, batch):
        with torch.no_grad():
            self.w[0] += 1.0
        return {"loss": 1.0}


@pytest.fixture
def drifting_algorithm() -> Iterator[str]:
    with algorithms.REGISTRY.scratch():
        algorithms.register_algorithm(_Drifting, name="_drifting_test")
        yield "_drifting_test"


def test_keep_best_state_returns_the_best_weights(drifting_algorithm: str) -> None:
    cfg = TrainConfig(algorithm=drifting_algorithm, epochs=3, batch_size=16)
    res = train(cfg, **DATA, keep_best_state=True)
    assert res.best_state is not None and res.best_epoch == 0 < res.epochs_run - 1
    steps_per_epoch = len(DATA["train_ds"]) // cfg.batch_size
    assert float(res.best_state["w"][0]) == steps_per_epoch  # the weights after epoch 0
    again = algorithms.create_algorithm(drifting_algorithm, 3, cfg)
    again.load_state_dict(res.best_state)
    val = evaluate(again, DATA["val_ds"], device=torch.device("cpu"))
    assert val.loss == pytest.approx(res.val_loss, rel=1e-12)


def test_keep_best_state_of_a_real_model() -> None:
    res = train(CFG, **DATA, keep_best_state=True)
    assert res.best_state is not None
    assert any(k.endswith("head.weight") for k in res.best_state)


def test_train_epoch_means_the_named_outputs_per_item_and_refuses_non_finite_ones() -> None:
    """The trainer's epoch (also the β-VAE experiment's): per-item means of the outputs named,
    tensors and floats alike, the step counted on, ``on_step`` after each step; a missing or
    non-finite output is an error naming it and the step."""
    algo = algorithms.create_algorithm("erm", 3, TrainConfig(algorithm="erm"))
    batches = [{"x": torch.zeros(n, 3, 8, 8), "y": torch.zeros(n, dtype=torch.long)}
               for n in (2, 6)]
    outputs = iter([{"loss": torch.tensor(1.0), "kl": 4.0}, {"loss": 3.0, "kl": torch.tensor(0.0)}])
    calls: list[int] = []
    means, step = train_epoch(algo, batches, lambda b: next(outputs), torch.device("cpu"),
                              epoch=0, step=5, keys=("loss", "kl"),
                              on_step=lambda: calls.append(algo.step))
    assert means == {"loss": (1 * 2 + 3 * 6) / 8, "kl": 4 * 2 / 8}
    assert step == 7 and calls == [5, 6]
    cpu = torch.device("cpu")
    with pytest.raises(TrainError, match="no finite 'kl' at step 0"):
        train_epoch(algo, batches, lambda b: {"loss": 1.0}, cpu, epoch=0, step=0,
                    keys=("loss", "kl"))
    with pytest.raises(TrainError, match="no finite 'loss' at step 3"):
        train_epoch(algo, batches, lambda b: {"loss": float("nan")}, cpu, epoch=1, step=3)
    nan = torch.tensor(float("nan"))  # a tensor is checked once, at the end of the epoch
    with pytest.raises(TrainError, match="no finite 'loss' in steps 3-4 \\(epoch 1\\)"):
        train_epoch(algo, batches, lambda b: {"loss": nan}, cpu, epoch=1, step=3)


@pytest.fixture
def dropout_model() -> Iterator[str]:
    """``_dropout_test``: a tiny network with dropout (as alexnet), registered for one test."""
    from shortcutlab.train import models

    def _dropout_test(num_classes: int) -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=4), torch.nn.Flatten(),
                                   torch.nn.Dropout(0.5), torch.nn.Linear(4 * 8 * 8, num_classes))

    with models.REGISTRY.scratch():
        models.register_model(_dropout_test)
        yield "_dropout_test"


def test_dropout_draws_the_same_whatever_the_loaders(dropout_model: str) -> None:
    """A DataLoader iterator draws its base seed from a generator: torch's global one (dropout's
    on the CPU) unless it is given its own. The trainer gives every loader its own, so a model
    with dropout trains to the same numbers with 0 or 1 workers and with or without another
    evaluation set."""
    cfg = TrainConfig(model=dropout_model, epochs=3, batch_size=16)
    data = dict(train_ds=FakeDiagvib(48), val_ds=FakeDiagvib(12, split="val"), test_sets={})
    no_workers = train(cfg, **data)
    one_worker = train(cfg, **data, num_workers=1)
    assert no_workers.epochs.equals(one_worker.epochs)
    tested = train(cfg, **{**data, "test_sets": {"t": FakeDiagvib(12, split="test")}})
    columns = ["epoch", "train_loss", "val_loss", "val_acc"]
    assert no_workers.epochs[columns].equals(tested.epochs[columns].drop_duplicates("epoch")
                                             .reset_index(drop=True))


class _NanAtFirst(_Frozen):
    """Logits are NaN after the first epoch's steps (e.g. a float16 overflow), finite (constant)
    from the second epoch on."""

    def predict(self, x):
        logits = self.w.expand(len(x), -1)
        return logits * math.nan if self.updates <= 6 else logits


def test_a_nan_validation_loss_is_never_the_best() -> None:
    """A NaN validation loss at the first epoch must not stay the selected one: NaN compares
    False with everything, so a later finite loss never looked lower."""
    with algorithms.REGISTRY.scratch():
        algorithms.register_algorithm(_NanAtFirst, name="_nan_first_test")
        cfg = TrainConfig(algorithm="_nan_first_test", epochs=3, batch_size=16)  # 6 steps/epoch
        res = train(cfg, **DATA)
        assert math.isnan(res.epochs["val_loss"].iloc[0])
        assert res.best_epoch == 1 and res.val_loss == pytest.approx(math.log(3))
        stopped = train(cfg.replace(epochs=10, patience=2), **DATA)
        assert (stopped.best_epoch, stopped.epochs_run) == (1, 4)


class _Souring(Algorithm):
    """Reads the label from the image (the bright square's channel) with a weight that falls by
    0.5 a step: right at epoch 0 (6 steps: 4 -> 1), wrong and ever more sure from epoch 1 on
    (-2, -5), so the validation loss is lowest at epoch 0 while the accuracy then drops to ~0."""

    def __init__(self, num_classes, config, context=None) -> None:
        super().__init__(num_classes, config, context)
        self.s = torch.nn.Parameter(torch.tensor(4.0))

    def update(self, batch):
        with torch.no_grad():
            self.s -= 0.5
        return {"loss": 1.0}

    def predict(self, x):
        return x[:, :, 8:24, 8:24].mean((2, 3)) * self.s


def test_reported_test_accuracy_is_that_of_the_best_epoch_not_the_last() -> None:
    with algorithms.REGISTRY.scratch():
        algorithms.register_algorithm(_Souring, name="_souring_test")
        cfg = TrainConfig(algorithm="_souring_test", epochs=3, batch_size=16)  # 6 steps/epoch
        res = train(cfg, **DATA)
    assert res.best_epoch == 0 and res.epochs_run == 3
    per_epoch = res.epochs[res.epochs["tag"] == "all"].set_index("epoch")["acc"]
    assert per_epoch[0] == 1.0 and per_epoch[2] < 0.5  # the model got worse after epoch 0
    assert res.test_acc["test"] == per_epoch[0] == res.summary()["test_acc"]
    for tag, acc in res.test_acc_tags["test"].items():
        row = res.epochs[(res.epochs["epoch"] == 0) & (res.epochs["tag"] == tag)]
        assert acc == row["acc"].item()
    val_acc = res.epochs.groupby("epoch")["val_acc"].first()
    assert res.val_acc == val_acc[0] == 1.0 and val_acc[2] < 0.5  # the selected epoch's too


@pytest.mark.usefixtures("frozen_algorithm")
def test_patience_running_out_at_the_last_epoch_is_no_early_stop() -> None:
    """Patience 2 with 3 epochs: the loop ends at the last epoch it would have run anyway, so
    nothing was stopped early (``stopped_early`` says epochs were left out)."""
    cfg = TrainConfig(algorithm="_frozen_test", epochs=3, patience=2)
    res = train(cfg, **DATA)
    assert (res.best_epoch, res.epochs_run, res.stopped_early) == (0, 3, False)


class _NoIndex(FakeDiagvib):
    """FakeDiagvib whose items carry no ``index``: evaluation counts positions itself."""

    def __getitem__(self, i: int) -> dict:
        item = super().__getitem__(i)
        del item["index"]
        return item


@pytest.mark.usefixtures("frozen_algorithm")
def test_per_tag_accuracy_without_item_indices_follows_the_dataset_order() -> None:
    """Batches without ``index``: the k-th image of the evaluation is the dataset's k-th, across
    batches. The frozen model predicts class 0 everywhere, so a tag ``<a><b>-...`` has accuracy 1
    when a == 0 and 0 otherwise, and its count is the number of images with that tag."""
    ds = _NoIndex(30, split="test", ood=True)
    algo = algorithms.create_algorithm("_frozen_test", 3, TrainConfig(algorithm="_frozen_test"))
    res = evaluate(algo, ds, device=torch.device("cpu"), batch_size=7)
    tags, counts = np.unique(ds.tags, return_counts=True)
    assert {t: n for t, (_, n) in res.tags.items()} == dict(
        zip(tags.tolist(), counts.tolist(), strict=True))
    assert {t: acc for t, (acc, _) in res.tags.items()} == {
        t: float(t[0] == "0") for t in tags.tolist()}


class _Linear(Algorithm):
    """A linear read-out that records the dtype its logits come out in."""

    def __init__(self, num_classes, config, context=None) -> None:
        super().__init__(num_classes, config, context)
        self.lin = torch.nn.Linear(3, num_classes)
        self.seen: list[torch.dtype] = []

    def update(self, batch):
        return {"loss": 1.0}

    def predict(self, x):
        out = self.lin(x.mean((2, 3)))
        self.seen.append(out.dtype)
        return out


def test_evaluation_runs_under_the_configs_autocast_precision() -> None:
    """``precision`` reaches evaluation: under bf16 a Linear layer's output is bfloat16 (torch's
    autocast op list), under fp32 float32 — a bf16 run's numbers are those of a bf16 model."""
    from shortcutlab.train.precision import precision_available

    if not precision_available("bf16", torch.device("cpu")):
        pytest.skip("no bf16 autocast on this CPU's torch")
    algo = _Linear(3, TrainConfig())
    ds = FakeDiagvib(12, split="test")
    evaluate(algo, ds, device=torch.device("cpu"), precision="bf16")
    assert algo.seen == [torch.bfloat16]
    evaluate(algo, ds, device=torch.device("cpu"), precision="fp32")
    assert algo.seen == [torch.bfloat16, torch.float32]


class _Scripted(_Frozen):
    """Logits ``(s, 0, 0)`` with ``s`` set per epoch from :attr:`SCALES` (6 steps an epoch):
    on a balanced validation set the loss is ``log(e**s + 2) - s / 3``, lowest at ``s = 0`` and
    rising with ``|s|``. Scales 2, 3, 1, 3, 3, ...: the loss falls at epoch 0, rises, falls
    to its lowest at epoch 2, then rises for good."""

    SCALES = (2.0, 3.0, 1.0)

    def predict(self, x):
        epoch = (self.updates - 1) // 6
        s = self.SCALES[epoch] if epoch < len(self.SCALES) else 3.0
        return torch.tensor([s, 0.0, 0.0]).expand(len(x), -1)


def test_patience_counts_the_epochs_since_the_last_improvement() -> None:
    """Patience 2: epoch 1 is worse than epoch 0, epoch 2 the best, epochs 3 and 4 worse, so the
    run stops after epoch 4 (5 epochs run), not after epoch 3 (that would count epoch 1 too)."""
    with algorithms.REGISTRY.scratch():
        algorithms.register_algorithm(_Scripted, name="_scripted_test")
        cfg = TrainConfig(algorithm="_scripted_test", epochs=10, patience=2, batch_size=16)
        res = train(cfg, **DATA)
    assert (res.best_epoch, res.epochs_run, res.stopped_early) == (2, 5, True)
    assert res.val_loss == pytest.approx(math.log(math.e + 2) - 1 / 3, rel=1e-12)


class _Recording(_Frozen):
    """Records the item indices of every training batch, in order."""

    batches: list[list[int]] = []

    def update(self, batch):
        _Recording.batches.append(batch["index"].tolist())
        return {"loss": 1.0}


def test_every_epoch_shuffles_anew_as_the_epoch_sampler_says() -> None:
    """The training batches of epoch e are those of ``EpochBatches`` set to epoch e: a new
    permutation each epoch, not the first epoch's again."""
    _Recording.batches = []
    with algorithms.REGISTRY.scratch():
        algorithms.register_algorithm(_Recording, name="_recording_test")
        cfg = TrainConfig(algorithm="_recording_test", epochs=2, batch_size=16, seed=3)
        train(cfg, **{**DATA, "test_sets": {}})
    sampler = EpochBatches(len(DATA["train_ds"]), 16, 3, cfg.drop_last)
    expected = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        expected += [[int(i) for i in b] for b in sampler]
    assert _Recording.batches == expected
    assert _Recording.batches[:6] != _Recording.batches[6:]


def test_an_empty_training_or_validation_set_is_refused() -> None:
    """An empty validation set has no loss to select an epoch by (NaN, and epoch 0 taken)."""
    for train_ds, val_ds in ((FakeDiagvib(0), DATA["val_ds"]),
                             (DATA["train_ds"], FakeDiagvib(0, split="val"))):
        with pytest.raises(TrainError, match="must not be empty"):
            train(CFG, train_ds, val_ds, {})


@pytest.mark.usefixtures("frozen_algorithm")
def test_a_dataset_naming_no_metric_is_scored_by_mean_per_class_accuracy() -> None:
    """The trainer's accuracy is the mean per-class accuracy unless the dataset says
    ``metric = "top1"``: on 8 items of class 0 and 2 each of classes 1 and 2, a model that
    always answers 0 has recalls 1, 0, 0 (mean 1/3) but top-1 accuracy 8/12."""
    ds = FakeDiagvib(12, split="val")
    ds.labels = np.array([0] * 8 + [1, 1, 2, 2])
    algo = algorithms.create_algorithm("_frozen_test", 3, TrainConfig(algorithm="_frozen_test"))
    cpu = torch.device("cpu")
    assert evaluate(algo, ds, device=cpu).acc == pytest.approx(1 / 3)
    ds.metric = "top1"  # type: ignore[attr-defined]
    assert evaluate(algo, ds, device=cpu).acc == pytest.approx(8 / 12)
