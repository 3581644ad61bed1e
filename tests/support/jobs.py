"""One job through the pipeline, in a lease the caller holds: how the agent tests and the benches
run a job (the caller reads the page after it, then releases the lease).

It is ``workers.pipeline.run_local`` with a ``GivenLease``: the same features, time budget,
failure table and result limits as a worker's job; only the record is local. ``records`` carry
the test's listeners and cancel (``LocalRecords(on_step=..., on_event=..., is_cancelled=...)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis.asyncio as aioredis

import cdp
from config import Settings, get_settings
from workers.agent import Llms
from workers.agent.config import AgentConfig
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.pipeline import FEATURES, Feature, GivenLease, LocalRecords, run_local


async def run_job(spec: JobSpec, lease: cdp.Lease, *, settings: Settings | None = None,
                  records: LocalRecords | None = None, redis: aioredis.Redis | None = None,
                  features: Sequence[type[Feature]] = FEATURES, job_id: str | None = None) -> JobResult:
    return await run_local(spec, settings=settings or get_settings(), browsers=GivenLease(lease), records=records,
                           redis=redis, features=features, job_id=job_id)


def llms_of(settings: Settings) -> Llms:
    """The models a job would get from ``settings`` (no job overrides): through the agent's config, as
    the pipeline builds them."""
    return Llms.from_config(AgentConfig.from_settings(settings).llm)
