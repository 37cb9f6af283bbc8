"""Image-folder datasets with class maps between label spaces."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shortcutlab.biasbed.datasets import (
    BiasbedDataError,
    FolderExperiment,
    ImageFolderDataset,
    load_class_map,
    parse_dataset,
    parse_test_dirs,
)
from shortcutlab.errors import DataNotFoundError, SpecError
from tests.biasbed.conftest import write_folder


def test_class_map_formats_agree(folders: dict[str, Path], tmp_path: Path) -> None:
    expected = {"n001": "red", "n002": "green", "n003": "green"}
    assert load_class_map(folders["map"]) == expected
    assert load_class_map(folders["map_json"]) == expected
    bad = tmp_path / "bad.csv"
    bad.write_text("n001,red\nn001,green\n")
    with pytest.raises(BiasbedDataError, match="maps 'n001' to both 'red' and 'green'"):
        load_class_map(bad)
    with pytest.raises(BiasbedDataError, match=r"unknown class map format '\.txt'"):
        load_class_map(tmp_path.joinpath("m.txt").write_text("x") and tmp_path / "m.txt")
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_class_map(tmp_path / "missing.json")


def test_items_labels_and_skipped_classes(folders: dict[str, Path]) -> None:
    exp = FolderExperiment(
        folders["train"],
        folders["val"],
        {"cue": folders["cue"], "edge": folders["edge"]},
        folders["map"],
        32,
    )
    assert exp.label_space() == ("green", "red")
    train, val, tests = exp.datasets()
    assert len(train) == 18 and train.num_classes == 2
    # n001 -> red (1), n002/n003 -> green (0): the mapping, not the folder order
    assert train.targets.tolist() == [1] * 6 + [0] * 12
    item = train[0]
    assert item["x"].shape == (3, 32, 32) and item["x"].dtype == torch.float32
    assert 0.0 <= float(item["x"].min()) and float(item["x"].max()) <= 1.0
    assert item["y"].dtype == torch.int64 and item["index"] == 0
    assert float(item["x"][0].mean()) > float(item["x"][1].mean())  # the red channel dominates
    # a test folder already in the label space is used by name; unknown classes are skipped
    assert tests["cue"].targets.tolist() == [0, 0, 0, 1, 1, 1]  # folders green, red
    assert tests["edge"].skipped == {"blue": 2} and len(tests["edge"]) == 4


def test_without_map_the_training_classes_are_the_labels(folders: dict[str, Path]) -> None:
    exp = FolderExperiment(folders["train"], folders["val"], {"v": folders["val"]}, image_size=16)
    assert exp.label_space() == ("n001", "n002", "n003")
    train, _, tests = exp.datasets()
    assert train.targets.tolist() == [0] * 6 + [1] * 6 + [2] * 6
    with pytest.raises(BiasbedDataError, match="match none of the labels"):
        ImageFolderDataset(folders["cue"], exp.label_space())


def test_bad_folder_inputs(folders: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match="does not exist"):
        ImageFolderDataset(tmp_path / "nope", ["a"])
    with pytest.raises(BiasbedDataError, match="reserved"):
        FolderExperiment(folders["train"], folders["val"], {"val": folders["val"]})
    with pytest.raises(BiasbedDataError, match="NAME=DIR"):
        parse_test_dirs(["cue"])
    with pytest.raises(BiasbedDataError, match="given twice"):
        parse_test_dirs(["a=x", "a=y"])
    with pytest.raises(BiasbedDataError, match="given twice"):
        parse_test_dirs(["a=x", " a=y"])  # the same name once stripped
    assert parse_test_dirs(["a=x", "b=y"]) == {"a": Path("x"), "b": Path("y")}


def test_parse_dataset() -> None:
    assert parse_dataset("diagvib:ZGO/shape-texture/0") == "ZGO/shape-texture/0"
    with pytest.raises(BiasbedDataError, match="unknown dataset 'imagenet'"):
        parse_dataset("imagenet")
    with pytest.raises(SpecError, match="unknown study 'XYZ'; valid choices: ZSO"):
        parse_dataset("diagvib:XYZ/shape-texture/0")


def test_16_bit_greyscale_images_keep_their_brightness(tmp_path: Path) -> None:
    """A 16-bit greyscale PNG (PIL mode I;16) or PPM (mode I) is scaled to 8 bits, not clipped
    at 255 (which turned nearly every pixel white)."""
    import numpy as np
    from PIL import Image

    (tmp_path / "a").mkdir()
    grey = np.full((20, 20), 32768, dtype=np.uint16)  # mid-grey in 16 bits
    Image.fromarray(grey).save(tmp_path / "a" / "x.png")
    assert Image.open(tmp_path / "a" / "x.png").mode.startswith("I;16")
    header = b"P5 20 20 65535\n"  # a 16-bit PPM/PGM opens in mode I
    (tmp_path / "a" / "y.ppm").write_bytes(header + grey.astype(">u2").tobytes())
    data = ImageFolderDataset(tmp_path, ["a"], image_size=8)
    for i in range(len(data)):
        assert data[i]["x"].mean().item() == pytest.approx(0.5, abs=0.01)



def test_hidden_files_in_class_folders_are_skipped(tmp_path: Path) -> None:
    """macOS's ``._name.jpg`` resource forks and files under hidden folders (e.g.
    ``.ipynb_checkpoints``) are not images of the class, as hidden class folders are not."""
    from PIL import Image

    (tmp_path / "a" / ".ipynb_checkpoints").mkdir(parents=True)
    Image.new("RGB", (10, 10)).save(tmp_path / "a" / "x.jpg")
    (tmp_path / "a" / "._x.jpg").write_bytes(b"\x00\x05\x16\x07 AppleDouble")
    Image.new("RGB", (10, 10)).save(tmp_path / "a" / ".ipynb_checkpoints" / "x-checkpoint.jpg")
    data = ImageFolderDataset(tmp_path, ["a"], image_size=8)
    assert [p.name for p, _ in data.samples] == ["x.jpg"]
    assert data[0]["x"].shape == (3, 8, 8)


def test_a_test_set_given_two_heads_is_refused(folders: dict[str, Path]) -> None:
    """``--test-head cue=imagenet16 --test-head cue=imagenet-r`` kept the first head and
    silently dropped the second."""
    from shortcutlab.biasbed.datasets import folder_experiments

    with pytest.raises(BiasbedDataError, match="--test-head: test set 'cue' is given twice"):
        folder_experiments([str(folders["train"])], [str(folders["val"])],
                           [f"cue={folders['cue']}"], label_space="imagenet1k",
                           test_heads=["cue=imagenet16", "cue=imagenet-r"])


def test_csv_class_map_saved_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" starts with a BOM: the header ``source,target`` was then read as a
    mapping ``\\ufeffsource -> target``, adding a label "target" to the label space."""
    path = tmp_path / "map.csv"
    path.write_bytes("source,target\nn001,red\nn002,green\n".encode("utf-8-sig"))
    assert load_class_map(path) == {"n001": "red", "n002": "green"}


