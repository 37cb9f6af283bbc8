"""benchmarks/validate_diagvib_paper.py: the paper recipe by default, every section-5 study,
and runs in budgeted chunks that end where one unbudgeted call ends."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from shortcutlab.diagvib.jobs import build_jobs, collect_jobs
from shortcutlab.diagvib.metrics import STUDIES
from shortcutlab.train.config import TrainConfig

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "validate_diagvib_paper.py"
TINY = ["--model", "small_cnn", "--studies", "ZSO", "--pairs", "hue-shape", "shape-hue",
        "--scale", "0.002", "--epochs", "1", "--backend", "serial", "--device", "cpu"]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("validate_diagvib_paper", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.REFERENCE_TEXTURES = Path("/nonexistent")  # tests never read the shared data
    return module


def test_defaults_are_the_paper_recipe_over_every_study(script) -> None:
    args = script.parse([])
    assert (args.model, args.preset, args.selection, args.head) == (
        "resnet18", "paper", "paper", "full")
    assert args.studies == list(STUDIES) and len(STUDIES) == 9
    assert {study for study, _, _ in script.statements()} == {"ZSO", "ZGO", "CGO", "CHGO", "FGO"}


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_two_budgeted_calls_end_as_one_call(script, tmp_path, capsys, monkeypatch,
                                            budget_spent_after_first_round) -> None:
    assert script.main([*TINY, "--budget-seconds", "0.1", "--out", str(tmp_path / "a")]) == 0
    monkeypatch.undo()  # the real clock again
    first = capsys.readouterr().out
    assert "1 of 2 jobs remain" in first and "textures built-in" in first
    assert "head full" in first and "selection paper" in first
    assert script.main([*TINY, "--budget-seconds", "600", "--out", str(tmp_path / "a")]) == 0
    second = capsys.readouterr().out
    assert "1 already done" in second and "remain;" not in second
    assert script.main([*TINY, "--out", str(tmp_path / "b")]) == 0
    whole = capsys.readouterr().out
    cols = ["job_id", "status", "test_acc"]
    a, b = (collect_jobs(tmp_path / d)[cols] for d in "ab")
    assert (a["status"] == "done").all() and a.equals(b)
    ours = [line for line in whole.splitlines() if "ours:  position" in line][0]
    assert "hue 0." in ours and "shape 0." in ours  # both ZSO results beside the paper's
    def said(text: str) -> str:  # the statements and our numbers, without the report path
        return text.split("Section 5")[1].split("report:")[0]

    assert said(second) == said(whole)


# 5000 s per full-scale epoch: 10 s per job at scale 0.002 and one epoch
CAMPAIGN = [*TINY, "--samples", "0", "1", "--seconds-per-epoch", "5000"]


def _chunk(script, tmp_path, campaign, name: str, budget: str) -> str:
    archive = tmp_path / f"{name}.tar.gz"
    assert script.main([*CAMPAIGN, "--campaign", str(campaign), "--budget-seconds", budget,
                        "--out", str(tmp_path / f"run-{name}"), "--archive", str(archive)]) == 0
    assert script.main(["--campaign", str(campaign), "--import", str(archive)]) == 0
    return archive.name


def _files(campaign: Path) -> dict[str, object]:
    """Every record file, timings and dates left out (they differ between equal runs)."""
    import json

    import pandas as pd

    out: dict[str, object] = {}
    for path in sorted((campaign / "records").rglob("*.*")):
        key = str(path.relative_to(campaign))
        if path.suffix == ".parquet":
            out[key] = pd.read_parquet(path).to_dict("list")
        elif path.name in ("result.json", "record.json"):
            data = json.loads(path.read_text())
            out[key] = {k: v for k, v in data.items()
                        if k not in ("train_seconds", "seconds_per_epoch", "date")}
        else:
            out[key] = path.read_bytes()
    return out


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_campaign_chunks_resumed_twice_equal_one_run(script, tmp_path, monkeypatch,
                                                      capsys) -> None:
    monkeypatch.delenv("OUT", raising=False)
    chunked, whole = tmp_path / "chunked", tmp_path / "whole"
    _chunk(script, tmp_path, chunked, "a", "9")  # less than one job's estimate: nothing runs
    assert "this chunk: 0 job(s)" in capsys.readouterr().out
    assert not (chunked / "records").exists()
    _chunk(script, tmp_path, chunked, "b", "10")  # one job fits
    first = [r["experiment"] for r in script.read_records(chunked)]
    assert first == ["ZSO/hue/0"]  # sample 0 before sample 1, in the planned order
    _chunk(script, tmp_path, chunked, "c", "10")
    assert len(script.read_records(chunked)) == 2
    capsys.readouterr()
    _chunk(script, tmp_path, chunked, "d", "100")  # fresh run folder: the campaign says what
    assert "2 of 4 planned jobs held, 2 missing; this chunk: 2 job(s)" in capsys.readouterr().out
    _chunk(script, tmp_path, whole, "e", "100")
    records = script.read_records(chunked)
    assert len(records) == 4 and {r["label"] for r in records} == {"current"}
    assert {r["status"] for r in records} == {"finished"}
    assert all(r["job_id"] == Path(r["path"]).name for r in records)
    assert _files(chunked) == _files(whole)
    # a full campaign runs nothing more
    _chunk(script, tmp_path, chunked, "f", "100")
    assert "this chunk: 0 job(s)" in capsys.readouterr().out


def test_an_interrupted_chunk_still_archives_its_finished_jobs(script, tmp_path, monkeypatch,
                                                                capsys) -> None:
    """A window's end interrupts the chunk (gpu_window.sh: SIGINT, as a Ctrl-C): the jobs that
    finished before it still reach the archive, and the campaign takes them."""
    from shortcutlab.runner.runs import RunInterrupted, RunSummary

    real = script.run_jobs

    def first_then_interrupt(jobs, out, **kwargs):
        real(jobs[:1], out, **kwargs)
        raise RunInterrupted("interrupted: 1 of 2 jobs done", RunSummary([]))

    monkeypatch.setattr(script, "run_jobs", first_then_interrupt)
    campaign, archive = tmp_path / "campaign", tmp_path / "chunk.tar.gz"
    assert script.main([*CAMPAIGN, "--campaign", str(campaign), "--budget-seconds", "100",
                        "--out", str(tmp_path / "run"), "--archive", str(archive)]) == 130
    captured = capsys.readouterr()
    assert "interrupted: 1 of 2 jobs done" in captured.err
    assert f"archive: {archive} (1 finished job(s))" in captured.out
    assert not archive.with_name(archive.name + ".part").exists()
    assert script.main(["--campaign", str(campaign), "--import", str(archive)]) == 0
    assert [r["experiment"] for r in script.read_records(campaign)] == ["ZSO/hue/0"]


def test_priority_puts_zgo_of_sample_0_first_then_the_other_studies(script) -> None:
    from shortcutlab.diagvib.jobs import build_jobs

    jobs = build_jobs("small_cnn", ["CHGO", "ZSO", "CGO-1", "ZGO"], ["hue-shape"], [0, 1],
                      scale=0.002)
    order = [j.experiment for j in script.priority(jobs)]
    assert order == ["ZGO/hue-shape/0", "ZSO/hue/0", "CGO-1/hue-shape/0", "CHGO/hue-shape/0",
                     "ZGO/hue-shape/1", "ZSO/hue/1", "CGO-1/hue-shape/1", "CHGO/hue-shape/1"]


def test_chunk_holds_whole_rounds_that_fit_the_budget(script) -> None:
    jobs = list(range(10))
    assert script.choose_chunk(jobs, 100, 30, 4) == list(range(10))[:12]  # 3 rounds of 4
    assert script.choose_chunk(jobs, 59, 30, 4) == [0, 1, 2, 3]
    assert script.choose_chunk(jobs, 29, 30, 4) == []
    assert script.choose_chunk(jobs, None, 30, 4) == jobs


def test_log_importer_keeps_stopped_early_and_its_own_selection(script, tmp_path) -> None:
    import json

    logs = tmp_path / "logs"
    logs.mkdir()
    config = {"protocol": "paper", "model": "resnet18", "epochs": 30, "seed": 0, "head": "full"}
    lines = [{"job": "ZGO/shape-hue/0", "config": config, "n": [1, 2, 3]}] + [
        {"epoch": e, "train_loss": 0.1, "val_loss": v, "val_acc": 1.0,
         "test_acc[test]": a, "wall": 10.0 * (e + 1)}
        for e, (v, a) in enumerate([(0.3, 0.5), (0.1, 0.7), (0.1, 0.2), (0.2, 0.9)])]
    (logs / "ZGO_shape-hue_0.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    campaign = tmp_path / "c"
    assert script.main(["--campaign", str(campaign), "--import-logs", str(logs)]) == 0
    (record,) = script.read_records(campaign)
    assert record["label"] == "stopped early" and record["epochs_run"] == 4
    result = json.loads((Path(record["path"]) / "result.json").read_text())
    assert result["best_epoch"] == 1 and result["test_acc"] == 0.7  # earliest lowest val loss
    assert script.finished_ids(campaign) == set()  # never counts as a finished job


def test_the_committed_campaign_keeps_its_labels(script) -> None:
    campaign = SCRIPT.parents[1] / "validation" / "diagvib-resnet18"
    labels = {r["record"]: r["label"] for r in script.read_records(campaign)}
    early = [n for n in labels if n.startswith("2026-11-27-")]
    older = [n for n in labels if n.startswith("2026-11-25-")]
    assert len(early) == 10 and {labels[n] for n in early} == {"stopped early"}
    assert len(older) == 6 and {labels[n] for n in older} == {"earlier code"}
    zso = script.import_zso_2026_11_25  # the importer reads the committed results page
    assert zso.__defaults__[0].name == "RESULTS-gpu-h100.md"


def test_equivalence_plans_fp32_and_bf16_twins_side_by_side(script, capsys) -> None:
    """Issue 31's fast-recipe check: ZSO's 6 factors and ZGO's shape row, seeds 0 and 1, each
    fp32 job followed by its bf16 + channels_last twin; the fp32 ones are the campaign's own
    paper-recipe jobs (same ids), and the flags it plans itself are refused beside it."""
    config = TrainConfig(preset="paper", model="small_cnn")
    jobs = script.equivalence_jobs("small_cnn", 0.002, config, selection="paper", head="full")
    assert len(jobs) == 44 and len({job.job_id for job in jobs}) == 44
    for fp32, fast in zip(jobs[::2], jobs[1::2], strict=True):
        assert (fp32.experiment, fp32.seed) == (fast.experiment, fast.seed)
        assert (fp32.train.precision, fp32.train.channels_last) == ("fp32", False)
        assert (fast.train.precision, fast.train.channels_last) == ("bf16", True)
    experiments = {job.experiment for job in jobs}
    assert {e for e in experiments if e.startswith("ZGO/")} == {
        f"ZGO/shape-{f}/0" for f in ("position", "hue", "lightness", "scale", "texture")}
    assert len([e for e in experiments if e.startswith("ZSO/")]) == 6
    assert [job.seed for job in jobs[:22]] == [0] * 22  # seed 0's pairs first
    paper = build_jobs("small_cnn", ["ZGO"], ["shape-hue"], [0], [0], 0.002, config,
                       selection="paper", head="full")[0]
    assert paper.job_id in {job.job_id for job in jobs}
    with pytest.raises(SystemExit) as exc:
        script.parse(["--equivalence", "--seeds", "3"])
    assert exc.value.code == 2 and "drop --seeds" in capsys.readouterr().err


def test_statements_speak_of_each_recipe_on_its_own_line(script, capsys) -> None:
    """With --equivalence the table holds <model>@fp32 and <model>@bf16: each statement gets
    one line per model, the paper's fp32 first, each with its own numbers (not the first label
    in sort order, which would put bf16's numbers beside the paper's as 'ours')."""
    from shortcutlab.diagvib.metrics import compute_metrics
    from tests.diagvib.tables import synthetic_table

    fp32 = synthetic_table(studies=("ZSO",), samples=(0,)).assign(precision="fp32", test_acc=0.9)
    bf16 = fp32.assign(precision="bf16", job_id=fp32["job_id"] + "-bf16", test_acc=0.5)
    script.print_statements(compute_metrics(pd.concat([fp32, bf16])), "sem")
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("[ZSO] paper: texture P_i 0.62 ± 0.06")
    assert lines[at + 1].strip() == "ours (small_cnn@fp32):  0.90"
    assert lines[at + 2].strip() == "ours (small_cnn@bf16):  0.50"
    script.print_statements(compute_metrics(fp32), "sem")  # one model: the plain line
    assert "        ours:  0.90" in capsys.readouterr().out.splitlines()


def test_an_archive_that_fails_midway_leaves_no_file_behind(script, tmp_path,
                                                            monkeypatch) -> None:
    """An error while writing the chunk's archive (a full disk, a bad result) leaves neither a
    half archive nor its ``.part``: an importer never sees a partial chunk."""
    from types import SimpleNamespace

    for job_id in ("a", "b"):
        (tmp_path / "out" / job_id).mkdir(parents=True)
        (tmp_path / "out" / job_id / script.RESULT_FILE).write_text("{}", encoding="utf-8")
    calls = []

    def record_then_fail(job, *args):
        calls.append(job.job_id)
        if len(calls) == 2:
            raise OSError("No space left on device")
        return {}

    monkeypatch.setattr(script, "is_done", lambda path: True)
    monkeypatch.setattr(script, "record_of", record_then_fail)
    archive = tmp_path / "chunk.tar.gz"
    jobs = [SimpleNamespace(job_id="a"), SimpleNamespace(job_id="b")]
    with pytest.raises(OSError, match="No space"):
        script.export_chunk(jobs, tmp_path / "out", archive, "abc", "cpu")
    assert calls == ["a", "b"]
    assert not archive.exists() and not archive.with_name(archive.name + ".part").exists()
