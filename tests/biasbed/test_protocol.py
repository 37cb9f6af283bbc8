"""The BiasBed protocol: runs through the runner, per-epoch records, selection, statistics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from shortcutlab.biasbed.datasets import FolderExperiment
from shortcutlab.biasbed.protocol import (
    ProtocolError,
    ProtocolSettings,
    build_protocol_jobs,
    compare_algorithms,
    default_n_last,
    load_epochs,
    parse_hparams,
    run_protocol,
    selection_table,
)
from shortcutlab.biasbed.report import epoch_curves, rule_gap_frame, write_report
from shortcutlab.errors import StatsError, TrainError
from shortcutlab.stats import compare


def _experiment(folders: dict[str, Path]) -> FolderExperiment:
    return FolderExperiment(
        folders["train"],
        folders["val"],
        {"cue": folders["cue"], "edge": folders["edge"]},
        folders["map"],
        16,
    )


@pytest.fixture(scope="module")
def protocol_dir(folders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("protocol")
    planned = build_protocol_jobs([_experiment(folders)], ProtocolSettings(
        ("erm", "padain"), seeds=(0, 1), epochs=3, batch_size=6, hparams={"padain": {"p": 0.5}},
    ))
    summary = run_protocol(planned, out, progress=False)
    assert len(summary.done) == 4 and not summary.failed
    return out


def test_every_epoch_of_every_run_on_every_test_set(
    protocol_dir: Path, folders: dict[str, Path]
) -> None:
    epochs = load_epochs(protocol_dir)
    allrows = epochs[epochs["tag"] == "all"]
    counts = allrows.groupby(["algorithm", "test_set"])[["run", "epoch"]].nunique()
    assert (counts["run"] == 2).all() and (counts["epoch"] == 3).all()
    assert sorted(allrows["test_set"].unique()) == ["cue", "edge"]
    assert sorted(epochs["seed"].unique()) == [0, 1]
    meta = json.loads((protocol_dir / "protocol.json").read_text())["jobs"]
    assert sorted(m["algorithm"] for m in meta.values()) == ["erm", "erm", "padain", "padain"]
    # resumable: running the same protocol again trains nothing
    planned = build_protocol_jobs([_experiment(folders)], ProtocolSettings(
        ("erm", "padain"), seeds=(0, 1), epochs=3, batch_size=6, hparams={"padain": {"p": 0.5}},
    ))
    again = run_protocol(planned, protocol_dir, progress=False)
    assert len(again.skipped) == 4 and not again.done


def test_selection_rules_and_oracle_gap(protocol_dir: Path) -> None:
    epochs = load_epochs(protocol_dir)
    assert default_n_last(epochs) == 1  # 30 % of 3 epochs
    table = selection_table(epochs, n_last=2)
    assert len(table) == 4 and (table["n_runs"] == 2).all()
    # the oracle looks at the test set, so it is never below an honest rule
    assert (table["best_epoch"] >= table["best_validation"] - 1e-12).all()
    assert (table["best_epoch"] >= table["last_n"] - 1e-12).all()
    # last-2 is the mean over runs of each run's mean over its last two epochs
    sub = epochs[(epochs.algorithm == "erm") & (epochs.test_set == "cue") & (epochs.tag == "all")]
    expected = sub[sub.epoch >= 1].groupby("run")["acc"].mean().mean()
    row = table[(table.algorithm == "erm") & (table.test_set == "cue")].iloc[0]
    assert row["last_n"] == pytest.approx(expected)
    gaps = rule_gap_frame(table, "best_validation")
    assert list(gaps.columns) == ["cue", "edge"] and list(gaps.index) == ["erm", "padain"]
    assert "(" in gaps.loc["erm", "cue"]


@pytest.mark.parametrize(("shortest", "n_last"), [
    (100, 30), (10, 3), (5, 2), (7, 3), (3, 1), (1, 1),
])
def test_default_window_is_the_last_30_percent_of_the_shortest_run_rounded_up(
    shortest: int, n_last: int
) -> None:
    """BiasBed's Table 3 averages the last 30 of 100 epochs; shorter runs keep the share,
    rounded up (5 epochs: 1.5 -> 2, 7 epochs: 2.1 -> 3), at least one epoch, and a longer run
    beside the shortest changes nothing."""
    epochs = pd.DataFrame({"run": [0] * shortest + [1] * (shortest + 4),
                           "epoch": list(range(shortest)) + list(range(shortest + 4))})
    assert default_n_last(epochs) == n_last


def test_comparison_matches_stats_compare(protocol_dir: Path) -> None:
    epochs = load_epochs(protocol_dir)
    result = compare_algorithms(epochs, "last_n", n_last=2)
    assert result.blocks == ["cue", "edge"] and sorted(result.algorithms) == ["erm", "padain"]
    # the same numbers by hand: mean over runs of the last-2 mean, blocks = test sets
    allrows = epochs[(epochs.tag == "all") & (epochs.epoch >= 1)]
    per_run = allrows.groupby(["test_set", "algorithm", "run"])["acc"].mean().reset_index()
    manual = compare(per_run.rename(columns={"test_set": "block", "acc": "score"}))
    assert result.chi2 == pytest.approx(manual.chi2)
    pd.testing.assert_frame_equal(
        result.means.sort_index(axis=1), manual.means.sort_index(axis=1), check_names=False
    )
    with pytest.raises(StatsError, match="unknown selection rule 'oracle'"):
        compare_algorithms(epochs, "oracle")


def test_report_files(protocol_dir: Path, tmp_path: Path) -> None:
    written = write_report(protocol_dir, tmp_path / "rep", rule="last_n", n_last=2)
    names = {p.name for p in written}
    assert {
        "index.html",
        "epochs.csv",
        "selection.csv",
        "comparison.json",
        "comparison_cd_diagram.png",
    } <= names
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "cherry-picking" in html and "Iman-Davenport" in html and "data:image/png" in html
    saved = pd.read_csv(tmp_path / "rep" / "selection.csv")
    assert len(saved) == 4


def test_epoch_curves_show_mean_over_runs(protocol_dir: Path) -> None:
    epochs = load_epochs(protocol_dir)
    fig = epoch_curves(epochs)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["cue", "edge"]
    lines = {ln.get_label(): ln for ln in panels[0].get_lines()}
    assert set(lines) == {"erm", "padain"}
    sub = epochs[(epochs.algorithm == "erm") & (epochs.test_set == "cue") & (epochs.tag == "all")]
    expected = sub.groupby("epoch")["acc"].mean().to_numpy()
    np.testing.assert_allclose(lines["erm"].get_ydata(), expected)
    np.testing.assert_array_equal(lines["erm"].get_xdata(), [1, 2, 3])


def test_scale_only_changes_diagvib_job_ids(folders: dict[str, Path]) -> None:
    exp = _experiment(folders)
    ids = {
        scale: [p.job.job_id for p in build_protocol_jobs(
            [exp], ProtocolSettings(("erm",), seeds=(0, 1), epochs=1, scale=scale))]
        for scale in (1.0, 0.01)
    }
    assert ids[1.0] == ids[0.01] and len(set(ids[1.0])) == 2  # CLI and Python runs are shared
    diag = [
        build_protocol_jobs(["diagvib:ZGO/shape-texture/0"],
                            ProtocolSettings(("erm",), seeds=(0,), epochs=1, scale=s))[0].job
        for s in (0.001, 0.002)
    ]
    assert diag[0].job_id != diag[1].job_id
    assert [j.params["scale"] for j in diag] == [0.001, 0.002]  # the DiagViB-6 kind's own field
    assert diag[0].describe()["scale"] == 0.001


def test_jobs_carry_the_version_of_the_code_their_numbers_depend_on(
        folders: dict[str, Path]) -> None:
    """A job trained by an algorithm whose code changed its numbers (InfoDrop's draw count,
    version 2) and a DiagViB-6 job (the renderer) carry those versions in their ids, in
    `biasbed run` as in `diagvib run`: a folder's older results are redone, never counted as
    the new code's. Algorithms that never changed keep the ids they had."""
    from shortcutlab.diagvib.jobs import build_jobs
    from shortcutlab.diagvib.render import RENDERER_VERSION
    from shortcutlab.train.algorithms import algorithm_versions, get_algorithm_class
    from shortcutlab.train.config import TrainConfig

    assert algorithm_versions("erm") == {}
    assert algorithm_versions("infodrop") == {
        "algorithm": f"infodrop-{get_algorithm_class('infodrop').version}"}
    settings = ProtocolSettings(("erm", "infodrop"), seeds=(0,), epochs=1, scale=0.001)
    folder = {p.algorithm: p.job.versions
              for p in build_protocol_jobs([_experiment(folders)], settings)}
    assert folder == {"erm": {}, "infodrop": algorithm_versions("infodrop")}
    diag = {p.algorithm: p.job.versions
            for p in build_protocol_jobs(["diagvib:ZGO/shape-texture/0"], settings)}
    assert diag["erm"] == {"renderer": RENDERER_VERSION}
    assert diag["infodrop"] == {"renderer": RENDERER_VERSION, **algorithm_versions("infodrop")}
    (run,) = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.001,
                        train_config=TrainConfig(preset="paper", algorithm="infodrop"))
    assert run.versions == diag["infodrop"]  # the same kind, the same versions
    assert run.job_id != run.model_copy(update={"versions": {"renderer": RENDERER_VERSION}}).job_id


