"""The BiasBed protocol: many runs per (algorithm, dataset), every epoch on every test set.

Runs are jobs of the runner (:mod:`shortcutlab.runner`): each is a hashed, resumable directory
with ``done`` written last, so an interrupted protocol picks up where it stopped and re-running
it skips finished runs. Runs differ only in the training seed (``ProtocolSettings.seeds``); training
never stops early (``patience=None``), because model selection is done afterwards, explicitly,
by the rules of :mod:`shortcutlab.stats.selection` (best-epoch oracle = cherry-picking, mean of
the last n epochs, best training-distribution validation); the statistical comparison is D's
:func:`shortcutlab.stats.compare` over blocks = (dataset, test set).

DiagViB-6 datasets (``diagvib:<STUDY>/<pred>-<corr>/<sample>``) are the runner's own ``diagvib``
job kind (validation: the training distribution; test set ``test``: the study's test cells).
Image-folder datasets add the job kind ``biasbed-folders``; :func:`register` registers both kinds
with the runner and :func:`build_protocol_jobs` calls it.

``protocol.json`` in the output folder lists the protocol's jobs with their algorithm, dataset,
run number, training preset (``describe_preset``) and training folder; results of several
invocations on the same folder accumulate there.

**Competitors are (algorithm, training set) pairs.** When several training sets share the same
test sets (BiasBed: ERM on ImageNet, on Stylized-ImageNet, on DeepAugment, all scored on the same
ten test sets), each pair is one competitor, named ``"<algorithm> on <dataset>"``, and the blocks
are the test sets: ``compare_by="competitor"`` (chosen automatically when the test-set names
agree). Otherwise each (dataset, test set) is a block and the algorithms compete
(``compare_by="dataset"``). The *strict* setting drops the test sets marked in-distribution for
some training set (``FolderExperiment.in_distribution``: e.g. Stylized-ImageNet's test split for
the Stylized-ImageNet training set).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import pandas as pd

from shortcutlab.biasbed.datasets import (
    BiasbedDataError,
    FolderExperiment,
    check_dataset_samples,
    folder_experiments,
    parse_dataset,
)
from shortcutlab.biasbed.folder_jobs import FOLDERS_JOB_KIND, FOLDERS_KIND, folder_from_spec
from shortcutlab.biasbed.presets import BIASBED
from shortcutlab.diagvib import jobs as diagvib_jobs
from shortcutlab.diagvib.presets import default_head
from shortcutlab.diagvib.restyle import style_hparams
from shortcutlab.diagvib.studies import make_experiment
from shortcutlab.errors import ProtocolError, StatsError, unknown_choice
from shortcutlab.runner.backend_api import SlurmOptions
from shortcutlab.runner.collect import collect_epochs
from shortcutlab.runner.jobs import Job, read_job
from shortcutlab.runner.preflight import check_backend
from shortcutlab.runner.runs import RunSummary, run_jobs
from shortcutlab.stats.compare import ComparisonResult, compare
from shortcutlab.stats.selection import RULES, compare_rules, runs_for_comparison, select
from shortcutlab.train.config import TrainConfig
from shortcutlab.train.presets import DEFAULT_PRESET
from shortcutlab.utils.digest import content_digest
from shortcutlab.utils.io import read_json_file, write_json

__all__ = [
    "FOLDERS_JOB_KIND",
    "FOLDERS_KIND",
    "PROTOCOL_FILE",
    "ProtocolError",
    "ProtocolSettings",
    "COMPARE_BY",
    "build_protocol_jobs",
    "plan_from_options",
    "compare_algorithms",
    "competitor_table",
    "strict_test_sets",
    "default_n_last",
    "load_epochs",
    "read_protocol",
    "run_protocol",
    "selection_table",
]

PROTOCOL_FILE = "protocol.json"
FOLDERS_PREFIX = "folders:"
#: How competitors and blocks are formed (see the module docstring).
COMPARE_BY = ("auto", "competitor", "dataset")
#: The BiasBed recipe's learning rate for these algorithms (the authors' configs).
BIASBED_LR = {"erm": 1e-4, "sagnet": 1e-4}
BIASBED_PRESET = BIASBED.name
#: Epochs of a run without a preset and without ``epochs`` (a quick comparison).
FAST_EPOCHS = 10


@dataclass(frozen=True)
class PlannedRun:
    """One job of the protocol with what the report needs to know about it."""

    job: Job
    algorithm: str
    dataset: str
    run: int
    train_dir: str = ""
    in_distribution: tuple[str, ...] = ()
    metric: str = "mean_per_class"

    def settings(self) -> str:
        """This competitor's own training settings, for the console."""
        t = self.job.train
        return (f"{self.algorithm} on {self.dataset}: {t.model}, {t.describe_preset()}, "
                f"lr {t.lr:g}, batch {t.batch_size}, {t.epochs} epochs, {t.precision}, "
                f"{'pretrained ' + str(t.pretrained) if t.pretrained else 'from scratch'}, "
                f"metric {self.metric}")


