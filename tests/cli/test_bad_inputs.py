"""Bad input over every command group: one line ``Error: ...`` (or click's usage box), exit
code 2, no traceback, nothing half-written.

Kinds covered: an output path that is a folder where a file goes, a file where a folder goes,
under a file (not writable), a folder without write permission; unreadable inputs (empty,
ragged, header-only, non-UTF-8, a folder where a file goes); sample ids outside 0..4; a folder
that is no run folder; job folders whose files cannot be read.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.runner import Job, run_jobs
from tests.runner import fake_jobs
from tests.stats.biasbed_table2 import ALGORITHMS, ROWS, TEST_SETS

runner = CliRunner()


class Work:
    """The inputs every case starts from, built once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / "taken.txt"
        self.file.write_text("x")
        self.folder = root / "folder"
        self.folder.mkdir()
        self.blocked = self.file / "sub"  # under a regular file: cannot be created
        table = pd.DataFrame(np.array(ROWS).T, columns=ALGORITHMS)
        table.insert(0, "test set", TEST_SETS)
        self.table = root / "table2.csv"
        table.to_csv(self.table, index=False)
        rows = [{"run": r, "algorithm": "ERM", "epoch": e, "val_acc": v, "test_edge": t}
                for r, vals in (("a", [(0.5, 0.3), (0.9, 0.1)]), ("b", [(0.2, 0.2)] * 2))
                for e, (v, t) in enumerate(vals)]
        self.epochs = root / "epochs.csv"
        pd.DataFrame(rows).to_csv(self.epochs, index=False)
        questions = [{"question_id": i, "image_id": i % 50,
                      "question": f"is the {['dog', 'cat'][i % 2]} big?",
                      "answers": json.dumps([["yes", "no"][i % 7 == 0]] * 10)}
                     for i in range(400)]
        self.vqa = root / "vqa.csv"
        pd.DataFrame(questions).to_csv(self.vqa, index=False)
        res = runner.invoke(app, ["vqa", "build", "--data", str(self.vqa), "--out",
                                  str(root / "splits"), "--no-figures"])
        assert res.exit_code == 0, res.output
        self.splits = root / "splits"
        test_ids = json.loads((self.splits / "splits.json").read_text())["test"]
        self.preds = root / "preds.json"
        self.preds.write_text(json.dumps([{"question_id": q, "answer": "yes"} for q in test_ids]))
        fake_jobs.register()
        self.run = root / "run"
        run_jobs([Job(experiment=f"ZSO/{f}/0", kind="noop") for f in ("hue", "shape")],
                 self.run, backend="serial", progress=False)
        self.empty = root / "empty.csv"
        self.empty.write_text("")
        self.ragged = root / "ragged.csv"
        self.ragged.write_text("model,study\n1,2,3,4\n")
        self.header_only = root / "header.csv"
        self.header_only.write_text("file_name,predicted_class\n")
        self.not_utf8 = root / "latin1.json"
        self.not_utf8.write_bytes(b'[{"question_id": 1, "answer": "caf\xe9"}]')
        self.not_utf8_csv = root / "latin1.csv"
        self.not_utf8_csv.write_bytes(b"question_id,question,answers\n1,caf\xe9?,yes\n")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Work:
    return Work(tmp_path_factory.mktemp("bad-inputs"))


