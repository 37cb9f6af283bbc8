"""benchmarks/bench_demo_job.py's child process removes the run folder it trains into (it used
``tempfile.mkdtemp()`` and left one folder in $TMPDIR per variant, three per run)."""

from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

from tests.benchmarks.scripts import load_script


class _Table:
    def sort_values(self, column: str) -> _Table:
        return self

    def __getitem__(self, column: str) -> list[float]:
        return [0.5, 0.75]


def test_child_leaves_no_run_folder_behind(tmp_path, monkeypatch, capsys) -> None:
    module = load_script("bench_demo_job")
    folders: list[Path] = []

    def run_jobs(jobs, out, **kwargs) -> None:  # stands in for training: writes a result
        folders.append(Path(out))
        (Path(out) / "result.json").write_text("{}")

    class Config:
        def replace(self, **kwargs) -> Config:
            return self

    stubs = {
        "torch": types.SimpleNamespace(set_num_threads=lambda n: None),
        "shortcutlab.demo.benchmark": types.SimpleNamespace(DEMO_CONFIG=Config(), DEMO_SCALE=0.01),
        "shortcutlab.diagvib.jobs": types.SimpleNamespace(build_jobs=lambda *a, **k: [],
                                                          collect_jobs=lambda out: _Table()),
        "shortcutlab.runner.runs": types.SimpleNamespace(run_jobs=run_jobs),
        "shortcutlab.utils.malloc": types.SimpleNamespace(keep_freed_memory=lambda: None),
    }
    for name, stub in stubs.items():
        monkeypatch.setitem(sys.modules, name, stub)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["-c", json.dumps([True, False])])

    exec(compile(module.CHILD, "<bench_demo_job child>", "exec"), {"__name__": "__main__"})

    assert json.loads(capsys.readouterr().out.splitlines()[-1])["test_acc"] == [0.5, 0.75]
    assert folders and folders[0].parent == tmp_path
    assert list(tmp_path.iterdir()) == []
