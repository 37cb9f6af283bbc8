"""Reading predictions: formats, alignment, and errors that name the bad rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shortcutlab.errors import ImagenetXError
from shortcutlab.imagenetx.predictions import (
    Predictions,
    combine,
    load_predictions,
    read_prediction_csv,
    read_prediction_matrix,
    save_prediction_matrix,
)

NAMES = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in (1, 2, 3, 4)]


def _csv(path, rows, header="file_name,predicted_class,predicted_probability"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_csv_round_trip_and_model_name(tmp_path):
    path = _csv(tmp_path / "net.csv", [f"{n},{i * 7},0.5" for i, n in enumerate(NAMES)])
    preds = read_prediction_csv(path)
    assert preds.models == ("net",)
    assert preds.classes.tolist() == [[0, 7, 14, 21]]
    assert preds.probabilities is not None and preds.probabilities.shape == (1, 4)


def test_probability_column_is_optional(tmp_path):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},3"], header="file_name,predicted_class")
    assert read_prediction_csv(path).probabilities is None


def test_missing_column_is_named(tmp_path):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},3"], header="file_name,cls")
    with pytest.raises(ImagenetXError, match=r"no predicted class column; found \['file_name', "
                       r"'cls'\].*--pred-col"):
        read_prediction_csv(path)
    assert read_prediction_csv(path, pred_col="cls").classes.tolist() == [[3]]


def test_timm_inference_csv_and_full_paths(tmp_path):
    """timm's inference.py: filename,index,prob; with --topk 5 one list per cell."""
    path = _csv(tmp_path / "timm.csv", [f"/data/imagenet/val/{n},{i},0.{i + 1}"
                                        for i, n in enumerate(NAMES)],
                header="filename,index,prob")
    preds = read_prediction_csv(path)
    assert preds.file_names.tolist() == NAMES and preds.classes.tolist() == [[0, 1, 2, 3]]
    assert preds.probabilities is not None
    assert preds.probabilities[0] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    topk = _csv(tmp_path / "top5.csv", [f'{n},[{i} 970  12 4 5],"[0.5 0.1 0.1 0.1 0.1]"'
                                        for i, n in enumerate(NAMES)],
                header="filename,index,prob")
    assert read_prediction_csv(topk).classes.tolist() == [[0, 1, 2, 3]]
    padded = _csv(tmp_path / "padded.csv", [f'{n},[ {65 + i} 970   1],"[0.5 0.1 0.1]"'
                                            for i, n in enumerate(NAMES)],
                  header="filename,index,prob")  # how numpy prints short ids: space-padded
    assert read_prediction_csv(padded).classes.tolist() == [[65, 66, 67, 68]]
    windows = _csv(tmp_path / "win.csv", [f"C:\\val\\{NAMES[0]},5"], header="path,cls")
    preds = read_prediction_csv(windows, file_col="path", pred_col="cls")
    assert preds.file_names.tolist() == NAMES[:1] and preds.classes.tolist() == [[5]]
    with pytest.raises(ImagenetXError, match="no column 'nope'"):
        read_prediction_csv(windows, file_col="nope", pred_col="cls")


def test_unknown_file_names_are_named_with_lines(tmp_path):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},1,0.1", "cat.jpg,2,0.1", f"{NAMES[1]},1,0.2",
                                     "ILSVRC2012_val_00050001.JPEG,2,0.3"])
    with pytest.raises(ImagenetXError, match=r"2 file names.*'cat.jpg'.*lines 3, 5"):
        read_prediction_csv(path)


def test_timm_default_columns_filename_label_prob(tmp_path):
    """timm's default output has no index: WordNet ids (--label-type name) are read; class
    descriptions (the default) are refused naming the column and what to rerun."""
    wnids = _csv(tmp_path / "names.csv", [f"{NAMES[0]},n01440764,0.9", f"{NAMES[1]},n01443537,0.8"],
                 header="filename,label,prob")
    assert read_prediction_csv(wnids).classes.tolist() == [[0, 1]]
    top2 = _csv(tmp_path / "top2.csv", [f"{NAMES[0]},['n01443537' 'n01440764'],[0.9 0.1]"],
                header="filename,label,prob")
    assert read_prediction_csv(top2).classes.tolist() == [[1]]
    described = _csv(tmp_path / "described.csv", [f'{NAMES[0]},"tench, Tinca tinca",0.9'],
                     header="filename,label,prob")
    with pytest.raises(ImagenetXError, match=r"column 'label' holds class names such as 'tench, "
                       r"Tinca tinca'.*--include-index"):
        read_prediction_csv(described)


def test_bad_class_id_error_names_the_column_read(tmp_path):
    path = _csv(tmp_path / "timm.csv", [f"{NAMES[0]},cat,0.1"], header="filename,index,prob")
    with pytest.raises(ImagenetXError, match=r"column 'index' must hold integer class ids"):
        read_prediction_csv(path)


