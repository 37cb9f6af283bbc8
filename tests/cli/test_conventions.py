"""One command-line convention, checked by walking every command of ``shortcutlab``.

* ``--version`` on the top level;
* ``--json`` (a plain flag) on every command that computes numbers; the others are listed in
  :data:`NO_JSON` with what they write instead, so a new command has to choose;
* ``--samples`` (dataset sample ids), ``--pairs`` (predicted-correlated) and ``--seeds`` (training
  seeds) repeatable with one meaning wherever they occur; one default ``--backend``;
* ``--json`` output is the one rendering of :mod:`shortcutlab.cli.output` (sorted keys,
  indent 2, strict JSON) with accuracies as fractions.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from shortcutlab import __version__
from shortcutlab.cli.main import app
from shortcutlab.cli.output import to_json
from tests.diagvib.tables import synthetic_table
from tests.package_src import PACKAGE_SRC

runner = CliRunner()

NO_JSON: dict[str, str] = {
    "demo": "the demo folder and its index.html",
    "diagvib factors": "prints the fixed factor table (paper Table A1); computes nothing",
    "diagvib render": "images and their classes (.npz, .png)",
    "diagvib traverse": "a picture (.png)",
    "diagvib studies": "experiment specs (YAML) and index.csv",
    "diagvib export": "images and metadata (.npz or PNG folder)",
    "diagvib inspect": "an HTML page of pictures",
    "vqa build": "split files and statistics tables",
    "imagenetx predict": "a predictions CSV",
}
REPEATABLE = {"--samples": "int", "--seeds": "int", "--pairs": "str"}


def _commands() -> dict[str, Any]:
    found: dict[str, Any] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        else:
            found[" ".join(path)] = cmd

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = _commands()


def _option(cmd: Any, flag: str) -> Any | None:
    return next((p for p in cmd.params if flag in getattr(p, "opts", [])), None)


def test_version_flag() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"shortcutlab {__version__}"


def test_commands_render_json_in_one_place() -> None:
    """No command module formats JSON itself: print_json of cli/output.py does."""
    cli = PACKAGE_SRC / "shortcutlab" / "cli"
    own = [f.name for f in sorted(cli.glob("*.py"))
           if f.name != "output.py" and "json.dumps(" in f.read_text(encoding="utf-8")]
    assert not own, own


def test_exemptions_name_real_commands() -> None:
    assert set(NO_JSON) <= set(COMMANDS), set(NO_JSON) - set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_flag_on_every_command_that_computes_numbers(name: str) -> None:
    option = _option(COMMANDS[name], "--json")
    if name in NO_JSON:
        return
    assert option is not None, f"`shortcutlab {name}` computes numbers but has no --json"
    assert option.is_flag and option.opts == ["--json"] and not option.secondary_opts
    assert "JSON" in (option.help or "")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_shared_flags_mean_the_same(name: str) -> None:
    cmd = COMMANDS[name]
    for flag, kind in REPEATABLE.items():
        option = _option(cmd, flag)
        if option is None:
            continue
        assert option.multiple, f"{name}: {flag} must be repeatable (a list, not a count)"
        default = option.default or []
        assert all(isinstance(v, int if kind == "int" else str) for v in default), (name, flag)
    samples = _option(cmd, "--samples")
    if samples is not None:
        assert "sample id" in samples.help, f"{name}: --samples are dataset sample ids"


TRAINING = [n for n, c in COMMANDS.items() if _option(c, "--model") and _option(c, "--epochs")]




@pytest.mark.parametrize(
    "name",
    sorted(TRAINING),
)
def test_training_commands_take_seeds(name: str) -> None:
    """Every command that trains names its training seeds with --seeds (one run per seed)."""
    assert _option(COMMANDS[name], "--seeds") is not None


def _backend_defaults() -> dict[str, str]:
    return {name: _option(cmd, "--backend").default for name, cmd in COMMANDS.items()
            if _option(cmd, "--backend") is not None}


def test_one_default_backend() -> None:
    defaults = _backend_defaults()
    assert "diagvib run" in defaults
    assert len(set(defaults.values())) == 1, defaults


def _html_names(cmd: Any) -> set[str]:
    texts = [cmd.help or "", *(getattr(p, "help", "") or "" for p in cmd.params)]
    return set(re.findall(r"[\w.-]+\.html\b", " ".join(texts)))


@pytest.mark.parametrize(
    "name",
    sorted(COMMANDS),
)
def test_one_report_file_name(name: str) -> None:
    """A command that writes an HTML page calls it index.html (open <out>/index.html)."""
    assert _html_names(COMMANDS[name]) <= {"index.html"}


def _fractions_ok(obj: Any, key: str = "") -> bool:
    """Accuracies are fractions: every number under a key naming an accuracy (``acc``,
    ``average``) lies in [0, 1], every ``mean`` (accuracies and their differences) in [-1, 1]."""
    if isinstance(obj, dict):
        return all(_fractions_ok(v, str(k)) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_fractions_ok(v, key) for v in obj)
    if isinstance(obj, bool) or not isinstance(obj, int | float):
        return True
    if "acc" in key or key == "average":
        return 0.0 <= obj <= 1.0
    return -1.0 <= obj <= 1.0 if key == "mean" else True


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("conventions")
    jobs = root / "jobs.csv"
    synthetic_table(studies=("ZSO", "ZGO", "CHGO"), samples=(0, 1)).to_csv(jobs, index=False)
    g = np.random.default_rng(0)
    scores = pd.DataFrame(g.random((6, 3)), columns=["a", "b", "c"])
    scores.insert(0, "dataset", [f"d{i}" for i in range(6)])
    scores.to_csv(root / "scores.csv", index=False)
    epochs = pd.DataFrame({"run": np.repeat(["r0", "r1"], 4), "epoch": np.tile(range(4), 2),
                           "val_acc": g.random(8), "test_acc": g.random(8)})
    epochs.to_csv(root / "epochs.csv", index=False)
    return {"jobs": str(jobs), "scores": str(root / "scores.csv"),
            "epochs": str(root / "epochs.csv")}


@pytest.mark.parametrize(
    "args",
    [
        ["diagvib", "metrics", "{jobs}"],
        ["stats", "compare", "{scores}"],
        ["stats", "select", "{epochs}", "--last-n", "2"],
        ["imagenetx", "evaluate", "--original-labels", "--error-type", "real_class"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_json_is_the_one_rendering_with_fractions(args: list[str], inputs: dict[str, str]):
    res = runner.invoke(app, [a.format(**inputs) for a in args] + ["--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert res.stdout == to_json(data) + "\n"  # sorted keys, indent 2, strict JSON
    assert _fractions_ok(data)
