"""End to end on real DiagViB-6 data through the CLI: run, resume, collect, bad input."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from shortcutlab.cli.main import app
from shortcutlab.runner.collect import JOB_COLUMNS, collect_epochs

runner = CliRunner()
RUN = ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--study", "ZGO",
       "--pairs", "hue-shape", "--scale", "0.002", "--epochs", "2", "--batch-size", "16",
       "--backend", "serial", "--device", "cpu"]


def test_run_resume_and_collect_on_a_tiny_experiment(tmp_path) -> None:
    out = tmp_path / "runs"
    first = runner.invoke(app, [*RUN, "--out", str(out)])
    assert first.exit_code == 0, first.output
    table = pd.read_parquet(out / "jobs.parquet")
    # the kind's describer's columns, the last three from the job's params
    described = ["study", "predicted", "correlated", "sample", "scale", "benchmark_seed", "head"]
    assert list(table.columns[: len(JOB_COLUMNS) + 7]) == [
        *JOB_COLUMNS[:3], *described, *JOB_COLUMNS[3:]]
    assert (table["scale"] == 0.002).all() and (table["benchmark_seed"] == 0).all()
    assert table["benchmark_seed"].dtype == "int64"
    assert sorted(table["experiment"]) == ["ZGO/hue-shape/0", "ZSO/hue/0"]
    assert (table["status"] == "done").all()
    assert table["test_acc"].between(0, 1).all() and (table["epochs_run"] >= 1).all()
    zgo = table[table["study"] == "ZGO"].iloc[0]
    assert (zgo["predicted"], zgo["correlated"]) == ("hue", "shape")
    assert table.loc[table["study"] == "ZSO", "correlated"].tolist() == [""]
    ood_tags = [c for c in table.columns if c.startswith("test_acc@") and c.endswith("-ood")]
    assert len(ood_tags) == 6 and table.loc[table["study"] == "ZGO", ood_tags].notna().all(None)
    epochs = collect_epochs(out)
    assert set(epochs["job_id"]) == set(table["job_id"]) and "all" in set(epochs["tag"])
    again = runner.invoke(app, [*RUN, "--out", str(out)])
    assert again.exit_code == 0 and "already done 2" in again.output
    collected = runner.invoke(app, ["diagvib", "collect", str(out), "--out",
                                    str(tmp_path / "t")])
    assert collected.exit_code == 0 and (tmp_path / "t.csv").is_file()
    assert (tmp_path / "t.parquet").is_file()


def test_cli_bad_input_is_named(tmp_path) -> None:
    bad_model = runner.invoke(app, ["diagvib", "run", "--model", "vgg16", "--study", "ZSO",
                                    "--out", str(tmp_path)])
    assert bad_model.exit_code == 2 and "unknown model 'vgg16'" in bad_model.output
    assert "small_cnn" in bad_model.output
    bad_study = runner.invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "XYZ",
                                    "--out", str(tmp_path)])
    assert bad_study.exit_code == 2 and "unknown study 'XYZ'" in bad_study.output
    bad_backend = runner.invoke(app, [*RUN[:-6], "--backend", "mpi", "--out", str(tmp_path)])
    assert bad_backend.exit_code == 2 and "unknown backend 'mpi'" in bad_backend.output
    missing = runner.invoke(app, ["diagvib", "collect", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "run folder not found" in missing.output