def test_metric_without_image_folders_is_refused() -> None:
    """``--metric top1`` (or a misspelt metric) with only ``diagvib:`` datasets was silently
    ignored: DiagViB-6 runs are scored by mean per-class accuracy whatever it says."""
    from shortcutlab.biasbed.datasets import folder_experiments

    assert folder_experiments(metric="auto") == {}
    assert folder_experiments(metric="mean_per_class") == {}  # what DiagViB-6 runs report
    for metric in ("top1", "top-1"):
        with pytest.raises(BiasbedDataError, match="--metric applies to image-folder datasets"):
            folder_experiments(metric=metric)


def test_a_class_map_edited_after_planning_is_a_new_job_and_the_old_one_refuses(
        folders: dict[str, Path], tmp_path: Path) -> None:
    """A job names its class map by path: its content enters the job's description (hence its
    id), and the map read where the job runs must be the one planned."""
    from shortcutlab.biasbed.folder_jobs import folder_from_spec

    class_map = tmp_path / "map.csv"
    class_map.write_text(folders["map"].read_text())
    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]}, class_map,
                           32)
    planned = exp.describe()
    assert folder_from_spec(planned).mapping() == load_class_map(class_map)
    class_map.write_text("source,target\nn001,green\nn002,red\nn003,red\n")  # labels swapped
    assert exp.describe() != planned  # a new plan: new job ids
    with pytest.raises(BiasbedDataError, match="changed since this run was planned"):
        folder_from_spec(planned).mapping()


