"""Stand-ins for the ``processes`` backend's worker pool (``local_processes._pool``): each
runs the submitted call in this process, at once, so that a test can look at what the backend
hands its workers, or make the pool break (or a reply go missing) at a chosen job, without
starting a process."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class InProcessPool:
    """Runs every submitted call at once in this process. ``reply(job_id, future, call)``
    settles each job's future (default: with the call's result); a test replaces it to lose
    replies or break the pool."""

    def __init__(self, reply: Callable[[str, Future, Callable[[], Any]], None] | None = None
                 ) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.reply = reply or (lambda job_id, future, call: future.set_result(call()))

    def __enter__(self) -> InProcessPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        self.calls.append((args, kwargs))
        future: Future = Future()
        self.reply(args[0].job_id, future, lambda: fn(*args, **kwargs))
        return future
