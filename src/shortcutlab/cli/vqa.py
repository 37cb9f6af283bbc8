"""``shortcutlab vqa``: build VQA-VS shortcut-specific OOD splits, score predictions, baselines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer
from rich.table import Table

from shortcutlab.cli.output import json_option, print_json
from shortcutlab.utils.console import PlainConsole

if TYPE_CHECKING:
    from shortcutlab.vqa.concepts import Mode

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

DATA_HELP = (
    "VQA data: 'easy-vqa', VQA v2 questions + annotations JSON (+ COCO instances JSON), "
    "VQA-VS JSON lists or zip, or one CSV/JSONL table. Repeat for several files."
)


def _read_lines(path: Path | None) -> list[str] | None:
    from shortcutlab.errors import DataNotFoundError

    if path is None:
        return None
    if not path.exists():
        raise DataNotFoundError(f"word list {str(path)!r} does not exist")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        from shortcutlab.errors import VQAError

        raise VQAError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return [w.strip() for w in lines if w.strip() and not w.startswith("#")]


@app.command(short_help="Build the VQA-VS splits: IID and nine OOD test sets.")
def build(
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    out: Path = typer.Option(..., "--out", help="Folder for the splits, tables and figures."),
    seed: int = typer.Option(0, min=0, help="Seed of the 70/5/25 split."),
    mode: str = typer.Option("pmi", help="Concept scoring: 'pmi' (paper) or 'agnostic'."),
    stop_words: Path = typer.Option(
        None, help="File of stop words to drop from keywords, one per line (paper: none)."
    ),
    remove_stop_words: bool = typer.Option(
        False, "--remove-stop-words", help="Drop the built-in English stop words from keywords."
    ),
    question_types: Path = typer.Option(
        None, help="File of question-type prefixes (used where data has no question_type)."
    ),
    entropy_threshold: float = typer.Option(0.9, min=0, max=1,
                                            help="Imbalanced below this normalised entropy."),
    tail_factor: float = typer.Option(1.2, min=0,
                                      help="Tail answers: fewer than this x mean count."),
    tail_rule: str = typer.Option(
        "<", help="Tail answers: count '<' (paper: 'less than') or '<=' tail-factor x mean."
    ),
    pair_order: str = typer.Option(
        "score", help="KWP/KOP order: 'score' (best first) or 'position' (as in the question)."
    ),
    single_pairs: str = typer.Option(
        "keep", help="KWP/KOP of a question with one keyword (image with one object): "
        "'keep' (that item alone) or 'drop' (no concept).",
    ),  # fmt: skip
    one_answer_groups: str = typer.Option(
        "balanced", help="A group with one answer in E: 'balanced' (entropy 1) or 'imbalanced' "
        "(entropy 0).",
    ),  # fmt: skip
    figures: bool = typer.Option(True, help="Write the PNG figures."),
    as_json: bool = json_option(),
) -> None:
    """Build the VQA-VS splits: train/val/IID test, nine OOD test sets, head splits, statistics."""
    from shortcutlab.errors import VQAError
    from shortcutlab.vqa.concepts import (
        DEFAULT_QUESTION_TYPES,
        ENGLISH_STOP_WORDS,
        ConceptConfig,
    )
    from shortcutlab.vqa.loaders import load_table
    from shortcutlab.vqa.splits import BuildConfig, build_splits
    from shortcutlab.vqa.store import write_splits

    console = PlainConsole(stderr=as_json)  # with --json, stdout holds the JSON object only
    if stop_words is not None and remove_stop_words:
        raise VQAError("give --stop-words FILE or --remove-stop-words, not both")
    sw = _read_lines(stop_words)
    qts = _read_lines(question_types)
    if qts is not None and not qts:  # else every question would be "none of the above"
        raise VQAError(
            f"--question-types {question_types} holds no prefixes; give one question-type "
            "prefix per line, e.g. 'what color is the'"
        )
    concepts = ConceptConfig(
        mode=cast("Mode", mode),  # ConceptConfig refuses an unknown mode
        stop_words=(
            frozenset(sw)
            if sw is not None
            else ENGLISH_STOP_WORDS
            if remove_stop_words
            else frozenset()
        ),  # fmt: skip
        question_types=tuple(qts) if qts is not None else DEFAULT_QUESTION_TYPES,
        pair_order=pair_order,
        single_pairs=single_pairs,
    )
    cfg = BuildConfig(
        seed=seed, entropy_threshold=entropy_threshold, tail_factor=tail_factor,
        concepts=concepts, one_answer_groups=one_answer_groups, tail_rule=tail_rule,
    )  # fmt: skip
    with console.status("loading data"):
        table = load_table(data)
    _note_if_no_objects(console, table)
    with console.status(f"building splits for {len(table):,} questions"):
        splits = build_splits(table, cfg)
    with console.status("writing"):
        write_splits(splits, out, figures=figures)
    sizes = splits.samples["split"].value_counts()
    if as_json:
        print_json(
            {
                "out": str(out),
                "sizes": {name: int(sizes.get(name, 0)) for name in ("train", "val", "test")},
                "statistics": splits.statistics.to_dict(orient="records"),
            }
        )
        return
    console.print(_stats_table(splits.statistics))
    console.print(
        "questions: "
        + ", ".join(f"{name} {int(sizes.get(name, 0)):,}" for name in ("train", "val", "test"))
        + " (test = IID test)"
    )
    console.print(f"wrote {out}/ (samples.parquet, splits.json, statistics.csv, ...)")


def _note_if_no_objects(console: PlainConsole, table) -> None:
    """The note of `build` and `analyze` when the data holds no image objects."""
    if not table["objects"].map(len).any():
        console.print(
            "note: the data has no image objects, so KO, KOP, QT+KO, KW+KO and "
            "QT+KW+KO have no concepts and empty OOD sets; add COCO instances JSON to --data",
            style="yellow")


def _stats_table(stats) -> Table:
    from rich import box

    t = Table(title="VQA-VS statistics (cf. paper Table 1)", box=box.SIMPLE_HEAD,
              padding=(0, 0, 0, 1), pad_edge=False)  # one space between columns: 80 wide
    for col in stats.columns:  # a header line per word keeps the table within 80 columns
        t.add_column(col.replace("_", "\n"), justify="left" if col == "shortcut" else "right")
    for row in stats.itertuples(index=False):
        t.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row))
    return t


@app.command(short_help="Score predictions: the paper's row, or plain accuracy.")
def score(
    predictions: Path = typer.Argument(
        ..., help="JSON list of {question_id, answer} (or an object {question_id: answer})."
    ),
    release: Path = typer.Option(
        None,
        "--release",
        help="VQA-VS release folder (IID-Test/, OOD-Test/<S>/, or test_annotations.json): "
        "score IID-test predictions on the IID test set and each OOD set.",
    ),  # fmt: skip
    splits: Path = typer.Option(None, "--splits", help="Folder written by `vqa build`."),
    data: list[str] = typer.Option(None, "--data", help=DATA_HELP),
    metric: str = typer.Option(
        "official",
        "--metric",
        help="official (VQA evaluation) or vqa-vs (the authors' scorer: raw strings, "
        "min(1, count/3), training vocabulary where known).",
    ),  # fmt: skip
    train: Path = typer.Option(
        None,
        "--train",
        help="Training annotations (Training-Ans.json, Training.zip or a release folder) for "
        "the vqa-vs vocabulary; default: the release's or the built splits' training split.",
    ),  # fmt: skip
    no_vocabulary: bool = typer.Option(
        False,
        "--no-vocabulary",
        help="With --metric vqa-vs, score without the training vocabulary (the authors' scorer "
        "always uses it; without this flag a release lacking it is an error).",
    ),  # fmt: skip
    numbers: str = typer.Option(
        "wrong",
        "--numbers",
        help="Answers written as JSON numbers: 'wrong' (score 0, as the authors' scorer does) "
        "or 'text' (score them as their text, e.g. 2 as '2').",
    ),  # fmt: skip
    on: str = typer.Option(
        "test",
        "--on",
        help="With --splits: 'test' (IID test + nine OOD test sets) or 'val' (IID val + nine "
        "OOD val sets, for model selection as in the paper's Table 4).",
    ),  # fmt: skip
    as_json: bool = json_option(),
    count_missing_wrong: bool = typer.Option(
        False, "--count-missing-wrong", help="Score questions without a prediction as wrong."
    ),
    out: Path = typer.Option(None, help="Also write the JSON result to this file."),
) -> None:
    """Score predictions: the paper's row (IID, nine OOD sets, language/visual/multimodal and OOD
    means) on a release or built splits, or the accuracy on any annotated question set."""
    from shortcutlab.errors import VQAError, unknown_choice
    from shortcutlab.utils.io import write_json
    from shortcutlab.vqa.accuracy import METRICS, training_vocabulary
    from shortcutlab.vqa.evaluate import (
        EVAL_SPLITS,
        NUMBER_RULES,
        load_predictions,
        score_splits,
        score_table,
    )
    from shortcutlab.vqa.loaders import load_table
    from shortcutlab.vqa.release import read_release, read_vocabulary, score_release
    from shortcutlab.vqa.store import read_samples

    if sum(x is not None and x != [] for x in (release, splits, data)) != 1:
        raise VQAError("give exactly one of --release DIR, --splits DIR or --data ...")
    if metric not in METRICS:
        raise VQAError(unknown_choice("metric", metric, METRICS))
    if train is not None and metric != "vqa-vs":
        raise VQAError("--train gives the vocabulary of --metric vqa-vs only; add --metric vqa-vs")
    if no_vocabulary and (metric != "vqa-vs" or train is not None):
        raise VQAError("--no-vocabulary goes with --metric vqa-vs and without --train")
    if numbers not in NUMBER_RULES:
        raise VQAError(unknown_choice("--numbers", numbers, NUMBER_RULES))
    if on not in EVAL_SPLITS:
        raise VQAError(unknown_choice("--on", on, EVAL_SPLITS))
    if on != "test" and splits is None:
        raise VQAError("--on val scores the OOD val sets of built splits: add --splits DIR")
    vocab = read_vocabulary(train) if train is not None else None
    preds = load_predictions(predictions)
    if release is not None:
        rel = read_release(release)
        result = score_release(
            rel,
            preds,
            metric,
            count_missing_wrong,
            vocab if vocab is not None else not no_vocabulary,
            str(train) if train is not None else None,
            numbers,
        )
    elif splits is not None:
        samples = read_samples(splits)
        if metric == "vqa-vs" and vocab is None and not no_vocabulary:
            is_train = samples["split"] == "train"
            vocab = training_vocabulary(samples.loc[is_train, "question_id"],
                                        samples.loc[is_train, "answer"])  # fmt: skip
        result = score_splits(samples, preds, count_missing_wrong, metric, vocab, numbers, on)
    else:
        if metric == "vqa-vs" and vocab is None and not no_vocabulary:
            raise VQAError(
                "--metric vqa-vs filters by the training vocabulary: give --train FILE, or "
                "--no-vocabulary to score without it"
            )
        source = str(train) if vocab is not None else None
        result = score_table(
            load_table(data), preds, count_missing_wrong, metric, vocab, source, numbers
        )
    if out is not None:
        write_json(out, result)
    if as_json:
        print_json(result)
        return
    console = PlainConsole()
    if release is None and splits is None:
        per_type = result["per_answer_type"]  # an item a line: rich wraps none inside one
        console.print(
            f"accuracy {_fmt(result['overall'])} % over {result['count']:,} questions"
            + ("; per answer type:" if per_type else "")
        )
        for t, v in per_type.items():
            console.print(f"  {t} {_fmt(v)} %")
    else:
        console.print(_row_table(result, with_head=splits is not None))
        cells = [*result["ood"].values(), result["ood_mean"], result["iid"]]
        iid = "IID val" if on == "val" else "IID"
        typer.echo(
            f"as in the paper's Table {'4' if on == 'val' else '2'} ("
            + " ".join([*result["ood"], "mean", iid]) + "):"
        )
        typer.echo(" & ".join(_fmt(v) for v in cells))
    console.print(f"metric: {_metric_line(result['metric'])}", style="dim")


def _metric_line(info: dict) -> str:
    vocab = (
        f"training vocabulary of {info['vocabulary']:,} answers"
        if info["vocabulary"] is not None else "no vocabulary filter"
    )  # fmt: skip
    text = f"{info['name']} ({vocab})" if info["name"] == "vqa-vs" else info["name"]
    if info["single_answer_questions"]:
        text += f"; {info['single_answer_questions']:,} single-answer question(s) by exact match"
    if info.get("numeric_answers"):
        rule = "scored 0" if info["numbers"] == "wrong" else "scored as text"
        text += f"; {info['numeric_answers']:,} answer(s) written as JSON numbers {rule}"
    return text


def _row_table(result: dict, with_head: bool) -> Table:
    """The paper's row as a table, in percent: each OOD set, the sub-means, OOD mean, IID."""
    from shortcutlab.vqa.concepts import SHORTCUT_GROUPS

    t = Table(title="VQA accuracy (%)")
    for col in ("set", "accuracy", *(["head"] if with_head else []), "questions"):
        t.add_column(col, justify="right")
    for s, v in result["ood"].items():
        head = [_fmt(result["head"][s])] if with_head else []
        t.add_row(f"OOD {s}", _fmt(v), *head, f"{result['counts']['ood'][s]:,}")
    blank = [""] if with_head else []
    for group in SHORTCUT_GROUPS:
        t.add_row(f"{group} mean", _fmt(result[group]), *blank, "")
    t.add_row("OOD mean", _fmt(result["ood_mean"]), *blank, "")
    t.add_row("IID", _fmt(result["iid"]), *blank, f"{result['counts']['iid']:,}")
    for kind, v in result["per_answer_type"].items():
        t.add_row(f"IID {kind}", _fmt(v), *blank, "")
    t.add_row("IID - OOD", _fmt(result["gap"]), *blank, "")
    return t


