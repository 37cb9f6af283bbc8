"""Hostile but fair inputs from issue 22: each is refused with one ``Error:`` line (or click's
usage box) and exit code 2, never turned into a default, ignored or counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app

runner = CliRunner()
# an unknown backend makes a run that got past the checks stop before training
DIAGVIB = ["biasbed", "run", "--algorithm", "erm", "--backend", "none",
           "--dataset", "diagvib:ZGO/shape-texture/0"]

BIASBED_CASES = {
    "epochs 0": (["--epochs", "0"], "--epochs"),
    "batch size 0": (["--batch-size", "0"], "--batch-size"),
    "lr 0": (["--lr", "0"], "--lr"),
    "lr negative": (["--lr", "-0.1"], "--lr"),
    "scale 0": (["--scale", "0"], "--scale"),
    "workers 0": (["--workers", "0"], "--workers"),
    "image size 0": (["--image-size", "0"], "--image-size"),
    "label space ignored": (["--label-space", "imagenet1k"], "--label-space applies to"),
    "preprocess ignored": (["--preprocess", "imagenet"], "--preprocess applies to"),
    "in-distribution ignored": (["--in-distribution", "a=b"], "--in-distribution applies"),
    "test head ignored": (["--test-head", "a=imagenet1k"], "--test-head applies to"),
    "image size ignored": (["--image-size", "64"], "--image-size applies to"),
    "hyper-parameter unknown": (["--hparam", "erm:bogus=1"], "hyper-parameter of algorithm erm"),
}


def _refused(args: list[str], fragment: str, out: Path) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and fragment in res.output, res.output
    assert not out.exists()  # refused before anything was planned or written


@pytest.mark.parametrize("case", list(BIASBED_CASES))
def test_biasbed_run_refuses_zeros_and_options_it_would_ignore(tmp_path, case: str) -> None:
    extra, fragment = BIASBED_CASES[case]
    out = tmp_path / "out"
    _refused([*DIAGVIB, *extra, "--out", str(out)], fragment, out)


def test_biasbed_run_refuses_a_sample_outside_the_five(tmp_path) -> None:
    out = tmp_path / "out"
    args = [*DIAGVIB[:-1], "diagvib:ZGO/shape-texture/9", "--out", str(out)]
    _refused(args, "unknown dataset sample 9", out)


VQA_CSV = {
    "ragged row": ("question_id,image_id,question,answers\n1,2,what?,yes\n2,3\n",
                   "row 3 has 2 field(s)"),
    "empty answer": ("question_id,image_id,question,answer\n1,2,what?,yes\n2,3,why?,\n",
                     "have an empty answer: '2'"),
    "blank answer in a list": ('question_id,image_id,question,answers\n1,2,what?,yes\n'
                               '2,3,why?,"[""yes"", "" ""]"\n', "have an empty answer: '2'"),
}


@pytest.mark.parametrize("case", list(VQA_CSV))
def test_vqa_build_refuses_ragged_rows_and_empty_answers(tmp_path, case: str) -> None:
    text, fragment = VQA_CSV[case]
    data = tmp_path / "data.csv"
    data.write_text(text)
    out = tmp_path / "out"
    _refused(["vqa", "build", "--data", str(data), "--out", str(out), "--no-figures"],
             fragment, out)


def _alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_spec_is_refused_at_once(tmp_path) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(_alias_bomb())
    assert len(spec.read_bytes()) < 600  # 9 ** 9 strings once expanded
    out = tmp_path / "out.npz"
    _refused(["diagvib", "export", str(spec), "--out", str(out)], "aliases", out)


@pytest.mark.parametrize("text", ["a: &x 1\nb: *x\n", "name: &n x\nother: [*n]\n"])
def test_yaml_aliases_are_refused_by_the_spec_and_config_loaders(tmp_path, text: str) -> None:
    from shortcutlab.diagvib.spec import ExperimentSpec
    from shortcutlab.errors import SpecError, TrainError
    from shortcutlab.train.config import TrainConfig

    with pytest.raises(SpecError, match="aliases"):
        ExperimentSpec.from_yaml(text)
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(TrainError, match="aliases"):
        TrainConfig.from_file(config)


def test_a_spec_with_an_integer_key_is_one_line(tmp_path) -> None:
    spec = tmp_path / "int.yaml"
    spec.write_text("1: 2\n")
    out = tmp_path / "out.npz"
    _refused(["diagvib", "export", str(spec), "--out", str(out)], "keys must be field names",
             out)


def _zip(path: Path, member: str, data: bytes) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(member, data)
    return path


@pytest.mark.parametrize("case", ["bomb", "over the cap", "not a zip"])
def test_vqa_build_refuses_zip_bombs_and_damaged_zips(tmp_path, monkeypatch, case: str) -> None:
    data = tmp_path / "Val.zip"
    if case == "bomb":  # 20 MB of JSON from ~20 KB
        _zip(data, "Val/questions.json", b"[" + b" " * (20 * 2**20) + b"]")
        fragment = "like a zip bomb"
    elif case == "over the cap":  # a user-set cap holds
        monkeypatch.setenv("SHORTCUTLAB_MAX_UNZIPPED_MB", "1")
        _zip(data, "Val/questions.json", b"[" + b" " * (2 * 2**20) + b"]")
        fragment = "the limit is 1 MB"
    else:
        data.write_bytes(b"PK\x03\x04 not really a zip")
        fragment = "not a readable zip file"
    assert data.stat().st_size < 2**20
    out = tmp_path / "out"
    _refused(["vqa", "build", "--data", str(data), "--out", str(out), "--no-figures"],
             fragment, out)


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--seed", "-1"], "--seed"),
    (["--entropy-threshold", "1.5"], "--entropy-threshold"),
    (["--tail-factor", "-1"], "--tail-factor"),
    (["--stop-words", "LATIN1"], "not UTF-8"),
    (["--question-types", "LATIN1"], "not UTF-8"),
])
def test_vqa_build_refuses_bad_numbers_and_non_utf8_word_lists(
        tmp_path, extra: list[str], fragment: str) -> None:
    data = tmp_path / "data.csv"
    data.write_text("question_id,image_id,question,answers\n1,2,what?,yes\n")
    latin1 = tmp_path / "words.txt"
    latin1.write_bytes(b"caf\xe9\n")
    extra = [str(latin1) if a == "LATIN1" else a for a in extra]
    out = tmp_path / "out"
    _refused(["vqa", "build", "--data", str(data), "--out", str(out), "--no-figures", *extra],
             fragment, out)


@pytest.mark.parametrize("command", [["diagvib", "export"], ["diagvib", "run", "--config"]])
def test_a_non_utf8_spec_or_config_is_one_line(tmp_path, command: list[str]) -> None:
    spec = tmp_path / "latin1.yaml"
    spec.write_bytes(b"name: caf\xe9\n")
    out = tmp_path / "out"
    args = [*command, str(spec), "--out", str(out)]
    if command[1] == "run":
        args = [*command, str(spec), "--model", "small_cnn", "--study", "ZSO", "--samples", "0",
                "--out", str(out)]
    _refused(args, "not UTF-8" if command[1] == "export" else f"training config {spec}", out)


def test_vqa_score_names_a_damaged_samples_parquet(tmp_path) -> None:
    data = tmp_path / "data.csv"
    rows = [f"{i},{i % 9},is it {'ab'[i % 2]}?,{'yes' if i % 3 else 'no'}" for i in range(60)]
    data.write_text("question_id,image_id,question,answers\n" + "\n".join(rows) + "\n")
    splits = tmp_path / "splits"
    res = runner.invoke(app, ["vqa", "build", "--data", str(data), "--out", str(splits),
                              "--no-figures"])
    assert res.exit_code == 0, res.output
    samples = splits / "samples.parquet"
    samples.write_bytes(samples.read_bytes()[:100])
    preds = tmp_path / "preds.json"
    preds.write_text("[]")
    out = tmp_path / "score.json"
    _refused(["vqa", "score", str(preds), "--splits", str(splits), "--out", str(out)],
             "samples.parquet: not a readable Parquet file", out)


@pytest.mark.parametrize("command", ["metrics", "report"])
def test_a_job_table_with_a_duplicated_id_is_refused(tmp_path, command: str) -> None:
    import pandas as pd

    from tests.diagvib.tables import synthetic_table

    table = synthetic_table(studies=("ZSO",), samples=(0,))
    jobs = tmp_path / "jobs.csv"
    pd.concat([table.iloc[[0]].assign(test_acc=0.0), table]).to_csv(jobs, index=False)
    out = tmp_path / "report"
    args = (["diagvib", "metrics", str(jobs)] if command == "metrics"
            else ["diagvib", "report", str(jobs), "--out", str(out)])
    _refused(args, "more than once", out)


def test_a_run_with_failed_jobs_exits_1_naming_them_not_2(tmp_path, monkeypatch) -> None:
    from shortcutlab.runner import runs
    from shortcutlab.runner.jobs import Outcome

    def failing(jobs, out, **kw):  # the real run_jobs signature
        return runs.RunSummary([Outcome(jobs[0].job_id, "failed", "RuntimeError: boom")])

    monkeypatch.setattr(runs, "run_jobs", failing)
    res = runner.invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                              "--samples", "0", "--out", str(tmp_path / "r")])
    assert res.exit_code == 1, res.output
    assert "RuntimeError: boom" in res.output and "jobs failed" in res.output


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--data-config", "BOMB"], "aliases"),
    (["--data-config", "LATIN1"], "not a readable YAML/JSON data config"),
    (["--image-size", "0"], "--image-size"),
    (["--num-workers", "-1"], "--num-workers"),
    (["--batch-size", "0"], "--batch-size"),
])
def test_imagenetx_predict_refuses_bad_configs_and_numbers(
        tmp_path, extra: list[str], fragment: str) -> None:
    bomb, latin1 = tmp_path / "bomb.yaml", tmp_path / "latin1.yaml"
    bomb.write_text(_alias_bomb())
    latin1.write_bytes(b"crop_pct: caf\xe9\n")
    extra = [{"BOMB": str(bomb), "LATIN1": str(latin1)}.get(a, a) for a in extra]
    (tmp_path / "val").mkdir()
    out = tmp_path / "preds.csv"
    _refused(["imagenetx", "predict", "--model", "resnet18", "--imagenet-val",
              str(tmp_path / "val"), *extra, "--out", str(out)], fragment, out)


# ------------------------------------------------------------------ names are data

MARKUP = "r[/x]:smile:[bold]"  # a closing tag that matches nothing, an emoji code, a style


def _ok(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.exception is None, res.exception
    return res.output


def test_render_prints_an_out_path_with_markup_as_typed(tmp_path) -> None:
    out = tmp_path / f"{MARKUP}.npz"
    output = _ok(["diagvib", "render", "--n", "2", "--image-size", "32", "--out", str(out)])
    assert out.is_file() and ":smile:[bold]" in output.replace("\n", "")


def test_stats_compare_prints_block_and_algorithm_names_as_typed(tmp_path) -> None:
    table = tmp_path / "scores.csv"
    table.write_text("block,[/x],$\\frac{$\n[/x],1,2\n:smile:,3,1\nc,0.5,0.2\nd,2,0.1\n")
    out = tmp_path / "c[/x]"
    output = _ok(["stats", "compare", str(table), "--out", str(out)])
    assert "[/x]" in output and ":smile:" in output and "$\\frac{$" in output
    assert (out / "comparison_cd_diagram.png").is_file()  # mathtext would fail to draw it


def test_diagvib_run_prints_its_folder_and_failures_with_markup_as_typed(tmp_path,
                                                                         monkeypatch) -> None:
    from shortcutlab.runner import runs
    from shortcutlab.runner.jobs import Outcome

    def failing(jobs, out, **kw):  # the real run_jobs signature
        return runs.RunSummary([Outcome(jobs[0].job_id, "failed", "boom [/red] :x:")])

    monkeypatch.setattr(runs, "run_jobs", failing)
    out = tmp_path / MARKUP
    res = runner.invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                              "--samples", "0", "--out", str(out)])
    assert res.exit_code == 1 and res.exception is None or isinstance(res.exception, SystemExit)
    flat = res.output.replace("\n", "")
    assert "boom [/red] :x:" in flat and ":smile:[bold]" in flat, res.output


def test_metrics_prints_model_names_with_markup_as_typed(tmp_path) -> None:
    from tests.diagvib.tables import synthetic_table

    jobs = tmp_path / "jobs.csv"
    synthetic_table(models=("[/x]:smile:",), studies=("ZSO",), samples=(0,)).to_csv(
        jobs, index=False)
    assert "[/x]:smile:" in _ok(["diagvib", "metrics", str(jobs)])


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_report_draws_model_names_with_dollars_as_typed(tmp_path) -> None:
    from tests.diagvib.tables import synthetic_table

    jobs = tmp_path / "jobs.csv"
    table = synthetic_table(models=("$\\frac{$", "b$x$"), studies=("ZSO", "ZGO"), samples=(0,))
    table.to_csv(jobs, index=False)
    out = tmp_path / "report"
    _ok(["diagvib", "report", str(jobs), "--out", str(out)])
    assert "$\\frac{$" in (out / "index.html").read_text()


@pytest.fixture(scope="module")
def imagenetx_dollar_report(tmp_path_factory) -> Path:
    """An ImageNet-X report of two models named with dollars, drawn once for the two tests
    marked IMAGENETX_REPORT (the names as typed; the old report a failing one must leave)."""
    import numpy as np
    import pandas as pd

    from shortcutlab.imagenetx.annotations import original_val_labels

    root = tmp_path_factory.mktemp("imagenetx-dollars")
    labels = original_val_labels()
    wrong = np.random.default_rng(0).random(len(labels)) < 0.3
    folder = root / "preds"
    folder.mkdir()
    for name in ("$\\frac{$", "b$x$"):
        pd.DataFrame({"file_name": labels.index,
                      "predicted_class": np.where(wrong, (labels + 1) % 1000, labels)}).to_csv(
            folder / f"{name}.csv", index=False)
        wrong = ~wrong
    out = root / "report"
    _ok(["imagenetx", "report", str(folder), "--bootstrap", "0", "--out", str(out)])
    return out


IMAGENETX_REPORT = pytest.mark.xdist_group("imagenetx_dollar_report")  # drawn once, one worker


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
@IMAGENETX_REPORT
def test_imagenetx_report_draws_model_names_with_dollars_as_typed(
        imagenetx_dollar_report) -> None:
    assert "$\\frac{$" in (imagenetx_dollar_report / "index.html").read_text()


# ------------------------------------------------------------------ outputs land together


def _fail_writes_of(monkeypatch, name: str) -> None:
    """Make every write of a file whose name contains ``name`` fail as on a full disk (the
    writers write temporaries named after their target)."""
    import errno

    for method in ("write_text", "write_bytes"):
        real = getattr(Path, method)

        def failing(self, *args, _real=real, **kwargs):
            if name in self.name:
                raise OSError(errno.ENOSPC, "No space left on device", str(self))
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(Path, method, failing)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}


def test_report_failing_part_way_leaves_the_old_report_whole(tmp_path, monkeypatch) -> None:
    from tests.diagvib.tables import synthetic_table

    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    synthetic_table(studies=("ZSO",), samples=(0,)).to_csv(old, index=False)
    synthetic_table(studies=("ZSO",), samples=(0,), seed=1).to_csv(new, index=False)
    out = tmp_path / "report"
    _ok(["diagvib", "report", str(old), "--out", str(out)])
    before = _snapshot(out)
    _fail_writes_of(monkeypatch, "index.html")
    res = runner.invoke(app, ["diagvib", "report", str(new), "--out", str(out)])
    assert res.exit_code == 2 and "No space left" in res.output, res.output
    assert f"{out / 'index.html'}:" in res.output  # the user's path, not a temporary
    assert _snapshot(out) == before  # no new metrics.json beside the old index.html


def test_stats_compare_writes_all_six_files_or_none(tmp_path, monkeypatch) -> None:
    table = tmp_path / "scores.csv"
    table.write_text("block,a,b\nx,1,2\ny,3,1\nz,0.5,0.2\n")
    out = tmp_path / "cmp"
    _fail_writes_of(monkeypatch, "cd_diagram.png")
    res = runner.invoke(app, ["stats", "compare", str(table), "--out", str(out)])
    assert res.exit_code == 2 and "No space left" in res.output, res.output
    assert _snapshot(out) == {}  # not 5 of 6
    monkeypatch.undo()
    _ok(["stats", "compare", str(table), "--out", str(out)])
    assert len(_snapshot(out)) == 6


def test_render_keeps_no_npz_when_the_png_fails(tmp_path, monkeypatch) -> None:
    import errno

    from shortcutlab.diagvib import gallery

    out, png = tmp_path / "a.npz", tmp_path / "grid" / "a.png"
    out.write_bytes(b"old")

    def no_space(path, picture):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(gallery, "save_image", no_space)
    res = runner.invoke(app, ["diagvib", "render", "--n", "2", "--image-size", "32", "--out",
                              str(out), "--png", str(png)])
    assert res.exit_code == 2 and f"{png}: No space left" in res.output, res.output
    assert out.read_bytes() == b"old" and not png.exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.npz"]


# ------------------------------------------------------------------ more unreadable inputs


def _latin1(path: Path, text: str = "caf\xe9") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("latin-1"))
    return path


@pytest.mark.parametrize(("content", "fragment"), [
    (None, "protocol.json: not UTF-8 text"),
    ("[1, 2]", "not a BiasBed protocol"),
    ('{"jobs": [1]}', "not a BiasBed protocol"),
    ('{"jobs": {"abc": 3}}', "job 'abc' has no algorithm"),
])
def test_biasbed_report_names_a_bad_protocol_file(tmp_path, content: str | None,
                                                  fragment: str) -> None:
    run = tmp_path / "run"
    target = run / "protocol.json"
    if content is None:
        _latin1(target, '{"jobs": "caf\xe9"}')
    else:
        run.mkdir()
        target.write_text(content)
    out = tmp_path / "report"
    _refused(["biasbed", "report", str(run), "--out", str(out)], fragment, out)


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_biasbed_run_names_a_non_utf8_class_map(tmp_path, suffix: str) -> None:
    for name in ("tr", "va", "te"):
        (tmp_path / name / "a").mkdir(parents=True)
    text = "source,target\ncaf\xe9,a\n" if suffix == ".csv" else '{"caf\xe9": "a"}'
    class_map = _latin1(tmp_path / f"map{suffix}", text)
    out = tmp_path / "out"
    _refused(["biasbed", "run", "--algorithm", "erm", "--train-dir", str(tmp_path / "tr"),
              "--val-dir", str(tmp_path / "va"), "--test-dir", f"t={tmp_path / 'te'}",
              "--class-map", str(class_map), "--epochs", "1", "--batch-size", "2", "--lr", "0.1",
              "--out", str(out)], f"class map {class_map}: not UTF-8 text", out)


@pytest.mark.parametrize("option", ["--groups", "--families"])
def test_imagenetx_report_names_a_non_utf8_csv(tmp_path, option: str) -> None:
    csv = _latin1(tmp_path / "g.csv", "model,group\ncaf\xe9,a\n")
    out = tmp_path / "report"
    _refused(["imagenetx", "report", "--original-labels", "--bootstrap", "0", option, str(csv),
              "--out", str(out)], f"{csv}: not UTF-8 text", out)


@pytest.mark.parametrize(("option", "column"), [("--groups", "group"), ("--families", "family")])
def test_imagenetx_report_refuses_a_model_listed_twice(tmp_path, option: str, column: str) -> None:
    """A dict of the rows would keep the model's last row without a word."""
    csv = tmp_path / "g.csv"
    csv.write_text(f"model,{column}\nm1,a\nm2,b\nm1,b\n")
    out = tmp_path / "report"
    _refused(["imagenetx", "report", "--original-labels", "--bootstrap", "0", option, str(csv),
              "--out", str(out)], "listed more than once: m1", out)


