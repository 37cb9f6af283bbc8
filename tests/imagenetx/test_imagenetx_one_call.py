"""One call on predictions in the forms people have: the imagenet-x package's folder, timm's
inference CSV with full paths, a DataFrame, a dict; errors print plain file names."""

from __future__ import annotations

import imagenet_x
import numpy as np
import pandas as pd
import pytest

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx import as_predictions, error_ratio, get_factor_accuracies

from .conftest import synthetic_predictions


def test_one_call_matches_the_imagenet_x_package(model_dir):
    reference = imagenet_x.get_factor_accuracies(str(model_dir), error_type="class")
    mine = get_factor_accuracies(model_dir, error_type="class")
    reference = reference.loc[list(mine.index), list(mine.columns)]
    np.testing.assert_allclose(mine.to_numpy(), reference.to_numpy(), rtol=0, atol=1e-12)
    ours = error_ratio(mine)
    theirs = imagenet_x.error_ratio(reference).loc[ours.index, ours.columns]
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def frame(val_labels) -> pd.DataFrame:
    return synthetic_predictions(val_labels, 0.7, seed=5)


def test_timm_csv_dataframe_and_dict_give_the_same_numbers(tmp_path, frame):
    expected = get_factor_accuracies(frame, model="net")
    timm = pd.DataFrame({"filename": "/data/imagenet/val/" + frame["file_name"],
                         "index": frame["predicted_class"], "prob": 0.5})
    timm.to_csv(tmp_path / "net.csv", index=False)
    pd.testing.assert_frame_equal(get_factor_accuracies(tmp_path / "net.csv"), expected)
    mapping = dict(zip(frame["file_name"], frame["predicted_class"], strict=True))
    pd.testing.assert_frame_equal(get_factor_accuracies(mapping, model="net"), expected)
    other = frame.rename(columns={"file_name": "img", "predicted_class": "top1"})
    pd.testing.assert_frame_equal(
        get_factor_accuracies(other, model="net", file_col="img", pred_col="top1"), expected)


def test_errors_show_plain_names_and_unknown_inputs(frame):
    bad = frame.head(3).assign(file_name=["a.JPEG", "b.JPEG", "c.JPEG"])
    with pytest.raises(ImagenetXError) as info:
        as_predictions(bad)
    assert "first: 'a.JPEG'" in str(info.value) and "np.str_" not in str(info.value)
    with pytest.raises(ImagenetXError, match="cannot read predictions from a int"):
        as_predictions(3)  # type: ignore[arg-type]