@dataclass(frozen=True)
class ProtocolSettings:
    """What :func:`build_protocol_jobs` plans for every dataset: one run per (algorithm, seed).

    Every default is declared here once (the command line passes None for "not given"):
    ``preset``: the training preset (None: the neutral ``default``; ``biasbed``: the authors'
    recipe, with lr 1e-4 for erm and sagnet as they configured them); ``epochs``/
    ``batch_size``/``lr``: None takes the preset's values, except that without a preset a run
    has :data:`FAST_EPOCHS` epochs. ``seeds``: the training seeds, one run each (None: BiasBed's
    ten runs 0-9 with the ``biasbed`` preset, else 0, 1, 2; see :meth:`run_seeds`).
    ``hparams``: per-algorithm hyper-parameters (the stylising algorithms' former
    ``hue``/``texture_pool`` are accepted). ``pretrained``: a local weights file every run starts
    from; ``precision``: ``bf16`` or ``fp16`` for mixed precision (the trainer's autocast; fp16
    with a gradient scaler, as the authors trained).
    ``scale``/``benchmark_seed``/``mnist``/``textures``: size, class-selection seed and sources
    of the DiagViB-6 datasets (the sources' content is part of the job ids; see
    :func:`shortcutlab.diagvib.jobs.build_jobs`).
    """

    algorithms: tuple[str, ...]
    seeds: tuple[int, ...] | None = None
    epochs: int | None = None
    model: str = "small_cnn"
    batch_size: int | None = None
    lr: float | None = None
    preset: str | None = None
    pretrained: str | Path | None = None
    precision: str | None = None
    hparams: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    scale: float = 1.0
    benchmark_seed: int = 0
    mnist: str | Path | None = None
    textures: str | Path | None = None

    def run_seeds(self) -> tuple[int, ...]:
        """The training seeds: ``seeds``, or the default for the preset."""
        if self.seeds is not None:
            return tuple(self.seeds)
        return tuple(range(10)) if self.preset == BIASBED_PRESET else (0, 1, 2)

    def check(self) -> None:
        """Refuse settings no protocol can run (a ProtocolError naming the setting)."""
        from shortcutlab.train.config import Precision
        from shortcutlab.train.presets import list_presets

        algorithms = list(self.algorithms)
        if not algorithms:
            raise ProtocolError("give at least one --algorithm")
        dupes = sorted({a for a in algorithms if algorithms.count(a) > 1})
        if dupes:
            raise ProtocolError(f"algorithm {dupes[0]!r} is given twice")
        if self.preset is not None and self.preset not in list_presets():
            raise ProtocolError(unknown_choice("--preset", self.preset, list_presets()))
        if self.precision is not None and self.precision not in get_args(Precision):
            raise ProtocolError(unknown_choice("--precision", self.precision,
                                               get_args(Precision)))
        seeds = list(self.run_seeds())
        if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
            raise ProtocolError(f"--seeds must be distinct non-negative integers (got {seeds})")
        if self.epochs is not None and self.epochs < 1:
            raise ProtocolError(f"--epochs must be >= 1 (got {self.epochs})")
        for name in self.hparams:
            if name not in algorithms:
                raise ProtocolError(unknown_choice("algorithm in hparams", name, algorithms))

    def run_config(self, algorithm: str, seed: int) -> TrainConfig:
        """One run's TrainConfig: the preset with the given settings on top, never stopping
        early (:meth:`TrainConfig.from_sources`)."""
        lr = self.lr
        if self.preset == BIASBED_PRESET and lr is None:
            lr = BIASBED_LR.get(algorithm)
        epochs = FAST_EPOCHS if self.epochs is None and self.preset is None else self.epochs
        return TrainConfig.from_sources(
            preset=self.preset, model=self.model, algorithm=algorithm, seed=seed,
            patience=None, hparams=style_hparams(algorithm, self.hparams.get(algorithm, {})),
            precision=self.precision, pretrained=self.pretrained, epochs=epochs,
            batch_size=self.batch_size, lr=lr)

    def diagvib_head(self) -> str:
        """The head of this protocol's DiagViB-6 runs: 3 outputs under the ``biasbed`` preset,
        else DiagViB-6's rule for the preset (:func:`shortcutlab.diagvib.presets.default_head`)."""
        if self.preset == BIASBED_PRESET:
            return "selected"
        return default_head(self.preset or DEFAULT_PRESET)


