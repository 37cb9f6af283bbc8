"""Shared fixtures: annotations from the installed imagenet-x package and synthetic models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shortcutlab.imagenetx.annotations import load_annotations, original_val_labels
from shortcutlab.imagenetx.predictions import Predictions, load_predictions


@pytest.fixture(scope="session")
def top_val():
    return load_annotations("top", "val")


@pytest.fixture(scope="session")
def val_labels() -> pd.Series:
    """Labels in the order of the package's filename_label.csv (its reader relies on it)."""
    from imagenet_x.utils import get_annotation_path

    order = pd.read_csv(get_annotation_path() / "filename_label.csv")["file_name"]
    return original_val_labels().loc[order]


def synthetic_predictions(labels: pd.Series, accuracy: float, seed: int) -> pd.DataFrame:
    """A fake model: right with probability ``accuracy``, otherwise a random class."""
    gen = np.random.default_rng(seed)
    truth = labels.to_numpy()
    right = gen.random(len(truth)) < accuracy
    # Wrong guesses are often a neighbouring class, so metaclass errors differ from class errors.
    guess = np.where(gen.random(len(truth)) < 0.5, (truth + gen.integers(1, 4, len(truth))) % 1000,
                     gen.integers(0, 1000, len(truth)))
    pred = np.where(right, truth, guess)
    return pd.DataFrame(
        {
            "file_name": labels.index,
            "predicted_class": pred,
            "predicted_probability": gen.random(len(truth)).round(4),
        }
    )


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, val_labels):
    """Three synthetic models' CSVs in one folder (as the imagenet-x package expects)."""
    folder = tmp_path_factory.mktemp("models")
    for i, acc in enumerate((0.55, 0.7, 0.85)):
        synthetic_predictions(val_labels, acc, seed=i).to_csv(folder / f"m{i}.csv", index=False)
    return folder


@pytest.fixture(scope="session")
def package_frame(model_dir):
    """The imagenet-x package's merged frame of the synthetic models (top factor, val)."""
    import imagenet_x

    models, _ = imagenet_x.load_model_predictions(str(model_dir))
    return imagenet_x.augment_model_predictions(imagenet_x.load_annotations(), models)


@pytest.fixture(scope="session")
def model_predictions(model_dir) -> Predictions:
    """The three synthetic models read once with ``load_predictions([model_dir])``; read-only,
    so a test (or the code under test) that would change them for the next one fails."""
    predictions = load_predictions([model_dir])
    for array in (predictions.file_names, predictions.classes, predictions.probabilities):
        if array is not None:
            array.setflags(write=False)
    return predictions
