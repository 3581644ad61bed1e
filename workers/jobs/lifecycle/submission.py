"""Submitting: one job (its record, then its message), or a whole batch (records in pipelined Lua
calls, then every message in one bulk publish, ``batches.bulk``).

Shared by ``POST /v1/jobs`` and ``POST /v1/batches``, a schedule's runs (``workers.scheduled``)
and ``bench.batch``. A tenant's jobs are first admitted against its quotas (``tenants.quotas``:
``QuotaExceeded``, nothing recorded), and their messages are parked for fair dispatch
(``tenants.dispatch``) instead of going to the shared queue.
"""

from __future__ import annotations

import asyncio
import logging

import workers.jobs.metrics as metrics
from config import Settings
from workers.jobs.batches.bulk import Outgoing, encode_jobs, publish_encoded
from workers.jobs.batches.models import BatchRecord
from workers.jobs.batches.sent_events import SentEvents, send_now
from workers.jobs.batches.store import BatchStore
from workers.jobs.errors import QueueUnavailable
from workers.jobs.model.spec import JobSpec
from workers.jobs.queue.limits import queue_limit
from workers.jobs.queue.publish import send_job
from workers.jobs.specs.checks import max_steps_of
from workers.jobs.store.jobs import Created, JobStore
from workers.jobs.tenants.dispatch import Dispatcher
from workers.jobs.tenants.models import TenantLimits
from workers.jobs.tenants.quotas import Quotas, admitted, check_batch_size
from workers.jobs.tenants.store import TenantStore

log = logging.getLogger("browserd.batches")


async def submit_job(store: JobStore, spec: JobSpec, settings: Settings, *, tenant: str | None = None) -> Created:
    """Record and publish one checked spec, ``tenant``'s (None: the operator's). Same idempotency
    key, same job (``created`` False).

    Raises ``QueueUnavailable`` (the job was cancelled) when its message cannot be published.
    """
    limits = await limits_of(store, tenant) if tenant is not None else None
    async with admitted(Quotas(store.redis, store.keys), tenant, limits, 1) as admission:
        made = await store.create(spec, max_steps=max_steps_of(spec, settings), tenant=tenant,
                                  admission=admission.token)
        admission.created = int(made.created)
    job_id = made.job_id
    if made.created:
        try:
            if tenant is not None:
                outgoing = Outgoing(job_id, spec.priority, queue_limit(spec, settings))
                await Dispatcher(store, settings).park(tenant, [outgoing])
            else:
                await asyncio.to_thread(send_job, job_id, spec.priority, queue_limit(spec, settings))
        except Exception as exc:
            log.error("could not queue job %s: %s", job_id, exc)
            await store.cancel(job_id)
            raise QueueUnavailable(str(exc)) from exc
    return made


async def limits_of(store: JobStore, tenant: str) -> TenantLimits:
    """The tenant's limits now (a tenant deleted meanwhile: none)."""
    found = await TenantStore(store.redis, store.keys).get(tenant)
    return found.limits if found is not None else TenantLimits()


async def publish_jobs(store: JobStore, job_ids: list[str], specs: list[JobSpec], settings: Settings,
                       tenant: str | None = None, events: SentEvents | None = None) -> None:
    """Publish recorded jobs (their ids, and the specs they run) in one bulk push (``batches.bulk``), then their ``task-sent``
    events (before returning, or by ``events`` after: the API's); a ``tenant``'s are parked for fair
    dispatch instead. Raises what the broker raised; a batch's submitter and a crawl's growing page share it."""
    outgoing = [Outgoing(job_id, spec.priority, queue_limit(spec, settings))
                for job_id, spec in zip(job_ids, specs, strict=True)]
    if not outgoing:
        return
    if tenant is not None:
        await Dispatcher(store, settings).park(tenant, outgoing)
        return
    encoded = await asyncio.to_thread(encode_jobs, outgoing)
    await publish_encoded(store.redis, encoded)
    if events is not None:
        events.send(outgoing)
    else:
        await send_now(outgoing)


async def submit_batch(store: JobStore, specs: list[JobSpec], settings: Settings, *,
                       schedule_id: str | None = None, webhook_url: str | None = None,
                       tenant: str | None = None, max_cost_usd: float | None = None,
                       events: SentEvents | None = None) -> BatchRecord:
    """Queue checked specs as one batch (``tenant``'s, or the operator's; ``max_cost_usd``: the
    LLM cost at which it stops starting jobs; ``events``: sends the jobs' ``task-sent`` events
    after this returns, see ``sent_events``); returns its record (already counting its queued jobs)."""
    limits = None
    if tenant is not None:
        limits = await limits_of(store, tenant)
        check_batch_size(tenant, limits, len(specs))
    batches = BatchStore(store)
    steps = [max_steps_of(spec, settings) for spec in specs]
    async with admitted(Quotas(store.redis, store.keys), tenant, limits, len(specs)) as admission:
        made = await batches.create(specs, steps, schedule_id=schedule_id, webhook_url=webhook_url, tenant=tenant,
                                    max_cost_usd=max_cost_usd, admission=admission.token)
        admission.created = sum(made.created)
    batch_id, job_ids, created = made.batch_id, made.job_ids, made.created
    fresh = [(job_id, spec) for job_id, spec, new in zip(job_ids, specs, created) if new]
    try:
        await publish_jobs(store, [job_id for job_id, _ in fresh], [spec for _, spec in fresh], settings, tenant,
                           events)
    except Exception as exc:
        log.error("could not queue batch %s: %s", batch_id, exc)
        await batches.cancel(batch_id)
        raise QueueUnavailable(str(exc)) from exc
    metrics.observe_batch_submitted()
    await batches.mark_submitted(batch_id)
    record = await batches.get(batch_id)
    assert record is not None
    return record