def plan_from_options(
    algorithms: Sequence[str],
    datasets: Sequence[str] = (),
    *,
    folders: Mapping[str, Any] | None = None,
    **settings: Any,
) -> tuple[list[PlannedRun], ProtocolSettings]:
    """The runs of ``biasbed run``: ``diagvib:...`` ``datasets`` and the image-folder
    experiments of ``folders`` (the keyword arguments of
    :func:`~shortcutlab.biasbed.datasets.folder_experiments`), each trained with the
    :class:`ProtocolSettings` ``settings`` (None: not given, the library's default)."""
    plan = ProtocolSettings(tuple(algorithms), **settings)
    plan.check()
    experiments = folder_experiments(**(folders or {}), preset=plan.preset)
    check_dataset_samples(datasets)
    planned = build_protocol_jobs([*datasets, *experiments.values()], plan,
                                  dataset_names=list(experiments))
    return planned, plan


def build_protocol_jobs(
    datasets: Sequence[str | FolderExperiment],
    settings: ProtocolSettings,
    dataset_names: Sequence[str] | None = None,
) -> list[PlannedRun]:
    """One job per (dataset, algorithm, seed) of ``settings``.

    ``datasets``: ``diagvib:...`` names and/or :class:`FolderExperiment` objects;
    ``dataset_names``: display names of the folder experiments (default ``folders``,
    ``folders2``...). Every setting is validated before anything runs.
    """
    if not datasets:
        raise ProtocolError("give a --dataset diagvib:... or --train-dir/--val-dir/--test-dir")
    settings.check()
    inputs = diagvib_jobs.source_inputs(settings.mnist, settings.textures)
    if inputs and all(isinstance(d, FolderExperiment) for d in datasets):
        given = "/".join(f"--{k}" for k in inputs)
        raise ProtocolError(f"{given} applies to DiagViB-6 datasets only and would be ignored "
                            "here; give --dataset diagvib:... too, or drop it")
    if inputs:
        diagvib_jobs.source_generator(settings.mnist, settings.textures)  # fail now
    digests = {k: content_digest(v) for k, v in inputs.items()}
    params = diagvib_jobs.DiagvibParams.checked(
        "DiagViB-6 dataset settings", scale=settings.scale,
        benchmark_seed=settings.benchmark_seed, head=settings.diagvib_head()).model_dump()
    from shortcutlab.train.algorithms import algorithm_versions

    planned: list[PlannedRun] = []
    folder_no = 0
    for dataset in datasets:
        if isinstance(dataset, FolderExperiment):
            folder_no += 1
            if dataset_names and len(dataset_names) >= folder_no:
                label = dataset_names[folder_no - 1]
            else:
                label = "folders" if folder_no == 1 else f"folders{folder_no}"
            dataset.datasets()  # fail now on bad folders or class maps, not in every job
            experiment, kind, spec = FOLDERS_PREFIX + label, FOLDERS_KIND, dataset.describe()
            job_inputs: dict[str, str] = {}
            job_params: dict[str, Any] = {}
            versions: Callable[[str], dict[str, str]] = algorithm_versions  # the algorithm's
        else:
            experiment, kind = parse_dataset(dataset), diagvib_jobs.KIND
            spec = make_experiment(experiment, scale=settings.scale,
                                   seed=settings.benchmark_seed).to_dict()
            job_inputs, job_params, label = inputs, params, experiment
            versions = diagvib_jobs.job_versions  # as `diagvib run`'s: renderer too
        for algorithm in settings.algorithms:
            for r, seed in enumerate(settings.run_seeds()):
                job = Job(
                    experiment=experiment,
                    kind=kind,
                    train=settings.run_config(algorithm, int(seed)),
                    spec=spec,
                    params=job_params,
                    inputs=job_inputs,
                    input_digests={k: digests[k] for k in job_inputs},
                    versions=versions(algorithm),
                )
                folder = dataset if isinstance(dataset, FolderExperiment) else None
                planned.append(
                    PlannedRun(
                        job, algorithm, label, r,
                        train_dir=str(spec.get("train_dir", "")) if folder else experiment,
                        in_distribution=folder.in_distribution if folder else (),
                        metric=folder.resolved_metric() if folder else "mean_per_class",
                    )
                )
    _check_algorithms(planned)
    return planned