def test_former_stylized_hparams_still_plan() -> None:
    """`--hparam stylized:hue=true` and `texture_pool` keep working: the protocol hands the
    engine the generic style options the DiagViB-6 capability understands."""
    hparams = parse_hparams(["stylized:hue=true", "stylized:texture_pool=all"])
    planned = build_protocol_jobs(["diagvib:ZGO/shape-texture/0"], ProtocolSettings(
        ("stylized",), seeds=(0,), epochs=1, scale=0.002, hparams=hparams))
    assert planned[0].job.train.hparams == {"style": "texture+hue", "style_pool": "all"}
    with pytest.raises(TrainError, match="predicts 'hue'"):  # hue now redrawn: refused
        build_protocol_jobs(["diagvib:ZGO/hue-shape/0"], ProtocolSettings(
            ("stylized",), seeds=(0,), epochs=1, scale=0.002, hparams=hparams))


def test_same_seed_same_numbers(folders: dict[str, Path], tmp_path: Path) -> None:
    exp = FolderExperiment(
        folders["train"], folders["val"], {"cue": folders["cue"]}, folders["map"], 16
    )
    frames = []
    for name in ("a", "b"):
        planned = build_protocol_jobs(
            [exp], ProtocolSettings(("sagnet",), seeds=(0,), epochs=1, batch_size=6))
        run_protocol(planned, tmp_path / name, progress=False)
        frames.append(load_epochs(tmp_path / name))
    cols = ["run", "epoch", "train_loss", "val_loss", "val_acc", "acc"]
    pd.testing.assert_frame_equal(frames[0][cols], frames[1][cols])