def _parse_inject(text: str) -> tuple[str, str, float]:
    """Parse ``ATTR_A:ATTR_B:STRENGTH`` (e.g. ``color:shape:0.9``)."""
    from shortcutlab.errors import VQAError

    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        return parts[0], parts[1], float(parts[2])
    except ValueError:
        raise VQAError(
            f"--inject {text!r} must look like ATTR_A:ATTR_B:STRENGTH, e.g. 'color:shape:0.9'"
        ) from None


def _fmt(v: float | None) -> str:
    """A fraction shown in percent (results are fractions; percent is for display only)."""
    return "–" if v is None else f"{100.0 * v:.2f}"


@app.command(short_help="Run no-GPU baselines on built splits and score them.")
def baselines(
    splits: Path = typer.Option(..., "--splits", help="Folder written by `vqa build`."),
    out: Path = typer.Option(..., "--out", help="Folder for predictions and scores."),
    model: list[str] = typer.Option(
        None, help="answer-prior, question-type-prior, keyword-prior, cnn-bow (default: priors)."
    ),
    data: str = typer.Option(None, help="Data with images, for cnn-bow (default: easy-vqa)."),
    epochs: int = typer.Option(None, min=1, help="Epochs of cnn-bow (default: 3)."),
    inject: str = typer.Option(
        None, help="Inject a correlation into cnn-bow's training split, e.g. 'color:shape:0.9'."
    ),
    select: bool = typer.Option(
        False,
        "--select",
        help="cnn-bow: keep a checkpoint per epoch and choose one by the OOD test, OOD val or "
        "IID val mean (the paper's Table 4); writes selection-<run>.json.",
    ),  # fmt: skip
    seeds: list[int] = typer.Option(
        None, "--seeds", help="Seed of cnn-bow's weights and injection (repeatable; one run "
        "each; default: 0)."),
    as_json: bool = json_option(),
) -> None:
    """Run no-GPU baselines on built splits, write their predictions and scores.

    Priors predict the val and test questions (score val with `vqa score --on val`). cnn-bow
    trains once per --seeds value (seed of its weights and of the injection); with several
    seeds its runs are named cnn-bow@seed=S."""
    from shortcutlab.errors import VQAError, unknown_choice
    from shortcutlab.utils.io import write_json
    from shortcutlab.utils.progress import progress_bar
    from shortcutlab.vqa.baselines import (
        PRIORS,
        CnnBowConfig,
        inject_correlation,
        prior_predictions,
        train_cnn_bow_epochs,
    )
    from shortcutlab.vqa.evaluate import score_splits
    from shortcutlab.vqa.loaders import load_table
    from shortcutlab.vqa.selection import select_checkpoints
    from shortcutlab.vqa.store import read_samples

    choices = [*PRIORS, "cnn-bow"]
    models = list(model) if model else list(PRIORS)
    for m in models:
        if m not in choices:
            raise VQAError(unknown_choice("baseline", m, choices))
    injection = _parse_inject(inject) if inject else None
    if injection is not None and "cnn-bow" not in models:
        raise VQAError("--inject changes the training split of cnn-bow only: add --model cnn-bow")
    if select and "cnn-bow" not in models:
        raise VQAError("--select chooses among cnn-bow's epoch checkpoints: add --model cnn-bow")
    if "cnn-bow" not in models:  # the priors read no images, train no epochs, draw no seed
        for option, value in (("--data", data), ("--epochs", epochs), ("--seeds", seeds)):
            if value:
                raise VQAError(f"{option} applies to cnn-bow only: add --model cnn-bow")
    data, epochs, seeds = data or "easy-vqa", epochs or 3, seeds or [0]
    samples = read_samples(splits)
    console = PlainConsole(stderr=as_json)
    summary = {}
    runs = [(m, None) for m in models if m in PRIORS] + [
        ("cnn-bow" if len(seeds) == 1 else f"cnn-bow@seed={seed}", seed)
        for seed in (seeds if "cnn-bow" in models else [])
    ]
    for m, seed in runs:
        if seed is None:
            with console.status(f"running {m}"):
                preds = prior_predictions(samples, m)
        else:
            # a task advancing per epoch on stderr (a plain line a minute in a log), not a
            # spinner: training takes minutes
            with progress_bar() as bar:
                task = bar.add_task(f"training {m}", total=epochs)
                table = load_table(data)
                train_ids = samples.loc[samples["split"] == "train", "question_id"].tolist()
                split = samples["split"]
                eval_ids = samples.loc[split.isin(["val", "test"]), "question_id"].tolist()
                if injection is not None:
                    train_ids = inject_correlation(table, train_ids, *injection, seed=seed)
                checkpoints = train_cnn_bow_epochs(
                    table, train_ids, eval_ids, CnnBowConfig(epochs=epochs, seed=seed), select,
                    on_epoch=lambda _: bar.advance(task),  # noqa: B023  (called in this loop)
                )
            preds = checkpoints[-1]
            if select:
                chosen = select_checkpoints(samples, checkpoints)
                write_json(out / f"selection-{m}.json", chosen)
                if not as_json:
                    console.print(_selection_table(m, chosen["selected"]))
        records = [{"question_id": q, "answer": a} for q, a in sorted(preds.items())]
        write_json(out / f"predictions-{m}.json", records, indent=None)
        result = score_splits(samples, preds)
        write_json(out / f"scores-{m}.json", result)
        summary[m] = result
        if not as_json:
            console.print(
                f"{m}: IID {_fmt(result['iid'])} %, OOD mean {_fmt(result['ood_mean'])} %"
            )
    write_json(out / "scores.json", summary)
    if as_json:
        print_json(summary)


