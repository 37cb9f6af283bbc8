"""The DiagViB-6 job kind: ids, experiment names, planning jobs from studies or a specs folder."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from shortcutlab.diagvib.jobs import KIND, SETTING_COLUMNS, build_jobs, describe_experiment
from shortcutlab.errors import DataNotFoundError, RunnerError, SpecError
from shortcutlab.runner.jobs import Job, job_kinds
from shortcutlab.runner.runs import run_jobs
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.presets import get_preset


def test_job_id_is_the_hash_of_canonical_json() -> None:
    params = {"scale": 0.01, "benchmark_seed": 2}
    job = Job(experiment="ZGO/hue-shape/0", kind=KIND, params=params, train=TrainConfig(seed=1))
    assert job.job_id == hashlib.sha256(job.canonical_json().encode()).hexdigest()[:16]
    default_lr = get_preset(TrainConfig().preset).values["lr"]  # given = left to the preset
    same = Job(experiment="ZGO/hue-shape/0", kind=KIND, params=params,
               train=TrainConfig(seed=1, lr=default_lr))
    assert same.job_id == job.job_id
    assert Job(experiment="ZGO/hue-shape/0", kind=KIND, params=params).job_id != job.job_id
    assert json.loads(job.canonical_json())["train"]["seed"] == 1
    assert json.loads(job.canonical_json())["params"] == params
    described = job.describe()  # the kind is found through its entry point
    assert dict(list(described.items())[:7]) == {
        "study": "ZGO", "predicted": "hue", "correlated": "shape", "sample": 0, "scale": 0.01,
        "benchmark_seed": 2, "head": "full"}
    default_lr = get_preset(TrainConfig().preset).values["lr"]
    assert list(described)[7:] == [*SETTING_COLUMNS, "spec_hash"] and described["lr"] == default_lr
    assert described["spec_hash"] == ""  # a job without a spec
    # the kind validates its own params and names the bad one
    for bad, field in (({"scale": 0}, "scale"), ({"benchmark_seed": -1}, "benchmark_seed"),
                       ({"size": 1}, "size")):
        with pytest.raises(RunnerError, match=f"params of job .*{field}"):
            Job(experiment="ZGO/hue-shape/0", kind=KIND, params=bad).describe()
    with pytest.raises(RunnerError, match="scale"):
        build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=-1)
    planned = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.01, benchmark_seed=3)
    assert planned[0].params == {"scale": 0.01, "benchmark_seed": 3, "head": "full"}
    assert KIND in job_kinds()


def test_experiment_names_become_table_columns() -> None:
    assert describe_experiment("ZSO/texture/3") == {
        "study": "ZSO", "predicted": "texture", "correlated": "", "sample": 3}
    assert describe_experiment("odd")["study"] == "odd"


def test_build_jobs_counts_and_bad_input(tmp_path) -> None:
    jobs = build_jobs("small_cnn", ["ZSO", "ZGO"], ["hue-shape", "shape-hue"], [0, 1], [0, 1],
                      0.01, TrainConfig(epochs=2))
    assert len(jobs) == (2 + 2) * 2 * 2
    assert len({j.job_id for j in jobs}) == len(jobs)
    assert {j.train.model for j in jobs} == {"small_cnn"} and {j.seed for j in jobs} == {0, 1}
    with pytest.raises(SpecError, match=r"unknown study 'CGO-4'; valid choices: ZSO"):
        build_jobs("small_cnn", ["CGO-4"])
    with pytest.raises(RunnerError, match=r"unknown backend 'mpi'; valid choices: processes, "
                                          r"ray, serial, slurm"):
        run_jobs(jobs, tmp_path, backend="mpi")


def test_study_not_generated_is_named(tmp_path) -> None:
    from shortcutlab.diagvib.studies import write_benchmark

    write_benchmark(tmp_path / "specs", scale=0.001, studies=["ZSO"], pairs=["hue-shape"],
                    samples=[0])
    jobs = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], specs_dir=tmp_path / "specs")
    assert jobs[0].spec is not None and jobs[0].spec["name"] == "ZSO/hue/0"
    with pytest.raises(RunnerError, match=r"study ZGO was not generated .*generated studies: ZSO"):
        build_jobs("small_cnn", ["ZSO", "ZGO"], ["hue-shape"], [0],
                   specs_dir=tmp_path / "specs")
    with pytest.raises(RunnerError, match="no generated benchmark"):
        build_jobs("small_cnn", ["ZSO"], specs_dir=tmp_path)


def test_jobs_on_generated_specs_record_the_scale_and_seed_the_specs_were_written_at(
        tmp_path) -> None:
    """`diagvib run --specs DIR` trained on DIR's data but recorded the --scale and
    --benchmark-seed options (0.01 and 0 unless given) in the job table: a full-scale folder
    was reported as `small_cnn@scale=0.01`. The specs' own are recorded now, a different one
    given is refused, and a folder written before index.csv held its scale needs the scale
    that reproduces its sizes."""
    import pandas as pd
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app
    from shortcutlab.diagvib.studies import write_benchmark

    specs = tmp_path / "specs"
    write_benchmark(specs, scale=0.003, seed=2, studies=["ZSO"], pairs=["hue-shape"],
                    samples=[0])
    (job,) = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], specs_dir=specs)
    assert (job.params["scale"], job.params["benchmark_seed"]) == (0.003, 2)
    assert job.spec["sizes"]["train"] == round(43_740 * 0.003)
    same = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.003, specs_dir=specs,
                      benchmark_seed=2)
    assert same[0].job_id == job.job_id
    with pytest.raises(RunnerError, match="written at scale 0.003, not 0.01; drop --scale"):
        build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.01, specs_dir=specs)
    with pytest.raises(RunnerError, match="benchmark seed 2, not 0; drop --benchmark-seed"):
        build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], specs_dir=specs, benchmark_seed=0)
    res = CliRunner().invoke(app, ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO",
                                   "--pairs", "hue-shape", "--specs", str(specs), "--scale",
                                   "1", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "written at scale 0.003, not 1" in res.output
    assert not (tmp_path / "out").exists()
    index = specs / "index.csv"  # a folder of an older version: no scale column
    pd.read_csv(index, dtype=str).drop(columns="scale").to_csv(index, index=False)
    with pytest.raises(RunnerError, match="records no scale .*give the --scale"):
        build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], specs_dir=specs)
    with pytest.raises(RunnerError, match="holds .* images, not those of scale 0.01"):
        build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.01, specs_dir=specs)
    (old,) = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.003,
                        specs_dir=specs)
    assert old.job_id == job.job_id


def _texture_folder(path, seed: int = 0):
    from PIL import Image

    from shortcutlab.diagvib.factors import get_factor

    path.mkdir(parents=True)
    gen = np.random.default_rng(seed)
    for name in get_factor("texture").classes:
        Image.fromarray(gen.integers(0, 256, (64, 64), dtype=np.uint8)).save(path / f"{name}.png")
    return path


def test_user_sources_are_part_of_the_job_id_by_content(tmp_path) -> None:
    import shutil

    folder = _texture_folder(tmp_path / "tex")
    plain = build_jobs("small_cnn", ["ZSO"], ["texture-shape"], [0])[0]
    own = build_jobs("small_cnn", ["ZSO"], ["texture-shape"], [0], textures=folder)[0]
    assert own.job_id != plain.job_id and set(own.input_digests) == {"textures"}
    moved = shutil.copytree(folder, tmp_path / "elsewhere")
    again = build_jobs("small_cnn", ["ZSO"], ["texture-shape"], [0], textures=moved)[0]
    assert again.job_id == own.job_id  # same content, other place: same job
    edited = _texture_folder(tmp_path / "edited", seed=1)
    other = build_jobs("small_cnn", ["ZSO"], ["texture-shape"], [0], textures=edited)[0]
    assert other.job_id != own.job_id
    # a source edited after planning fails that job clearly instead of mixing results
    shutil.copy(edited / "wood.png", moved / "wood.png")
    summary = run_jobs([again], tmp_path / "runs", backend="serial", progress=False)
    assert "changed since the job was planned" in summary.failed[0].error
    with pytest.raises(DataNotFoundError, match="texture folder .* does not exist"):
        build_jobs("small_cnn", ["ZSO"], ["texture-shape"], [0], textures=tmp_path / "nope")


def test_run_renders_from_the_given_textures(tmp_path) -> None:
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app

    folder = _texture_folder(tmp_path / "tex")
    args = ["diagvib", "run", "--model", "small_cnn", "--study", "ZSO", "--pairs",
            "texture-shape", "--scale", "0.002", "--epochs", "1", "--batch-size", "16",
            "--backend", "serial", "--device", "cpu", "--out", str(tmp_path / "runs")]
    res = CliRunner().invoke(app, [*args, "--textures", str(folder)])
    assert res.exit_code == 0, res.output
    job = json.loads(next((tmp_path / "runs").glob("*/job.json")).read_text())
    assert job["inputs"] == {"textures": str(folder.resolve())}
    bad = CliRunner().invoke(app, [*args, "--textures", str(tmp_path / "missing")])
    assert bad.exit_code == 2 and "does not exist" in bad.output


def test_a_new_renderer_gives_new_job_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Images of an older renderer never count as the new one's: its version is in the id."""
    import shortcutlab.diagvib.render as render

    old = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.01)[0]
    assert old.versions == {"renderer": render.RENDERER_VERSION}
    monkeypatch.setattr(render, "RENDERER_VERSION", "test-next")
    new = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], scale=0.01)[0]
    assert new.job_id != old.job_id
    assert new.model_copy(update={"versions": old.versions}).job_id == old.job_id
    # a job without versions (another kind) hashes as before the field existed
    plain = Job(experiment="x", kind=KIND)
    assert "versions" not in json.loads(plain.canonical_json())