def test_bad_protocol_settings(folders: dict[str, Path], tmp_path: Path) -> None:
    exp = _experiment(folders)
    with pytest.raises(ProtocolError, match="'erm' is given twice"):
        build_protocol_jobs([exp], ProtocolSettings(("erm", "erm"), epochs=1))
    with pytest.raises(ProtocolError, match="must be >= 1"):
        build_protocol_jobs([exp], ProtocolSettings(("erm",), epochs=0))
    with pytest.raises(ProtocolError, match="distinct non-negative"):
        build_protocol_jobs([exp], ProtocolSettings(("erm",), seeds=()))
    with pytest.raises(ProtocolError, match="unknown algorithm in hparams 'sagnet'"):
        build_protocol_jobs([exp], ProtocolSettings(("erm",), hparams={"sagnet": {"w_adv": 1.0}}))
    choices = "detach, layers, p, placement"
    with pytest.raises(TrainError, match=f"hyper-parameter .* 'q'; valid choices: {choices}"):
        build_protocol_jobs([exp], ProtocolSettings(("padain",), hparams={"padain": {"q": 1}}))
    with pytest.raises(TrainError, match="needs a training set that re-renders"):
        build_protocol_jobs([exp], ProtocolSettings(("debiased",)))
    with pytest.raises(ProtocolError, match="protocol.json missing"):
        load_epochs(tmp_path)