def _check_algorithms(planned: Sequence[PlannedRun]) -> None:
    """Instantiate each (algorithm, dataset) once on the CPU so bad hyper-parameters, models or
    algorithm/dataset mismatches (Stylized on a texture task) fail before any training."""
    from shortcutlab.diagvib.dataset import DiagvibDataset
    from shortcutlab.diagvib.spec import ExperimentSpec
    from shortcutlab.train.algorithms import create_algorithm
    from shortcutlab.train.algorithms.base import AlgorithmContext

    seen: set[tuple[str, str]] = set()
    for p in planned:
        key = (p.algorithm, p.dataset)
        if key in seen:
            continue
        seen.add(key)
        job = p.job
        if job.kind == diagvib_jobs.KIND:
            spec = ExperimentSpec(**(job.spec or {}))
            context = AlgorithmContext(train_dataset=DiagvibDataset(spec, "train"))
            n_classes = DiagvibDataset.num_classes
        else:
            context = AlgorithmContext()
            n_classes = len(folder_from_spec(job.spec or {}).label_space())
        # the architecture, hyper-parameters and algorithm/data fit; weights are loaded by the run
        create_algorithm(p.algorithm, n_classes, job.train.replace(pretrained=None), context)


def read_protocol(out: str | Path) -> dict[str, dict[str, Any]]:
    """job_id -> {algorithm, dataset, run, seed, kind, experiment} from ``protocol.json``."""
    path = Path(out) / PROTOCOL_FILE
    if not path.is_file():
        raise ProtocolError(
            f"{str(out)!r} holds no BiasBed protocol ({PROTOCOL_FILE} missing); create one "
            "with `shortcutlab biasbed run ... --out DIR`"
        )
    data = read_json_file(path, "protocol file", ProtocolError)
    jobs = data.get("jobs", {}) if isinstance(data, dict) else None
    if not isinstance(jobs, dict):
        raise ProtocolError(f"protocol file {path}: not a BiasBed protocol (a JSON object whose "
                            '"jobs" maps job ids to their algorithm, dataset, run and seed)')
    for job_id, info in jobs.items():
        if not (isinstance(info, dict) and isinstance(info.get("algorithm"), str)
                and isinstance(info.get("dataset"), str)):
            raise ProtocolError(f"protocol file {path}: job {job_id!r} has no algorithm and "
                                f"dataset names (got {info!r:.80})")
    return dict(jobs)


