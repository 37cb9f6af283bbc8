"""The ``biasbed-folders`` job kind: train on an image-folder experiment (:data:`FOLDERS_JOB_KIND`).

Kept apart from :mod:`shortcutlab.biasbed.protocol` so that the runner, which loads every job
kind of the ``shortcutlab.job_kinds`` entry-point group on its first lookup, does not import the
protocol's statistics to learn this kind, nor (reading a run folder) torch: the datasets are
imported where a job runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shortcutlab.diagvib.jobs import describe_experiment
from shortcutlab.errors import ProtocolError
from shortcutlab.runner.jobs import Job, JobKind, JobOutput

if TYPE_CHECKING:
    from shortcutlab.biasbed.datasets import FolderExperiment

FOLDERS_KIND = "biasbed-folders"


def folder_from_spec(spec: Mapping[str, Any]) -> FolderExperiment:
    """The image-folder experiment a ``biasbed-folders`` job's ``spec`` describes."""
    from shortcutlab.biasbed.datasets import FolderExperiment  # torch: only where jobs run

    return FolderExperiment(
        train_dir=Path(spec["train_dir"]),
        val_dir=Path(spec["val_dir"]),
        test_dirs={k: Path(v) for k, v in spec["test_dirs"].items()},
        class_map=None if spec.get("class_map") is None else Path(spec["class_map"]),
        image_size=int(spec["image_size"]),
        label_space_kind=str(spec.get("label_space", "map")),
        preprocess=str(spec.get("preprocess", "resize")),
        test_heads=dict(spec.get("test_heads", {})),
        metric=str(spec.get("metric", "mean_per_class")),
        class_map_sha256=spec.get("class_map_sha256"),
    )


def folders_job(job: Job, device: str) -> JobOutput:
    """Train ``job.train`` on the image-folder experiment described by ``job.spec``; the
    result records the device the job ran on (``device`` resolved)."""
    from shortcutlab.train.algorithms.base import AlgorithmContext
    from shortcutlab.train.trainer import train
    from shortcutlab.utils.device import resolve_device

    if job.spec is None:
        raise ProtocolError(f"job {job.job_id} of kind {FOLDERS_KIND} has no folder spec")
    folder = folder_from_spec(job.spec)
    train_ds, val_ds, tests = folder.datasets(seed=job.train.seed)  # crops seeded per image
    torch_device = resolve_device(device)
    context = AlgorithmContext(train_dataset=train_ds, device=torch_device)
    res = train(job.train, train_ds, val_ds, tests, device=torch_device, context=context)
    summary = res.summary()
    summary["labels"] = len(train_ds.labels)
    # the device it ran on (auto resolved), as DiagViB-6's jobs record theirs: the same under
    # every backend (Ray hands its tasks "cuda", the others the run's "auto")
    summary["device"] = str(torch_device)
    return JobOutput(summary, res.epochs)


def describe_folders_job(job: Job) -> dict[str, Any]:
    """The job-table columns of a ``biasbed-folders`` job, read from its experiment name as
    DiagViB-6's are (``study`` = ``folders:<name>``)."""
    return describe_experiment(job.experiment)


#: The ``biasbed-folders`` job kind (declared in the ``shortcutlab.job_kinds`` entry-point
#: group, as DiagViB-6's ``diagvib`` kind is).
FOLDERS_JOB_KIND = JobKind(folders_job, describe=describe_folders_job)
