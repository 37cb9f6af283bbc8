from __future__ import annotations

import pytest

from tests.runner import fake_jobs


@pytest.fixture(autouse=True)
def _fake_job_kind() -> None:
    fake_jobs.register()