def _augmented_epochs(ds: ImageFolderDataset, workers: int, epochs: int = 2) -> torch.Tensor:
    from shortcutlab.train.batches import EpochBatches
    from shortcutlab.train.trainer import _loader

    sampler = EpochBatches(len(ds), 3, seed=0)
    loader = _loader(ds, sampler, 3, workers, False, seed=1)
    out = []
    for epoch in range(epochs):  # each epoch's images in item order
        sampler.set_epoch(epoch)
        batches = list(loader)
        index = torch.cat([b["index"] for b in batches])
        out.append(torch.cat([b["x"] for b in batches])[index.argsort()])
    return torch.cat(out)


def test_training_crops_are_seeded_per_item_not_by_the_global_rng(tmp_path: Path) -> None:
    """``imagenet-train`` crops and flips with a seed: a pure function of (seed, item, how often
    it was loaded), so 0, 1 or 2 DataLoader workers and the caller's global RNG (dropout's, the
    normalisation statistics' pass) give the same images, and the global RNG is left alone."""
    write_folder(tmp_path / "aug", {"a": 0, "b": 1}, 4, 0, size=(40, 36))

    def make(seed: int = 3) -> ImageFolderDataset:
        return ImageFolderDataset(tmp_path / "aug", ["a", "b"], image_size=16,
                                  preprocess="imagenet-train", seed=seed)

    torch.manual_seed(0)
    state = torch.get_rng_state()
    ref = _augmented_epochs(make(), 0)
    assert torch.equal(state, torch.get_rng_state())  # the item draws took nothing from it
    torch.manual_seed(1)
    assert torch.equal(_augmented_epochs(make(), 0), ref)
    assert torch.equal(_augmented_epochs(make(), 1), ref)
    assert torch.equal(_augmented_epochs(make(), 2), ref)
    n = len(make())
    assert not torch.equal(ref[:n], ref[n:])  # a new crop every time an item is loaded
    assert not torch.equal(_augmented_epochs(make(seed=4), 0), ref)  # the seed matters
    one = make()
    assert torch.equal(one[-1]["x"], make()[n - 1]["x"])  # item -1 is item n - 1, first load
    assert torch.equal(one[n - 1]["x"], ref[n - 1 + n])  # its second load, as in epoch 2


