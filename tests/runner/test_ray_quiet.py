"""The Ray backend starts its local instance without Ray's token-authentication notice on
every run (issue 34), and leaves that logger as it found it.

Here ``ray`` is a stand-in whose ``init`` logs the notice the way Ray does, so no Ray instance
starts (seconds each); that a real start stays quiet is checked on the Ray run of
``test_interrupts.py``, whose stderr is captured."""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import pytest

from shortcutlab.runner import cluster_backends
from shortcutlab.runner.backend_api import BackendContext
from shortcutlab.runner.jobs import Job

NOTICE = "ray._private.authentication.authentication_token_setup"


def _fake_ray(calls: list[dict[str, object]], fail: bool) -> types.ModuleType:
    """A ``ray`` module whose ``init`` records its arguments, logs the notice at WARNING on
    Ray's logger and then, with ``fail``, raises (so that the backend stops there)."""
    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: False  # type: ignore[attr-defined]

    def init(**kwargs: object) -> None:
        calls.append(kwargs)
        logging.getLogger(NOTICE).warning("Token authentication is enabled for this Ray "
                                          "cluster. Set RAY_AUTH_MODE=disabled to opt out.")
        if fail:
            raise RuntimeError("the fake Ray stops here")

    ray.init = init  # type: ignore[attr-defined]
    ray.shutdown = lambda: calls.append({"shutdown": True})  # type: ignore[attr-defined]
    ray.cluster_resources = lambda: {}  # type: ignore[attr-defined]

    class Ref:  # an object reference: the task ran at once, here
        def __init__(self, value: object) -> None:
            self.value = value

    def remote(**options: object):  # ray.remote(num_cpus=..)(fn)
        def wrap(fn):
            return types.SimpleNamespace(remote=lambda *args, **kw: Ref(fn(*args, **kw)))
        return wrap

    ray.remote = remote  # type: ignore[attr-defined]
    ray.wait = lambda pending, num_returns=1, **kw: (pending[:1], pending[1:])  # type: ignore
    ray.get = lambda ref: ref.value  # type: ignore[attr-defined]
    return ray


@pytest.mark.parametrize("fail", [False, True], ids=["started", "start-failed"])
def test_ray_run_prints_no_token_notice(tmp_path: Path, capfd, caplog, monkeypatch,
                                        fail: bool) -> None:
    calls: list[dict[str, object]] = []
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(calls, fail))
    monkeypatch.setattr(cluster_backends, "_reap_local_ray", lambda: None)
    logger = logging.getLogger(NOTICE)
    monkeypatch.setattr(logger, "level", logger.level)  # put back after the test
    logger.setLevel(logging.INFO)  # as the user set it (setLevel: clears the logging caches)
    job = Job(experiment="noop/quiet-x/0", kind="noop")
    stream = cluster_backends.ray_backend([job], tmp_path,
                                          BackendContext(device="cpu", workers=2))
    with caplog.at_level(logging.DEBUG):
        if fail:
            with pytest.raises(RuntimeError, match="the fake Ray stops here"):
                list(stream)
        else:
            [outcome] = list(stream)
            assert outcome.status == "done" and outcome.job_id == job.job_id
    assert calls[0] == {"address": None, "include_dashboard": False, "log_to_driver": False,
                        "num_cpus": 2}
    assert [r for r in caplog.records if "Token authentication" in r.getMessage()] == []
    assert "Token authentication" not in capfd.readouterr().err
    assert logger.level == logging.INFO  # left as it was found, even when the start failed
    assert calls[-1] == ({"address": None, "include_dashboard": False, "log_to_driver": False,
                          "num_cpus": 2} if fail else {"shutdown": True})
