"""One deployment (redis-server, the API, one worker) for the client and CLI tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.queue.stack import Stack, stack


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=60, visibility_timeout=120) as s:
        s.start_worker(2)
        yield s
