"""Crawls in Redis: the crawl's record, its frontier (seen set, pages) and its growing batch.

A crawl owns one batch (``batches.store``): every page it visits is a job of that batch, so the
batch's counters, cancelling, completion (exactly once, with its webhook) and results are the
crawl's. What a crawl adds is admission (``admit``, one ``crawl_admit.lua`` call): a candidate URL
joins the seen set and, if it is new and the crawl has budget left, becomes a queued job of the
batch, whose ``total`` grows in the same atomic step. A cancel keeps what the crawl had still to
visit in its frontier (``hold``, and ``crawl_admit.lua`` for links found after it), from which
``resume`` (one ``crawl_resume.lua`` call) queues it again. Keys: ``store.keys`` (``crawl:*``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from workers.jobs.batches.store import BatchStore
from workers.jobs.crawls.models import MAX_TRAPS_SHOWN, CrawlLine, CrawlRecord, CrawlSkips, CrawlSpec, CrawlTrap
from workers.jobs.crawls.urls import SKIP, pattern
from workers.jobs.ids import is_id, new_id
from workers.jobs.model.status import JobStatus
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.scripts import source

if TYPE_CHECKING:
    from workers.jobs.artifacts.store import ArtifactStore

MAX_SITEMAP_ERRORS = 20  # sitemap errors kept in the record
READ_CHUNK = 200  # crawl ids read from the index per round trip when listing
RESULTS_CHUNK = 500  # a crawl's pages read per round trip when its results lines are read
LASTMOD = "lastmod"  # the pages hash's field "lastmod <url>": the sitemaps' lastmod of that page


@dataclass(frozen=True)
class FoundURL:
    """A URL found for a crawl (normalised, in scope, within max_depth) and where it was found."""

    url: str
    depth: int
    parent: str | None = None
    sitemaps: bool = False  # the job that visits it reads the crawl's sitemaps


@dataclass(frozen=True)
class PageInfo:
    """What the crawl knows of one page job: the URL it visits, its depth, where it was found."""

    url: str
    depth: int
    parent: str | None
    sitemaps: bool
    retried_as: str | None = None  # the site refused this job's visit: that job visits the page again


class RetryOutcome(StrEnum):
    """What ``crawl_retry.lua`` (or the caller before it) did with a page the site refused."""

    queued = "queued"  # this call queued the page again: publish its job
    already = "already"  # an earlier attempt of the refused job queued it: its job stands
    unknown = "unknown"  # the job is not a page of the crawl
    closed = "closed"  # the crawl is cancelled or finished (or its tenant revoked): no retry
    spent = "spent"  # the page had its retry_blocked visits again already
    refused = "refused"  # the tenant's ceiling or quota refused the new job


@dataclass(frozen=True)
class Retried:
    """What ``retry`` did: ``job_id`` stands for the refused job (None: no retry: ``outcome`` says why),
    ``new`` when this call queued it (publish it; else an earlier attempt of the refused job did)."""

    job_id: str | None
    outcome: RetryOutcome
    spec: Any = None

    @property
    def new(self) -> bool:
        return self.outcome is RetryOutcome.queued


@dataclass(frozen=True)
class Admitted:
    """What a call to ``admit`` (or ``resume``) did with its candidates: the jobs it created (their
    ids, the specs they run), and how many it did not queue, by why: each count is what the call
    added to the crawl's ``skipped`` counters (``held``: kept in a cancelled crawl's frontier, not a
    skip), so Prometheus can count exactly what the record does."""

    job_ids: list[str]
    specs: list[Any]
    dedup: int = 0
    budget: int = 0
    trap: int = 0
    held: int = 0

    def skips(self) -> dict[str, int]:
        """The skips by reason, as the record's counters and ``metrics.observe_crawl_skips`` name them."""
        return {SKIP.dedup: self.dedup, SKIP.budget: self.budget, SKIP.trap: self.trap}


def _admitted(reply: str, made: dict[str, Any]) -> Admitted:
    """The typed result of ``crawl_admit.lua`` or ``crawl_resume.lua`` (a JSON object; cjson
    writes an empty list as ``{}``)."""
    done = json.loads(reply)
    ids = done.get("ids") or []
    ids = ids if isinstance(ids, list) else []
    return Admitted(ids, [made[i] for i in ids], dedup=int(done.get("dedup") or 0), budget=int(done.get("budget") or 0),
                    trap=int(done.get("trap") or 0), held=int(done.get("held") or 0))


@dataclass(frozen=True)
class Resumed:
    """What ``resume`` did: whether the crawl was cancelled (else nothing changed), the jobs it queued."""

    cancelled: bool
    admitted: Admitted