def test_imagenet_evaluation_takes_the_centre_224_of_256_of_the_shorter_side(
        tmp_path: Path) -> None:
    """``imagenet-eval`` resizes the shorter side to ``image_size`` · 256/224 and takes the
    centre ``image_size`` square (torchvision's Resize(256), CenterCrop(224)). With
    ``image_size`` 56 an image 64 wide and 80 tall keeps its size (64 = 56 · 256/224) and the
    crop is rows 12..67, columns 4..59: each pixel here encodes its own row and column."""
    import numpy as np
    from PIL import Image
    from torchvision.transforms import CenterCrop

    rows, cols = np.meshgrid(np.arange(80), np.arange(64), indexing="ij")
    arr = np.stack([rows * 3, cols * 3, (rows + cols) % 256], axis=-1).astype(np.uint8)
    (tmp_path / "a").mkdir()
    Image.fromarray(arr).save(tmp_path / "a" / "x.png")
    ds = ImageFolderDataset(tmp_path, ["a"], image_size=56, preprocess="imagenet-eval")
    got = (ds[0]["x"] * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
    assert got.shape == (56, 56, 3)
    np.testing.assert_array_equal(got, arr[12:68, 4:60])
    np.testing.assert_array_equal(got, np.asarray(CenterCrop(56)(Image.fromarray(arr))))


@pytest.mark.parametrize("preprocess, resize", [("imagenet-eval", 64), ("resize", 56)])
@pytest.mark.parametrize("width, height", [(67, 90), (81, 101), (95, 68)])
def test_evaluation_pixels_are_torchvisions_resize_then_centre_crop(
        tmp_path: Path, preprocess: str, resize: int, width: int, height: int) -> None:
    """Pixel for pixel the authors' torchvision loaders (Resize, CenterCrop): 67×90 resized to
    64 is 64×85 there (the long side truncated, not rounded to 86), and its 56-crop of a
    75-tall image starts at row round(9.5) = 10, not 9."""
    import numpy as np
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, Resize

    arr = np.random.default_rng(width * height).integers(0, 256, (height, width, 3),
                                                          dtype=np.uint8)
    (tmp_path / "a").mkdir()
    Image.fromarray(arr).save(tmp_path / "a" / "x.png")
    ds = ImageFolderDataset(tmp_path, ["a"], image_size=56, preprocess=preprocess)
    got = (ds[0]["x"] * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
    want = Compose([Resize(resize), CenterCrop(56)])(Image.fromarray(arr))
    np.testing.assert_array_equal(got, np.asarray(want))


@pytest.mark.parametrize("settings", [
    {},  # resize, mean per class: left out of the description
    {"metric": "top1"},
    {"metric": "mean_per_class", "preprocess": "imagenet"},
    {"preprocess": "biasbed", "image_size": 48},
    {"label_space_kind": "imagenet1k", "test_heads": {"cue": "imagenet16"}},  # auto: top-1
])
def test_a_planned_folder_job_runs_the_experiment_it_describes(
        folders: dict[str, Path], settings: dict) -> None:
    """A job carries its experiment as ``describe()``, which leaves settings at their defaults
    out (so that old job ids stay); the experiment rebuilt where the job runs must score with
    the planned metric, the planned preprocessing and label space, not other defaults."""
    from shortcutlab.biasbed.folder_jobs import folder_from_spec

    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]},
                           **({} if "label_space_kind" in settings else
                              {"class_map": folders["map"]}), **settings)
    rebuilt = folder_from_spec(exp.describe())
    assert rebuilt.resolved_metric() == exp.resolved_metric()
    assert (rebuilt.preprocess, rebuilt.label_space_kind, rebuilt.test_heads,
            rebuilt.image_size) == (exp.preprocess, exp.label_space_kind, exp.test_heads,
                                    exp.image_size)
    assert rebuilt.describe() == exp.describe()


def test_16_bit_values_are_rounded_to_the_nearest_8_bit_level(tmp_path: Path) -> None:
    """v in 0..65535 becomes round(v * 255 / 65535) (hand-computed): 129 -> 0.502 -> 1,
    32768 -> 127.502 -> 128, 65407 -> 254.502 -> 255; truncation gives 0, 127 and 254."""
    import numpy as np
    from PIL import Image

    expected = {"a": (129, 1), "b": (32768, 128), "c": (65407, 255), "d": (25700, 100)}
    for name, (value, _) in expected.items():
        (tmp_path / name).mkdir()
        Image.fromarray(np.full((8, 8), value, dtype=np.uint16)).save(tmp_path / name / "x.png")
    data = ImageFolderDataset(tmp_path, sorted(expected), image_size=8)
    for i, name in enumerate(sorted(expected)):
        x = data[i]["x"]
        assert torch.equal(x, torch.full_like(x, expected[name][1] / 255.0)), name


