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
            else ["report", str(jobs), "--out", str(out)])
    _refused(args, "more than once", out)


def test_a_run_with_failed_jobs_exits_1_naming_them_not_2(tmp_path, monkeypatch) -> None:
    from shortcutlab.runner import backends
    from shortcutlab.runner.jobs import Outcome

    def failing(jobs, out, **kw):  # noqa: ANN001, ANN202, ARG001
        return backends.RunSummary([Outcome(jobs[0].job_id, "failed", "RuntimeError: boom")])

    monkeypatch.setattr(backends, "run_jobs", failing)
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
