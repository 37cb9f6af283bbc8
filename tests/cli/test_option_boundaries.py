"""Shared options at their boundaries: the last valid value accepted, the first invalid one
refused in one line; one run folder given twice is read once."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.cli.options import samples_option
from tests.diagvib.tables import synthetic_table

runner = CliRunner()


def test_samples_are_the_benchmarks_five_ids_0_to_4() -> None:
    probe = typer.Typer()

    @probe.command()
    def show(samples: list[int] = samples_option()) -> None:
        typer.echo(" ".join(map(str, samples)))

    ok = runner.invoke(probe, ["--samples", "0", "--samples", "4"])
    assert ok.exit_code == 0 and ok.stdout.strip() == "0 4", ok.output
    for bad in ("5", "-1"):
        res = runner.invoke(probe, ["--samples", bad])
        assert res.exit_code == 2, res.output
        assert (f"unknown dataset sample {bad}; valid choices: 0, 1, 2, 3, 4"
                in " ".join(res.output.replace("│", " ").split()))


def test_metrics_of_one_folder_in_two_spellings_is_read_once(tmp_path, monkeypatch) -> None:
    synthetic_table(studies=("ZSO", "ZGO"), samples=(0, 1)).to_csv(tmp_path / "jobs.csv",
                                                                   index=False)
    monkeypatch.chdir(tmp_path)
    once = runner.invoke(app, ["diagvib", "metrics", "jobs.csv", "--json"])
    assert once.exit_code == 0, once.output
    twice = runner.invoke(app, ["diagvib", "metrics", "jobs.csv", str(tmp_path / "jobs.csv"),
                                "--json"])
    assert twice.exit_code == 0, twice.output
    assert "given more than once; read once" in twice.stderr
    assert json.loads(twice.stdout) == json.loads(once.stdout)