def test_training_augmentation_flips_about_half_of_the_loads(tmp_path: Path) -> None:
    """With the crop pinned to the whole (square) image, each training load is the image or its
    mirror image, and both occur (a mirror image in none of 40 loads: probability 2^-40)."""
    import numpy as np
    from PIL import Image

    (tmp_path / "a").mkdir()
    arr = np.zeros((16, 16, 3), dtype=np.uint8)
    arr[:, 8:] = 255  # left half black, right half white
    Image.fromarray(arr).save(tmp_path / "a" / "x.png")
    data = ImageFolderDataset(tmp_path, ["a"], image_size=16, preprocess="imagenet-train",
                              crop=((1.0, 1.0), (1.0, 1.0)), seed=0)
    plain = torch.from_numpy(arr).permute(2, 0, 1).float() / 255.0
    flips = 0
    for _ in range(40):
        x = data[0]["x"]
        assert torch.equal(x, plain) or torch.equal(x, plain.flip(-1))
        flips += int(torch.equal(x, plain.flip(-1)))
    assert 5 <= flips <= 35  # binomial(40, 1/2): outside with probability < 1e-5


def test_the_metric_reaches_every_image_folder_dataset(folders: dict[str, Path]) -> None:
    """``--metric top1`` in the class-map label space: train, val and every test set are scored
    by top-1 (the trainer reads each dataset's ``metric``); ``auto`` is mean per-class recall."""
    for metric, expected in (("top1", "top1"), ("auto", "mean_per_class")):
        exp = FolderExperiment(folders["train"], folders["val"],
                               {"cue": folders["cue"], "edge": folders["edge"]}, folders["map"],
                               16, metric=metric)
        train, val, tests = exp.datasets()
        assert {d.metric for d in (train, val, *tests.values())} == {expected}, metric


def test_the_experiment_seed_fixes_the_training_crops(folders: dict[str, Path]) -> None:
    """``datasets(seed=...)`` seeds the training set's augmentation: the same crops whatever
    state torch's global RNG is in, other crops for another seed."""
    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]},
                           folders["map"], 16, preprocess="imagenet")

    def first_crops(seed: int, global_seed: int) -> torch.Tensor:
        train = exp.datasets(seed=seed)[0]
        torch.manual_seed(global_seed)
        return torch.stack([train[i]["x"] for i in range(4)])

    assert exp.datasets(seed=7)[0].seed == 7
    assert torch.equal(first_crops(7, 0), first_crops(7, 1))
    assert not torch.equal(first_crops(7, 0), first_crops(8, 0))


def test_the_k_th_crop_of_item_i_is_drawn_from_the_seed_of_seed_item_and_k(
        tmp_path: Path) -> None:
    """The documented contract, recomputed: load k of item i is the augmentation under
    ``torch_seed(seed, "augment", i, k)``, the key a resumed or re-planned run relies on."""
    from PIL import Image

    from shortcutlab.utils.rng import torch_seed

    write_folder(tmp_path / "aug", {"a": 0, "b": 1}, 2, 0, size=(40, 36))
    data = ImageFolderDataset(tmp_path / "aug", ["a", "b"], image_size=16,
                              preprocess="imagenet-train", seed=3)
    ref = ImageFolderDataset(tmp_path / "aug", ["a", "b"], image_size=16,
                             preprocess="imagenet-train")
    for k in range(3):
        for i, (path, _) in enumerate(data.samples):
            got = data[i]["x"]
            with Image.open(path) as im, torch.random.fork_rng(devices=[]):
                torch.manual_seed(torch_seed(3, "augment", i, k))
                assert torch.equal(got, ref._augment(im.convert("RGB"))), (i, k)


def test_diagvib_samples_are_0_to_4() -> None:
    """DiagViB-6 experiments have five samples (0-4): sample 5 is refused, 4 and 0 are not."""
    from shortcutlab.biasbed.datasets import check_dataset_samples

    check_dataset_samples(["diagvib:ZGO/shape-texture/0", "diagvib:ZGO/shape-texture/4"])
    with pytest.raises(BiasbedDataError, match="unknown dataset sample 5"):
        check_dataset_samples(["diagvib:ZGO/shape-texture/5"])