def test_cli_on_diagvib(tmp_path: Path) -> None:
    from shortcutlab.cli.main import app

    runner = CliRunner()
    args = [
        "biasbed",
        "run",
        "--algorithm",
        "erm",
        "--algorithm",
        "stylized",
        "--dataset",
        "diagvib:ZGO/shape-texture/0",
        "--scale",
        "0.001",
        "--seeds",
        "0",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--device",
        "cpu",
        "--backend",  # in this process; the processes backend: the test below
        "serial",
        "--out",
        str(tmp_path / "runs"),
        "--json",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"runs": 2, "done": 2, "skipped": 0, "failed": 0,
                                      "out": str(tmp_path / "runs")}
    epochs = load_epochs(tmp_path / "runs")
    assert set(epochs["algorithm"]) == {"erm", "stylized"}
    assert set(epochs["dataset"]) == {"ZGO/shape-texture/0"}
    assert np.isfinite(epochs["acc"]).all()
    # one block only: the report says why there is no test instead of failing
    res = runner.invoke(
        app, ["biasbed", "report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"),
              "--json"]
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["comparison"] is None
    assert {r["algorithm"] for r in report["selection"]} == {"erm", "stylized"}
    assert "No statistical comparison" in (tmp_path / "rep" / "index.html").read_text()
    res = runner.invoke(
        app,
        [
            "biasbed",
            "run",
            "--algorithm",
            "stylized",
            "--dataset",
            "diagvib:ZGO/texture-shape/0",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert res.exit_code == 2 and "predicts 'texture'" in res.output


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_folder_jobs_run_in_fresh_worker_processes(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """Spawned workers register nothing: the backend hands them the job function with the job,
    so a kind registered only in the parent (by build_protocol_jobs) runs there; a DiagViB-6
    dataset's job (the runner's ``diagvib`` kind) runs in the same worker."""
    planned = build_protocol_jobs(["diagvib:ZGO/shape-texture/0", _experiment(folders)],
                                  ProtocolSettings(("erm",), seeds=(0,), epochs=1, scale=0.001,
                                                   batch_size=16))
    summary = run_protocol(planned, tmp_path / "out", backend="processes", workers=1,
                           device="cpu", progress=False)
    assert len(summary.done) == 2, summary.failed
    assert set(load_epochs(tmp_path / "out")["dataset"]) == {"ZGO/shape-texture/0", "folders"}
    assert json.loads(json.dumps(planned[1].job.spec))["train_dir"] == str(
        folders["train"].resolve()
    )


def test_report_failing_part_way_leaves_the_old_report_whole(
        protocol_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    out = tmp_path / "rep"
    write_report(protocol_dir, out, rule="last_n", n_last=2)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = Path.write_text

    def no_space(self: Path, *args: object, **kwargs: object) -> int:
        if "index.html" in self.name:  # the last file of the set
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", no_space)
    with pytest.raises(OSError, match="No space left"):
        write_report(protocol_dir, out, rule="best_validation")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_strict_without_marked_test_sets_is_refused(protocol_dir: Path, tmp_path: Path) -> None:
    # no test set of this protocol is marked --in-distribution: --strict would drop nothing
    from shortcutlab.cli.main import app

    res = CliRunner().invoke(app, ["biasbed", "report", str(protocol_dir), "--out",
                                   str(tmp_path / "rep"), "--strict"])
    assert res.exit_code == 2, res.output
    assert "--in-distribution" in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "rep").exists()


def test_report_help_names_every_file_the_report_writes(protocol_dir: Path, tmp_path: Path) -> None:
    from shortcutlab.cli.main import app

    written = write_report(protocol_dir, tmp_path / "rep", rule="last_n", n_last=2)
    res = CliRunner().invoke(app, ["biasbed", "report", "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    text = "".join(res.output.replace("│", " ").split())
    assert any(p.name.startswith("comparison") for p in written)  # the fixture compares
    for path in written:  # comparison files are listed as comparison.json/.tex/_scores.csv/...
        name = path.name if path.name == "comparison.json" else path.name.removeprefix(
            "comparison")
        assert name in text, f"{path.name} is written but `biasbed report --help` omits it"


def test_augmented_folder_runs_do_not_depend_on_the_callers_random_state(
        folders: dict[str, Path], tmp_path: Path) -> None:
    """With --preprocess imagenet the crops and flips are seeded per image by the run's seed
    (``FolderExperiment.datasets(seed=)``): whatever the process drew before (here, torch's
    global RNG left in two states), the same run gives the same numbers."""
    import torch

    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]},
                           folders["map"], 16, preprocess="imagenet")
    frames = []
    for name, state in (("a", 1), ("b", 2)):
        planned = build_protocol_jobs([exp], ProtocolSettings(
            ("erm",), seeds=(0,), epochs=2, batch_size=6))  # normalization "train"
        torch.manual_seed(state)  # the statistics pass runs before the trainer seeds anything
        run_protocol(planned, tmp_path / name, progress=False)
        frames.append(load_epochs(tmp_path / name))
    cols = ["run", "epoch", "train_loss", "val_loss", "val_acc", "acc"]
    pd.testing.assert_frame_equal(frames[0][cols], frames[1][cols])


def test_rule_gap_frame_cells_are_oracle_rule_and_rule_minus_oracle_in_percent() -> None:
    """BiasBed Table 1 style: ``oracle / rule (rule − oracle)`` in percent; the difference is
    negative when the honest rule is below the oracle, and a missing cell is a dash."""
    table = pd.DataFrame({
        "algorithm": ["erm", "erm", "padain"], "dataset": ["d", "d", "d"],
        "test_set": ["cue", "edge", "cue"],
        "best_epoch": [0.80, 0.50, 0.90], "best_validation": [0.75, 0.50, 0.925],
    })
    gaps = rule_gap_frame(table, "best_validation")
    assert gaps.loc["erm", "cue"] == "80.0 / 75.0 (-5.0)"  # 75 − 80
    assert gaps.loc["erm", "edge"] == "50.0 / 50.0 (+0.0)"
    assert gaps.loc["padain", "cue"] == "90.0 / 92.5 (+2.5)"  # 92.5 − 90
    assert gaps.loc["padain", "edge"] == "–"  # padain has no edge row


def test_runs_of_one_competitor_with_another_recipe_are_refused_not_pooled(
        protocol_dir: Path, folders: dict[str, Path], tmp_path: Path) -> None:
    """A second ``biasbed run`` into the same folder with another ``--lr`` adds erm runs the
    statistics would pool with the first call's as one algorithm: refused, naming the
    difference. More seeds of the same recipe are the protocol's own way to grow, and count."""
    import shutil
    from dataclasses import replace

    def add(out: Path, versions: dict[str, str] | None = None, **settings) -> None:
        planned = build_protocol_jobs([_experiment(folders)], ProtocolSettings(
            ("erm",), seeds=(2,), epochs=3, batch_size=6, **settings))
        if versions is not None:  # as a later version of the algorithm's code plans it
            planned = [replace(p, job=p.job.model_copy(update={"versions": versions}))
                       for p in planned]
        assert not run_protocol(planned, out, progress=False).failed

    same, other = tmp_path / "same", tmp_path / "other"
    shutil.copytree(protocol_dir, same)
    add(same)
    epochs = load_epochs(same)
    assert epochs.groupby("algorithm")["run"].nunique().to_dict() == {"erm": 3, "padain": 2}
    shutil.copytree(protocol_dir, other)
    add(other, lr=0.01)
    with pytest.raises(ProtocolError, match=r"erm \(small_cnn\) on folders were trained with 2 "
                       r"different recipes \(train\.lr: .* vs .*\).*its own --out folder"):
        load_epochs(other)
    newer = tmp_path / "newer"  # runs of the algorithm's changed code beside the older ones
    shutil.copytree(protocol_dir, newer)
    add(newer, versions={"algorithm": "erm-2"})
    with pytest.raises(ProtocolError, match=r"2 different recipes \(versions\.algorithm: "
                                            r"(None vs 'erm-2'|'erm-2' vs None)\)"):
        load_epochs(newer)
