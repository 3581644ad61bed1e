"""A page the site refused (429/503) is queued again as the same page (``crawl_retry.lua``), on a
real redis-server: once per refused job however often its settle runs (a worker killed after the
retry was queued runs the refused job again: it finds the retry and queues nothing), never past the
spec's ``retry_blocked``, never in a cancelled crawl, never for a job that is not the crawl's page,
and not for a revoked tenant's crawl."""

from __future__ import annotations

import json

from config import Settings
from tests.jobs.conftest import store  # noqa: F401  (the fixture)
from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.crawls.store import CrawlStore, FoundURL
from workers.jobs.lifecycle.crawling import page_job, retry_page
from workers.jobs.store.jobs import JobStore

SETTINGS = Settings(redis_url="redis://127.0.0.1:1/0")


async def crawl_of(store: JobStore, retry_blocked: int = 2, tenant: str | None = None) -> tuple[CrawlStore, str, str]:
    """A crawl with one page queued; its id and the page's job id."""
    crawls = CrawlStore(store)
    spec = CrawlSpec(start_urls=["http://shop.example/busy"], retry_blocked=retry_blocked)
    made = await crawls.create(spec, tenant=tenant)
    held = await crawls.spec(made.crawl_id)
    assert held is not None
    admitted = await crawls.admit(held, made.crawl_id, [FoundURL("http://shop.example/busy", 0)],
                                  page_job(spec, made.crawl_id, SETTINGS))
    return crawls, made.crawl_id, admitted.job_ids[0]


async def retry(crawls: CrawlStore, crawl_id: str, job_id: str) -> tuple[str | None, str]:
    held = await crawls.spec(crawl_id)
    assert held is not None
    done = await crawls.retry(held, crawl_id, job_id, page_job(held.spec, crawl_id, SETTINGS)("http://shop.example/busy"))
    return done.job_id, done.outcome


async def test_a_refused_page_is_queued_again_once_per_refused_job_as_the_same_page(store: JobStore) -> None:  # noqa: F811
    crawls, crawl_id, first = await crawl_of(store)
    held = await crawls.spec(crawl_id)
    assert held is not None
    second, why = await retry(crawls, crawl_id, first)
    assert why == "queued" and second is not None and second != first
    assert await retry(crawls, crawl_id, first) == (second, "already")  # the refused job run again: nothing new
    assert (await crawls.page(crawl_id, first)).retried_as == second
    page = json.loads(await store.redis.hget(store.keys.crawl_pages(crawl_id), second))
    assert (page["url"], page["depth"], page["retries"]) == ("http://shop.example/busy", 0, 1)
    assert await store.redis.hget(store.keys.batch(held.batch_id), "total") == "2"  # one job more, one page
    assert await store.redis.lrange(store.keys.batch_jobs(held.batch_id), 0, -1) == [first, second]
    record = await crawls.get(crawl_id)
    assert record is not None and (record.queued, record.retried, record.failed) == (1, 1, 0)

    third, why = await retry(crawls, crawl_id, second)
    assert why == "queued" and (await crawls.page(crawl_id, third)).retried_as is None
    assert await retry(crawls, crawl_id, third) == (None, "spent")  # retry_blocked 2: two more visits at most
    assert await store.redis.hget(store.keys.batch(held.batch_id), "total") == "3"
    assert (await crawls.get(crawl_id)).queued == 1


async def test_no_retry_in_a_cancelled_crawl_for_a_stranger_or_when_retries_are_off(store: JobStore) -> None:  # noqa: F811
    crawls, crawl_id, first = await crawl_of(store)
    held = await crawls.spec(crawl_id)
    assert held is not None
    assert await retry(crawls, crawl_id, "f" * 32) == (None, "unknown")  # a job labelled with the crawl, not its page
    await store.redis.hset(store.keys.batch(held.batch_id), "cancel_requested", "1")
    assert await retry(crawls, crawl_id, first) == (None, "closed")
    assert (await crawls.page(crawl_id, first)).retried_as is None

    crawls, crawl_id, first = await crawl_of(store, retry_blocked=0)
    assert (await retry_page(crawls, crawl_id, first, "http://shop.example/busy", SETTINGS)).job_id is None

    crawls, crawl_id, first = await crawl_of(store, tenant="gone")  # its tenant was deleted since
    assert (await retry_page(crawls, crawl_id, first, "http://shop.example/busy", SETTINGS)).job_id is None
    held = await crawls.spec(crawl_id)
    assert await store.redis.hget(store.keys.batch(held.batch_id), "total") == "1"


async def test_a_refused_job_is_taken_off_the_failed_pages_only_once_it_is_recorded_failed(store: JobStore) -> None:  # noqa: F811
    """Between the retry and the refused job's end, another page's failure must show: the crawl's
    ``failed`` was the batch's failed jobs less every retry, one too few meanwhile."""
    crawls = CrawlStore(store)
    spec = CrawlSpec(start_urls=["http://shop.example/busy"], retry_blocked=2)
    made = await crawls.create(spec)
    held = await crawls.spec(made.crawl_id)
    assert held is not None
    admitted = await crawls.admit(held, made.crawl_id, [FoundURL("http://shop.example/busy", 0),
                                                        FoundURL("http://shop.example/broken", 0)],
                                  page_job(spec, made.crawl_id, SETTINGS))
    refused, other = admitted.job_ids
    assert (await retry(crawls, made.crawl_id, refused))[1] == "queued"

    async def record_failed(job_id: str) -> None:  # what the finish script writes for a failed job of the batch
        await store.redis.hset(store.keys.job(job_id), "state", "failed")
        await store.redis.hincrby(store.keys.batch(held.batch_id), "failed", 1)

    await record_failed(other)  # the other page failed; the refused job has not ended yet
    record = await crawls.get(made.crawl_id)
    assert record is not None and (record.failed, record.retried, record.visited) == (1, 1, 1)
    await record_failed(refused)  # the refused job ends failed: not a failed page, its retry visits it
    record = await crawls.get(made.crawl_id)
    assert record is not None and (record.failed, record.retried, record.visited) == (1, 1, 1)
