"""benchmarks/fidelity_page.py: docs/diagvib-fidelity.md's full-scale section is generated from
the campaign folder, stays in sync with it, and a hand edit of it is caught."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def page():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("fidelity_page", BENCH / "fidelity_page.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


def test_the_committed_page_is_in_sync_with_the_committed_folder(page, capsys) -> None:
    assert page.main(["--check"]) == 0, capsys.readouterr().err


def _log(folder: Path, job: str, accs: list[float], vals: list[float]) -> None:
    config = {"protocol": "paper", "model": "resnet18", "epochs": 30, "seed": 0, "head": "full"}
    lines = [{"job": job, "config": config, "n": [1, 2, 10000]}] + [
        {"epoch": e, "train_loss": 0.1, "val_loss": v, "val_acc": 1.0, "test_acc[test]": a,
         "wall": 10.0 * (e + 1)} for e, (a, v) in enumerate(zip(accs, vals, strict=True))]
    (folder / f"{job.replace('/', '_')}.jsonl").write_text("\n".join(map(json.dumps, lines)))


def test_the_page_regenerates_from_the_folder_and_a_hand_edit_fails(page, tmp_path,
                                                                       capsys) -> None:
    doc = tmp_path / "page.md"
    doc.write_text(f"# hand-written\n\n{page.BEGIN}\nold\n{page.END}\n\nhand-written tail\n")
    logs, campaign = tmp_path / "logs", tmp_path / "campaign"
    logs.mkdir()
    _log(logs, "ZGO/texture-shape/0", [0.1, 0.02, 0.3, 0.05], [0.5, 0.1, 0.2, 0.3])
    assert page.vp.import_logs(campaign, logs)
    args = ["--campaign", str(campaign), "--page", str(doc)]
    assert page.main([*args, "--check"]) == 1  # "old" is not what the folder gives
    assert page.main([*args, "--write"]) == 0
    text = doc.read_text()
    assert text.startswith("# hand-written\n") and text.endswith("\nhand-written tail\n")
    row = [line for line in text.splitlines() if line.startswith("| ZGO/texture-shape/0 |")]
    # selected epoch 1 (lowest val loss), 0.020 there, 0.020–0.300 over the (4) last epochs
    assert row == ["| ZGO/texture-shape/0 | stopped early | fp32 | 4 of 30 | 1 | 0.020 | "
                   "0.020–0.300 | NVIDIA H200, 2026-11-27 | 27e4ece | "
                   "`2026-11-27-ZGO-texture-shape-0` |"]
    said = [line for line in text.splitlines() if "(texture, shape): shortcut taken" in line]
    assert "| 0.02 | 1 job, sample 0, 4 of 30 epochs; NVIDIA H200 2026-11-27 (stopped early) |" \
        in said[0]
    assert "| ZGO | 1 of 30 (sample 0) / 150 (samples 0–4) |" in text
    assert page.main([*args, "--check"]) == 0
    doc.write_text(text.replace("| 0.020 |", "| 0.021 |"))  # a number typed by hand
    assert page.main([*args, "--check"]) == 1
    assert "out of sync" in capsys.readouterr().err
    # a new record changes the page: it follows the folder, not the other way round
    _log(logs, "ZGO/shape-texture/0", [0.9, 0.95], [0.2, 0.1])
    page.vp.import_logs(campaign, logs)
    assert page.main([*args, "--check"]) == 1
    page.main([*args, "--write"])
    assert "| ZGO | 2 of 30 (sample 0)" in doc.read_text()


def test_the_committed_page_fails_the_check_after_a_hand_edit(page, tmp_path) -> None:
    doc = tmp_path / "fidelity.md"
    shutil.copyfile(page.PAGE, doc)
    text = doc.read_text()
    generated = text.split(page.BEGIN)[1]
    doc.write_text(text.replace(generated, generated.replace("0.622", "0.623", 1)))
    assert page.main(["--page", str(doc), "--check"]) == 1


def test_precision_pairs_judge_bf16_by_the_fp32_runs_own_range(page) -> None:
    """Per (experiment, seed): the best record of each precision (current before stopped
    early), bf16 inside or outside the fp32 run's last-epochs range, unpaired records left out."""
    def rec(experiment, precision, label, acc, low=None, high=None, record="r"):
        return {"experiment": experiment, "seed": 0, "precision": precision, "label": label,
                "epochs_run": 30, "record": record + precision + label, "test_acc": acc,
                "acc_min": low, "acc_max": high}

    import pandas as pd

    table = pd.DataFrame([
        rec("ZSO/hue/0", "fp32", "current", 0.90, 0.85, 0.95),
        rec("ZSO/hue/0", "fp32", "stopped early", 0.10, 0.0, 0.2),  # outranked by current
        rec("ZSO/hue/0", "bf16", "current", 0.92),
        rec("ZGO/shape-hue/0", "fp32", "current", 0.50, 0.45, 0.55),
        rec("ZGO/shape-hue/0", "bf16", "current", 0.30),
        rec("ZSO/texture/0", "bf16", "current", 0.60),  # no fp32 twin
        rec("ZSO/scale/0", "fp32", "earlier code", 0.70),  # fp32 range unknown
        rec("ZSO/scale/0", "bf16", "current", 0.71),
    ])
    pairs = page.precision_pairs(table).set_index("experiment")
    assert set(pairs.index) == {"ZSO/hue/0", "ZGO/shape-hue/0", "ZSO/scale/0"}
    assert pairs.loc["ZSO/hue/0", "difference"] == pytest.approx(0.02)
    assert pairs.loc["ZSO/hue/0", "within_fp32_range"] is True
    assert pairs.loc["ZGO/shape-hue/0", "within_fp32_range"] is False
    assert pairs.loc["ZSO/scale/0", "within_fp32_range"] is None
    assert page.precision_pairs(table.iloc[:0]).empty