def run_protocol(
    planned: Sequence[PlannedRun],
    out: str | Path,
    *,
    backend: str = "serial",
    workers: int | None = None,
    device: str = "auto",
    progress: bool = True,
    ray_address: str | None = None,
    slurm: SlurmOptions | None = None,
    jobs_per_gpu: int | str = 1,
    mps: str = "auto",
) -> RunSummary:
    """Record the protocol in ``out/protocol.json``, then run every job not yet done.

    ``backend``/``workers``/``ray_address``/``slurm``/``jobs_per_gpu``/``mps`` go to
    :func:`shortcutlab.runner.run_jobs` as for ``diagvib run`` (SLURM partition, GPUs, CPUs and
    time limit in ``slurm``)."""
    check_backend(backend, slurm.cluster if slurm is not None else None)  # before writing
    out = Path(out)
    path = out / PROTOCOL_FILE
    jobs = read_protocol(out) if path.is_file() else {}
    for p in planned:
        jobs[p.job.job_id] = {
            "algorithm": p.algorithm,
            "dataset": p.dataset,
            "run": p.run,
            "seed": p.job.train.seed,
            "kind": p.job.kind,
            "experiment": p.job.experiment,
            "model": p.job.train.model,
            "epochs": p.job.train.epochs,
            "preset": p.job.train.describe_preset(),
            "pretrained": p.job.train.pretrained,
            "train_dir": p.train_dir,
            "in_distribution": list(p.in_distribution),
            "metric": p.metric,
            "precision": p.job.train.precision,
            "lr": p.job.train.lr,
        }
    write_json(path, {"version": 1, "jobs": jobs})
    return run_jobs(
        [p.job for p in planned],
        out,
        backend=backend,  # checked above
        workers=workers,
        device=device,
        progress=progress,
        ray_address=ray_address,
        slurm=slurm,
        jobs_per_gpu=jobs_per_gpu,
        mps=mps,
    )


def competitor_table(out: str | Path) -> pd.DataFrame:
    """One row per competitor (algorithm, training set) of the protocol in ``out``: how it was
    trained (model, recipe, pretrained start, training folder) and how many runs it has."""
    meta = pd.DataFrame.from_dict(read_protocol(out), orient="index")
    if "protocol" in meta:  # written before presets were a registry
        former = meta.pop("protocol")
        meta["preset"] = meta["preset"].fillna(former) if "preset" in meta else former
    for col, default in (("preset", ""), ("pretrained", None), ("train_dir", ""),
                         ("metric", "mean_per_class"), ("precision", "fp32")):
        if col not in meta:
            meta[col] = default
    # a job written before "pretrained" was recorded is NaN beside the others' None: "no" too
    meta["pretrained"] = meta["pretrained"].map(lambda v: v if isinstance(v, str) and v else "no")
    meta["metric"] = meta["metric"].fillna("mean_per_class")
    meta["precision"] = meta["precision"].fillna("fp32")
    keys = ["algorithm", "dataset", "model", "preset", "pretrained", "train_dir", "epochs",
            "precision", "metric"]
    table = meta.groupby(keys, sort=True, dropna=False).size().rename("runs").reset_index()
    return table


def strict_test_sets(out: str | Path) -> list[str]:
    """Test sets marked in-distribution for some training set of the protocol in ``out``
    (BiasBed's strict setting drops them)."""
    names: set[str] = set()
    for info in read_protocol(out).values():
        names.update(info.get("in_distribution") or [])
    return sorted(names)