def test_the_job_kinds_are_known_in_a_fresh_process_that_never_imported_their_areas() -> None:
    """The ``shortcutlab.job_kinds`` entry-point group (pyproject.toml) registers the areas'
    kinds on the runner's first lookup: no entry point has to import an area or call
    ``register()`` first."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from shortcutlab.runner.jobs import job_kind, job_kinds\n"
        "assert 'shortcutlab.diagvib' not in sys.modules, 'imported too early'\n"
        "print(job_kind('diagvib').run.__name__, job_kind('biasbed-folders').run.__name__)\n"
        "print(' '.join(job_kinds()))\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "run_diagvib_job folders_job"
    assert {"diagvib", "biasbed-folders"} <= set(out[1].split())
    assert out[2] == "False"  # learning the kinds does not import the protocol's statistics


def test_collect_jobs_reads_each_job_file_once_and_gives_the_same_table(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings columns come from the kind's describer in the runner's one read of each
    ``job.json``; the table equals the one of two reads (collect, then each job.json again)."""
    from pathlib import Path

    import pandas as pd

    from shortcutlab.diagvib.jobs import collect_jobs, job_settings
    from shortcutlab.diagvib.spec import ExperimentSpec
    from shortcutlab.runner.collect import collect
    from shortcutlab.runner.jobs import JOB_KINDS, job_dir, register_job_kind, write_job_file
    from tests.runner.fake_jobs import noop_job

    cfg = TrainConfig(preset="paper", epochs=1, batch_size=16)
    done = build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], [0, 1], 0.002, cfg)
    pending = [*build_jobs("rn50_in", ["ZGO"], ["hue-shape"], [0], [0], 0.01, cfg.replace(lr=0.01)),
               *build_jobs("vae", ["ZGO"], ["shape-hue"], [1], [0], 0.01, cfg)]
    with JOB_KINDS.scratch():  # results without training
        register_job_kind(KIND, noop_job, override=True)
        run_jobs(done, tmp_path, backend="serial", progress=False, collect_table=False)
    for job in pending:
        write_job_file(tmp_path, job)
    (job_dir(tmp_path, pending[0]) / "error.txt").write_text("Traceback\nRuntimeError: boom\n")

    reads: list[str] = []
    for method in ("read_bytes", "read_text"):
        original = getattr(Path, method)

        def spy(self, *args, _original=original, **kwargs):
            if self.name == "job.json":
                reads.append(self.parent.name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Path, method, spy)
    table = collect_jobs(tmp_path)
    monkeypatch.undo()
    ids = sorted(j.job_id for j in [*done, *pending])
    assert sorted(reads) == ids  # each job.json read once

    last = [*SETTING_COLUMNS, "spec_hash"]
    reference = collect(tmp_path).drop(columns=last)  # the settings and spec read again
    stored = [json.loads((tmp_path / i / "job.json").read_text()) for i in reference["job_id"]]
    for col in SETTING_COLUMNS:
        reference[col] = [job_settings(job["train"])[col] for job in stored]
    reference["spec_hash"] = [ExperimentSpec.from_dict(job["spec"]).content_hash()
                              for job in stored]  # the hash result.json records
    pd.testing.assert_frame_equal(table, reference, check_exact=True)
    pd.testing.assert_frame_equal(collect(tmp_path), table)  # what a run writes as jobs.csv
    assert list(table.columns[-len(last):]) == last
    by_model = table.set_index("model")
    assert by_model.loc["rn50_in", "frozen_batchnorm"] == "train"
    assert by_model.loc["rn50_in", ["status", "lr"]].tolist() == ["failed", 0.01]
    assert by_model.loc["vae", "vae_classifier"] == "joint"
    assert (table.loc[table["model"] == "small_cnn", "status"] == "done").all()


