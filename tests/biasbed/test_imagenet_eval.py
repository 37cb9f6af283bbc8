"""BiasBed's 1000-class evaluation: the packaged class tables and the test-set heads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shortcutlab.biasbed.datasets import BiasbedDataError, FolderExperiment
from shortcutlab.biasbed.imagenet import (
    CategoryAverage,
    detect_head,
    imagenet16_categories,
    imagenet_classes,
    make_head,
    subset_wnids,
)
from tests.biasbed.conftest import write_folder


def test_packaged_class_tables() -> None:
    wnids = imagenet_classes()
    assert len(wnids) == 1000 and list(wnids) == sorted(wnids)
    assert wnids[0] == "n01440764" and wnids[999] == "n15075141"
    cats = imagenet16_categories()
    assert list(cats) == sorted(["knife", "keyboard", "elephant", "bicycle", "airplane", "clock",
                                 "oven", "chair", "bear", "boat", "cat", "bottle", "truck", "car",
                                 "bird", "dog"])
    assert cats["knife"] == (499,) and cats["oven"] == (766,) and cats["airplane"] == (404,)
    assert cats["cat"] == (281, 282, 283, 284, 285, 286) and len(cats["dog"]) == 109
    assert sum(len(v) for v in cats.values()) == 207
    assert wnids[499] == "n03041632"  # cleaver: Geirhos et al.'s only "knife" class
    for head in ("imagenet-a", "imagenet-r"):
        subset = subset_wnids(head)
        assert len(subset) == 200 == len(set(subset)) and set(subset) <= set(wnids)
    assert subset_wnids("imagenet-a") != subset_wnids("imagenet-r")
    assert "n01498041" in subset_wnids("imagenet-a") and "n01443537" in subset_wnids("imagenet-r")


def test_logit_averaging_on_a_hand_made_example() -> None:
    logits = torch.zeros(2, 1000)
    # sample 0: one dog class very high, but the cat classes are high on average
    logits[0, 152] = 30.0
    logits[0, [281, 282, 283, 284, 285, 286]] = 6.0
    # sample 1: the single knife class beats 109 mildly positive dog classes on average
    logits[1, 499] = 2.0
    logits[1, list(imagenet16_categories()["dog"])] = 1.0
    head = make_head("imagenet16")
    out = head(logits)
    cats = list(imagenet16_categories())
    assert out.shape == (2, 16)
    assert out[0, cats.index("dog")] == pytest.approx(30.0 / 109)
    assert out[0, cats.index("cat")] == pytest.approx(6.0)
    assert cats[int(out[0].argmax())] == "cat"  # an average, not a max over members
    assert cats[int(out[1].argmax())] == "knife"
    manual = CategoryAverage([[0, 1], [2]])(torch.tensor([[1.0, 3.0, 2.5] + [0.0] * 997]))
    torch.testing.assert_close(manual, torch.tensor([[2.0, 2.5]]))


def test_200_class_masks() -> None:
    wnids = imagenet_classes()
    logits = torch.randn(3, 1000)
    best_outside = wnids.index("n01440764")  # tench: in neither ImageNet-A nor -R
    logits[:, best_outside] = 100.0
    for head_name in ("imagenet-a", "imagenet-r"):
        head = make_head(head_name)
        out = head(logits)
        subset = subset_wnids(head_name)
        assert out.shape == (3, 200)
        index = [wnids.index(w) for w in subset]
        torch.testing.assert_close(out, logits[:, index])
        masked = torch.full_like(logits, float("-inf"))
        masked[:, index] = logits[:, index]
        assert [subset[i] for i in out.argmax(1)] == [wnids[i] for i in masked.argmax(1)]
    assert make_head("imagenet1k") is None


def test_detect_head() -> None:
    assert detect_head(["cat", "dog"]) == "imagenet16"
    assert detect_head(list(subset_wnids("imagenet-a"))) == "imagenet-a"
    assert detect_head(list(subset_wnids("imagenet-r"))) == "imagenet-r"
    assert detect_head(["n01440764", "n01443537"]) == "imagenet1k"
    with pytest.raises(Exception, match="neither ImageNet WordNet ids nor the 16 categories"):
        detect_head(["red", "green"])


def test_imagenet1k_folder_experiment(tmp_path: Path) -> None:
    cls = {"n02123045": 0, "n02106662": 1, "n04591713": 2}
    write_folder(tmp_path / "train", cls, 2, 0)
    write_folder(tmp_path / "val", cls, 1, 1)
    write_folder(tmp_path / "cue", {"cat": 0, "dog": 1, "bottle": 2}, 1, 2)
    write_folder(tmp_path / "ina", {"n02106662": 1, "n04591713": 2}, 1, 3)
    exp = FolderExperiment(
        tmp_path / "train", tmp_path / "val",
        {"cue": tmp_path / "cue", "ina": tmp_path / "ina", "in": tmp_path / "val"},
        image_size=16, label_space_kind="imagenet1k", preprocess="imagenet",
        test_heads={"ina": "imagenet-a"},
    )
    train, val, tests = exp.datasets()
    assert train.num_classes == 1000
    assert sorted(set(train.targets.tolist())) == [235, 281, 907]  # ImageNet class indices
    assert tests["cue"].num_classes == 16 and tests["cue"].reduce_logits is not None
    assert tests["ina"].num_classes == 200 and tests["in"].reduce_logits is None
    ina_labels = tests["ina"].targets.tolist()
    assert [subset_wnids("imagenet-a")[i] for i in ina_labels] == ["n02106662", "n04591713"]
    assert train[0]["x"].shape == (3, 16, 16) and tests["cue"][0]["x"].shape == (3, 16, 16)
    assert exp.describe()["label_space"] == "imagenet1k"
    assert "label_space" not in FolderExperiment(tmp_path / "train", tmp_path / "val").describe()
    with pytest.raises(BiasbedDataError, match="valid choices: imagenet1k, imagenet16"):
        FolderExperiment(tmp_path / "train", tmp_path / "val", {"cue": tmp_path / "cue"},
                         label_space_kind="imagenet1k", test_heads={"cue": "16"})
    with pytest.raises(BiasbedDataError, match="label space"):
        FolderExperiment(tmp_path / "train", tmp_path / "val", label_space_kind="imagenet21k")
    bad = FolderExperiment(tmp_path / "train", tmp_path / "val", {"cue": tmp_path / "cue"},
                           label_space_kind="imagenet1k", test_heads={"cue": "imagenet-r"})
    with pytest.raises(BiasbedDataError, match="outside its label space"):
        bad.datasets()


def test_imagenet1k_training_classes_outside_imagenet_are_refused(tmp_path: Path) -> None:
    """In the 1000-class setting a training or validation class folder that is no ImageNet
    WordNet id (a typo, a stray folder) was silently left out; it is refused, naming it."""
    cls = {"n02123045": 0, "n02106662": 1}
    write_folder(tmp_path / "train", {**cls, "n0212304": 2}, 1, 0)
    write_folder(tmp_path / "val", cls, 1, 1)
    write_folder(tmp_path / "val2", {**cls, "cat": 2}, 1, 1)
    for train, val, bad in (("train", "val", "n0212304"), ("val", "val2", "cat")):
        exp = FolderExperiment(tmp_path / train, tmp_path / val, {"in": tmp_path / "val"},
                               image_size=16, label_space_kind="imagenet1k")
        with pytest.raises(BiasbedDataError, match=f"outside its label space: \\['{bad}'\\]"):
            exp.datasets()


def test_a_1000_class_folder_within_imagenet_a_is_not_given_the_200_class_head() -> None:
    """Only a folder with exactly ImageNet-A's (or -R's) 200 classes gets that head: an ImageNet
    validation folder of a few classes that all happen to lie in ImageNet-A is still scored
    over all 1000 logits (restricting it to 200 would drop 800 competitors, a higher score)."""
    for head in ("imagenet-a", "imagenet-r"):
        subset = list(subset_wnids(head))
        assert detect_head(subset[:2]) == "imagenet1k"
        assert detect_head(subset[1:]) == "imagenet1k"  # 199 of the 200
        assert detect_head(subset[::-1]) == head  # the order of the folders does not matter