def _selection_table(run: str, selected: dict) -> Table:
    """Table 4's rows for one run: test accuracy (%) of the checkpoint each strategy chose."""
    from shortcutlab.vqa.concepts import SHORTCUT_GROUPS

    t = Table(title=f"{run}: model selection (cf. paper Table 4), test accuracy % "
                    "(per OOD set in the JSON)")  # fmt: skip
    for col in ("selected on", "epoch", *SHORTCUT_GROUPS, "OOD mean", "IID"):
        t.add_column(col, justify="right")
    for name, sel in selected.items():
        row = sel["test"]
        t.add_row(name, str(sel["epoch"]), *(_fmt(row[g]) for g in SHORTCUT_GROUPS),
                  _fmt(row["ood_mean"]), _fmt(row["iid"]))  # fmt: skip
    return t


@app.command(short_help="Run the paper's analyses of a released split.")
def analyze(
    release: Path = typer.Option(..., "--release", help="VQA-VS release folder (as `score`)."),
    data: list[str] = typer.Option(
        ...,
        "--data",
        help="The release's training and IID test questions with annotations (Training.zip, "
        "IID-Test.zip or their -Ques/-Ans.json; + COCO instances JSON for KO, KOP, ...).",
    ),  # fmt: skip
    out: Path = typer.Option(..., "--out", help="Folder for the tables and figures."),
    predictions: Path = typer.Option(
        None, "--predictions", help="IID-test predictions: adds Fig. 6 and head/tail accuracy."
    ),
    metric: str = typer.Option(
        None, "--metric", help="With --predictions: official (the default) or vqa-vs."),
    no_vocabulary: bool = typer.Option(
        False, "--no-vocabulary", help="With --metric vqa-vs: score without the vocabulary."
    ),
    as_json: bool = json_option(),
) -> None:
    """The paper's analyses for a released split: Table 1, Fig. 5a/5b, E per shortcut, and with
    --predictions E against OOD accuracy (Fig. 6) and head/tail accuracy (Figs. 7, 10)."""
    import pandas as pd

    from shortcutlab.errors import VQAError
    from shortcutlab.utils.io import write_bytes, write_text
    from shortcutlab.vqa.analysis import analyze_release
    from shortcutlab.vqa.evaluate import check_metric, load_predictions
    from shortcutlab.vqa.figures import figure_png, heatmap, imbalance_vs_accuracy
    from shortcutlab.vqa.loaders import load_table
    from shortcutlab.vqa.release import read_release

    if metric is not None:
        check_metric(metric)
    if no_vocabulary and metric != "vqa-vs":  # as `score` refuses it
        raise VQAError("--no-vocabulary goes with --metric vqa-vs")
    if metric is not None and predictions is None:  # nothing is scored: it would be ignored
        raise VQAError("--metric scores the --predictions, and none are given; add "
                       "--predictions FILE or drop it")
    metric = metric or "official"
    console = PlainConsole(stderr=as_json)
    rel = read_release(release)
    preds = load_predictions(predictions) if predictions is not None else None
    with console.status("loading the release's questions"):
        table = load_table(data)
    _note_if_no_objects(console, table)
    with console.status(f"recomputing concepts for {len(table):,} questions"):
        result = analyze_release(
            table, rel, preds, metric=metric, vocabulary=not no_vocabulary
        )
    out.mkdir(parents=True, exist_ok=True)
    frames = {k: v for k, v in result.items() if isinstance(v, (pd.DataFrame, pd.Series))}
    for name, frame in frames.items():
        index = name not in ("statistics", "imbalance", "agreement", "imbalance_vs_accuracy")
        write_text(out / f"{name}.csv", frame.to_csv(index=index, float_format="%.6g"))
    figs = {
        "jaccard.png": heatmap(result["jaccard"], "Jaccard of head splits (train)", "Jaccard"),
        "coincidence.png": heatmap(result["coincidence"], "Coincidence of released OOD sets",
                                   "ratio"),
    }  # fmt: skip
    if "imbalance_vs_accuracy" in result:
        figs["imbalance_vs_accuracy.png"] = imbalance_vs_accuracy(result["imbalance_vs_accuracy"])
    for name, fig in figs.items():
        write_bytes(out / name, figure_png(fig))
    if as_json:
        print_json({"out": str(out), "sizes": result["sizes"],
                    **{k: v.to_dict() for k, v in frames.items()}})  # fmt: skip
        return
    console.print(_stats_table(result["statistics"]))
    console.print(result["agreement"].round(3).to_string(index=False))
    if "head_tail" in result:
        console.print((100 * result["head_tail"]).round(2).to_string())
    console.print(f"wrote {out}/ ({', '.join(sorted([*frames, *figs]))})")


