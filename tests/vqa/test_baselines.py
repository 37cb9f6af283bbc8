"""Prior baselines, the injected correlation, and a tiny CNN + bag-of-words run."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.errors import VQAError
from shortcutlab.vqa.baselines import (
    CnnBowConfig,
    answer_prior,
    inject_correlation,
    keyword_prior,
    prior_predictions,
    question_type_prior,
    train_cnn_bow,
    train_cnn_bow_epochs,
)
from shortcutlab.vqa.loaders import load_easy_vqa

# its module-scoped fixtures are computed once: every test of the module on one xdist worker
pytestmark = pytest.mark.xdist_group("test_baselines")


def _frame(rows):
    return pd.DataFrame(rows, columns=["question_id", "QT", "question", "answer"])


def test_priors_on_hand_table():
    train = _frame([
        ("1", "what color is the", "what color is the banana", "yellow"),
        ("2", "what color is the", "what color is the banana", "yellow"),
        ("3", "what color is the", "what color is the sky", "blue"),
        ("4", "what color is the", "what color is the sky", "blue"),
        ("5", "what color is the", "what color is the sky", "blue"),
        ("6", "is the", "is the dog big", "yes"),
        ("7", "is the", "is the dog big", "yes"),
        ("8", "is the", "is the cat big", "yes"),
        ("9", "is the", "is the cat big", "yes"),
    ])  # fmt: skip
    test = _frame([("t1", "what color is the", "what color is the banana", "yellow"),
                   ("t2", "is the", "is the dog big", "no"),
                   ("t3", "why", "why", "because")])  # fmt: skip
    assert answer_prior(train, test) == {"t1": "yes", "t2": "yes", "t3": "yes"}
    assert question_type_prior(train, test) == {"t1": "blue", "t2": "yes", "t3": "yes"}
    assert keyword_prior(train, test, min_support=2)["t1"] == "yellow"
    with pytest.raises(VQAError, match="valid choices: answer-prior"):
        prior_predictions(pd.DataFrame({"split": []}), "oracle")


@pytest.fixture(scope="module")
def easy():
    return load_easy_vqa()


def test_inject_correlation_sets_the_matched_fraction(easy):
    train = easy.loc[easy["question_id"].str.startswith("train/"), "question_id"].tolist()
    a = inject_correlation(easy, train, "color", "shape", 0.9, seed=1)
    assert a == inject_correlation(easy, list(reversed(train)), "color", "shape", 0.9, seed=1)
    assert len(a) == len(train)
    rows = easy.set_index("question_id").loc[a]
    colors = sorted(easy["color"].unique())
    shapes = sorted(easy["shape"].unique())
    partner = {c: shapes[i % len(shapes)] for i, c in enumerate(colors)}
    matched = (rows["color"].map(partner) == rows["shape"]).mean()
    assert matched == pytest.approx(0.9, abs=0.01)  # natural rate is about 1/3
    with pytest.raises(VQAError, match="unknown attribute 'size'"):
        inject_correlation(easy, train, "size", "shape")


def test_cnn_bow_tiny_run_is_deterministic(easy):
    small = easy[easy["image_id"].isin([f"train/{i}" for i in range(40)])]
    ids = small["question_id"].tolist()
    cfg = CnnBowConfig(epochs=1, batch_size=64)
    p1 = train_cnn_bow(small, ids[:300], ids[300:], cfg)
    p2 = train_cnn_bow(small, ids[:300], ids[300:], cfg)
    assert p1 == p2 and set(p1) == set(ids[300:])
    assert set(p1.values()) <= set(small["answer"])


def test_cnn_bow_trains_with_its_own_thread_count(easy, monkeypatch):
    """The numbers depend on torch's thread count on a CPU: training uses the config's, not the
    machine's, and the caller's setting is restored."""
    import torch

    small = easy[easy["image_id"].isin([f"train/{i}" for i in range(20)])]
    ids = small["question_id"].tolist()
    seen: set[int] = set()
    loss = torch.nn.functional.cross_entropy

    def counting(*args, **kwargs):
        seen.add(torch.get_num_threads())
        return loss(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "cross_entropy", counting)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train_cnn_bow(small, ids, ids, CnnBowConfig(epochs=1, batch_size=64, threads=3))
        assert seen == {3} and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_cnn_bow_reports_each_epoch_once(easy):
    small = easy[easy["image_id"].isin([f"train/{i}" for i in range(20)])]
    ids = small["question_id"].tolist()
    cfg = CnnBowConfig(epochs=3, batch_size=64)
    done: list[int] = []
    assert len(train_cnn_bow_epochs(small, ids, ids, cfg, on_epoch=done.append)) == 3
    assert done == [1, 2, 3]
    done.clear()
    assert len(train_cnn_bow_epochs(small, ids, ids, cfg, False, on_epoch=done.append)) == 1
    assert done == [1, 2, 3]


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_cli_cnn_bow_shows_its_epochs_on_stderr_only(easy, tmp_path):
    # cnn-bow showed a spinner only: in a log (stderr not a terminal) nothing until the end
    small = easy[easy["image_id"].isin([f"train/{i}" for i in range(30)])]
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in small[
        ["question_id", "image_id", "question", "answers", "image_path"]].to_dict("records")))
    runner = CliRunner()
    res = runner.invoke(app, ["vqa", "build", "--data", str(data), "--out", str(tmp_path / "s"),
                              "--no-figures", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    args = ["vqa", "baselines", "--splits", str(tmp_path / "s"), "--out", str(tmp_path / "b"),
            "--model", "cnn-bow", "--data", str(data), "--epochs", "2"]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "training cnn-bow: 2/2 (100 %) in " in res.stderr  # LogProgress: not a terminal
    scores = json.loads((tmp_path / "b" / "scores-cnn-bow.json").read_text())
    assert res.stdout == (f"cnn-bow: IID {100 * scores['iid']:.2f} %, OOD mean "
                          f"{100 * scores['ood_mean']:.2f} %\n")  # fmt: skip
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    assert "training cnn-bow: 2/2" in res.stderr
    assert json.loads(res.stdout) == {"cnn-bow": scores}  # the same training, the same scores


def test_cnn_bow_learns_beyond_the_answer_prior(easy):
    """Training must change the model: on its own training questions the CNN + BoW classifier
    beats the majority answer by a wide margin (an untrained or never-stepped one does not)."""
    small = easy[easy["image_id"].isin([f"train/{i}" for i in range(150)])]
    ids = small["question_id"].tolist()
    preds = train_cnn_bow(small, ids, ids, CnnBowConfig(epochs=4, batch_size=64))
    truth = small.set_index("question_id")["answer"]
    acc = float(np.mean([preds[q] == truth[q] for q in ids]))
    prior = float(truth.value_counts(normalize=True).iloc[0])
    assert acc > prior + 0.15, (acc, prior)


def test_keyword_prior_words_exclude_the_question_type_whatever_its_case():
    from shortcutlab.vqa.baselines import _content_words

    df = pd.DataFrame({"question": ["What color is the sky?", "What shape is the box?"],
                       "QT": ["What color is the", "what shape is"]})  # fmt: skip
    assert _content_words(df) == [["sky"], ["box"]]


def test_cnn_bow_training_is_independent_of_what_it_predicts_and_of_the_global_rng(easy):
    """The questions predicted (how many, in what order, after every epoch or only the last)
    and torch's global RNG leave training alone, and training leaves the global RNG alone."""
    import torch

    small = easy.iloc[:1500]  # its images only: each call reads the table's images
    ids = small["question_id"].tolist()
    train, rest = ids[:1000], ids[1000:]
    cfg = CnnBowConfig(epochs=2, seed=3)
    torch.manual_seed(0)
    state = torch.get_rng_state()
    every = train_cnn_bow_epochs(small, train, rest, cfg, every_epoch=True)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(1)
    last = train_cnn_bow_epochs(small, train, rest[::-1][:37], cfg, every_epoch=False)
    assert last[-1] == {q: every[-1][q] for q in last[-1]}


