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
from typing import TYPE_CHECKING, Any

from workers.jobs.batches.store import BatchStore
from workers.jobs.crawls.models import CrawlLine, CrawlRecord, CrawlSkips, CrawlSpec
from workers.jobs.ids import is_id, new_id
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.scripts import source

if TYPE_CHECKING:
    from workers.jobs.artifacts.store import ArtifactStore

MAX_SITEMAP_ERRORS = 20  # sitemap errors kept in the record
READ_CHUNK = 200  # crawl ids read from the index per round trip when listing
RESULTS_CHUNK = 500  # a crawl's pages read per round trip when its results lines are read


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


@dataclass(frozen=True)
class Admitted:
    """Jobs a call to ``admit`` created (their ids, the specs they run)."""

    job_ids: list[str]
    specs: list[Any]


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

    async def create(self, spec: CrawlSpec, schedule_id: str | None = None, tenant: str | None = None) -> CrawlIds:
        """Record a crawl and its (empty) batch (a run of ``schedule_id``, when given; ``tenant``'s,
        or the operator's: the batch and every page's job carry it); returns their ids. Seeds are
        ``admit``-ted next."""
        made = await self.batches.create([], [], webhook_url=str(spec.webhook_url) if spec.webhook_url else None,
                                         schedule_id=schedule_id, tenant=tenant)
        crawl_id = new_id()
        created_at = datetime.now(UTC).timestamp()
        fields = {"id": crawl_id, "batch": made.batch_id, "spec": spec.model_dump_json(), "tenant": tenant or "",
                  "created_at": repr(created_at), "max_pages": spec.max_pages, "deadline": "0", "queued": 0}
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
                        self.keys.crawl_frontier(crawl_id), self.keys.batch(batch_id), self.keys.batch_jobs(batch_id))
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
        tenant's).

        ``job(url) -> PageJob`` makes a page's job (``lifecycle.crawling.page_job``); ``admission``:
        the quota reservation's token each job's creation counts off. Returns the jobs created (publish them)."""
        batch_id = held.batch_id
        made: dict[str, Any] = {}
        argv: list[str] = []
        for c in found:
            page = job(c.url)
            args = self.jobs.create_args(page.spec, max_steps=page.max_steps, batch=batch_id, tenant=held.tenant,
                                         admission=admission)
            made[args[1]] = page.spec
            argv.append(json.dumps({"url": c.url, "depth": c.depth, "parent": c.parent, "sitemaps": c.sitemaps,
                                    "args": args}))
        if not argv:
            return Admitted([], [])
        keys = [self.keys.crawl(crawl_id), self.keys.crawl_seen(crawl_id), self.keys.crawl_pages(crawl_id),
                self.keys.batch(batch_id), self.keys.batch_jobs(batch_id), self.keys.crawl_frontier(crawl_id)]
        ids = await self._admit(keys=keys, args=[repr(datetime.now(UTC).timestamp()), *argv])
        return Admitted(list(ids), [made[i] for i in ids])

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
            argv.append(json.dumps({**entry, "args": args}))
        keys = [self.keys.crawl(crawl_id), self.keys.crawl_pages(crawl_id), self.keys.batch(held.batch_id),
                self.keys.batch_jobs(held.batch_id), self.keys.crawl_frontier(crawl_id),
                self.keys.crawl_seen(crawl_id), self.keys.expiring]
        reply = await self._resume(keys=keys, args=[held.batch_id, *argv])
        ids = list(reply[1:])
        return Resumed(reply[0] == "ok", Admitted(ids, [made[i] for i in ids]))

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

    async def page(self, crawl_id: str, job_id: str) -> PageInfo | None:
        raw = await self.redis.hget(self.keys.crawl_pages(crawl_id), job_id)
        if raw is None:
            return None
        data = json.loads(raw)
        return PageInfo(data["url"], int(data["depth"]), data.get("parent") or None, bool(data.get("sitemaps")))

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
        return CrawlRecord(
            id=crawl_id, batch_id=raw["batch"], tenant=raw.get("tenant") or None, state=batch.state,
            discovered=await self.redis.scard(self.keys.crawl_seen(crawl_id)),
            queued=int(raw.get("queued") or 0), resumed=int(raw.get("resumed") or 0),
            frontier=await self.redis.hlen(self.keys.crawl_frontier(crawl_id)), visited=counts.succeeded + counts.failed, failed=counts.failed, counts=counts,
            skipped=skipped, sitemap_pages=int(raw.get("sitemap_pages") or 0),
            follow_errors=int(raw.get("follow_errors") or 0),
            sitemap_errors=json.loads(raw.get("sitemap_errors") or "[]"),
            spec=CrawlSpec.model_validate_json(raw["spec"]),
            created_at=datetime.fromtimestamp(float(raw["created_at"]), UTC), finished_at=batch.finished_at,
        )

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
        while left is None or left > 0:
            job_ids = await self.batches.job_ids_from(batch_id, start, RESULTS_CHUNK)
            if not job_ids:
                return
            start += len(job_ids)
            raws = await self.redis.hmget(self.keys.crawl_pages(crawl_id), job_ids)
            pages = {job_id: json.loads(raw or "{}") for job_id, raw in zip(job_ids, raws)}
            # a page cancelled before it ran and queued again by a resume: that job's line says
            shown = [job_id for job_id in job_ids if not pages[job_id].get("resumed_as")]
            passed, shown = shown[:skip], shown[skip:]
            skip -= len(passed)
            if left is not None:
                shown, left = shown[:left], left - min(left, len(shown))
            for line in await self.batches.lines(shown, artifacts) if shown else []:
                page = pages[line.id]
                yield CrawlLine(url=page.get("url", ""), depth=int(page.get("depth") or 0), parent=page.get("parent"),
                                job_id=line.id, status=line.status, final_url=page.get("final_url"),
                                canonical=page.get("canonical"), links=page.get("links"), data=line.data,
                                final_answer=line.final_answer, error=line.error, category=line.category,
                                reused_from=line.reused_from)

    async def of_batches(self, batch_ids: list[str]) -> list[str | None]:
        """The crawl whose pages each batch holds (None: a plain batch): a crawl schedule's runs are
        batches, and the console links each run to its crawl's page."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for batch_id in batch_ids:
                pipe.hget(self.keys.batch(batch_id), "crawl")
            return [crawl_id or None for crawl_id in await pipe.execute()]
