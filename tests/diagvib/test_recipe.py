"""The reproduction recipe of docs/diagvib-fidelity.md runs as written, at scale 0.01 on a CPU:
the command is read from the page; only the sizes (scale, one study, pair, sample, one epoch),
the device and the paths of the sources and outputs are replaced."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from shortcutlab.cli.main import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "diagvib-fidelity.md"
runner = CliRunner()


def recipe() -> list[list[str]]:
    """The commands of the first bash block under "Reproducing the paper's setting"."""
    text = DOC.read_text(encoding="utf-8").split("## Reproducing the paper's setting")[1]
    block = text.split("```bash\n")[1].split("```")[0]
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line]


def _options(args: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(args, args[1:], strict=False) if a.startswith("--")]


def _mnist(folder: Path) -> Path:
    """A tiny MNIST IDX folder: bars of a digit-dependent length, 12 per digit to train."""
    folder.mkdir()
    rng = np.random.default_rng(0)

    def write(name: str, array: np.ndarray) -> None:
        header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
            int(s).to_bytes(4, "big") for s in array.shape)
        (folder / name).write_bytes(header + array.astype(np.uint8).tobytes())

    for prefix, per_digit in (("train", 12), ("t10k", 4)):
        labels = np.repeat(np.arange(10), per_digit)
        images = np.zeros((len(labels), 28, 28), np.uint8)
        for i, d in enumerate(labels):
            top = 4 + int(rng.integers(0, 3))
            images[i, top: top + 8 + d, 10 + d // 2: 15 + d // 2] = 255
        write(f"{prefix}-images-idx3-ubyte", images)
        write(f"{prefix}-labels-idx1-ubyte", labels)
    return folder


def _textures(folder: Path) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(1)
    for name in ("tiles", "wood", "carpet", "bricks", "lava"):
        Image.fromarray((rng.random((160, 160)) * 255).astype(np.uint8)).save(
            folder / f"{name}.png")
    return folder


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_the_documented_recipe_runs_at_small_scale(tmp_path) -> None:
    run_cmd, report_cmd = recipe()
    assert run_cmd[:3] == ["shortcutlab", "diagvib", "run"]
    given = dict(_options(run_cmd))
    assert (given["--preset"], given["--selection"], given["--head"]) == (
        "paper", "paper", "full")
    assert {"--mnist", "--textures", "--budget-seconds"} <= set(given)
    replace = {"--scale": "0.002", "--device": "cpu", "--out": str(tmp_path / "run"),
               "--mnist": str(_mnist(tmp_path / "mnist")),
               "--textures": str(_textures(tmp_path / "tex"))}
    # one study, pair and sample instead of the 270 x 5; the serial backend below shares no GPU
    # (it refuses --jobs-per-gpu, which only the processes and ray backends read)
    drop = {"--study", "--samples", "--jobs-per-gpu"}
    args = []
    for option, value in _options(run_cmd[3:]):
        if option not in drop:
            args += [option, replace.get(option, value)]
    args = [*run_cmd[3:5], *args, "--study", "ZSO", "--pairs", "shape-hue", "--samples", "0",
            "--epochs", "1", "--backend", "serial"]
    result = runner.invoke(app, ["diagvib", "run", *args])
    assert result.exit_code == 0, result.output
    [job] = [json.loads(p.read_text()) for p in (tmp_path / "run").glob("*/job.json")]
    assert job["train"]["preset"] == "paper" and job["params"]["head"] == "full"
    assert job["spec"]["selection"] == "paper" and set(job["inputs"]) == {"mnist", "textures"}
    assert job["train"]["model"] == "resnet18"
    result_file = next((tmp_path / "run").glob("*/result.json"))
    assert 0.0 <= json.loads(result_file.read_text())["test_acc"] <= 1.0
    assert report_cmd[:3] == ["shortcutlab", "diagvib", "report"]
    rargs = dict(_options(report_cmd))
    out = tmp_path / "report"
    report = runner.invoke(app, ["diagvib", "report", str(tmp_path / "run"), "--out", str(out),
                                 "--error-bars", rargs["--error-bars"]])
    assert report.exit_code == 0, report.output
    html = (out / "index.html").read_text()
    assert "standard error (ddof 1)" in html and "<td>full</td>" in html
