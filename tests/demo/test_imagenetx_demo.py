"""The `shortcutlab demo` ImageNet-X stage scores the original ImageNet labels against ReaL and
reproduces the imagenet-x package's "human" row: average accuracy 0.835220 on the 46,110 filtered
validation images, pose error ratio 0.746 (the package's numbers, not this code's)."""

from __future__ import annotations

from rich.console import Console

import shortcutlab.demo.imagenetx as demo


def test_demo_reproduces_the_packages_human_row(tmp_path, monkeypatch) -> None:
    analyse = demo.analyse

    def quick(*args, **kwargs):  # the numbers printed depend on neither
        return analyse(*args, **{**kwargs, "n_boot": 0, "dataset_statistics": False})

    monkeypatch.setattr(demo, "analyse", quick)
    monkeypatch.setattr(demo, "write_report", lambda analysis, out, title: out / "index.html")
    lines = demo.run_demo(tmp_path, Console(quiet=True))
    assert lines[-1] == ("average accuracy 0.835220 (imagenet-x package: 0.835220), pose error "
                         "ratio 0.746 (package: 0.746)")
    assert (tmp_path / "multi_factor.json").exists()