def load_epochs(out: str | Path) -> pd.DataFrame:
    """Per-epoch records of the protocol's finished runs: algorithm, model, dataset, run (the
    job id), seed, epoch, train_loss, val_loss, val_acc, test_set, tag, acc, n. When runs of
    several models share the folder, ``algorithm`` reads ``algorithm/model``."""
    meta = read_protocol(out)
    epochs = collect_epochs(out)
    epochs = epochs[epochs["job_id"].isin(list(meta))]
    if epochs.empty:
        raise ProtocolError(
            f"no finished runs in {str(out)!r} yet (protocol lists {len(meta)} jobs); run "
            "`shortcutlab biasbed run` again to finish them"
        )
    info = pd.DataFrame.from_dict(meta, orient="index")
    info.index.name = "job_id"
    if "kind" not in info:  # protocol files written before the kind was recorded
        info["kind"] = ""
    info = info.reset_index()[["job_id", "algorithm", "model", "dataset", "seed", "kind"]]
    _check_one_recipe(Path(out), info[info["job_id"].isin(set(epochs["job_id"]))])
    table = info.merge(epochs, on="job_id", how="inner").rename(columns={"job_id": "run"})
    if table["model"].nunique() > 1:  # several models in one folder: compare algorithm/model
        table["algorithm"] = table["algorithm"].astype(str) + "/" + table["model"].astype(str)
    table = table[table["test_set"].astype(str) != ""]
    return table.sort_values(
        ["dataset", "algorithm", "run", "epoch", "test_set", "tag"],
        kind="stable",
        ignore_index=True,
    )


def _recipe(out: Path, job_id: str) -> dict[str, Any]:
    """A job as stored, flattened to dotted keys, without what may differ between the runs of
    one competitor: the training seed and the thread count (the versions of the code its
    numbers depend on stay: runs of an older renderer or algorithm are another recipe)."""
    data = json.loads(read_job(out / job_id).canonical_json())
    data.pop("threads", None)
    data.get("train", {}).pop("seed", None)

    def flat(item: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        items: dict[str, Any] = {}
        for key, value in item.items():
            items.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict)
                         else {f"{prefix}{key}": value})
        return items

    return flat(data)


def _check_one_recipe(out: Path, finished: pd.DataFrame) -> None:
    """Refuse a folder whose runs of one competitor (algorithm, model, dataset) were trained
    with different recipes (two ``biasbed run`` calls into one ``--out`` with another
    ``--lr``, ``--epochs``, preset, hyper-parameter ...): the statistics would pool them as
    one algorithm's runs. Runs may differ only in their seed."""
    for (algorithm, model, dataset), group in finished.groupby(
            ["algorithm", "model", "dataset"], sort=True):
        recipes: dict[str, dict[str, Any]] = {}
        for job_id in group["job_id"]:
            recipe = _recipe(out, str(job_id))
            recipes.setdefault(json.dumps(recipe, sort_keys=True, default=str), recipe)
        if len(recipes) > 1:
            first, second = list(recipes.values())[:2]
            keys = sorted(k for k in first.keys() | second.keys()
                          if first.get(k) != second.get(k))
            shown = "; ".join(f"{k}: {first.get(k)!r} vs {second.get(k)!r}" for k in keys[:4])
            raise ProtocolError(
                f"{str(out)!r}: the runs of {algorithm} ({model}) on {dataset} were trained "
                f"with {len(recipes)} different recipes ({shown}); the runs of one competitor "
                "may differ only in their seed: give each recipe its own --out folder"
            )


def default_n_last(epochs: pd.DataFrame) -> int:
    """BiasBed's 30-of-100: the last 30 % of the shortest run's epochs (at least 1)."""
    shortest = int(epochs.groupby("run")["epoch"].nunique().min())
    return max(1, math.ceil(0.3 * shortest))


def selection_table(epochs: pd.DataFrame, n_last: int | None = None) -> pd.DataFrame:
    """How the rule changes the numbers (BiasBed Table 1): per (algorithm, dataset, test set)
    mean and std over runs for each rule, and each rule's difference to the oracle."""
    n = default_n_last(epochs) if n_last is None else n_last
    return compare_rules(
        epochs, RULES, n_last=n, run_col="run", group_cols=["algorithm", "dataset"]
    )