@pytest.mark.parametrize("bad", ["1000", "-1", "3.5", "cat", ""])
def test_class_ids_outside_range_are_named_with_lines(tmp_path, bad):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},1,0.1", f"{NAMES[1]},{bad},0.1"])
    with pytest.raises(ImagenetXError, match=r"0–999.*on lines 3$"):
        read_prediction_csv(path)


def test_duplicate_rows_are_named_with_lines(tmp_path):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},1,0.1", f"{NAMES[1]},1,0.1", f"{NAMES[0]},2,0.1"])
    with pytest.raises(ImagenetXError, match=r"repeat a file name.*lines 2, 4"):
        read_prediction_csv(path)


def test_bad_probability_is_named(tmp_path):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},1,1.5"])
    with pytest.raises(ImagenetXError, match=r"predicted_probability.*lines 2"):
        read_prediction_csv(path)


def test_folder_combines_models_on_union_of_images(tmp_path):
    _csv(tmp_path / "b.csv", [f"{NAMES[0]},1,0.1", f"{NAMES[1]},2,0.1"])
    _csv(tmp_path / "a.csv", [f"{NAMES[1]},5,0.1", f"{NAMES[2]},6,0.1"])
    preds = load_predictions([tmp_path])
    assert preds.models == ("a", "b")
    assert preds.file_names.tolist() == NAMES[:3]
    assert preds.classes.tolist() == [[-1, 5, 6], [1, 2, -1]]
    aligned = preds.align(np.array([NAMES[2], NAMES[3], NAMES[0]]))
    assert aligned.tolist() == [[6, -1, -1], [-1, -1, 1]]


def test_repeated_model_names_are_rejected(tmp_path):
    path = _csv(tmp_path / "a.csv", [f"{NAMES[0]},1,0.1"])
    with pytest.raises(ImagenetXError, match="repeated: a"):
        load_predictions([path, path])


def test_npz_round_trip(tmp_path):
    preds = Predictions(("x", "y"), np.array(NAMES), np.array([[1, 2, 3, -1], [4, 5, 6, 7]]))
    path = save_prediction_matrix(tmp_path / "m.npz", preds)
    back = load_predictions([path])
    assert back.models == ("x", "y")
    assert back.classes.tolist() == preds.classes.tolist()
    assert back.file_names.tolist() == NAMES


def test_npy_needs_file_names_sidecar(tmp_path):
    np.save(tmp_path / "m.npy", np.array([[1, 2, 3, 4]], dtype=np.int16))
    with pytest.raises(ImagenetXError, match="m.file_names.txt"):
        read_prediction_matrix(tmp_path / "m.npy")
    (tmp_path / "m.file_names.txt").write_text("\n".join(NAMES) + "\n")
    preds = read_prediction_matrix(tmp_path / "m.npy")
    assert preds.models == ("m",) and preds.classes.tolist() == [[1, 2, 3, 4]]


def test_matrix_class_ids_outside_range_are_named(tmp_path):
    np.savez(tmp_path / "m.npz", predictions=np.array([[1, 2, 3, 4], [1, 1000, 3, 4]]),
             file_names=np.array(NAMES))
    with pytest.raises(ImagenetXError, match=r"model rows 2 at image columns 2"):
        read_prediction_matrix(tmp_path / "m.npz")


def test_matrix_missing_arrays_are_named(tmp_path):
    np.savez(tmp_path / "m.npz", preds=np.array([[1]]))
    with pytest.raises(ImagenetXError, match=r"missing arrays \['predictions', 'file_names'\]"):
        read_prediction_matrix(tmp_path / "m.npz")


def test_unknown_format_names_choices(tmp_path):
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(ImagenetXError, match=r"unknown predictions format '.txt'.*\.npz"):
        load_predictions([tmp_path / "m.txt"])


def test_combine_keeps_probabilities_only_when_all_have_them(tmp_path):
    a = Predictions(("a",), np.array(NAMES[:2]), np.array([[1, 2]]), np.array([[0.1, 0.2]]))
    b = Predictions(("b",), np.array(NAMES[1:3]), np.array([[3, 4]]), np.array([[0.3, 0.4]]))
    both = combine([a, b])
    assert np.isnan(both.probabilities[0, 2]) and both.probabilities[1, 1] == pytest.approx(0.3)
    c = Predictions(("c",), np.array(NAMES[:1]), np.array([[0]]))
    assert combine([a, c]).probabilities is None
    pd.testing.assert_index_equal(pd.Index(both.file_names), pd.Index(NAMES[:3]))


def test_matrix_duplicate_file_names_are_named(tmp_path):
    names = np.array([NAMES[0], NAMES[1], NAMES[0]])
    np.savez(tmp_path / "m.npz", predictions=np.array([[1, 2, 3]]), file_names=names)
    with pytest.raises(ImagenetXError, match=r"repeat a file name.*lines 1, 3"):
        read_prediction_matrix(tmp_path / "m.npz")


