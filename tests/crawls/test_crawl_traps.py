"""The per-pattern cap on crawler traps, and what ``crawl_admit.lua`` says it did with each candidate.

A real redis-server (the module's ``redis``): the cap is checked and counted in the same Lua call
that queues a page, so two workers admitting at once cannot pass it; the call's typed answer
(``Admitted``: jobs, dedup, budget, trap, held) is exactly what it added to the record's counters.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from config import Settings
from tests.support.redis_server import RedisServer
from workers.jobs.batches.store import BatchStore
from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.crawls.store import CrawlStore, FoundURL, HeldCrawl
from workers.jobs.crawls.urls import MAX_PATTERN, pattern
from workers.jobs.ids import new_id
from workers.jobs.lifecycle.crawling import page_job
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys

SETTINGS = Settings(redis_url="redis://127.0.0.1:1/0")
SITE = "http://cal.example"


@pytest_asyncio.fixture
async def store(redis: RedisServer) -> AsyncIterator[JobStore]:
    client = connect(redis.url)
    yield JobStore(client, result_ttl=60, keys=Keys(prefix=f"t{new_id()[:8]}:"))
    await client.aclose()


@pytest.mark.parametrize(("url", "shape"), [
    (f"{SITE}/calendar/2026/1", "cal.example/calendar/{n}/{n}"),
    (f"{SITE}/calendar/1999/12?day=30&view=m", "cal.example/calendar/{n}/{n}?day&view"),
    (f"{SITE}/calendar/1999/12?view=w&day=1", "cal.example/calendar/{n}/{n}?day&view"),  # values dropped, keys sorted
    (f"{SITE}/news/2026-01-15/a", "cal.example/news/{date}/a"),
    (f"{SITE}/s/0a1b2c3d4e5f6789/cart", "cal.example/s/{id}/cart"),  # a session id in the path
    (f"{SITE}/o/123e4567-e89b-12d3-a456-426614174000", "cal.example/o/{id}"),
    (f"{SITE}/p;jsessionid=AB12CD34?x=1", "cal.example/p?jsessionid&x"),
    (f"{SITE}/page-12", "cal.example/page-{n}"),
    (f"{SITE}/about", "cal.example/about"),
    (f"{SITE}/product/blue-mug", "cal.example/product/blue-mug"),  # words are not ids
    ("http://cal.example:8080/", "cal.example:8080/"),
])
def test_a_urls_pattern_is_its_shape(url: str, shape: str) -> None:
    assert pattern(url) == shape


def test_a_hostile_url_has_a_bounded_pattern() -> None:
    assert len(pattern(f"{SITE}/{'a/' * 5000}?{'&'.join(f'k{i}=v' for i in range(2000))}")) == MAX_PATTERN


def found(urls: list[str], depth: int = 1) -> list[FoundURL]:
    return [FoundURL(u, depth, f"{SITE}/") for u in urls]


def months(start: int, n: int) -> list[str]:
    return [f"{SITE}/calendar/{2000 + (start + i) // 12}/{(start + i) % 12 + 1}" for i in range(n)]


async def crawl(store: JobStore, **spec: object) -> tuple[CrawlStore, HeldCrawl, str]:
    crawls = CrawlStore(store)
    made_spec = CrawlSpec(start_urls=[f"{SITE}/"], **spec)
    made = await crawls.create(made_spec)
    return crawls, HeldCrawl(made_spec, made.batch_id), made.crawl_id


async def admit(crawls: CrawlStore, held: HeldCrawl, crawl_id: str, urls: list[str]):  # noqa: ANN201
    return await crawls.admit(held, crawl_id, found(urls), page_job(held.spec, crawl_id, SETTINGS))


async def test_a_pattern_past_its_cap_is_skipped_as_a_trap_and_reported(store: JobStore) -> None:
    crawls, held, crawl_id = await crawl(store, max_pages_per_pattern=3, max_pages=1000)
    done = await admit(crawls, held, crawl_id, months(0, 10) + [f"{SITE}/about"])
    assert len(done.job_ids) == 4 and (done.trap, done.budget, done.dedup, done.held) == (7, 0, 0, 0)
    record = await crawls.get(crawl_id)
    assert record is not None and record.queued == 4 and record.skipped.trap == 7
    assert [(t.pattern, t.skipped) for t in record.traps] == [("cal.example/calendar/{n}/{n}", 7)]
    again = await admit(crawls, held, crawl_id, months(20, 2))  # the pattern's cap never grows back
    assert again.job_ids == [] and again.trap == 2
    assert (await crawls.get(crawl_id)).traps[0].skipped == 9  # type: ignore[union-attr]
    assert (await admit(crawls, held, crawl_id, months(20, 1))).dedup == 1  # a trap's URL is seen: dedup after


async def test_no_cap_when_it_is_null(store: JobStore) -> None:
    crawls, held, crawl_id = await crawl(store, max_pages_per_pattern=None, max_pages=1000)
    done = await admit(crawls, held, crawl_id, months(0, 30))
    assert len(done.job_ids) == 30 and done.trap == 0
    assert (await crawls.get(crawl_id)).traps == []  # type: ignore[union-attr]


async def test_two_workers_admitting_at_once_cannot_pass_the_cap(store: JobStore) -> None:
    crawls, held, crawl_id = await crawl(store, max_pages_per_pattern=5, max_pages=1000)
    rounds = await asyncio.gather(*(admit(crawls, held, crawl_id, months(i * 7, 7)) for i in range(6)))
    assert sum(len(r.job_ids) for r in rounds) == 5 and sum(r.trap for r in rounds) == 37
    record = await crawls.get(crawl_id)
    assert record is not None and record.queued == 5 and record.skipped.trap == 37


async def test_what_admit_says_it_did_is_what_it_counted(store: JobStore) -> None:
    """Budget, dedup (a URL seen between the caller's look and the script), trap and held, each
    counted once, in the typed answer and in the record alike."""
    crawls, held, crawl_id = await crawl(store, max_pages_per_pattern=2, max_pages=4)
    first = await admit(crawls, held, crawl_id, [f"{SITE}/a", f"{SITE}/b"] + months(0, 3))
    assert (len(first.job_ids), first.trap, first.budget) == (4, 1, 0)
    second = await admit(crawls, held, crawl_id, [f"{SITE}/a", f"{SITE}/c", f"{SITE}/d"])
    assert (second.job_ids, second.dedup, second.budget) == ([], 1, 2)
    crawls2, held2, id2 = await crawl(store, max_pages=10)
    await admit(crawls2, held2, id2, [f"{SITE}/x"])
    await BatchStore(store).cancel(held2.batch_id)
    late = await admit(crawls2, held2, id2, [f"{SITE}/y", f"{SITE}/z", f"{SITE}/x"])
    assert (late.job_ids, late.held, late.dedup, late.budget) == ([], 2, 1, 0)
    for store_, crawl_id_, answers in ((crawls, crawl_id, [first, second]), (crawls2, id2, [late])):
        record = await store_.get(crawl_id_)
        assert record is not None
        for reason in ("dedup", "budget", "trap"):
            assert getattr(record.skipped, reason) == sum(a.skips()[reason] for a in answers), reason
    assert (await crawls2.get(id2)).frontier == 2  # type: ignore[union-attr]


async def test_a_resume_holds_the_frontier_to_the_cap(store: JobStore) -> None:
    """Links found while the crawl was cancelled take their pattern's cap at the resume, as any new page."""
    crawls, held, crawl_id = await crawl(store, max_pages_per_pattern=2, max_pages=100)
    await admit(crawls, held, crawl_id, months(0, 1))
    await BatchStore(store).cancel(held.batch_id)
    assert (await admit(crawls, held, crawl_id, months(1, 4))).held == 4
    resumed = await crawls.resume(held, crawl_id, page_job(held.spec, crawl_id, SETTINGS))
    assert resumed.cancelled and len(resumed.admitted.job_ids) == 1 and resumed.admitted.trap == 3
    record = await crawls.get(crawl_id)
    assert record is not None and record.skipped.trap == 3 and record.queued == 2 and record.frontier == 0
