"""Fault injection on run folders: kills at every stage of a job, every kind of corrupted job
file, two runs on one folder at once, a killed main process, a full disk.

Each case ends with a rerun whose tables must equal those of a clean run: nothing lost, nothing
run twice, nothing half-written that counts as done. Kills are real SIGKILLs of forked or
spawned processes. Temporary files a kill leaves are removed by the next run: at once where only
the job's claim holder writes them, after a minute for ``job.json`` (any run may be writing one)
and after ten minutes for the job table (another run may be writing it).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from shortcutlab.errors import RunnerError
from shortcutlab.runner import claims
from shortcutlab.runner import jobs as jobs_mod
from shortcutlab.runner.collect import collect, collect_epochs
from shortcutlab.runner.jobs import Job, job_status
from shortcutlab.runner.runs import run_jobs
from tests.runner import fake_jobs

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")


def _jobs(tag: str = "a-b", n: int = 1, fail: bool = True) -> list[Job]:
    jobs = [Job(experiment=f"noop/{tag}/{i}", kind="noop") for i in range(n)]
    return jobs + ([Job(experiment="noop/fail-x/0", kind="noop")] if fail else [])


def _run(jobs: list[Job], out: Path, **kw: object):
    return run_jobs(jobs, out, backend="serial", progress=False, **kw)


def _fork(fn: Callable[[], object]) -> int:
    """Run ``fn`` in a forked child; its wait status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            fn()
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    return os.waitpid(pid, 0)[1]


