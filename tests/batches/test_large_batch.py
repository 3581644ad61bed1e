"""A large batch is accepted without holding the API's event loop (real redis-server and API, no
worker): ``/healthz`` keeps answering while 20,000 jobs are read, checked and recorded, and every
job is recorded and published."""

from __future__ import annotations

import pytest

from bench.batch import Healthz, body, post
from tests.queue.stack import stack
from workers.jobs.metrics import queue_keys

pytestmark = pytest.mark.e2e

JOBS = 20_000


def test_healthz_answers_while_a_large_batch_is_accepted() -> None:
    data = body(JOBS)
    with stack() as s:
        post(s.url, body(10))  # the API warm (imports, scripts) before measuring
        with Healthz(s.url) as health:
            seconds, batch = post(s.url, data)
        published = sum(s.redis.llen(key) for key in queue_keys("normal"))
    assert batch["total"] == JOBS and batch["counts"]["queued"] == JOBS
    assert published == JOBS + 10
    # Answered all along: many times, none waiting for more than a fraction of the submission.
    assert health.answers >= 5, (health.answers, seconds)
    assert health.slowest < max(1.0, seconds / 3), (health.slowest, seconds)
