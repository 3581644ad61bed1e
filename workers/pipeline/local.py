"""A local run: one job through the same pipeline as a worker's, its record kept in this process.

``browserd run``, the benches and the agent tests run jobs so: the same features, the same time
budget, the same failure table and result limits as on a worker; only the record is local
(``LocalRecords``: steps and events go to the caller's listeners). Given the shared store's Redis,
the job starts from its auth profiles, types from its credential sets and replays its recipes
like any worker's job; without one, naming them fails the job with the category that says so. A
result too large for a record goes to the artifact store as on a worker, and is read back in for
the caller, as the API reads it back for ``GET /v1/jobs/{id}``.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis.asyncio as aioredis

from config import Settings
from workers.jobs.artifacts.offload import ainline
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.pipeline.feature import Feature, Services
from workers.pipeline.features import FEATURES
from workers.pipeline.pipeline import Browsers, Pipeline
from workers.pipeline.records import LocalRecords


async def run_local(spec: JobSpec, *, settings: Settings, browsers: Browsers, records: LocalRecords | None = None,
                    redis: aioredis.Redis | None = None, features: Sequence[type[Feature]] = FEATURES,
                    job_id: str | None = None) -> JobResult:
    """Run ``spec`` in a lease from ``browsers``; its result (never raises for the job's failures).

    ``records`` carry the caller's listeners (steps, events) and its cancel; ``features`` are the
    registry's unless the caller plugs in more (a test's own gate, say); ``job_id`` names the job
    (its artifact folder), a new id by default."""
    records = records or LocalRecords()
    job_id = records.add(spec, job_id)
    pipeline = Pipeline(records, browsers, Services(settings=settings, records=records, redis=redis), features)
    try:
        await pipeline.deliver(job_id)
    finally:
        await pipeline.stop()
    result = records.results[job_id]
    if result.result_artifact is not None:  # offloaded as a worker would; read back in as the API does
        result = await ainline(result, pipeline.services.artifacts.job(job_id))
    return result
