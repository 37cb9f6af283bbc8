"""Hostile but fair inputs from issue 36, one table: degenerate DiagViB-6 sizes, inputs that
crashed (VQA ``null`` answers, deeply nested JSON, damaged ImageNet-X matrices), values that
passed validation and failed late (``--lr inf``, a factory that is no model, a backend that is
unknown or absent), values accepted silently (a zip member twice, ``--alpha 5``, an empty
header, negative or fractional epochs), range errors shown as click's usage box, and a folder
given twice to ``metrics`` (accepted, with a warning). Each is one ``Error:`` line and exit
code 2, with nothing written, or (the last) exit 0 and one ``Warning:`` line."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app

runner = CliRunner()
# every training case is as small as possible: one experiment at the smallest scale
DIAGVIB_RUN = ["diagvib", "run", "--study", "ZSO", "--pairs", "hue-shape", "--samples", "0",
               "--scale", "0.001", "--epochs", "1", "--device", "cpu"]
BIASBED_RUN = ["biasbed", "run", "--algorithm", "erm", "--dataset", "diagvib:ZGO/shape-texture/0",
               "--scale", "0.002", "--epochs", "1", "--device", "cpu"]


def _images(tmp: Path) -> Path:
    from tests.biasbed.conftest import write_folder

    return write_folder(tmp / "sketch", {"airplane": 0, "bear": 1}, 2, 0)


def _no_images(tmp: Path) -> Path:
    (tmp / "sketch" / "airplane").mkdir(parents=True)
    return tmp / "sketch"


@dataclass(frozen=True)
class Case:
    """``make(tmp, out)`` writes the case's inputs under ``tmp`` and returns the arguments;
    ``out`` must not exist afterwards (nothing written) unless the input is accepted."""

    make: Callable[[Path, Path], list[str]]
    fragment: str
    exit_code: int = 2


def _spec(tmp: Path, train: int) -> Path:
    from shortcutlab.diagvib.studies import make_experiment

    data = make_experiment("ZGO/hue-shape/0", scale=0.01).to_dict()
    data["sizes"]["train"] = train
    path = tmp / "spec.yaml"
    path.write_text(json.dumps(data))  # YAML reads JSON
    return path


def _release(tmp: Path, answer: object = "yes", zipped_twice: bool = False) -> Path:
    from tests.vqa.test_release import _files, _write

    files = _files()
    for record in files["IID-Test/IID-Test-Ans.json"]:
        if record["question_id"] == 1:
            record["answers"][0]["answer"] = answer
    root = tmp / "VQA-VS"
    if zipped_twice:  # IID-Test as a zip holding the annotations twice, the second different
        iid = {k: files.pop(k) for k in list(files) if k.startswith("IID-Test/")}
        root.mkdir()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
            with zipfile.ZipFile(root / "IID-Test.zip", "w") as zf:
                for rel, doc in iid.items():
                    zf.writestr(rel, json.dumps(doc))
                zf.writestr("IID-Test/IID-Test-Ans.json", json.dumps([]))
    return _write(root, files)


def _score(tmp: Path, out: Path, release: Path) -> list[str]:
    from tests.vqa.test_release import PREDICTIONS

    preds = tmp / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS))
    return ["vqa", "score", str(preds), "--release", str(release), "--out", str(out)]


def _deep(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _factory(tmp: Path, body: str) -> str:
    """A module of the working folder (a fresh name per test) whose ``f`` has ``body``."""
    name = f"h8_zoo_{tmp.name.replace('-', '_')}"
    (tmp / f"{name}.py").write_text(f"def f(num_classes):\n    {body}\n")
    return f"{name}:f"


def _object_npy(tmp: Path) -> Path:
    path = tmp / "objects.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    (tmp / "objects.file_names.txt").write_text("a.jpg\nb.jpg\n")
    return path


def _random_npz(tmp: Path) -> Path:
    path = tmp / "random.npz"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    return path


def _jobs_csv(tmp: Path) -> Path:
    from tests.diagvib.tables import synthetic_table

    jobs = tmp / "jobs.csv"
    synthetic_table(studies=("ZSO",), samples=(0,)).to_csv(jobs, index=False)
    return jobs


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text)
    return str(tmp / name)


def _vqa_build(tmp: Path, build_json: str | None = None) -> str:
    """A small `vqa build` folder (its build.json replaced by ``build_json``)."""
    import pandas as pd

    from shortcutlab.vqa import build_splits, make_table, write_splits

    pairs = [("sky", "blue")] * 30 + [("sky", "grey")] * 3 + [("grass", "green")] * 20
    rows = [{"question_id": i, "image_id": i, "question": f"What color is the {w}?",
             "answers": [a]} for i, (w, a) in enumerate(pairs)]  # fmt: skip
    write_splits(build_splits(make_table(pd.DataFrame(rows))), tmp / "build", figures=False)
    if build_json is not None:
        (tmp / "build" / "build.json").write_text(build_json)
    return str(tmp / "build")


EPOCHS = "run,epoch,val_acc,test_acc\na,0,0.5,0.5\na,{},0.6,0.6\n"

CASES: dict[str, Case] = {
    # sizes bounded at the edge: --scale, spec files and exports
    "scale too small to train": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", "small_cnn", "--scale", "1e-7", "--out", str(o)],
        "use a scale from 0.000972 to 228"),
    "studies at 1e12 scale": Case(
        lambda t, o: ["diagvib", "studies", "--scale", "1e12", "--study", "ZSO", "--out", str(o)],
        "each split needs 9 to 10,000,000"),
    "export at 1e-7 scale": Case(
        lambda t, o: ["diagvib", "export", "ZGO/hue-shape/0", "--scale", "1e-7", "--out",
                      str(o)], "use a scale from"),
    "spec of 10^12 training images": Case(
        lambda t, o: ["diagvib", "export", str(_spec(t, 10**12)), "--out", str(o)],
        "sizes.train must be an integer from 9 to 10,000,000"),
    "spec of one training image": Case(
        lambda t, o: ["diagvib", "export", str(_spec(t, 1)), "--out", str(o)],
        "sizes.train must be an integer from 9"),
    # tracebacks
    "release answer null": Case(
        lambda t, o: _score(t, o, _release(t, None)), "has the answer null"),
    "release answer a number": Case(
        lambda t, o: _score(t, o, _release(t, 2)), "has the answer 2"),
    "deeply nested predictions": Case(
        lambda t, o: ["vqa", "score", str(_deep(t, "p.json")), "--release",
                      str(_release(t)), "--out", str(o)], "nested too deeply"),
    "deeply nested VQA data": Case(
        lambda t, o: ["vqa", "build", "--data", str(_deep(t, "q.json")), "--out", str(o),
                      "--no-figures"], "nested too deeply"),
    "random-bytes npz": Case(
        lambda t, o: ["imagenetx", "evaluate", str(_random_npz(t)), "--out", str(o)],
        "not a readable .npz"),
    "object npy": Case(
        lambda t, o: ["imagenetx", "evaluate", str(_object_npy(t)), "--out", str(o)],
        "not a readable .npy"),
    # late or silent
    "lr inf": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", "small_cnn", "--lr", "inf", "--out", str(o)],
        "lr: Input should be a finite number"),
    "factory returns 42": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", _factory(t, "return 42"), "--out", str(o)],
        "the factory returned a int, not a torch.nn.Module"),
    "factory returns a dict": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", _factory(t, "return {}"), "--out", str(o)],
        "returned a dict"),
    "factory raises": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", _factory(t, "raise KeyError('w')"), "--out",
                      str(o)], "building it failed (KeyError"),
    "biasbed backend bogus": Case(
        lambda t, o: [*BIASBED_RUN, "--backend", "bogus", "--out", str(o)],
        "unknown backend 'bogus'"),
    "diagvib backend slurm without SLURM": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", "small_cnn", "--backend", "slurm", "--out",
                      str(o)], "no SLURM found"),
    "biasbed backend slurm without SLURM": Case(
        lambda t, o: [*BIASBED_RUN, "--backend", "slurm", "--out", str(o)], "no SLURM found"),
    "diagvib backend ray without ray": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", "small_cnn", "--backend", "ray", "--out", str(o)],
        "backend ray needs the ray package"),
    "zip member twice": Case(
        lambda t, o: _score(t, o, _release(t, zipped_twice=True)),
        "holds IID-Test-Ans.json 2 times"),
    "biasbed report alpha 5": Case(
        lambda t, o: ["biasbed", "report", str(t), "--alpha", "5", "--out", str(o)],
        "--alpha must lie strictly between 0 and 1"),
    "empty algorithm header": Case(
        lambda t, o: ["stats", "compare", _write(t, "w.csv", "block,a,,c\nx,1,2,3\ny,2,3,1\n"),
                      "--out", str(o)], "column(s) 3 have an empty header"),
    "negative epoch": Case(
        lambda t, o: ["stats", "select", _write(t, "e.csv", EPOCHS.format(-1)), "--out", str(o)],
        "epoch -1 of run a: epochs must be whole numbers >= 0"),
    "fractional epoch": Case(
        lambda t, o: ["stats", "select", _write(t, "e.csv", EPOCHS.format(0.5)), "--out",
                      str(o)], "epoch 0.5 of run a"),
    # messages: range errors are one line, not the usage box
    "workers 0": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", "small_cnn", "--workers", "0", "--out", str(o)],
        "Error: Invalid value for '--workers': Input should be greater than or equal to 1"),
    "budget seconds negative": Case(
        lambda t, o: [*DIAGVIB_RUN, "--model", "small_cnn", "--budget-seconds", "-1", "--out",
                      str(o)], "Error: Invalid value for '--budget-seconds'"),
    "vqa seed -1": Case(
        lambda t, o: ["vqa", "build", "--data", _write(t, "d.csv", "question_id,image_id,"
                      "question,answers\n1,2,what?,yes\n"), "--seed", "-1", "--out", str(o)],
        "Error: Invalid value for '--seed'"),
    "vqa figures of a folder that is no build": Case(
        lambda t, o: ["vqa", "figures", str(t), "--out", str(o)],
        "is not a complete VQA-VS split folder (no build.json)"),
    "vqa figures of an unknown group": Case(
        lambda t, o: ["vqa", "figures", _vqa_build(t), "--group", "KW=skyy", "--out", str(o)],
        "KW has no group 'skyy' in this build; close: 'sky'; valid choices"),
    "vqa figures of an unknown shortcut": Case(
        lambda t, o: ["vqa", "figures", _vqa_build(t), "--group", "KV=sky", "--out", str(o)],
        "unknown shortcut 'KV'; valid choices: QT, KW, KWP"),
    "vqa figures of a damaged build.json": Case(
        lambda t, o: ["vqa", "figures", _vqa_build(t, "[1, 2"), "--out", str(o)],
        "build.json: not the configuration of a build"),
    "biasbed samples of a folder without images": Case(
        lambda t, o: ["biasbed", "samples", "--test-dir", f"sketch={_no_images(t)}", "--out",
                      str(o)], "has no image files in its class subfolders"),
    "biasbed samples --per-set 0": Case(
        lambda t, o: ["biasbed", "samples", "--test-dir", f"sketch={_images(t)}", "--per-set",
                      "0", "--out", str(o)], "--per-set must be an integer >= 1 and <= 32 (got 0)"),
    "biasbed samples --out a folder": Case(
        lambda t, o: ["biasbed", "samples", "--test-dir", f"sketch={_images(t)}", "--out",
                      str(t)], "a folder is where a file should go"),
    # accepted, with a warning
    "metrics of one folder twice": Case(
        lambda t, o: ["diagvib", "metrics", str(_jobs_csv(t)), str(_jobs_csv(t))],
        "Warning: ", exit_code=0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, case: str) -> None:
    spec = CASES[case]
    if "without SLURM" in case and shutil.which("srun") is not None:
        pytest.skip("this machine has SLURM")
    if "without ray" in case:
        monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    monkeypatch.chdir(tmp_path)  # module:factory models are imported from here
    out = tmp_path / "out"
    res = runner.invoke(app, spec.make(tmp_path, out))
    assert res.exit_code == spec.exit_code, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and spec.fragment in res.output, res.output
    lines = [line for line in res.output.splitlines() if line.startswith(("Error", "Warning"))]
    assert len(lines) == 1 and "Usage:" not in res.output, res.output
    assert not out.exists()  # refused (or, for metrics, read) without writing anything
