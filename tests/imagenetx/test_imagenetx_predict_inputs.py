"""``imagenetx predict`` on awkward folders and outputs: refused in one line naming the problem,
before the model runs over the images where it can be."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.imagenetx.predict import build_model

runner = CliRunner()


def _save(path, seed=0, size=(40, 48, 3)):
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 255, size, dtype=np.uint8)
    Image.fromarray(pixels).save(path, format="JPEG")


def _folder(root, n=3):
    for i in range(1, n + 1):
        _save(root / f"ILSVRC2012_val_{i:08d}.JPEG", seed=i)
    return root


@pytest.fixture()
def weights(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "w.pt"
    torch.save(build_model("small_cnn").state_dict(), path)
    return path


def _predict(weights, folder, out, *extra):
    return runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                               str(weights), "--imagenet-val", str(folder), "--out", str(out),
                               "--image-size", "32", *extra])


@pytest.mark.parametrize("workers", ["0", "1"])
def test_unreadable_image_is_one_line_naming_the_file(tmp_path, weights, workers):
    folder = _folder(tmp_path / "val")
    whole = folder / "ILSVRC2012_val_00000001.JPEG"
    _save(tmp_path / "big.JPEG", size=(300, 400, 3))
    data = (tmp_path / "big.JPEG").read_bytes()
    (folder / "ILSVRC2012_val_00000002.JPEG").write_bytes(data[: len(data) // 2])  # truncated
    out = _predict(weights, folder, tmp_path / "p.csv", "--num-workers", workers)
    assert out.exit_code == 2, out.output
    error = [line for line in out.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and "ILSVRC2012_val_00000002.JPEG" in error[0], out.output
    assert "Traceback" not in out.output and not (tmp_path / "p.csv").exists()
    (folder / "ILSVRC2012_val_00000002.JPEG").write_text("not an image")
    out = _predict(weights, folder, tmp_path / "p.csv", "--num-workers", workers)
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    assert "ILSVRC2012_val_00000002.JPEG" in out.output and whole.is_file()


def test_bad_out_is_refused_before_the_images_are_predicted(tmp_path, weights):
    folder = _folder(tmp_path / "val")
    (tmp_path / "adir").mkdir()
    for out_path in (tmp_path / "adir", folder / "ILSVRC2012_val_00000001.JPEG" / "p.csv"):
        out = _predict(weights, folder, out_path)
        assert out.exit_code == 2, out.output
        assert "predicting" not in out.output, out.output  # refused before the model ran


def test_file_names_evaluate_cannot_read_are_refused_before_predicting(tmp_path, weights):
    """A CSV that `evaluate` refuses as a whole must not be written after an hour of work."""
    folder = _folder(tmp_path / "val")
    _save(folder / "n01440764" / "ILSVRC2012_val_00000004_n01440764.JPEG")  # another layout
    out = _predict(weights, folder, tmp_path / "p.csv")
    assert out.exit_code == 2, out.output
    assert "ILSVRC2012_val_00000004_n01440764.JPEG" in out.output
    assert "ILSVRC2012_val_00000001.JPEG" in out.output  # the expected form
    assert "predicting" not in out.output and not (tmp_path / "p.csv").exists()


def test_symlinked_class_folders_are_followed(tmp_path, weights):
    real = _folder(tmp_path / "store" / "n01440764")
    linked = tmp_path / "val"
    linked.mkdir()
    (linked / "n01440764").symlink_to(real, target_is_directory=True)
    (linked / "loop").symlink_to(linked, target_is_directory=True)  # a cycle ends
    out = _predict(weights, linked, tmp_path / "p.csv")
    assert out.exit_code == 0, out.output
    frame = pd.read_csv(tmp_path / "p.csv")
    assert frame["file_name"].tolist() == [f"ILSVRC2012_val_{i:08d}.JPEG" for i in (1, 2, 3)]


def test_data_config_with_the_options_it_replaces_is_refused(tmp_path, weights):
    folder = _folder(tmp_path / "val")
    (tmp_path / "cfg.json").write_text(json.dumps({"input_size": [3, 24, 24]}))
    out = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                              str(weights), "--imagenet-val", str(folder), "--out",
                              str(tmp_path / "p.csv"), "--data-config", str(tmp_path / "cfg.json"),
                              "--crop-pct", "1.0"])
    assert out.exit_code == 2, out.output
    assert "--crop-pct" in out.output and "--data-config" in out.output
    ok = runner.invoke(app, ["imagenetx", "predict", "--model", "small_cnn", "--weights",
                             str(weights), "--imagenet-val", str(folder), "--out",
                             str(tmp_path / "p.csv"), "--data-config", str(tmp_path / "cfg.json")])
    assert ok.exit_code == 0, ok.output


def test_non_square_input_size_is_refused():
    from shortcutlab.errors import ImagenetXError
    from shortcutlab.imagenetx.predict import transform_from_config

    with pytest.raises(ImagenetXError, match="input_size"):
        transform_from_config({"input_size": [3, 1024, 768]})
    assert transform_from_config({"input_size": [3, 24, 24]})(Image.new("RGB", (40, 30))).shape \
        == (3, 24, 24)


class _MeanGrey(torch.nn.Module):
    """A 'classifier' whose class is the image's mean normalised value on a grid of 1000
    points: images of different grey levels get different classes."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grid = torch.linspace(-2.5, 2.5, 1000)
        return -(x.mean(dim=(1, 2, 3))[:, None] - grid[None, :]).abs()