@app.command(short_help="Draw the paper's Figs. 4, 8 and 10 from a build.")
def figures(
    build_dir: Path = typer.Argument(..., help="Folder written by `vqa build`."),
    out: Path = typer.Option(..., "--out", help="Folder for the figures and their data."),
    group: list[str] = typer.Option(
        None,
        "--group",
        help="SHORTCUT=CONCEPT, e.g. 'QT=what sport is' or 'KW=sky': draw this group of the "
        "shortcut (repeatable). Default: the largest group with OOD test questions (Figs. 4, "
        "10); 'what sport is' / 'sky' or the largest QT / KW group (Fig. 8).",
    ),  # fmt: skip
    answers: int = typer.Option(30, "--answers", min=1, help="Most answers drawn per panel."),
    as_json: bool = json_option(),
) -> None:
    """The paper's answer-distribution figures from a build: fig4.png and fig10.png (per group,
    training vs OOD test answers, and the IID test answers by count with the tail the rule
    selects and its threshold), fig8.png (train, val and IID test answers of a QT and a KW
    group), with their data in answer_distributions.csv and figure_groups.csv."""
    from shortcutlab.vqa.distributions import parse_groups
    from shortcutlab.vqa.store import read_build_config, read_samples, write_answer_figures

    groups = parse_groups(group or [])
    samples = read_samples(build_dir)
    config = read_build_config(build_dir)
    written, table = write_answer_figures(samples, config, out, groups, answers)
    if as_json:
        print_json({"out": str(out), "files": sorted(p.name for p in written),
                    "groups": table.to_dict(orient="records")})  # fmt: skip
        return
    console = PlainConsole()
    console.print(_groups_table(table))
    console.print(f"wrote {out}/ ({', '.join(sorted(p.name for p in written))})")


def _groups_table(groups) -> Table:
    """The groups drawn, within 80 columns: sizes, OOD test questions, tail answers, threshold."""
    from rich import box

    t = Table(title="Groups drawn (figure_groups.csv)", box=box.SIMPLE_HEAD,
              padding=(0, 0, 0, 1), pad_edge=False)  # fmt: skip
    for col in ("figs", "shortcut", "group", "train", "val", "test", "OOD", "tail\nanswers",
                "threshold"):  # fmt: skip
        t.add_column(col, justify="left" if col in ("figs", "shortcut", "group") else "right",
                     overflow="fold" if col == "group" else "ellipsis")  # fmt: skip
    for row in groups.itertuples(index=False):
        t.add_row(row.figures, row.shortcut, row.concept,
                  *(f"{getattr(row, c):,}" for c in ("train", "val", "test", "ood")),
                  f"{row.tail_answers:,} of {row.test_answers:,}",
                  f"{row.threshold:.3g}" if row.imbalanced else "balanced")  # fmt: skip
    return t
