"""The Ray backend starts its local instance without Ray's token-authentication notice on
every run (issue 34), and leaves that logger as it found it."""

from __future__ import annotations

import logging

import pytest

from shortcutlab.runner.backends import run_jobs
from tests.runner.test_backends import _check, _jobs

NOTICE = "ray._private.authentication.authentication_token_setup"


def test_ray_run_prints_no_token_notice(tmp_path, capfd, monkeypatch) -> None:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance is already running in this process")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)  # Ray's default: it would log it
    before = logging.getLogger(NOTICE).level
    jobs = _jobs("quiet")
    summary = run_jobs(jobs, tmp_path, backend="ray", workers=1, progress=False)
    _check(tmp_path, summary, jobs)
    err = capfd.readouterr().err
    assert "Token authentication" not in err
    assert logging.getLogger(NOTICE).level == before