def test_each_file_gets_the_prediction_of_its_own_image(tmp_path):
    """The CSV pairs every file name with the class of that image (one image at a time through
    the same transform), not with another image's of its batch or of the folder."""
    from shortcutlab.imagenetx.predict import eval_transform, predict_folder

    root = tmp_path / "val"
    levels = [200, 30, 120, 250, 80]  # not in file-name order
    for i, level in enumerate(levels, start=1):
        sub = root / f"n0000000{i % 2}"
        sub.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((40, 48, 3), level, dtype=np.uint8)).save(
            sub / f"ILSVRC2012_val_{i:08d}.JPEG")
    model = _MeanGrey()
    predict_folder(model, root, tmp_path / "p.csv", batch_size=2, image_size=32,
                   show_progress=False)
    frame = pd.read_csv(tmp_path / "p.csv")
    transform = eval_transform(32)
    expected = {}
    for path in sorted(root.rglob("*.JPEG")):
        with Image.open(path) as img:
            x = transform(img.convert("RGB"))[None]
        expected[path.name] = int(model(x).argmax())
    assert len(set(expected.values())) == len(levels)  # the classes tell the images apart
    assert dict(zip(frame["file_name"], frame["predicted_class"], strict=True)) == expected


def test_preprocessing_options_and_their_documented_defaults_reach_the_transform(
        tmp_path, weights, monkeypatch):
    # defaults of the help (and of ResNet-50's standard evaluation): 224 crop of a 256 resize
    # (crop_pct 0.875), bilinear; each option given reaches the transform as given
    import shortcutlab.imagenetx.predict as predict

    calls = []
    real = predict.eval_transform
    monkeypatch.setattr(predict, "eval_transform",
                        lambda *args: calls.append(args) or real(*args))
    folder = _folder(tmp_path / "val", n=1)
    base = ["imagenetx", "predict", "--model", "small_cnn", "--weights", str(weights),
            "--imagenet-val", str(folder)]
    ok = runner.invoke(app, [*base, "--out", str(tmp_path / "a.csv")])
    assert ok.exit_code == 0, ok.output
    ok = runner.invoke(app, [*base, "--out", str(tmp_path / "b.csv"), "--image-size", "32",
                             "--crop-pct", "1.0", "--interpolation", "nearest"])
    assert ok.exit_code == 0, ok.output
    assert calls == [(224, 0.875, "bilinear"), (32, 1.0, "nearest")]


@pytest.mark.parametrize("crop_pct", [0.875, 0.95, 0.9, 1.0])
def test_eval_transform_matches_timms_evaluation_transform(crop_pct):
    """timm's create_transform (the reference the module doc names): resize the short side to
    floor(size / crop_pct) (32 / 0.95 = 33.7 -> 33), centre-crop, normalise; same tensor."""
    from timm.data import create_transform

    from shortcutlab.imagenetx.predict import eval_transform

    img = Image.fromarray(np.random.default_rng(3).integers(0, 255, (40, 52, 3), dtype=np.uint8))
    ours = eval_transform(32, crop_pct)(img)
    ref = create_transform(32, crop_pct=crop_pct, interpolation="bilinear")(img)
    assert ours.shape == ref.shape == (3, 32, 32)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)


class _BatchNormed(torch.nn.Module):
    """Mean grey value through a batch norm whose running statistics (mean -1, var 4) differ
    from any batch's: eval mode gives (x + 1) / 2, training mode the batch's own z-scores."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(1, affine=False)
        self.norm.running_mean.fill_(-1.0)
        self.norm.running_var.fill_(4.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.norm(x.mean(dim=(1, 2, 3))[:, None])
        grid = torch.linspace(-2.5, 2.5, 1000)
        return -(z - grid[None, :]).abs()


def test_a_model_given_in_training_mode_predicts_as_in_eval_mode(tmp_path):
    """predict_folder puts the model in eval mode: the classes are those of model.eval() one
    image at a time, not of batch statistics (nor dropout)."""
    from shortcutlab.imagenetx.predict import eval_transform, predict_folder

    root = tmp_path / "val"
    root.mkdir()
    for i, level in enumerate([40, 200, 90, 160], start=1):
        Image.fromarray(np.full((40, 48, 3), level, dtype=np.uint8)).save(
            root / f"ILSVRC2012_val_{i:08d}.JPEG")
    model = _BatchNormed().train()
    predict_folder(model, root, tmp_path / "p.csv", batch_size=2, image_size=32,
                   show_progress=False)
    frame = pd.read_csv(tmp_path / "p.csv")
    reference = _BatchNormed().eval()
    transform = eval_transform(32)
    expected = {}
    for path in sorted(root.glob("*.JPEG")):
        with Image.open(path) as img:
            expected[path.name] = int(reference(transform(img.convert("RGB"))[None]).argmax())
    assert len(set(expected.values())) == 4
    assert dict(zip(frame["file_name"], frame["predicted_class"], strict=True)) == expected