def test_a_spec_file_edited_after_generation_is_refused(tmp_path) -> None:
    """A job built from a generated folder must run the spec its index.csv hashed: a spec file
    changed since (here its seed) is refused, never planned under its old name and hash."""
    from shortcutlab.diagvib.studies import write_benchmark

    write_benchmark(tmp_path / "specs", scale=0.001, studies=["ZSO"], pairs=["hue-shape"],
                    samples=[0])
    spec_file = tmp_path / "specs" / "ZSO" / "hue" / "0.yaml"
    text = spec_file.read_text(encoding="utf-8")
    assert text.count("\nseed: 0\n") == 1
    build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], specs_dir=tmp_path / "specs")  # intact
    spec_file.write_text(text.replace("\nseed: 0\n", "\nseed: 1\n"), encoding="utf-8")
    with pytest.raises(RunnerError, match="was changed after `diagvib studies` wrote it"):
        build_jobs("small_cnn", ["ZSO"], ["hue-shape"], [0], specs_dir=tmp_path / "specs")


def test_two_runs_with_other_settings_into_one_folder_are_not_averaged(tmp_path) -> None:
    """`diagvib run --seeds 0` with Adam, then `--seeds 1 --config sgd.yml` into the same
    folder: preset, lr and head columns agree, yet the metrics must not average the two
    recipes; `--selection paper` for one seed changes the experiment's spec (its classes)."""
    from typer.testing import CliRunner

    from shortcutlab.cli.main import app
    from shortcutlab.runner.jobs import JOB_KINDS, register_job_kind
    from tests.runner.fake_jobs import noop_job

    cfg = TrainConfig(preset="paper", epochs=1)
    runs = {"sgd": [*build_jobs("small_cnn", ["ZSO"], None, [0], [0], 0.002, cfg),
                    *build_jobs("small_cnn", ["ZSO"], None, [0], [1], 0.002,
                                cfg.replace(optimizer="sgd"))],
            "selection": [*build_jobs("small_cnn", ["ZSO"], None, [0], [0], 0.002, cfg),
                          *build_jobs("small_cnn", ["ZSO"], None, [0], [1], 0.002, cfg,
                                      selection="paper")]}
    for name, jobs in runs.items():
        with JOB_KINDS.scratch():  # results without training
            register_job_kind(KIND, noop_job, override=True)
            run_jobs(jobs, tmp_path / name, backend="serial", progress=False)
        res = CliRunner().invoke(app, ["diagvib", "metrics", str(tmp_path / name)])
        assert res.exit_code == 2 and "were trained with 2 different recipes" in res.output
        assert ("differ in the experiment's spec" in res.output) == (name == "selection")
    same = tmp_path / "same"  # one recipe over two calls: fine
    with JOB_KINDS.scratch():
        register_job_kind(KIND, noop_job, override=True)
        for seed in (0, 1):
            run_jobs(build_jobs("small_cnn", ["ZSO"], None, [0], [seed], 0.002, cfg), same,
                     backend="serial", progress=False)
    res = CliRunner().invoke(app, ["diagvib", "metrics", str(same), "--json"])
    assert res.exit_code == 0, res.output