def test_keyword_prior_prefers_the_most_concentrated_word_not_the_most_frequent():
    """The keyword prior's word is the one whose training answers are most concentrated (the
    highest majority *share*): 'banana' (3 of 3 yellow) beats 'fruit' (6 of 10 blue), although
    'fruit' has more majority answers."""
    qt = "what color is the"
    rows = [(f"b{i}", qt, "what color is the banana", "yellow") for i in range(3)]
    rows += [(f"f{i}", qt, "what color is the fruit", "blue" if i < 6 else "green")
             for i in range(10)]
    test = _frame([("t1", qt, "what color is the fruit banana", "yellow"),
                   ("t2", qt, "what color is the banana fruit", "yellow"),
                   ("t3", qt, "what color is the fruit", "blue")])
    assert keyword_prior(_frame(rows), test, min_support=3) == {
        "t1": "yellow", "t2": "yellow", "t3": "blue"}


def test_cnn_bow_images_are_averaged_over_2x2_blocks(tmp_path):
    """The cnn-bow model sees each image down-sampled by the mean of every 2x2 block of
    neighbouring pixels (skimage's block_reduce), scaled to [0, 1], channels first."""
    from PIL import Image
    from skimage.measure import block_reduce

    from shortcutlab.vqa.baselines import _load_images

    gen = np.random.default_rng(0)
    arrays = [gen.integers(0, 256, (6, 8, 3), dtype=np.uint8) for _ in range(2)]
    paths = []
    for i, arr in enumerate(arrays):
        Image.fromarray(arr).save(tmp_path / f"{i}.png")
        paths.append(str(tmp_path / f"{i}.png"))
    got = _load_images(paths)
    assert got.shape == (2, 3, 3, 4)
    expected = np.stack([block_reduce(a.astype(np.float64), (2, 2, 1), np.mean) for a in arrays])
    np.testing.assert_allclose(got, expected.transpose(0, 3, 1, 2) / 255.0, rtol=1e-6)


