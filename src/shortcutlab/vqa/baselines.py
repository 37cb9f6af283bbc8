"""Baselines that need no GPU: answer/question-type/keyword priors and a small CNN + bag of
words model for easy-VQA, with optional injected correlations in the training split.

All baselines learn from the training rows only and return ``{question_id: answer}``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from shortcutlab.errors import VQAError, unknown_choice
from shortcutlab.utils.rng import rng, torch_seed
from shortcutlab.vqa.concepts import ENGLISH_STOP_WORDS, tokenize

__all__ = [
    "PRIORS",
    "CnnBowConfig",
    "answer_prior",
    "concept_prior",
    "inject_correlation",
    "keyword_prior",
    "prior_predictions",
    "question_type_prior",
    "train_cnn_bow",
    "train_cnn_bow_epochs",
]


def _majority(answers: Sequence[str]) -> str:
    """Most frequent answer; ties broken alphabetically so results never depend on order."""
    counts = Counter(answers)
    best = max(counts.values())
    return min(a for a, c in counts.items() if c == best)


def answer_prior(train: pd.DataFrame, test: pd.DataFrame) -> dict[str, str]:
    """Predict the most frequent training answer for every question."""
    top = _majority(train["answer"].tolist())
    return dict.fromkeys(test["question_id"].astype(str), top)


def question_type_prior(train: pd.DataFrame, test: pd.DataFrame) -> dict[str, str]:
    """Most frequent training answer of the question's type (``QT``), else the answer prior."""
    fallback = _majority(train["answer"].tolist())
    by_type = {k: _majority(v.tolist()) for k, v in train.groupby("QT")["answer"]}
    return {
        str(q): by_type.get(t, fallback)
        for q, t in zip(test["question_id"], test["QT"], strict=True)
    }


def _content_words(df: pd.DataFrame) -> list[list[str]]:
    out = []
    for toks, q in zip(tokenize(df["question"]), tokenize(df["QT"]), strict=True):
        if toks[: len(q)] == q:
            toks = toks[len(q) :]
        out.append([w for w in dict.fromkeys(toks) if w not in ENGLISH_STOP_WORDS])
    return out


def keyword_prior(
    train: pd.DataFrame, test: pd.DataFrame, min_support: int = 5
) -> dict[str, str]:
    """Answer by the question's most telling word within its question type: among its content
    words seen with that type at least ``min_support`` times in training, the one whose training
    answers are most concentrated (highest majority share) gives its majority answer (a tie:
    the word that comes first in the question); else the question-type prior.

    It reads no test answers (unlike the paper's answer-dependent KW concept).
    """
    qt_pred = question_type_prior(train, test)
    answers_by_key: dict[tuple[str, str], list[str]] = defaultdict(list)
    for words, qt, a in zip(_content_words(train), train["QT"], train["answer"], strict=True):
        for w in words:
            answers_by_key[(qt, w)].append(a)
    rule: dict[tuple[str, str], tuple[float, str]] = {}
    for key, answers in answers_by_key.items():
        if len(answers) >= min_support:
            top = _majority(answers)
            rule[key] = (answers.count(top) / len(answers), top)
    out = {}
    rows = zip(test["question_id"].astype(str), test["QT"], _content_words(test), strict=True)
    for q, qt, words in rows:
        scored = [
            (rule[(qt, w)][0], -i, rule[(qt, w)][1])
            for i, w in enumerate(words)
            if (qt, w) in rule
        ]
        out[q] = max(scored)[2] if scored else qt_pred[q]
    return out


def concept_prior(train: pd.DataFrame, test: pd.DataFrame, shortcut: str) -> dict[str, str]:
    """The majority training answer of the test question's concept for ``shortcut`` (a column
    of built samples), else the answer prior: a model that has learnt exactly that shortcut."""
    if shortcut not in train.columns:
        raise VQAError(f"no concept column {shortcut!r}; give built samples")
    fallback = _majority(train["answer"].tolist())
    by_concept = {k: _majority(v.tolist()) for k, v in train.groupby(shortcut)["answer"]}
    return {
        str(q): by_concept.get(c, fallback)
        for q, c in zip(test["question_id"], test[shortcut], strict=True)
    }


PRIORS = {
    "answer-prior": answer_prior,
    "question-type-prior": question_type_prior,
    "keyword-prior": keyword_prior,
}


def prior_predictions(samples: pd.DataFrame, name: str) -> dict[str, str]:
    """Fit prior ``name`` on the train rows of built samples and predict the val and test rows
    (val for the OOD val sets of model selection, ``vqa score --on val``)."""
    if name not in PRIORS:
        raise VQAError(unknown_choice("baseline", name, PRIORS))
    split = samples["split"]
    return PRIORS[name](samples[split == "train"], samples[split.isin(["val", "test"])])