def _outputs(w: Work, out: Path) -> dict[str, list[str]]:
    """Every command that writes files, writing to ``out``."""
    return {
        "diagvib render": ["diagvib", "render", "--n", "2", "--image-size", "32", "--out",
                           str(out)],
        "diagvib render --png": ["diagvib", "render", "--n", "2", "--image-size", "32", "--out",
                                 str(w.root / "ok.npz"), "--png", str(out)],
        "diagvib traverse": ["diagvib", "traverse", "--out", str(out)],
        "diagvib studies": ["diagvib", "studies", "--study", "ZSO", "--samples", "0", "--scale",
                            "0.001", "--out", str(out)],
        "diagvib export": ["diagvib", "export", "ZSO/hue/0", "--scale", "0.001", "--limit", "2",
                           "--out", str(out)],
        "diagvib study-figures": ["diagvib", "study-figures", "--image-size", "32", "--out",
                                  str(out)],
        "diagvib collect": ["diagvib", "collect", str(w.run), "--out", str(out)],
        "diagvib run": ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--scale",
                        "0.001", "--out", str(out)],
        "stats compare": ["stats", "compare", str(w.table), "--out", str(out)],
        "stats select": ["stats", "select", str(w.epochs), "--last-n", "1", "--out", str(out)],
        "vqa build": ["vqa", "build", "--data", str(w.vqa), "--no-figures", "--out", str(out)],
        "vqa score": ["vqa", "score", str(w.preds), "--splits", str(w.splits), "--out", str(out)],
        "vqa baselines": ["vqa", "baselines", "--splits", str(w.splits), "--model",
                          "answer-prior", "--out", str(out)],
        "vqa figures": ["vqa", "figures", str(w.splits), "--out", str(out)],
        "imagenetx evaluate": ["imagenetx", "evaluate", "--original-labels", "--out", str(out)],
        "imagenetx report": ["imagenetx", "report", "--original-labels", "--out", str(out)],
        "diagvib report": ["diagvib", "report", str(w.run), "--out", str(out)],
        "report": ["report", str(w.run), "--out", str(out)],  # the alias
    }


# which commands write a single file to --out (the others write a folder)
FILE_OUTPUTS = {"diagvib render", "diagvib render --png", "diagvib traverse", "diagvib export",
                "vqa score", "imagenetx evaluate"}
# commands whose --out is a stem or a folder that may exist: a folder there is fine
FOLDER_OK = {"diagvib collect"}


def _check_clean(res, w: Work, fragment: str = "") -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and fragment in errors[0], res.output
    left = [p.name for p in w.root.rglob(".*") if p.is_file()]  # no temporary leftovers
    assert left == [], left


def _is_an_error(command: str, kind: str) -> bool:
    """Whether ``--out`` of this kind must be refused: an existing folder is fine for commands
    writing a folder (or a stem), an existing file for commands writing one file (it is replaced)
    or a stem (``<file>.csv`` is written beside it); a path under a file never is."""
    if kind == "folder":
        return command in FILE_OUTPUTS and command not in FOLDER_OK
    if kind == "file":
        return command not in FILE_OUTPUTS and command not in FOLDER_OK
    return True


OUTPUT_CASES = [
    (cmd, kind)
    for cmd in ("diagvib render", "diagvib render --png", "diagvib traverse", "diagvib studies",
                "diagvib study-figures", "diagvib export", "diagvib collect", "diagvib run",
                "stats compare", "stats select", "vqa build", "vqa score", "vqa baselines",
                "vqa figures", "imagenetx evaluate", "imagenetx report", "diagvib report", "report")
    for kind in ("folder", "file", "blocked")
    if _is_an_error(cmd, kind)
]


@pytest.mark.parametrize(("command", "kind"), OUTPUT_CASES)
def test_unwritable_outputs_are_one_line_errors(work: Work, command: str, kind: str) -> None:
    out = {"folder": work.folder, "file": work.file, "blocked": work.blocked}[kind]
    res = runner.invoke(app, _outputs(work, out)[command])
    fragment = {"folder": "Is a directory", "file": str(work.file),
                "blocked": str(work.file)}[kind]
    _check_clean(res, work, fragment)
    assert work.file.read_text() == "x"  # nothing written over it


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root may write anywhere")
def test_a_read_only_folder_is_a_one_line_error(work: Work) -> None:
    locked = work.root / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        for command in ("diagvib render", "stats compare", "vqa score"):
            res = runner.invoke(app, _outputs(work, locked / "x")[command])
            _check_clean(res, work, "Permission denied")
    finally:
        locked.chmod(0o700)


