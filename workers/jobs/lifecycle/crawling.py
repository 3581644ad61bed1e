"""Starting a crawl, and growing it: the seeds queued and published at submission, then each page's
finds queued and published by the worker that visited it (``workers.pipeline.features.crawls``);
a page the site refused queued again (``retry_page``); cancelling it with its frontier kept, and
resuming it from there.

Shared by ``POST /v1/crawls`` and the crawl feature, so a seed and a found page become jobs the
same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

import workers.jobs.metrics as metrics
from config import Settings
from workers.jobs.crawls.models import CrawlRecord, CrawlSpec
from workers.jobs.crawls.scope import check_pattern
from workers.jobs.crawls.store import CrawlStore, FoundURL, Retried, RetryOutcome
from workers.jobs.crawls.urls import SKIP
from workers.jobs.errors import CrawlNotCancelled, QueueUnavailable, SpecError
from workers.jobs.batches.store import BatchStore
from workers.jobs.lifecycle.cancelling import cancel_batch, settle_cancelled
from workers.jobs.lifecycle.finishing import Finisher
from workers.jobs.lifecycle.submission import publish_jobs
from workers.jobs.model.spec import JobSpec
from workers.jobs.recipes.checks import check_crawl_recipe
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.specs.checks import check_spec, check_webhook_url, max_steps_of, problems_of
from workers.jobs.store.jobs import JobStore
from workers.jobs.tenants.ceilings import Ceiling, tenant_ceiling
from workers.jobs.tenants.models import QuotaExceeded, TenantLimits
from workers.jobs.tenants.principal import Principal
from workers.jobs.tenants.quotas import Quotas, admitted
from workers.jobs.tenants.store import TenantStore

log = logging.getLogger("browserd.crawls")


@dataclass(frozen=True)
class PageJob:
    """The job that visits one page: its spec and the step budget it is recorded with."""

    spec: JobSpec
    max_steps: int


def page_job(spec: CrawlSpec, crawl_id: str, settings: Settings,
             ceiling: Ceiling | None = None) -> Callable[[str], PageJob]:
    """How the crawl's page at a URL becomes a job: its spec (checked like any job's, within the
    crawl's tenant's ``ceiling``) and step budget."""
    def make(url: str) -> PageJob:
        try:
            built = spec.page_spec(url, crawl_id)
        except ValidationError as exc:  # a crawl field a page's job refuses: the caller's mistake, named
            raise problems_of(exc) from None
        job = check_spec(built, settings, ceiling)
        return PageJob(job, max_steps_of(job, settings))
    return make


def check_crawl(spec: CrawlSpec, settings: Settings, ceiling: Ceiling | None = None) -> None:
    """What pydantic cannot check alone: the include/exclude patterns (RE2), then what a page's job
    needs, as for any job (``check_spec``: the script's actions, the output schema, the timeout,
    politeness, a tenant's ``ceiling``: networks, domains, steps, timeout), the pages' webhook as a
    job's; ``SpecError`` names the field. (The recipe is the tenant's: ``daemon.api`` looks it up.)"""
    for name in ("include", "exclude"):
        for pattern in getattr(spec, name):
            try:
                check_pattern(pattern)
            except ValueError as exc:
                raise SpecError.at(name, f"{pattern!r}: {exc}") from None
    if spec.page_webhook_url is not None:
        check_webhook_url(str(spec.page_webhook_url), settings, "page_webhook_url")
    page_job(spec, "0" * 32, settings, ceiling)(spec.seeds()[0])


def crawl_spec(raw: dict[str, Any], settings: Settings, where: str = "crawl",
               ceiling: Ceiling | None = None) -> CrawlSpec:
    """A crawl spec held as written (a schedule's ``crawl``), checked as ``POST /v1/crawls`` checks
    one (within ``ceiling``); ``SpecError`` names the field inside ``where``."""
    try:
        spec = CrawlSpec.model_validate(raw)
    except ValidationError as exc:
        raise problems_of(exc, where) from None
    try:
        check_crawl(spec, settings, ceiling)
    except SpecError as exc:
        raise exc.within(where) from None
    return spec


async def _owner(crawls: CrawlStore, tenant: str, settings: Settings) -> _TenantNow:
    """The crawl's tenant as it is now: its ceiling and quotas (None: revoked or deleted, so its
    crawl queues nothing more)."""
    found = await TenantStore(crawls.redis, crawls.keys).get(tenant)
    if found is None or found.revoked:
        return _TenantNow(None, None)
    return _TenantNow(found.limits, tenant_ceiling(Principal(found.name, found.limits), settings))


@dataclass(frozen=True)
class _TenantNow:
    """A crawl's tenant's limits and ceiling as they are now (both None: it may queue nothing)."""

    limits: TenantLimits | None
    ceiling: Ceiling | None


async def grow(crawls: CrawlStore, crawl_id: str, found: list[FoundURL], settings: Settings, *,
               seeds: bool = False) -> int:
    """Queue and publish the candidates the crawl has not seen (within its budget); how many were queued.

    A tenant's crawl queues its pages as the tenant's jobs: each within its ceiling as it is now, on
    its quotas (``queued``, ``jobs_per_day``; past one, found pages are counted ``skipped:quota``
    and not marked seen, so a later page may find them again; for the ``seeds`` the 429 is the
    submitter's) and parked for fair dispatch.

    A job recorded whose message could not be published stays queued: the reconciler publishes it
    (``BROWSERD_RECONCILE_*``), so the crawl loses no page."""
    held = await crawls.spec(crawl_id)
    if held is None or not found:
        return 0
    spec, tenant = held.spec, held.tenant
    fresh = [c for c, new in zip(found, await crawls.unseen(crawl_id, [c.url for c in found])) if new]
    owner = _TenantNow(None, None) if tenant is None else await _owner(crawls, tenant, settings)
    if tenant is not None and owner.limits is None:
        await _skipped(crawls, crawl_id, {SKIP.dedup: len(found) - len(fresh), SKIP.quota: len(fresh)})
        return 0
    try:
        async with admitted(Quotas(crawls.redis, crawls.keys), tenant, owner.limits, len(fresh)) as admission:
            made = await crawls.admit(held, crawl_id, fresh, page_job(spec, crawl_id, settings, owner.ceiling),
                                      admission.token)
            admission.created = len(made.job_ids)
    except QuotaExceeded:
        if seeds:
            raise
        await _skipped(crawls, crawl_id, {SKIP.dedup: len(found) - len(fresh), SKIP.quota: len(fresh)})
        return 0
    await _skipped(crawls, crawl_id, {SKIP.dedup: len(found) - len(fresh)})
    metrics.observe_crawl_pages("queued", len(made.job_ids))
    metrics.observe_crawl_skips(made.skips())  # the script's own counts: what it added to the record's
    await publish_jobs(crawls.jobs, made.job_ids, made.specs, settings, tenant)
    return len(made.job_ids)


async def _skipped(crawls: CrawlStore, crawl_id: str, skips: dict[str, int]) -> None:
    """Count links not queued in the crawl's record and in Prometheus alike, so the two agree."""
    await crawls.count_skips(crawl_id, skips)
    metrics.observe_crawl_skips(skips)


async def retry_page(crawls: CrawlStore, crawl_id: str, job_id: str, url: str, settings: Settings) -> Retried:
    """The site answered 429 or 503 to job ``job_id``'s visit of ``url``: queue the page again, as a
    new job standing for that one (``CrawlStore.retry``: once per refused job, at most the spec's
    ``retry_blocked`` times per page), and publish it. Its navigation waits for the site's back-off
    (the Retry-After) as every navigation to the site does. A tenant's retry is checked as a found
    page is, against its ceiling and quotas as they are now: refused, the page is not retried."""
    held = await crawls.spec(crawl_id)
    if held is None or held.spec.retry_blocked <= 0:
        return Retried(None, RetryOutcome.spent)
    owner = _TenantNow(None, None) if held.tenant is None else await _owner(crawls, held.tenant, settings)
    if held.tenant is not None and owner.limits is None:
        return Retried(None, RetryOutcome.closed)
    try:
        page = page_job(held.spec, crawl_id, settings, owner.ceiling)(url)
        async with admitted(Quotas(crawls.redis, crawls.keys), held.tenant, owner.limits, 1) as admission:
            done = await crawls.retry(held, crawl_id, job_id, page, admission.token)
            admission.created = int(done.new)
    except (QuotaExceeded, SpecError) as exc:
        log.info("crawl %s: the page %s the site refused is not queued again: %s", crawl_id, url, exc)
        return Retried(None, RetryOutcome.refused)
    if done.new and done.job_id is not None:
        await publish_jobs(crawls.jobs, [done.job_id], [done.spec], settings, held.tenant)
    return done


async def submit_crawl(store: JobStore, spec: CrawlSpec, settings: Settings,
                       schedule_id: str | None = None, tenant: str | None = None) -> CrawlRecord:
    """Record a crawl (a run of ``schedule_id``, when given; ``tenant``'s, or the operator's), queue
    its seeds (the first one reads the sitemaps), publish them. A tenant over its quotas for the
    seeds: ``QuotaExceeded``, and nothing of the crawl stays."""
    crawls = CrawlStore(store)
    made = await crawls.create(spec, schedule_id, tenant)
    crawl_id, batch_id = made.crawl_id, made.batch_id
    reads_sitemaps = bool(spec.sitemaps) or spec.robots_sitemaps
    seeds, seen = [], set()
    for url in spec.seeds():
        norm = spec.normalise(url)
        if norm is not None and norm not in seen:
            seen.add(norm)
            seeds.append(FoundURL(norm, 0, None, sitemaps=reads_sitemaps and not seeds))
    try:
        await grow(crawls, crawl_id, seeds, settings, seeds=True)
    except QuotaExceeded:  # refused whole, as a batch past a quota: nothing of it stays
        await crawls.discard(crawl_id, batch_id, schedule_id)
        raise
    except Exception as exc:
        log.error("could not queue crawl %s: %s", crawl_id, exc)
        await cancel_batch(store, batch_id)
        raise QueueUnavailable(str(exc)) from exc
    await crawls.start_clock(crawl_id, spec.max_duration)
    await crawls.batches.mark_submitted(batch_id)
    record = await crawls.get(crawl_id)
    assert record is not None
    return record


async def start_crawl(store: JobStore, spec: CrawlSpec, settings: Settings, who: Principal,
                      recipes: RecipeStore) -> CrawlRecord:
    """A crawl as ``POST /v1/crawls`` and the console's form start one: checked within ``who``'s
    ceiling (its patterns, a page's job, its webhooks), its recipe among ``recipes`` (``who``'s own),
    then recorded and its seeds queued (``submit_crawl``)."""
    check_crawl(spec, settings, tenant_ceiling(who, settings))
    if spec.webhook_url is not None:
        check_webhook_url(str(spec.webhook_url), settings)
    await check_crawl_recipe(spec, recipes)
    return await submit_crawl(store, spec, settings, tenant=who.tenant)


async def cancel_crawl(store: JobStore, crawl_id: str, batch_id: str, tenant: str | None = None) -> None:
    """Cancel the crawl's batch, keeping what it had still to visit: the queued pages cancelled
    before they ran go to its frontier (links found later join it as they are found), for a resume."""
    crawls = CrawlStore(store)
    cancelled = await BatchStore(store).cancel(batch_id)
    await crawls.hold(crawl_id, cancelled)
    await settle_cancelled(store, batch_id, cancelled, tenant)


async def resume_crawl(store: JobStore, crawl_id: str, settings: Settings) -> int:
    """A cancelled crawl goes on from where it stopped: its frontier is queued again, each URL once
    (a page visited is never queued again: it left the frontier, or never was in it), within its
    tenant's ceilings and quotas as they are now, as at its start (a tenant over a quota:
    ``QuotaExceeded``, and the crawl stays cancelled; a revoked tenant: ``CrawlNotCancelled``
    cannot say it, so ``SpecError``). Not cancelled (completed, or running): ``CrawlNotCancelled``.
    Returns how many pages were queued."""
    crawls = CrawlStore(store)
    held = await crawls.spec(crawl_id)
    if held is None:
        raise CrawlNotCancelled(f"crawl {crawl_id} is gone")
    record = await crawls.batches.get(held.batch_id)
    if record is None or not record.cancel_requested:
        raise CrawlNotCancelled(f"crawl {crawl_id} was not cancelled ({record.state.value if record else 'gone'}): "
                                "only a cancelled crawl can be resumed")
    owner = _TenantNow(None, None) if held.tenant is None else await _owner(crawls, held.tenant, settings)
    if held.tenant is not None and owner.limits is None:
        raise SpecError.at("tenant", f"the crawl's tenant {held.tenant!r} is revoked or deleted")
    pending = len(await crawls.frontier(crawl_id))
    async with admitted(Quotas(crawls.redis, crawls.keys), held.tenant, owner.limits, pending) as admission:
        done = await crawls.resume(held, crawl_id, page_job(held.spec, crawl_id, settings, owner.ceiling),
                                   admission.token)
        admission.created = len(done.admitted.job_ids)
    if not done.cancelled:
        raise CrawlNotCancelled(f"crawl {crawl_id} is running again (resumed already)")
    await crawls.start_clock(crawl_id, held.spec.max_duration, restart=True)
    metrics.observe_crawl_pages("queued", len(done.admitted.job_ids))
    metrics.observe_crawl_skips(done.admitted.skips())
    await publish_jobs(crawls.jobs, done.admitted.job_ids, done.admitted.specs, settings, held.tenant)
    await crawls.batches.complete_if_done(held.batch_id)  # an empty frontier: it completes again at once
    await Finisher(store).batch_counted(held.batch_id)
    log.info("crawl %s resumed: %d pages queued again", crawl_id, len(done.admitted.job_ids))
    return len(done.admitted.job_ids)