def test_prior_predictions_learn_from_the_training_rows_only():
    """Module docstring: every baseline learns from the training rows only; val and test rows
    are predicted. Here val and test say "no", training "yes": every prediction is "yes"."""
    rows = [("1", "train", "is it", "is it big", "yes"),
            ("2", "train", "is it", "is it red", "yes"),
            ("3", "val", "is it", "is it big", "no"), ("4", "val", "is it", "is it big", "no"),
            ("5", "val", "is it", "is it red", "no"), ("6", "test", "is it", "is it red", "no")]
    samples = pd.DataFrame(rows, columns=["question_id", "split", "QT", "question", "answer"])
    for name in ("answer-prior", "question-type-prior", "keyword-prior"):
        assert prior_predictions(samples, name) == dict.fromkeys(["3", "4", "5", "6"], "yes")


def test_a_majority_tie_goes_to_the_alphabetically_first_answer_in_any_order():
    """_majority's rule (and make_table's, docs/vqa-vs.md): a tie goes to the alphabetically
    first answer, whatever the order of the training rows."""
    rows = [("1", "is it", "is it big", "yes"), ("2", "is it", "is it big", "no"),
            ("3", "is it", "is it red", "maybe"), ("4", "is it", "is it red", "yes"),
            ("5", "is it", "is it red", "no")]
    test = _frame([("t", "is it", "is it big", "?")])
    for train in (_frame(rows), _frame(rows[::-1])):
        assert answer_prior(train, test) == {"t": "no"}
        assert question_type_prior(train, test) == {"t": "no"}


def test_keyword_prior_tie_goes_to_the_word_that_comes_first():
    """Two words equally concentrated (each 2 of 2 with its answer): the first in the question
    decides, as ties do for the KW concept (concepts.top_two)."""
    qt = "what color is the"
    train = _frame([(f"b{i}", qt, "what color is the banana", "yellow") for i in range(2)]
                   + [(f"p{i}", qt, "what color is the plum", "purple") for i in range(2)])
    test = _frame([("t1", qt, "what color is the banana plum", "?"),
                   ("t2", qt, "what color is the plum banana", "?")])
    assert keyword_prior(train, test, min_support=2) == {"t1": "yellow", "t2": "purple"}