def _inputs(w: Work) -> dict[str, tuple[list[str], str]]:
    """Bad input files and values: (arguments, fragment of the one error line)."""
    return {
        "vqa build non-UTF-8 JSON": (["vqa", "build", "--data", str(w.not_utf8), "--out",
                                      str(w.root / "vb1")], "not UTF-8"),
        "vqa build non-UTF-8 CSV": (["vqa", "build", "--data", str(w.not_utf8_csv), "--out",
                                     str(w.root / "vb2")], "not a readable CSV"),
        "vqa build empty CSV": (["vqa", "build", "--data", str(w.empty), "--out",
                                 str(w.root / "vb3")], "not a readable CSV"),
        "vqa score non-UTF-8 JSON": (["vqa", "score", str(w.not_utf8), "--splits",
                                      str(w.splits)], "not UTF-8"),
        "vqa score predictions folder": (["vqa", "score", str(w.splits), "--splits",
                                          str(w.splits)], "is a folder"),
        "metrics empty CSV": (["diagvib", "metrics", str(w.empty)], "is empty"),
        "metrics ragged CSV": (["diagvib", "metrics", str(w.ragged)], "job table"),
        "report empty CSV": (["diagvib", "report", str(w.empty), "--out", str(w.root / "r1")],
                             "is empty"),
        "report ragged CSV": (["diagvib", "report", str(w.ragged), "--out", str(w.root / "r2")],
                              "job table"),
        "imagenetx header-only CSV": (["imagenetx", "evaluate", str(w.header_only)],
                                      "no predictions"),
        "imagenetx empty CSV": (["imagenetx", "evaluate", str(w.empty)], "not a readable CSV"),
        "export sample 99": (["diagvib", "export", "ZSO/hue/99", "--scale", "0.001", "--out",
                              str(w.root / "e.npz")], "unknown dataset sample 99"),
        "collect no run folder": (["diagvib", "collect", str(w.folder)], "is no run folder"),
        "collect a file": (["diagvib", "collect", str(w.file)], "is a file"),
        "run into a file": (["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                             "--out", str(w.file)], "is a file"),
    }


INPUT_CASES = [
    "vqa build non-UTF-8 JSON", "vqa build non-UTF-8 CSV", "vqa build empty CSV",
    "vqa score non-UTF-8 JSON", "vqa score predictions folder", "metrics empty CSV",
    "metrics ragged CSV", "report empty CSV", "report ragged CSV", "imagenetx header-only CSV",
    "imagenetx empty CSV", "export sample 99", "collect no run folder", "collect a file",
    "run into a file",
]


@pytest.mark.parametrize("case", INPUT_CASES)
def test_bad_input_files_are_one_line_errors(work: Work, case: str) -> None:
    args, fragment = _inputs(work)[case]
    _check_clean(runner.invoke(app, args), work, fragment)


@pytest.mark.parametrize("command", [["diagvib", "run", "--model", "small_cnn", "--study",
                                      "ZSO"], ["diagvib", "studies"]])
def test_samples_outside_the_five_are_refused(work: Work, command: list[str]) -> None:
    out = work.root / "samples7"
    res = runner.invoke(app, [*command, "--samples", "7", "--out", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "unknown dataset sample 7; valid choices: 0, 1, 2, 3, 4" in " ".join(
        res.output.replace("│", " ").split())
    assert not out.exists()


def test_partial_predictions_say_how_many_images_were_scored(work: Work) -> None:
    partial = work.root / "partial.csv"
    partial.write_text("file_name,predicted_class\nILSVRC2012_val_00000001.JPEG,65\n"
                       "ILSVRC2012_val_00000002.JPEG,970\n")
    res = runner.invoke(app, ["imagenetx", "evaluate", str(partial)])
    assert res.exit_code == 0, res.output
    assert "2 of 46,110 images predicted" in " ".join(res.output.split())


Corrupt = Callable[[Path], None]
JOB_FILE_DAMAGE: dict[str, tuple[str, Corrupt]] = {
    "truncated result": ("result.json", lambda p: p.write_text(p.read_text()[:20])),
    "result a list": ("result.json", lambda p: p.write_text("[0.5]")),
    "done without result": ("result.json", lambda p: p.unlink()),
    "non-UTF-8 job.json": ("job.json", lambda p: p.write_bytes(b"\xff\xfe")),
    "empty job.json": ("job.json", lambda p: p.write_text("")),
    "result an empty object": ("result.json", lambda p: p.write_text("{}")),
    "accuracy out of range": ("result.json", lambda p: p.write_text(
        p.read_text().replace('"test_acc": 1.0', '"test_acc": 7.5'))),
    "done marker a folder": ("done", lambda p: (p.unlink(), p.mkdir())),
    "job.json missing": ("job.json", lambda p: p.unlink()),
    "job.json edited": ("job.json", lambda p: p.write_text(
        p.read_text().replace('"seed": 0', '"seed": 3'))),
}


@pytest.mark.parametrize("damage", list(JOB_FILE_DAMAGE))
@pytest.mark.parametrize("command", ["collect", "metrics", "report"])
def test_unreadable_job_files_are_named_and_skipped(
    work: Work, tmp_path: Path, damage: str, command: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(work.run, run)
    name, corrupt = JOB_FILE_DAMAGE[damage]
    victim = sorted(p for p in run.iterdir() if p.is_dir())[0]
    corrupt(victim / name)
    args = {"collect": ["diagvib", "collect", str(run)],
            "metrics": ["diagvib", "metrics", str(run)],
            "report": ["diagvib", "report", str(run), "--out", str(tmp_path / "report")]}[command]
    res = runner.invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    assert res.output.count(f"skipped job folder {victim.name}") == 1  # one line a folder
    assert str(victim / name) in res.output.replace("\n", "")
    if command == "collect":
        assert res.exit_code == 0 and "1 jobs (done 1, 1 unreadable skipped)" in res.output


SPECS_DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "index path outside the folder": (
        lambda d: (d / "index.csv").write_text((d / "index.csv").read_text().replace(
            "ZSO/hue/0.yaml", "../../../etc/hostname")), "points outside"),
    "spec edited after writing": (
        lambda d: (d / "ZSO/hue/0.yaml").write_text(
            (d / "ZSO/hue/0.yaml").read_text().replace("seed: 0", "seed: 1")),
        "was changed after `diagvib studies` wrote it"),
    "spec file missing": (lambda d: (d / "ZSO/hue/0.yaml").unlink(), "is missing"),
    "index not UTF-8": (lambda d: (d / "index.csv").write_bytes(b"name,hash,path\n\xff,\xfe,x\n"),
                        "cannot be read"),
}


@pytest.mark.parametrize("damage", list(SPECS_DAMAGE))
def test_a_damaged_specs_folder_is_refused(work: Work, tmp_path: Path, damage: str) -> None:
    specs = tmp_path / "specs"
    res = runner.invoke(app, ["diagvib", "studies", "--study", "ZSO", "--samples", "0",
                              "--scale", "0.001", "--out", str(specs)])
    assert res.exit_code == 0, res.output
    corrupt, fragment = SPECS_DAMAGE[damage]
    corrupt(specs)
    res = runner.invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                              "--pairs", "hue-shape", "--scale", "0.001", "--specs", str(specs),
                              "--out", str(tmp_path / "run")])
    _check_clean(res, work, fragment)
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize(("option", "fragment"), [
    (["--split", "bogus"], "unknown split 'bogus'"),
    (["--format", "tif"], "unknown export format 'tif'"),
    (["--limit", "0"], "limit must be a positive number"),
])
def test_export_refuses_bad_options_in_one_line_before_its_progress(
        work: Work, option: list[str], fragment: str) -> None:
    """No progress line ("export bogus: 0 in 0 s") before the error: the one line is all."""
    out = work.root / "export.npz"
    res = runner.invoke(app, ["diagvib", "export", "ZSO/hue/0", "--scale", "0.001", *option,
                              "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert [line for line in res.output.splitlines() if line.strip()] == [
        line for line in res.output.splitlines() if line.startswith("Error:")]
    assert fragment in res.output and not out.exists()


def test_render_refuses_a_folder_as_png_before_writing_the_npz(work: Work) -> None:
    """The npz and its grid are a pair: a --png that cannot be written leaves no npz behind."""
    out, grid = work.root / "pair.npz", work.root / "grid-folder"
    grid.mkdir()
    res = runner.invoke(app, ["diagvib", "render", "--n", "4", "--image-size", "32",
                              "--out", str(out), "--png", str(grid)])
    assert res.exit_code == 2, res.output
    (line,) = [line for line in res.output.splitlines() if line.strip()]  # one line, no bar
    assert line.startswith("Error:") and "Is a directory" in line and str(grid) in line
    assert not out.exists() and not any(grid.iterdir())