def inject_correlation(
    table: pd.DataFrame,
    train_ids: Sequence[str],
    attr_a: str = "color",
    attr_b: str = "shape",
    strength: float = 0.9,
    seed: int = 0,
) -> list[str]:
    """Resample the training questions (with replacement, same size) so that a fraction
    ``strength`` of them show a matched pair of ``attr_a`` and ``attr_b`` values.

    Values are matched cyclically in sorted order (e.g. black-circle, blue-rectangle,
    brown-triangle, gray-circle, ...), so ``attr_a`` predicts ``attr_b`` in training: a
    planted visual shortcut. Seeded, independent of row order.
    """
    for attr in (attr_a, attr_b):
        if attr not in table.columns:
            extra = [c for c in table.columns if c in ("shape", "color")]
            raise VQAError(unknown_choice("attribute", attr, extra or ["(none in this table)"]))
    if not 0.0 <= strength <= 1.0:
        raise VQAError(f"correlation strength {strength} must lie in [0, 1]")
    values_a = sorted(table[attr_a].unique())
    values_b = sorted(table[attr_b].unique())
    partner = {a: values_b[i % len(values_b)] for i, a in enumerate(values_a)}
    rows = table.set_index("question_id").loc[sorted(map(str, train_ids)), [attr_a, attr_b]]
    matched = np.array([partner[a] == b for a, b in zip(rows[attr_a], rows[attr_b], strict=True)])
    n_match, n_other = int(matched.sum()), int((~matched).sum())
    if n_match == 0 or (n_other == 0 and strength < 1):
        raise VQAError(f"cannot inject {attr_a}<->{attr_b}: no matched or no unmatched samples")
    p = np.where(matched, strength / n_match, (1.0 - strength) / max(n_other, 1))
    p = p / p.sum()
    pick = rng(seed, "inject", attr_a, attr_b).choice(len(rows), size=len(rows), p=p)
    return rows.index[np.sort(pick)].tolist()


@dataclass(frozen=True)
class CnnBowConfig:
    """Training settings of the small CNN + bag-of-words model."""

    epochs: int = 3
    batch_size: int = 128
    lr: float = 3e-3
    seed: int = 0
    device: str = "cpu"
    #: torch's intra-op threads while training: on a CPU the numbers depend on it (a parallel
    #: reduction sums in another order), so it is fixed rather than left to the machine's core
    #: count (the demo's cnn-bow: 74.9 % with 2 threads, 73.7 % with 1)
    threads: int = 2


def _load_images(paths: Sequence[str]) -> np.ndarray:
    from PIL import Image

    arr = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths]).astype(np.float32)
    n, h, w, c = arr.shape
    if h % 2 == 0 and w % 2 == 0:  # 2x2 average pooling: 4x less compute, shapes stay clear
        arr = arr.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))
    return arr.transpose(0, 3, 1, 2) / 255.0


def train_cnn_bow(
    table: pd.DataFrame,
    train_ids: Sequence[str],
    test_ids: Sequence[str],
    config: CnnBowConfig | None = None,
) -> dict[str, str]:
    """Train a small CNN (image) + bag-of-words (question) classifier; predict test answers.

    Needs an ``image_path`` column (easy-VQA tables have one). ``train_ids`` may repeat ids
    (resampled training sets).
    """
    return train_cnn_bow_epochs(table, train_ids, test_ids, config, every_epoch=False)[-1]


def train_cnn_bow_epochs(
    table: pd.DataFrame,
    train_ids: Sequence[str],
    predict_ids: Sequence[str],
    config: CnnBowConfig | None = None,
    every_epoch: bool = True,
    on_epoch: Callable[[int], None] | None = None,
) -> list[dict[str, str]]:
    """Train as :func:`train_cnn_bow` and predict ``predict_ids`` after every epoch (one dict
    per epoch): the checkpoints among which model selection chooses (paper Table 4). With
    ``every_epoch=False``, only after the last epoch (a list of one). ``on_epoch(n)`` is called
    when epoch ``n`` (1, 2, ...) is done, its predictions included (a progress bar)."""
    from shortcutlab.runner.jobs import job_threads

    cfg = config or CnnBowConfig()
    with job_threads(cfg.threads):
        return _train_cnn_bow_epochs(table, train_ids, predict_ids, cfg, every_epoch, on_epoch)