@dataclass(frozen=True)
class CrawlIds:
    """A crawl's id and its batch's."""

    crawl_id: str
    batch_id: str


@dataclass(frozen=True)
class HeldCrawl:
    """A crawl's spec as recorded, its batch's id and its tenant (None: the operator's)."""

    spec: CrawlSpec
    batch_id: str
    tenant: str | None = None


class CrawlStore:
    def __init__(self, jobs: JobStore) -> None:
        self.jobs = jobs
        self.batches = BatchStore(jobs)
        self.redis = jobs.redis
        self.keys = jobs.keys
        self._admit = self.redis.register_script(source("crawl_admit", CREATE_ONE=source("job_create")))
        self._resume = self.redis.register_script(source("crawl_resume", CREATE_ONE=source("job_create")))
        self._retry = self.redis.register_script(source("crawl_retry", CREATE_ONE=source("job_create")))

    async def create(self, spec: CrawlSpec, schedule_id: str | None = None, tenant: str | None = None) -> CrawlIds:
        """Record a crawl and its (empty) batch (a run of ``schedule_id``, when given; ``tenant``'s,
        or the operator's: the batch and every page's job carry it); returns their ids. Seeds are
        ``admit``-ted next."""
        made = await self.batches.create([], [], webhook_url=str(spec.webhook_url) if spec.webhook_url else None,
                                         schedule_id=schedule_id, tenant=tenant)
        crawl_id = new_id()
        created_at = datetime.now(UTC).timestamp()
        fields = {"id": crawl_id, "batch": made.batch_id, "spec": spec.model_dump_json(), "tenant": tenant or "",
                  "created_at": repr(created_at), "max_pages": spec.max_pages, "deadline": "0", "queued": 0,
                  "max_pages_per_pattern": spec.max_pages_per_pattern or 0}
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.keys.crawl(crawl_id), mapping=fields)
            pipe.hset(self.keys.batch(made.batch_id), "crawl", crawl_id)  # its completion expires the crawl too
            pipe.zadd(self.keys.crawls, {crawl_id: created_at})
            await pipe.execute()
        return CrawlIds(crawl_id, made.batch_id)

    async def discard(self, crawl_id: str, batch_id: str, schedule_id: str | None = None) -> None:
        """Forget a crawl refused before any page was queued (its tenant's quota), and its empty batch."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(self.keys.crawl(crawl_id), self.keys.crawl_seen(crawl_id), self.keys.crawl_pages(crawl_id),
                        self.keys.crawl_frontier(crawl_id), self.keys.crawl_patterns(crawl_id),
                        self.keys.crawl_traps(crawl_id), self.keys.crawl_refused(crawl_id), self.keys.batch(batch_id),
                        self.keys.batch_jobs(batch_id))
            pipe.zrem(self.keys.crawls, crawl_id)
            pipe.zrem(self.keys.batches, batch_id)
            if schedule_id:
                pipe.zrem(self.keys.schedule_runs(schedule_id), batch_id)
            await pipe.execute()

    async def start_clock(self, crawl_id: str, max_duration: float | None, restart: bool = False) -> None:
        """From now on, no page is queued after ``created_at + max_duration``: set once the seeds are
        queued, so a short ``max_duration`` still visits the start pages. ``restart`` (a resume): the
        crawl's ``max_duration`` counts again from now."""
        if max_duration:
            created_at = (datetime.now(UTC).timestamp() if restart
                          else float(await self.redis.hget(self.keys.crawl(crawl_id), "created_at") or 0))
            await self.redis.hset(self.keys.crawl(crawl_id), "deadline", repr(created_at + max_duration))

    async def spec(self, crawl_id: str) -> HeldCrawl | None:
        """The crawl's spec, batch id and tenant; None when the crawl is gone."""
        raw, batch_id, tenant = await self.redis.hmget(self.keys.crawl(crawl_id), ["spec", "batch", "tenant"])
        return HeldCrawl(CrawlSpec.model_validate_json(raw), batch_id, tenant or None) if raw and batch_id else None

    async def unseen(self, crawl_id: str, urls: list[str]) -> list[bool]:
        """Whether each URL is not yet in the crawl's seen set (a hint: ``admit`` decides)."""
        if not urls:
            return []
        return [not flag for flag in await self.redis.smismember(self.keys.crawl_seen(crawl_id), urls)]

    async def admit(self, held: HeldCrawl, crawl_id: str, found: list[FoundURL], job: Any,
                    admission: str | None = None) -> Admitted:
        """Queue each candidate not yet seen, within the crawl's budget, as a job of its batch (its
        tenant's), and within its pattern's cap (``urls.pattern``, ``max_pages_per_pattern``).

        ``job(url) -> PageJob`` makes a page's job (``lifecycle.crawling.page_job``); ``admission``:
        the quota reservation's token each job's creation counts off. Returns the jobs created (publish
        them) and what became of the others."""
        batch_id = held.batch_id
        made: dict[str, Any] = {}
        argv: list[str] = []
        for c in found:
            page = job(c.url)
            args = self.jobs.create_args(page.spec, max_steps=page.max_steps, batch=batch_id, tenant=held.tenant,
                                         admission=admission)
            made[args[1]] = page.spec
            argv.append(json.dumps({"url": c.url, "depth": c.depth, "parent": c.parent, "sitemaps": c.sitemaps,
                                    "pattern": pattern(c.url), "args": args}))
        if not argv:
            return Admitted([], [])
        keys = [self.keys.crawl(crawl_id), self.keys.crawl_seen(crawl_id), self.keys.crawl_pages(crawl_id),
                self.keys.batch(batch_id), self.keys.batch_jobs(batch_id), self.keys.crawl_frontier(crawl_id),
                self.keys.crawl_patterns(crawl_id), self.keys.crawl_traps(crawl_id)]
        return _admitted(await self._admit(keys=keys, args=[repr(datetime.now(UTC).timestamp()), *argv]), made)

    async def hold(self, crawl_id: str, job_ids: list[str]) -> None:
        """The crawl was cancelled and these queued page jobs with it, before they ran: keep their
        URLs in its frontier (with the job each had: ``resume`` queues it again without taking the
        budget twice)."""
        if not job_ids:
            return
        raws = await self.redis.hmget(self.keys.crawl_pages(crawl_id), job_ids)
        held = {}
        for job_id, raw in zip(job_ids, raws):
            if raw is not None:
                page = json.loads(raw)
                held[page["url"]] = json.dumps({"url": page["url"], "depth": page["depth"], "parent": page.get("parent"),
                                                "sitemaps": bool(page.get("sitemaps")), "job": job_id})
        if held:
            await self.redis.hset(self.keys.crawl_frontier(crawl_id), mapping=held)

    async def frontier(self, crawl_id: str) -> list[FoundURL]:
        """The URLs a cancelled crawl had still to visit, in no particular order."""
        raws = await self.redis.hvals(self.keys.crawl_frontier(crawl_id))
        return [FoundURL(d["url"], int(d["depth"]), d.get("parent") or None, bool(d.get("sitemaps")))
                for d in map(json.loads, raws)]

    async def resume(self, held: HeldCrawl, crawl_id: str, job: Any, admission: str | None = None) -> Resumed:
        """Reopen a cancelled crawl and queue its frontier, each URL once (``crawl_resume.lua``);
        ``job(url) -> PageJob`` and ``admission`` as for ``admit``. Publish the jobs it returns."""
        raws = await self.redis.hgetall(self.keys.crawl_frontier(crawl_id))
        made: dict[str, Any] = {}
        argv: list[str] = []
        for raw in raws.values():
            entry = json.loads(raw)
            page = job(entry["url"])
            args = self.jobs.create_args(page.spec, max_steps=page.max_steps, batch=held.batch_id, tenant=held.tenant,
                                         admission=admission)
            made[args[1]] = page.spec
            argv.append(json.dumps({**entry, "pattern": pattern(entry["url"]), "args": args}))
        keys = [self.keys.crawl(crawl_id), self.keys.crawl_pages(crawl_id), self.keys.batch(held.batch_id),
                self.keys.batch_jobs(held.batch_id), self.keys.crawl_frontier(crawl_id),
                self.keys.crawl_seen(crawl_id), self.keys.expiring, self.keys.crawl_patterns(crawl_id),
                self.keys.crawl_traps(crawl_id)]
        reply = await self._resume(keys=keys, args=[held.batch_id, *argv])
        return Resumed(json.loads(reply).get("state") == "ok", _admitted(reply, made))

    async def retry(self, held: HeldCrawl, crawl_id: str, job_id: str, page: Any, admission: str | None = None) -> Retried:
        """Queue the page the site refused to job ``job_id`` again, once per refused job and at most
        the spec's ``retry_blocked`` times per page (``crawl_retry.lua``); ``page`` is its ``PageJob``
        (``lifecycle.crawling.page_job``), ``admission`` as for ``admit``."""
        args = self.jobs.create_args(page.spec, max_steps=page.max_steps, batch=held.batch_id, tenant=held.tenant,
                                     admission=admission)
        keys = [self.keys.crawl(crawl_id), self.keys.crawl_pages(crawl_id), self.keys.batch(held.batch_id),
                self.keys.batch_jobs(held.batch_id), self.keys.crawl_refused(crawl_id)]
        reply = await self._retry(keys=keys, args=[job_id, held.spec.retry_blocked, json.dumps(args)])
        return Retried(reply[1] if len(reply) > 1 else None, RetryOutcome(reply[0]), page.spec)

    async def mark_seen(self, crawl_id: str, urls: list[str]) -> None:
        """URLs a visited page is also known by (its final URL, its canonical): never queued after."""
        if urls:
            await self.redis.sadd(self.keys.crawl_seen(crawl_id), *urls)

    async def count_skips(self, crawl_id: str, skips: dict[str, int]) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            for reason, n in skips.items():
                if n:
                    pipe.hincrby(self.keys.crawl(crawl_id), f"skipped:{reason}", n)
            await pipe.execute()

    async def note_follow_error(self, crawl_id: str) -> None:
        """A page whose follow call gave no usable scores (its links went by the scope rules)."""
        await self.redis.hincrby(self.keys.crawl(crawl_id), "follow_errors", 1)

    async def note_sitemaps(self, crawl_id: str, pages: int, errors: list[str]) -> None:
        key = self.keys.crawl(crawl_id)
        await self.redis.hincrby(key, "sitemap_pages", pages)
        if errors:
            await self.redis.hset(key, "sitemap_errors", json.dumps(errors[:MAX_SITEMAP_ERRORS]))

    async def note_lastmod(self, crawl_id: str, lastmods: dict[str, str]) -> None:
        """When the sitemaps say each page (normalised URL) last changed, for its results line: kept
        in the pages hash as ``lastmod <url>`` (no job id has a space), so it expires, persists and
        goes with the crawl as its pages do."""
        if lastmods:
            await self.redis.hset(self.keys.crawl_pages(crawl_id),
                                  mapping={f"{LASTMOD} {url}": when for url, when in lastmods.items()})

    async def page(self, crawl_id: str, job_id: str) -> PageInfo | None:
        raw = await self.redis.hget(self.keys.crawl_pages(crawl_id), job_id)
        if raw is None:
            return None
        data = json.loads(raw)
        return PageInfo(data["url"], int(data["depth"]), data.get("parent") or None, bool(data.get("sitemaps")),
                        data.get("retried_as") or None)

    async def note_page(self, crawl_id: str, job_id: str, **found: Any) -> None:
        """What the visit found (final URL, canonical, links), kept with the page for its results line."""
        key = self.keys.crawl_pages(crawl_id)
        raw = await self.redis.hget(key, job_id)
        if raw is not None:
            await self.redis.hset(key, job_id, json.dumps({**json.loads(raw), **found}))

    async def get(self, crawl_id: str) -> CrawlRecord | None:
        if not is_id(crawl_id):
            return None
        raw = await self.redis.hgetall(self.keys.crawl(crawl_id))
        if not raw.get("id"):
            return None
        batch = await self.batches.get(raw["batch"])
        if batch is None:
            return None
        counts = batch.counts
        skipped = CrawlSkips(**{k: int(raw.get(f"skipped:{k}") or 0) for k in CrawlSkips.model_fields})
        trapped = sorted(((int(n), p) for p, n in (await self.redis.hgetall(self.keys.crawl_traps(crawl_id))).items()),
                         reverse=True)[:MAX_TRAPS_SHOWN]
        retried = int(raw.get("retried") or 0)
        # each refused visit queued again is one failed job of the batch but not a failed page (its
        # retry's line says how the page ended): only those already recorded failed are taken off
        failed = max(0, counts.failed - await self._refused_failed(crawl_id))
        return CrawlRecord(
            id=crawl_id, batch_id=raw["batch"], tenant=raw.get("tenant") or None, state=batch.state,
            discovered=await self.redis.scard(self.keys.crawl_seen(crawl_id)),
            queued=int(raw.get("queued") or 0), resumed=int(raw.get("resumed") or 0),
            frontier=await self.redis.hlen(self.keys.crawl_frontier(crawl_id)),
            visited=counts.succeeded + failed, failed=failed, retried=retried, counts=counts,
            skipped=skipped, traps=[CrawlTrap(pattern=p, skipped=n) for n, p in trapped],
            sitemap_pages=int(raw.get("sitemap_pages") or 0), follow_errors=int(raw.get("follow_errors") or 0),
            sitemap_errors=json.loads(raw.get("sitemap_errors") or "[]"),
            spec=CrawlSpec.model_validate_json(raw["spec"]),
            created_at=datetime.fromtimestamp(float(raw["created_at"]), UTC), finished_at=batch.finished_at,
        )

    async def _refused_failed(self, crawl_id: str) -> int:
        """How many of the crawl's refused jobs (queued again) the batch already counts as failed."""
        refused = list(await self.redis.smembers(self.keys.crawl_refused(crawl_id)))
        if not refused:
            return 0
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in refused:
                pipe.hget(self.keys.job(job_id), "state")
            states = await pipe.execute()
        return sum(1 for state in states if state == JobStatus.failed.value)

    async def recent(self, limit: int = 50, before: float | None = None,
                     tenant: str | None = None) -> list[CrawlRecord]:
        """Crawls newest first, started before ``before`` (epoch seconds) when given; ``tenant``:
        only that tenant's (None: everyone's). Crawls whose record expired are dropped from the index."""
        found: list[CrawlRecord] = []
        high: float | str = f"({before}" if before is not None else "+inf"
        offset = 0
        while len(found) < limit:
            ids = await self.redis.zrevrangebyscore(self.keys.crawls, high, "-inf", start=offset, num=READ_CHUNK)
            if not ids:
                break
            offset += len(ids)
            owners = await self._owners(ids)
            for crawl_id, owner in zip(ids, owners):
                if owner is False:
                    await self.redis.zrem(self.keys.crawls, crawl_id)
                elif tenant is None or owner == tenant:
                    record = await self.get(crawl_id)
                    if record is not None:
                        found.append(record)
                        if len(found) >= limit:
                            break
        return found

    async def _owners(self, crawl_ids: list[str]) -> list[str | None | bool]:
        """Each crawl's tenant (None: the operator's; False: its record is gone)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for crawl_id in crawl_ids:
                pipe.hmget(self.keys.crawl(crawl_id), ["id", "tenant"])
            rows = await pipe.execute()
        return [False if not row[0] else (row[1] or None) for row in rows]

    async def results(self, crawl_id: str, batch_id: str, artifacts: ArtifactStore | None = None,
                      offset: int = 0, limit: int | None = None) -> AsyncIterator[CrawlLine]:
        """One line per page, in the order pages were queued: ``limit`` lines (None: all) after the
        first ``offset``. The batch's job ids and their pages are read a chunk at a time (a crawl of
        100,000 pages is never read whole), and job records only for the lines returned."""
        start, skip, left = 0, offset, limit
        pages_key = self.keys.crawl_pages(crawl_id)
        while left is None or left > 0:
            job_ids = await self.batches.job_ids_from(batch_id, start, RESULTS_CHUNK)
            if not job_ids:
                return
            start += len(job_ids)
            raws = await self.redis.hmget(pages_key, job_ids)
            pages = {job_id: json.loads(raw or "{}") for job_id, raw in zip(job_ids, raws)}
            # queued again (by a resume, or after the site refused it): that job's line says
            shown = [job_id for job_id in job_ids
                     if not pages[job_id].get("resumed_as") and not pages[job_id].get("retried_as")]
            passed, shown = shown[:skip], shown[skip:]
            skip -= len(passed)
            if left is not None:
                shown, left = shown[:left], left - min(left, len(shown))
            if not shown:
                continue
            urls = [pages[job_id].get("url", "") for job_id in shown]
            lastmods = dict(zip(urls, await self.redis.hmget(pages_key, [f"{LASTMOD} {u}" for u in urls])))
            for line in await self.batches.lines(shown, artifacts):
                page = pages[line.id]
                url = page.get("url", "")
                yield CrawlLine(url=url, depth=int(page.get("depth") or 0), parent=page.get("parent"),
                                job_id=line.id, status=line.status, final_url=page.get("final_url"),
                                canonical=page.get("canonical"), links=page.get("links"), data=line.data,
                                final_answer=line.final_answer, error=line.error, category=line.category,
                                lastmod=lastmods.get(url), reused_from=line.reused_from)

    async def of_batches(self, batch_ids: list[str]) -> list[str | None]:
        """The crawl whose pages each batch holds (None: a plain batch): a crawl schedule's runs are
        batches, and the console links each run to its crawl's page."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for batch_id in batch_ids:
                pipe.hget(self.keys.batch(batch_id), "crawl")
            return [crawl_id or None for crawl_id in await pipe.execute()]
