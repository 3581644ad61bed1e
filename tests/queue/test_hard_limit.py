"""The hard limit: a run that ignores its soft limit is abandoned and failed, and never finishes twice.

The soft limit normally ends a job (the executor cancels it and records ``timeout``). The hard
limit is the backstop for a run that does not stop when cancelled (a blocked loop, a bug that
swallows the cancel): the task thread gives up on it, fails the job, and stops heartbeating it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from prometheus_client import REGISTRY

from config import Settings
from tests.support.redis_server import RedisServer
from workers.agent import JobSession
from workers.jobs.model.spec import JobSpec
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.runtime import WorkerRuntime

pytestmark = pytest.mark.e2e  # a WorkerRuntime in this process, whose pool starts Chromium


class Stubborn:
    """An agent run that swallows every cancel until ``release`` is set, then reports success."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.cancels = 0

    async def __call__(self, *_: Any, **__: Any) -> Any:
        while not self.release.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                self.cancels += 1  # the bug under test: the cancel is ignored
        from workers.jobs.model.result import JobResult
        from workers.jobs.model.status import JobStatus

        return JobResult(status=JobStatus.succeeded, final_answer="too late")


def test_a_run_that_ignores_its_time_limit_is_abandoned_at_the_hard_limit(redis: RedisServer, monkeypatch) -> None:
    stubborn = Stubborn()
    monkeypatch.setattr(JobSession, "run", stubborn)  # what the pipeline calls for each run
    runtime = WorkerRuntime(Settings(redis_url=redis.url, pool_warm=0, metrics_port=0))
    runtime.start()
    try:
        store = JobStore(connect(redis.url), result_ttl=600)
        job_id = runtime._call(store.create(JobSpec(task="never ends", start_url="http://127.0.0.1/", timeout=1),
                                            max_steps=5), 10).job_id
        abandoned = REGISTRY.get_sample_value("browserd_jobs_abandoned_total") or 0.0
        delivered = runtime.run(job_id, hard=4.0)
        assert delivered.outcome == "hard_limit" and delivered.status == "failed"
        # counted where Prometheus scrapes the worker (issue 25, item 9)
        assert REGISTRY.get_sample_value("browserd_jobs_abandoned_total") == abandoned + 1
        job = runtime._call(store.get(job_id), 10)
        assert job.state == "failed" and job.category == "timeout"
        assert "ignored its time limit" in job.error
        assert job_id not in runtime.pipeline.runs, "an abandoned run must not be heartbeated any more"
        assert stubborn.cancels >= 1, "the soft limit's cancel came first"

        stubborn.release.set()  # the stuck run finally returns: its late result must not land
        runtime._call(asyncio.sleep(0.5), 5)
        job = runtime._call(store.get(job_id), 10)
        assert job.state == "failed" and job.result is not None and job.result.final_answer is None
        runtime._call(store.redis.aclose(), 5)
    finally:
        stubborn.release.set()
        runtime.stop()


def test_a_wait_for_a_browser_counts_against_the_jobs_limit(redis: RedisServer, monkeypatch) -> None:
    """Waiting for a browser and running share the job's limit, so the soft limit (not the hard
    one, 5 s behind) ends a job that waited long for its lease."""
    runtime = WorkerRuntime(Settings(redis_url=redis.url, pool_warm=0, metrics_port=0))
    runtime.start()
    try:
        acquire = runtime.pool.acquire

        async def slow_acquire(timeout: float = 60.0) -> Any:  # a browser being relaunched under load
            await asyncio.sleep(4.0)
            return await acquire(timeout)

        monkeypatch.setattr(runtime.pool, "acquire", slow_acquire)
        store = JobStore(connect(redis.url), result_ttl=600)
        spec = JobSpec(script=[{"wait": {"seconds": 20}}], timeout=6)
        job_id = runtime._call(store.create(spec, max_steps=5), 10).job_id
        started = time.monotonic()
        delivered = runtime.run(job_id, hard=11.0)
        took = time.monotonic() - started
        job = runtime._call(store.get(job_id), 10)
        assert delivered.outcome != "hard_limit", "the soft limit must end it, 5 s before the hard one"
        assert job.state == "failed" and job.category == "timeout", job.error
        assert took < 9.0, f"4 s waiting plus a full 6 s run ({took:.1f}s): the wait was not counted"
        runtime._call(store.redis.aclose(), 5)
    finally:
        runtime.stop()
