"""Numbers of an evaluation that the package comparisons do not reach: the headline's worst
factor when it is the first one, the printed model cap, the flat dict's worst factor, the
coverage refusal's model, the worst-k classes with partial predictions. Small hand-built
prediction tables on a slice of the validation annotations, each checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.annotations import FACTORS
from shortcutlab.imagenetx.evaluate import MAX_SHOWN, evaluate
from shortcutlab.imagenetx.predictions import Predictions


@pytest.fixture(scope="module")
def few(top_val):
    """The first 600 annotated validation images."""
    return top_val.take(np.arange(600))


def _wrong(labels: np.ndarray) -> np.ndarray:
    return (labels + 1) % 1000


def test_headline_shows_the_worst_factor_numbers_when_it_is_pose(few):
    """Wrong on every other pose image, right elsewhere: pose (factor 0) is the worst factor,
    its accuracy 1/2 (about) and its error ratio (1 − acc) / (1 − average), by hand."""
    assert FACTORS[0] == "pose"
    pose = few.factors[:, 0].astype(bool)
    wrong = pose & (np.cumsum(pose) % 2 == 0)
    classes = np.where(wrong, _wrong(few.labels), few.labels)
    result = evaluate(Predictions(("m",), few.file_names, classes[None, :]), few)
    acc_pose = 1 - wrong.sum() / pose.sum()
    average = 1 - wrong.sum() / len(few)
    row = result.headline().loc["m"]
    assert row["worst factor"] == "pose"
    assert row["its accuracy"] == pytest.approx(acc_pose)
    assert row["its error ratio"] == pytest.approx((1 - acc_pose) / (1 - average))
    assert "nan" not in str(result).lower()


def test_exactly_max_shown_models_print_without_a_cut_note(few):
    classes = np.repeat(few.labels[None, :], MAX_SHOWN, axis=0)
    classes[:, ::3] = _wrong(classes[:, ::3])
    names = tuple(f"m{i}" for i in range(MAX_SHOWN))
    result = evaluate(Predictions(names, few.file_names, classes), few)
    text = str(result)
    assert "models shown" not in text
    assert all(name in text for name in names)
    one_more = evaluate(Predictions((*names, "extra"), few.file_names,
                                    np.vstack([classes, few.labels])), few)
    assert f"first {MAX_SHOWN} of {MAX_SHOWN + 1} models shown" in str(one_more)


def test_flat_dict_worst_factor_is_the_lowest_factor_accuracy(few):
    pose = few.factors[:, 0].astype(bool)
    classes = np.where(pose, _wrong(few.labels), few.labels)  # every pose image wrong
    classes[1::5] = _wrong(few.labels[1::5])
    result = evaluate(Predictions(("m",), few.file_names, classes[None, :]), few)
    flat = result.flat("m")
    assert flat["acc_pose"] == 0.0
    assert flat["acc_worst_factor"] == 0.0
    accs = [flat[f"acc_{f}"] for f in FACTORS if not np.isnan(flat[f"acc_{f}"])]
    assert flat["acc_worst_factor"] == min(accs) < max(accs)


def test_min_coverage_refusal_names_the_model_below_it(few):
    full = few.labels.copy()
    part = few.labels.copy()
    part[: len(few) // 2] = -1  # predicts half the images
    preds = Predictions(("full", "half"), few.file_names, np.stack([full, part]))
    with pytest.raises(ImagenetXError, match=r"model 'half' predicts 300 of 600 .*coverage "
                                             r"50\.0% < min_coverage 90%"):
        evaluate(preds, few, min_coverage=0.9)
    assert evaluate(preds, few, min_coverage=0.5).evaluated.tolist() == [600, 300]


def test_worst_classes_leave_out_classes_without_a_prediction(few):
    """Predictions for the images of three classes only, with accuracies 0, 1/2 and 1: the 2
    worst classes are the first two (pooled accuracy by hand), never a class with no image
    predicted; k outside 1..1000 is refused, not NaN."""
    labels = few.labels
    counts = np.bincount(labels, minlength=1000)
    a, b, c = (int(x) for x in np.flatnonzero(counts >= 2)[:3])
    classes = np.full(len(few), -1, dtype=np.int64)
    for cls, share in ((a, 0.0), (b, 0.5), (c, 1.0)):
        idx = np.flatnonzero(labels == cls)
        n_right = int(round(share * len(idx)))
        classes[idx] = _wrong(labels[idx])
        classes[idx[:n_right]] = cls
    result = evaluate(Predictions(("m",), few.file_names, classes[None, :]), few)
    idx_b = np.flatnonzero(labels == b)
    right_b = int(round(0.5 * len(idx_b)))
    expected = right_b / (counts[a] + counts[b])
    assert result.worst_classes_accuracy(2)[0] == pytest.approx(expected)
    assert result.worst_classes_accuracy(1)[0] == 0.0
    assert result.worst_classes_accuracy(1000)[0] == pytest.approx(
        (right_b + counts[c]) / (counts[a] + counts[b] + counts[c]))
    for k in (0, 1001):
        with pytest.raises(ImagenetXError, match="k must be in 1"):
            result.worst_classes_accuracy(k)