@pytest.mark.parametrize(("args", "fragment"), [
    (["diagvib", "render", "--n", "2", "--shape-seed", "-1"], "--shape-seed"),
    (["diagvib", "render", "--n", "2", "--seed", "-1"], "--seed"),
    (["imagenetx", "report", "--original-labels", "--seed", "-1"], "--seed"),
    (["imagenetx", "report", "--original-labels", "--bootstrap", "-1"], "must be >= 0"),
    (["diagvib", "render", "--n", "2000000000"], "up to 10,000,000"),
])
def test_negative_seeds_and_huge_counts_are_refused(tmp_path, args: list[str],
                                                    fragment: str) -> None:
    out = tmp_path / "out"
    _refused([*args, "--out", str(out)], fragment, out)


def test_render_refuses_what_the_disk_cannot_hold(tmp_path, monkeypatch) -> None:
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 10**6, 10**6))
    out = tmp_path / "big.npz"
    _refused(["diagvib", "render", "--n", "1000", "--image-size", "64", "--out", str(out)],
             "has 0.0 GB free", out)


def test_vqa_score_names_a_damaged_release_zip(tmp_path) -> None:
    release = tmp_path / "release"
    release.mkdir()
    (release / "IID-Test.zip").write_bytes(b"PK\x03\x04 not really a zip")
    preds = tmp_path / "preds.json"
    preds.write_text("[]")
    out = tmp_path / "score.json"
    _refused(["vqa", "score", str(preds), "--release", str(release), "--out", str(out)],
             "IID-Test.zip: not a readable zip file", out)


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
@IMAGENETX_REPORT
def test_imagenetx_report_failing_part_way_leaves_the_old_report_whole(
        tmp_path, monkeypatch, imagenetx_dollar_report) -> None:
    import shutil

    import numpy as np
    import pandas as pd

    from shortcutlab.imagenetx.annotations import original_val_labels

    labels = original_val_labels()
    out = tmp_path / "report"
    shutil.copytree(imagenetx_dollar_report, out)  # the old report, as the CLI wrote it
    snapshots = [_snapshot(out)]
    folder = tmp_path / "preds1"
    folder.mkdir()
    wrong = np.random.default_rng(1).random(len(labels)) < 0.3
    pd.DataFrame({"file_name": labels.index,
                  "predicted_class": np.where(wrong, (labels + 1) % 1000, labels)}).to_csv(
        folder / "model.csv", index=False)
    _fail_writes_of(monkeypatch, "index.html")
    res = runner.invoke(app, ["imagenetx", "report", str(folder), "--bootstrap", "0",
                              "--out", str(out)])
    snapshots.append(_snapshot(out))
    assert res.exit_code == 2 and f"{out / 'index.html'}: No space left" in res.output, res.output
    assert snapshots[1] == snapshots[0] and "summary.csv" in snapshots[0]  # no new summary.csv