def test_predictions_built_in_python_are_validated():
    with pytest.raises(ImagenetXError, match=r"0–999.*models b have 1 values"):
        Predictions(("a", "b"), np.array(NAMES[:2]), np.array([[1, 2], [3, 1000]]))
    with pytest.raises(ImagenetXError, match="integer class ids"):
        Predictions(("a",), np.array(NAMES[:2]), np.array([[1.0, 2.0]]))
    with pytest.raises(ImagenetXError, match=r"shape \(1, 2\); expected \(2 models, 2 images\)"):
        Predictions(("a", "b"), np.array(NAMES[:2]), np.array([[1, 2]]))


def test_training_partition_names_are_checked_against_train_annotations(tmp_path):
    from shortcutlab.imagenetx.annotations import load_annotations

    train_name = load_annotations("top", "train").file_names[0]
    path = _csv(tmp_path / "t.csv", [f"{train_name},1,0.1", f"{NAMES[0]},2,0.1"])
    with pytest.raises(ImagenetXError, match=r"not ImageNet images of the train partition.*"
                                             r"lines 3$"):
        read_prediction_csv(path, partition="train")
    path = _csv(tmp_path / "t.csv", [f"{train_name},1,0.1"])
    assert read_prediction_csv(path, partition="train").file_names.tolist() == [train_name]


def test_the_imagenet_class_list_is_shared_with_biasbed():
    from shortcutlab.biasbed.imagenet import imagenet_classes as biasbed_classes
    from shortcutlab.utils.imagenet import NUM_CLASSES, imagenet_class_names, imagenet_classes

    wnids = imagenet_classes()
    assert biasbed_classes is imagenet_classes
    assert len(set(wnids)) == NUM_CLASSES and list(wnids) == sorted(wnids)
    assert (wnids[0], imagenet_class_names()[0]) == ("n01440764", "tench")


def test_gather_predictions_puts_the_original_labels_first(tmp_path):
    from shortcutlab.imagenetx.predictions import gather_predictions

    pd.DataFrame({"file_name": ["ILSVRC2012_val_00000001.JPEG"], "predicted_class": [65]}
                 ).to_csv(tmp_path / "mine.csv", index=False)
    both = gather_predictions([tmp_path / "mine.csv"], original_labels=True)
    assert both.models == ("original_labels", "mine")
    assert gather_predictions([tmp_path / "mine.csv"]).models == ("mine",)
    with pytest.raises(ImagenetXError, match="--original-labels"):
        gather_predictions(None)


def test_select_keeps_each_model_with_its_own_rows_in_the_order_asked():
    """select(["c", "a"]): row 0 is c's classes and probabilities, row 1 a's (not file order)."""
    preds = Predictions(("a", "b", "c"), np.array(NAMES[:2]),
                        np.array([[1, 2], [3, 4], [5, 6]]),
                        np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], dtype=np.float32))
    chosen = preds.select(["c", "a"])
    assert chosen.models == ("c", "a")
    assert chosen.classes.tolist() == [[5, 6], [1, 2]]
    assert chosen.probabilities is not None
    np.testing.assert_allclose(chosen.probabilities, [[0.5, 0.6], [0.1, 0.2]], rtol=1e-6)


def test_npz_probabilities_must_have_the_shape_of_the_predictions(tmp_path):
    """2 models × 3 images: probabilities stored images × models (3 × 2, same size) would put
    one model's confidences on another model's images, so they are refused."""
    classes = np.array([[1, 2, 3], [4, 5, 6]])
    np.savez(tmp_path / "m.npz", predictions=classes, file_names=np.array(NAMES[:3]),
             probabilities=np.full((3, 2), 0.5))
    with pytest.raises(ImagenetXError, match=r"probabilities shape \(3, 2\) != \(2, 3\)"):
        read_prediction_matrix(tmp_path / "m.npz")
    np.savez(tmp_path / "ok.npz", predictions=classes, file_names=np.array(NAMES[:3]),
             probabilities=np.full((2, 3), 0.5))
    assert read_prediction_matrix(tmp_path / "ok.npz").probabilities.shape == (2, 3)


def test_npz_probabilities_outside_0_1_are_refused_as_in_csv(tmp_path):
    """Confidences in percent (85.0) make every calibration error meaningless: a CSV refuses
    them (test_bad_probability_is_named), and so must an .npz. NaN stays allowed: it marks an
    image without a prediction (what save_prediction_matrix writes after combine)."""
    classes = np.array([[1, 2, 3]])
    for bad in (85.0, -0.1, np.inf):
        np.savez(tmp_path / "m.npz", predictions=classes, file_names=np.array(NAMES[:3]),
                 probabilities=np.array([[0.5, bad, 0.9]]))
        with pytest.raises(ImagenetXError, match=r"probabilities must be numbers in \[0, 1\]"):
            read_prediction_matrix(tmp_path / "m.npz")
    np.savez(tmp_path / "m.npz", predictions=np.array([[1, -1, 3]]),
             file_names=np.array(NAMES[:3]), probabilities=np.array([[0.0, np.nan, 1.0]]))
    probs = read_prediction_matrix(tmp_path / "m.npz").probabilities
    assert probs is not None and probs[0, 0] == 0.0 and np.isnan(probs[0, 1])
