"""The politeness gate's navigations (``workers/pipeline/features/politeness.py``, ``JobGate``) on a
real redis-server: a navigation that asks for no delay makes no reservation while its domain is
quiet, and makes one again as soon as the domain is backed off."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from config import Settings
from workers.agent.config import AgentConfig
from workers.agent.job import JobInputs
from workers.jobs.budget import TimeBudget
from workers.jobs.model.spec import JobSpec
from workers.jobs.politeness.options import limits_for
from workers.jobs.politeness.slots import DomainLimits
from workers.pipeline.feature import Services
from workers.pipeline.features.politeness import JobGate, Politeness
from workers.pipeline.records import LocalRecords
from workers.pipeline.run import JobRun

DOMAIN = "quiet.example"
URL = f"https://{DOMAIN}/page"


def gate_for(politeness: Politeness, spec: JobSpec, settings: Settings) -> JobGate:
    run = JobRun(job_id="j1", attempt=1, spec=spec, budget=TimeBudget(60),
                 inputs=JobInputs(spec=spec, config=AgentConfig.from_settings(settings)))
    return JobGate(politeness, run, limits_for(spec.politeness, settings, refuse=False), None)


async def reserved(client: aioredis.Redis, politeness: Politeness) -> bool:
    """Whether a navigation to DOMAIN was reserved since the key was last cleared (and clear it)."""
    key = politeness.services.keys.domain_last_navigation(DOMAIN)
    return bool(await client.delete(key))


async def test_a_navigation_with_no_delay_to_a_quiet_domain_makes_no_reservation_until_it_is_backed_off(
        client: aioredis.Redis, settings: Settings) -> None:
    politeness = Politeness(Services(settings=settings, records=LocalRecords(), redis=client))
    gate = gate_for(politeness, JobSpec(script=[{"go_to_url": {"url": URL}}]), settings)
    await gate.before_navigation(URL)
    assert await reserved(client, politeness), "the first navigation asks the shared store"
    for _ in range(3):
        await gate.before_navigation(URL)
    assert not await reserved(client, politeness), "the domain was quiet: no round trip for the next ones"

    await politeness.back_off(gate.run, DOMAIN, retry_after=30, reason="HTTP 429")
    waiting = asyncio.ensure_future(gate.before_navigation(URL))
    try:
        await asyncio.sleep(0.2)
        assert not waiting.done(), "backed off by this worker: the next navigation waits for its turn at once"
        assert await reserved(client, politeness)
    finally:
        waiting.cancel()
    await client.delete(politeness.services.keys.domain_backoff(DOMAIN))


async def test_a_back_off_by_another_worker_is_heard_once_the_quiet_spell_ends(
        client: aioredis.Redis, settings: Settings) -> None:
    politeness = Politeness(Services(settings=settings, records=LocalRecords(), redis=client))
    gate = gate_for(politeness, JobSpec(script=[{"go_to_url": {"url": URL}}]), settings)
    await gate.before_navigation(URL)
    await DomainLimits(client, politeness.services.keys, 10.0).back_off(DOMAIN, retry_after=30)
    politeness.quiet[DOMAIN] = 0.0  # the quiet spell (QUIET_SECONDS) is over
    waiting = asyncio.ensure_future(gate.before_navigation(URL))
    try:
        await asyncio.sleep(0.2)
        assert not waiting.done(), "the other worker's back-off holds this one's navigation"
    finally:
        waiting.cancel()
    await client.delete(politeness.services.keys.domain_backoff(DOMAIN), politeness.services.keys.domain_last_navigation(DOMAIN))


async def test_a_job_with_a_delay_reserves_every_navigation(client: aioredis.Redis, settings: Settings) -> None:
    politeness = Politeness(Services(settings=settings, records=LocalRecords(), redis=client))
    spec = JobSpec(script=[{"go_to_url": {"url": URL}}], politeness={"min_delay": 0.01})
    gate = gate_for(politeness, spec, settings)
    for _ in range(3):
        await gate.before_navigation(URL)
        assert await reserved(client, politeness), "spaced navigations are each reserved"
