"""A ``biasbed-folders`` job records the device it ran on, as a DiagViB-6 job does: ``auto``
resolved (``cpu`` here), not the run's ``auto``, so that its recorded device does not depend on
the backend that ran it (Ray hands its tasks the device it gave them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shortcutlab.biasbed.datasets import FolderExperiment
from shortcutlab.biasbed.folder_jobs import FOLDERS_KIND, folders_job
from shortcutlab.runner.jobs import Job, job_dir, read_result, run_one
from shortcutlab.train.config import TrainConfig


@pytest.fixture(autouse=True)
def _no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("device", ["auto", "cpu"])
def test_a_folder_job_records_the_device_it_ran_on(folders: dict[str, Path], tmp_path: Path,
                                                   device: str) -> None:
    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]},
                           folders["map"], 16)
    job = Job(experiment="folders:device", kind=FOLDERS_KIND,
              train=TrainConfig(algorithm="erm", model="small_cnn", epochs=1, seed=0),
              spec=exp.describe())
    assert folders_job(job, device).result["device"] == "cpu"
    assert run_one(job, tmp_path, device).status == "done"
    result = read_result(job_dir(tmp_path, job))
    assert result["device"] == "cpu"


@pytest.mark.parametrize("seed", [0, 3])
def test_a_folder_job_seeds_its_training_crops_with_the_run_seed(
        folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """The training set's augmentation (RandomResizedCrop per image) is seeded with the job's
    seed: runs of several seeds see different crops, as the paper's repeated runs do."""
    seen: list[int | None] = []

    class Stop(Exception):
        pass

    def datasets(self: FolderExperiment, seed: int | None = None):  # type: ignore[no-untyped-def]
        seen.append(seed)
        raise Stop

    monkeypatch.setattr(FolderExperiment, "datasets", datasets)
    exp = FolderExperiment(folders["train"], folders["val"], {"cue": folders["cue"]},
                           folders["map"], 16, preprocess="imagenet")
    job = Job(experiment="folders:seed", kind=FOLDERS_KIND,
              train=TrainConfig(algorithm="erm", model="small_cnn", epochs=1, seed=seed),
              spec=exp.describe())
    with pytest.raises(Stop):
        folders_job(job, "cpu")
    assert seen == [seed]