def _tables(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return collect(out), collect_epochs(out)


def _assert_same(out: Path, clean: Path) -> None:
    got, want = _tables(out), _tables(clean)
    pd.testing.assert_frame_equal(got[0], want[0])
    pd.testing.assert_frame_equal(got[1], want[1])
    assert got[0].attrs["skipped"] == []


def _temporaries(out: Path) -> list[Path]:
    return [p for d in out.iterdir() if d.is_dir() for p in d.iterdir()
            if p.name.startswith(".")]


def _age(paths: object, seconds: float) -> None:
    for path in paths:  # type: ignore[attr-defined]
        os.utime(path, (time.time() - seconds, time.time() - seconds))


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    out = tmp_path / "clean"
    summary = _run(_jobs(), out)
    assert len(summary.done) == 1 and len(summary.failed) == 1
    return out


# ----------------------------------------------------------------------------- kills


def _replace_count(jobs: list[Job], out: Path) -> int:
    calls = []
    real = os.replace

    def counting(*args: object) -> None:
        calls.append(args)
        real(*args)

    os.replace = counting
    try:
        _run(jobs, out)
    finally:
        os.replace = real
    return len(calls)


def _kill_at(stage: int, after: bool, jobs: list[Job], out: Path) -> None:
    """In a forked child: run, SIGKILL itself before (or after) the ``stage``-th file rename,
    i.e. at every point where a file of the run appears."""
    real = os.replace
    seen = [0]

    def killing(*args: object) -> None:
        seen[0] += 1
        if seen[0] == stage and not after:
            os.kill(os.getpid(), signal.SIGKILL)
        real(*args)
        if seen[0] == stage and after:
            os.kill(os.getpid(), signal.SIGKILL)

    def child() -> None:
        os.replace = killing
        _run(jobs, out)

    status = _fork(child)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_kill_before_or_after_any_file_is_written_loses_nothing(tmp_path, clean) -> None:
    jobs = _jobs()
    stages = _replace_count(jobs, tmp_path / "count")
    assert stages >= 8  # 2 job.json, epochs, result, done, error.txt, jobs.csv, jobs.parquet
    for stage in range(1, stages + 1):
        for after in (False, True):
            out = tmp_path / f"kill-{stage}-{after}"
            _kill_at(stage, after, jobs, out)
            _age(out.glob(".jobs.*"), 3600)  # table temporaries: removed after ten minutes
            _age(out.glob("*/.job.json.*"), 120)  # job.json's: after a minute (see module doc)
            again = _run(jobs, out)
            assert len(again.done) + len(again.skipped) == 1, (stage, after)
            assert [o.status for o in again.failed] == ["failed"]
            _assert_same(out, clean)
            assert _temporaries(out) == [] and not list(out.glob(".jobs.*")), (stage, after)
            assert not list(out.glob(f"*/{claims.CLAIM_FILE}"))


def test_a_kill_leaves_a_claim_that_the_next_run_takes_over(tmp_path, clean) -> None:
    jobs = _jobs()
    out = tmp_path / "run"

    def child() -> None:
        def killed(job: Job, device: str) -> None:
            os.kill(os.getpid(), signal.SIGKILL)

        jobs_mod.register_job_kind("noop", killed, override=True)  # in the forked child only
        _run(jobs, out)

    assert os.WIFSIGNALED(_fork(child))
    held = out / jobs[0].job_id / claims.CLAIM_FILE
    assert held.is_file() and claims.is_stale(held.parent)  # its owner is dead
    assert len(_run(jobs, out).done) == 1
    _assert_same(out, clean)


# ----------------------------------------------------------------------------- corruption


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit_result(**changes: object) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return edit


def _folder_marker(path: Path) -> None:
    path.unlink()
    path.mkdir()


CORRUPTIONS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "result an empty object": ("result.json", lambda p: p.write_text("{}")),
    "result accuracy above 1": ("result.json", _edit_result(test_acc=7.5)),
    "result tag accuracy below 0": ("result.json", _edit_result(**{"test_acc@a": -0.1})),
    "result loss a string": ("result.json", _edit_result(val_loss="0.1")),
    "result loss infinite": ("result.json", _edit_result(val_loss=float("inf"))),
    "result epoch a float": ("result.json", _edit_result(best_epoch=0.5)),
    # epochs count from 0: a best epoch of 1 in a run of 1 epoch is no epoch that ran
    "result best epoch not run": ("result.json", _edit_result(best_epoch=1, epochs_run=1)),
    # result.json of another job (copied in by hand): the folder cannot prove it is its own
    "result of another job": ("result.json", _edit_result(job_id="0123456789abcdef")),
    "done marker a folder": ("done", _folder_marker),
    "job.json missing": ("job.json", lambda p: p.unlink()),
    "job.json edited": ("job.json", lambda p: p.write_text(
        p.read_text().replace('"seed": 0', '"seed": 1'))),
    "result truncated": ("result.json", _truncate),
    "result a list": ("result.json", lambda p: p.write_text("[0.5]")),
    "result not utf-8": ("result.json", lambda p: p.write_bytes(b"{\"a\": \"\xff\xfe\"}")),
    "result empty": ("result.json", lambda p: p.write_text("")),
    "done without result": ("result.json", lambda p: p.unlink()),
    "epochs truncated": ("epochs.parquet", _truncate),
    "epochs junk": ("epochs.parquet", lambda p: p.write_text("not parquet")),
    "job.json empty": ("job.json", lambda p: p.write_text("")),
    "job.json not utf-8": ("job.json", lambda p: p.write_bytes(b"\xff\xfe\x00junk")),
    "job.json a number": ("job.json", lambda p: p.write_text("3")),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_a_corrupted_file_is_named_skipped_moved_aside_and_rerun(
    tmp_path, clean, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    name, corrupt = CORRUPTIONS[case]
    jobs = _jobs()
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    job_path = out / jobs[0].job_id
    corrupt(job_path / name)
    table = collect(out)  # goes on with the rest, names the file
    assert jobs[0].job_id not in set(table["job_id"]) and len(table) == 1
    [line] = table.attrs["skipped"]
    assert str(job_path / name) in line
    assert str(job_path / name) in caplog.text
    if name != "job.json":
        assert job_status(job_path) == "corrupt"
        assert len(collect_epochs(out)) == 0 or jobs[0].job_id not in set(
            collect_epochs(out)["job_id"])
    summary = _run(jobs, out)
    # a broken job.json is rewritten (the results are intact: nothing to rerun)
    healed = summary.skipped if name == "job.json" else summary.done
    assert [o.job_id for o in healed] == [jobs[0].job_id]
    if name != "job.json":  # the broken files are kept for a look, out of the way
        [note] = [o.note for o in summary.notes]
        assert str(job_path / name) in note and "moved aside" in note
        assert len(list(job_path.glob(f"{jobs_mod.CORRUPT_PREFIX}*/done"))) == 1
    _assert_same(out, clean)


@pytest.mark.parametrize("case", ["job.json missing", "job.json edited"])
def test_the_epoch_table_leaves_out_the_folders_the_job_table_leaves_out(
        tmp_path, clean, case: str) -> None:
    """A folder that cannot prove which job it holds counts in neither table."""
    name, corrupt = CORRUPTIONS[case]
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    job_path = out / _jobs()[0].job_id
    corrupt(job_path / name)
    epochs = collect_epochs(out)
    assert job_path.name not in set(epochs["job_id"])
    [line] = epochs.attrs["skipped"]
    assert str(job_path / name) in line and line == collect(out).attrs["skipped"][0]


def test_swapped_job_files_are_named_never_counted_and_rewritten_by_the_next_run(
        tmp_path) -> None:
    jobs = _jobs(n=2, fail=False)
    clean_out, out = tmp_path / "clean", tmp_path / "run"
    _run(jobs, clean_out)
    shutil.copytree(clean_out, out)
    a, b = (out / job.job_id / "job.json" for job in jobs)
    text_a, text_b = a.read_text(), b.read_text()
    a.write_text(text_b)
    b.write_text(text_a)
    table = collect(out)
    assert len(table) == 0 and len(table.attrs["skipped"]) == 2
    assert all("describes job" in line for line in table.attrs["skipped"])
    summary = _run(jobs, out)
    assert len(summary.skipped) == 2 and not summary.done
    _assert_same(out, clean_out)


def test_junk_and_copied_folders_are_reported_not_counted(tmp_path, clean) -> None:
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    done_job = _jobs()[0].job_id
    shutil.copytree(out / done_job, out / "copy-of-a-job")
    (out / "junk").mkdir()
    (out / "junk" / "job.json").write_bytes(b"\x80\x81")
    (out / "empty").mkdir()
    (out / "empty" / "job.json").write_text("")
    table = collect(out)
    pd.testing.assert_frame_equal(table, collect(clean))
    skipped = "\n".join(table.attrs["skipped"])
    assert "copy-of-a-job" in skipped and f"describes job {done_job}" in skipped
    assert "junk/job.json is not UTF-8" in skipped and "empty/job.json is empty" in skipped


def test_an_unreadable_error_file_still_collects(tmp_path) -> None:
    jobs = _jobs(fail=True)
    _run(jobs, tmp_path)
    (tmp_path / jobs[1].job_id / "error.txt").write_bytes(b"boom \xff\n")
    row = collect(tmp_path).set_index("job_id").loc[jobs[1].job_id]
    assert row["status"] == "failed" and row["error"].startswith("boom")


def test_a_junk_claim_is_taken_over_once_stale(tmp_path, clean) -> None:
    jobs = _jobs()
    (tmp_path / "run" / jobs[0].job_id).mkdir(parents=True)
    claim = tmp_path / "run" / jobs[0].job_id / claims.CLAIM_FILE
    claim.write_text("not json")
    old = time.time() - claims.STALE_SECONDS - 5
    os.utime(claim, (old, old))
    assert len(_run(jobs, tmp_path / "run").done) == 1
    _assert_same(tmp_path / "run", clean)


@pytest.mark.parametrize("junk", [b"not json", b"", b'{"owner": "someone else"}', b"\xff"])
def test_an_unreadable_or_foreign_claim_is_taken_over_at_once(
        tmp_path, clean, monkeypatch: pytest.MonkeyPatch, junk: bytes) -> None:
    monkeypatch.setattr(claims, "STALE_SECONDS", 20.0)  # the old wait, shortened for the test
    jobs = _jobs()
    claim = tmp_path / "run" / jobs[0].job_id / claims.CLAIM_FILE
    claim.parent.mkdir(parents=True)
    claim.write_bytes(junk)
    assert not claims.is_stale(claim.parent)  # a claim being written right now is left alone
    _age([claim], claims.UNREADABLE_GRACE_SECONDS + 1)
    start = time.perf_counter()
    assert len(_run(jobs, tmp_path / "run", wait_seconds=0.1).done) == 1
    assert time.perf_counter() - start < 10
    _assert_same(tmp_path / "run", clean)


def test_a_live_claim_is_waited_for(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job another live process holds is not run here; once released done, it counts."""
    job = _jobs(fail=False)[0]
    path = tmp_path / job.job_id
    path.mkdir()
    token = claims.try_claim(path)
    assert token is not None and claims.try_claim(path) is None  # held: no second owner
    finished = []

    def finish_elsewhere(seconds: float) -> None:
        if not finished:  # the "other run" finishes the job while we wait
            out = jobs_mod._run_claimed(job, path, "cpu", fake_jobs.noop_job, 0.0)
            claims.release(path, token)
            finished.append(out)

    monkeypatch.setattr("shortcutlab.runner.runs.time.sleep", finish_elsewhere)
    summary = _run([job], tmp_path)
    assert finished[0].status == "done"
    assert [(o.status, o.note) for o in summary.outcomes] == [("skipped", "done by another run")]


def test_old_temporary_table_files_are_removed(tmp_path) -> None:
    _run(_jobs(fail=False), tmp_path)
    stale, fresh = tmp_path / ".jobs.csv.abc123.csv", tmp_path / ".jobs.parquet.def.parquet"
    stale.write_text("x")
    fresh.write_text("x")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    _run(_jobs(fail=False), tmp_path)
    assert not stale.exists() and fresh.exists()  # a fresh one may be another run's


# ----------------------------------------------------------------------------- concurrency


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_two_runs_on_one_folder_share_the_work(tmp_path, monkeypatch, clean) -> None:
    log = tmp_path / "runlog.txt"
    monkeypatch.setenv(fake_jobs.RUNLOG, str(log))
    jobs = [Job(experiment=f"noop/slow-x/{i}", kind="noop") for i in range(4)]
    out = tmp_path / "run"
    counts = tmp_path / "counts"
    counts.mkdir()

    def child(name: str) -> Callable[[], None]:
        def go() -> None:
            summary = _run(jobs, out, wait_seconds=0.1)
            (counts / name).write_text(json.dumps([len(summary.done), len(summary.skipped),
                                                   len(summary.failed)]))
        return go

    pids = []
    for name in ("first", "second"):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                child(name)()
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        pids.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    assert [os.WIFEXITED(s) and os.WEXITSTATUS(s) for s in statuses] == [0, 0]
    started = [line.split()[0] for line in log.read_text().splitlines()]
    assert sorted(started) == sorted(j.experiment for j in jobs)  # each job ran once
    results = [json.loads((counts / n).read_text()) for n in ("first", "second")]
    assert sum(r[0] for r in results) == 4 and all(r[0] + r[1] == 4 for r in results)
    assert (collect(out)["status"] == "done").all()


# ----------------------------------------------------------------------------- orphans


_MAIN = """
import sys
from shortcutlab.runner import Job, run_jobs
from tests.runner import fake_jobs
fake_jobs.register()
backend, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
jobs = [Job(experiment=f"noop/hang-{backend}/{i}", kind="noop") for i in range(n)]
run_jobs(jobs, out, backend=backend, workers=n, device="cpu", progress=False)
"""


def _kill_main_and_check(tmp_path: Path, backend: str, n: int,
                         below: Callable[[int], list[int]]) -> None:
    """Run ``n`` hanging jobs from a fresh main process (a fork would inherit this process's
    Ray/gRPC state), SIGKILL it alone once they started, and check that every process it had
    started is gone within 20 s."""
    log = tmp_path / "runlog.txt"
    env = {**os.environ, fake_jobs.RUNLOG: str(log)}
    main = subprocess.Popen([sys.executable, "-c", _MAIN, backend, str(n), str(tmp_path / "run")],
                            cwd=Path(__file__).resolve().parents[2], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and main.poll() is None and (
            not log.exists() or len(log.read_text().splitlines()) < n
        ):
            time.sleep(0.2)
        assert main.poll() is None, "the run ended before its jobs started"
        workers = [int(line.split()[1]) for line in log.read_text().splitlines()]
        assert len(workers) == n
        helpers = below(main.pid)
        assert set(workers) <= set(helpers)
    finally:
        main.kill()  # SIGKILL to the main process only, as the OOM killer would
        main.wait()
    deadline = time.time() + 20
    while time.time() < deadline and any(fake_jobs.process_alive(p) for p in helpers):
        time.sleep(0.2)
    assert [p for p in helpers if fake_jobs.process_alive(p)] == []


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_main_process(tmp_path) -> None:
    from shortcutlab.runner.reaper import descendants

    # the fork server, the workers it forked and multiprocessing's resource tracker
    _kill_main_and_check(tmp_path, "processes", 2, descendants)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_local_ray_instance_dies_with_a_killed_main_process(tmp_path) -> None:
    pytest.importorskip("ray")
    from shortcutlab.runner.reaper import descendants

    # raylet, GCS, Ray's agents and the worker running the job
    _kill_main_and_check(tmp_path, "ray", 1, descendants)


# ----------------------------------------------------------------------------- disk full


def _enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(args[0]) if args else None)


def test_a_full_disk_fails_jobs_one_line_each_and_the_run_goes_on(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _jobs(n=3, fail=False)
    _run(jobs[:1], tmp_path, collect_table=False)
    real_write_text = jobs_mod.write_text

    def full_for_errors(target: Path, text: str) -> Path:
        if Path(target).name == jobs_mod.ERROR_FILE:  # the traceback cannot be written either
            _enospc(target)
        return real_write_text(target, text)

    monkeypatch.setattr(jobs_mod, "write_json", _enospc)
    monkeypatch.setattr(jobs_mod, "write_text", full_for_errors)
    summary = _run(jobs, tmp_path, collect_table=False)
    assert len(summary.skipped) == 1 and len(summary.failed) == 2
    for outcome in summary.failed:
        assert outcome.error.startswith("OSError: No space left on device (")
        assert "result.json" in outcome.error and "\n" not in outcome.error
    monkeypatch.undo()
    assert len(_run(jobs, tmp_path).done) == 2


def test_a_full_disk_before_anything_runs_stops_with_one_line(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_mod, "write_text", _enospc)
    with pytest.raises(RunnerError, match=r"cannot write the job folder .*: No space left"):
        _run(_jobs(), tmp_path)


# ----------------------------------------------------------------------------- real training


def test_a_real_job_rerun_after_corruption_gives_the_clean_numbers(tmp_path) -> None:
    """A tiny DiagViB-6 training job: its result corrupted, the rerun trains it again and
    reproduces every number of the clean run (all but the wall time)."""
    from shortcutlab.diagvib.jobs import build_jobs
    from shortcutlab.train.config import TrainConfig

    config = TrainConfig(preset="demo").replace(epochs=1, batch_size=16)
    jobs = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], [0], 0.002, config)
    out = tmp_path / "run"
    assert len(run_jobs(jobs, out, backend="serial", device="cpu", progress=False).done) == 1
    clean_table, clean_epochs = _tables(out)
    _truncate(out / jobs[0].job_id / "result.json")
    again = run_jobs(jobs, out, backend="serial", device="cpu", progress=False)
    assert len(again.done) == 1 and "moved aside" in again.notes[0].note
    table, epochs = _tables(out)
    timing = ["train_seconds"]
    pd.testing.assert_frame_equal(table.drop(columns=timing), clean_table.drop(columns=timing))
    pd.testing.assert_frame_equal(epochs, clean_epochs)