def resolve_compare_by(epochs: pd.DataFrame, compare_by: str = "auto") -> str:
    """``competitor`` when several training sets share exactly the same test sets, else
    ``dataset`` (for ``auto``); explicit choices are checked."""
    if compare_by not in COMPARE_BY:
        raise StatsError(unknown_choice("compare_by", compare_by, COMPARE_BY))
    sets = epochs.groupby("dataset")["test_set"].agg(lambda t: frozenset(map(str, t)))
    # A DiagViB-6 experiment's test set is its own (the study's test cells), whatever its name.
    own = "kind" in epochs and bool((epochs["kind"] == diagvib_jobs.KIND).any())
    same = len(sets) > 1 and len(set(sets)) == 1 and not own
    if compare_by == "auto":
        return "competitor" if same else "dataset"
    if compare_by == "competitor" and len(sets) > 1 and (own or len(set(sets)) != 1):
        if own:
            raise StatsError(
                "compare_by=competitor needs training sets scored on the same test sets; each "
                "DiagViB-6 experiment has its own test set: use compare_by=dataset"
            )
        raise StatsError(
            "compare_by=competitor needs every training set scored on the same test sets; got "
            + "; ".join(f"{d}: {sorted(t)}" for d, t in sets.items())
        )
    return compare_by


def compare_algorithms(
    epochs: pd.DataFrame,
    rule: str = "best_validation",
    *,
    n_last: int | None = None,
    alpha: float = 0.05,
    compare_by: str = "auto",
    exclude_test_sets: Sequence[str] = (),
    df: str = "textbook",
    nemenyi_clip: bool = False,
    nemenyi_method: str = "exact",
    tie_correction: bool = True,
) -> ComparisonResult:
    """D's Friedman / Iman-Davenport / Nemenyi comparison of the competitors under one rule.

    ``compare_by="competitor"`` (auto when the training sets share their test sets): each
    (algorithm, training set) is a competitor ``"<algorithm> on <dataset>"`` (just the algorithm
    with one training set) and the blocks are the test sets. ``"dataset"``: the algorithms
    compete over blocks ``dataset/test set``. A block's score per competitor is the mean over
    runs. ``exclude_test_sets``: test sets left out (the strict setting,
    :func:`strict_test_sets`); ``df``/``nemenyi_clip``/``nemenyi_method``/``tie_correction``:
    conventions of :func:`shortcutlab.stats.compare`. Needs >= 2 competitors and >= 2 blocks.
    """
    if rule not in RULES:
        raise StatsError(unknown_choice("selection rule", rule, RULES))
    mode = resolve_compare_by(epochs, compare_by)
    n = default_n_last(epochs) if n_last is None else n_last
    picked = select(epochs, rule, n_last=n, run_col="run", group_cols=["algorithm", "dataset"])
    test_sets = picked["test_set"].astype(str)
    unknown = sorted(set(exclude_test_sets) - set(test_sets))
    if unknown:
        choices = sorted(set(test_sets))
        raise StatsError(unknown_choice("test set to exclude", unknown[0], choices))
    if mode == "competitor":
        several = picked["dataset"].nunique() > 1
        picked = picked.assign(
            algorithm=picked["algorithm"].astype(str)
            + (" on " + picked["dataset"].astype(str) if several else "")
        ).drop(columns="dataset")
    runs = runs_for_comparison(picked)
    dropped = runs["block"][test_sets.isin(list(exclude_test_sets)).to_numpy()]
    return compare(
        runs, alpha=alpha, df=df, nemenyi_clip=nemenyi_clip, nemenyi_method=nemenyi_method,
        tie_correction=tie_correction, exclude_blocks=list(dict.fromkeys(dropped)),
    )


def parse_hparams(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``ALGORITHM:KEY=VALUE`` strings (values parsed as JSON when possible) to a nested dict."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        head, sep, value = item.partition("=")
        algorithm, colon, key = head.partition(":")
        if not sep or not colon or not algorithm or not key:
            raise BiasbedDataError(f"--hparam expects ALGORITHM:KEY=VALUE, got {item!r}")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(algorithm, {})[key] = parsed
    return out