def _train_cnn_bow_epochs(
    table: pd.DataFrame,
    train_ids: Sequence[str],
    predict_ids: Sequence[str],
    cfg: CnnBowConfig,
    every_epoch: bool,
    on_epoch: Callable[[int], None] | None = None,
) -> list[dict[str, str]]:
    import torch
    from torch import nn

    from shortcutlab.utils.device import resolve_device

    test_ids = predict_ids
    if "image_path" not in table.columns:
        raise VQAError("the CNN + bag-of-words baseline needs images: an image_path column")
    device = resolve_device(cfg.device)
    t = table.set_index("question_id")
    unknown = sorted((set(map(str, train_ids)) | set(map(str, test_ids))) - set(t.index))
    if unknown:
        shown = ", ".join(repr(q) for q in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise VQAError(
            f"{len(unknown)} question id(s) of the splits are not in the data: {shown}; "
            "pass the data the splits were built from"
        )
    if not len(train_ids):
        raise VQAError("the CNN + bag-of-words baseline needs at least one training question")
    train_rows = t.loc[list(map(str, train_ids))]
    test_rows = t.loc[list(map(str, test_ids))]
    images, image_index = np.unique(t["image_path"].to_numpy(dtype=str), return_inverse=True)
    pixels = torch.from_numpy(_load_images(images.tolist()))
    img_of = dict(zip(t.index, image_index, strict=True))
    vocab = sorted({w for toks in tokenize(train_rows["question"]) for w in toks})
    word_id = {w: i for i, w in enumerate(vocab)}
    answers = sorted(set(train_rows["answer"]))
    ans_id = {a: i for i, a in enumerate(answers)}

    def bow(questions: pd.Series) -> torch.Tensor:
        x = torch.zeros(len(questions), len(vocab))
        for r, toks in enumerate(tokenize(questions)):
            for w in toks:
                if w in word_id:
                    x[r, word_id[w]] = 1.0
        return x

    x_train, x_test = bow(train_rows["question"]), bow(test_rows["question"])
    i_train = torch.tensor([img_of[q] for q in train_rows.index])
    i_test = torch.tensor([img_of[q] for q in test_rows.index])
    y_train = torch.tensor([ans_id[a] for a in train_rows["answer"]])

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch_seed(cfg.seed, "cnn-bow-init"))
        cnn = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 64), nn.ReLU(),
        )  # fmt: skip
        text = nn.Sequential(nn.Linear(len(vocab), 64), nn.ReLU())
        head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, len(answers)))
    model = nn.ModuleDict({"cnn": cnn, "text": text, "head": head}).to(device)

    def forward(img_feats: torch.Tensor, bow_x: torch.Tensor) -> torch.Tensor:
        return model["head"](torch.cat([img_feats, model["text"](bow_x.to(device))], dim=1))

    def image_features(idx: torch.Tensor) -> torch.Tensor:
        return model["cnn"](pixels[idx].to(device))

    # Iterate over images, not questions: each image's features are computed once per step
    # for all of its (about ten) training questions, which makes an epoch ~10x cheaper.
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    train_images, question_image = torch.unique(i_train, return_inverse=True)
    by_image = torch.argsort(question_image, stable=True)
    bounds = torch.searchsorted(question_image[by_image], torch.arange(len(train_images) + 1))
    images_per_step = max(1, cfg.batch_size // 8)
    epoch_predictions: list[dict[str, str]] = []
    for epoch in range(cfg.epochs):
        order = rng(cfg.seed, "cnn-bow-order", epoch).permutation(len(train_images))
        for start in range(0, len(order), images_per_step):
            chosen = torch.from_numpy(np.sort(order[start : start + images_per_step]))
            q = torch.cat([by_image[bounds[k] : bounds[k + 1]] for k in chosen.tolist()])
            local = torch.searchsorted(chosen, question_image[q])
            feats = image_features(train_images[chosen])[local]
            loss = nn.functional.cross_entropy(forward(feats, x_train[q]), y_train[q].to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if every_epoch or epoch == cfg.epochs - 1:
            epoch_predictions.append(
                _predict(image_features, forward, i_test, x_test, test_rows.index, answers)
            )
        if on_epoch is not None:
            on_epoch(epoch + 1)
    return epoch_predictions


def _predict(image_features, forward, i_test, x_test, ids, answers):
    """Answers of the questions ``ids`` (image indices ``i_test``, bags of words ``x_test``)."""
    import torch

    preds = []
    with torch.no_grad():
        test_images, test_local = torch.unique(i_test, return_inverse=True)
        feats = torch.cat(
            [image_features(test_images[k : k + 512]) for k in range(0, len(test_images), 512)]
        ) if len(test_images) else torch.zeros(0, 64)  # fmt: skip
        for start in range(0, len(i_test), 4096):
            sl = slice(start, start + 4096)
            preds.append(forward(feats[test_local[sl]], x_test[sl]).argmax(dim=1).cpu())
    pred = torch.cat(preds).numpy() if preds else np.zeros(0, dtype=np.int64)
    return {str(q): answers[int(p)] for q, p in zip(ids, pred, strict=True)}
