"""Crawls end to end: real redis-server, API, a Celery worker with Chromium, a generated site.

What a user sees: every page of the site visited once (tracking parameters, fragments, query order
and host case notwithstanding), pages only the sitemaps list found, the calendar trap stopped by
max_depth, robots.txt's Disallow never fetched, and one results line per page.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.batches.helpers import results as batch_results
from tests.batches.helpers import batch, wait_completed
from tests.batches.test_cli import browserd
from daemon.client import AsyncClient, Client
from tests.queue.stack import TOKEN, Stack, stack, wait_until
from tests.queue.test_politeness import worker_sample
from tests.support.crawl_site import CrawlSite, Manners, Shape
from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.crawls.urls import normalise

pytestmark = pytest.mark.e2e

MAX_DEPTH = 4


@pytest.fixture(scope="module")
def crawler() -> Iterator[Stack]:
    with stack(metrics_port=0) as s:
        s.start_worker(concurrency=4)
        yield s


def crawl(s: Stack, body: dict[str, Any]) -> dict[str, Any]:
    status, record = s.call("POST", "/v1/crawls", body)
    assert status == 201, record
    return record


def finished(s: Stack, crawl_id: str) -> dict[str, Any]:
    return wait_completed(s, crawl_id, 600, kind="crawls")


def results(s: Stack, crawl_id: str) -> list[dict[str, Any]]:
    return batch_results(s, crawl_id, kind="crawls")


def test_a_site_is_crawled_each_page_once_politely(crawler: Stack) -> None:
    with CrawlSite() as site:
        record = crawl(crawler, {"start_urls": [site.url("/")], "max_depth": MAX_DEPTH, "max_pages": 1000})
        assert record["queued"] == 1 and record["state"] == "running"
        final = finished(crawler, record["id"])
        lines = results(crawler, record["id"])

        visited = {url for url in site.visits if not site.is_trap(url)}
        assert visited == site.pages(MAX_DEPTH)  # every page, orphans (sitemaps only) included
        assert [url for url, n in site.visits.items() if n > 1] == []  # none twice, however spelt
        assert not any("/private/" in url for url in site.visits)  # robots.txt Disallow: never fetched
        trap = [url for url in site.visits if site.is_trap(url)]
        assert 0 < len(trap) <= 2 * MAX_DEPTH  # the endless calendar, cut at max_depth

        assert len(lines) == final["queued"] == len(site.visits)
        assert {line["url"] for line in lines} == set(site.visits)
        assert {line["status"] for line in lines} == {"succeeded"}
        by_url = {line["url"]: line for line in lines}
        home = by_url[normalise(site.url("/"))]
        assert home["depth"] == 0 and home["parent"] is None
        assert site.url("/section/3") in home["data"]["links"] and "Text of Home." in home["data"]["markdown"]
        item = by_url[site.url("/item/2/4")]
        assert item["depth"] == 2 and item["parent"] in {site.url("/section/2"), site.url("/item/2/3")}
        print_view = by_url[site.url("/item/2/3?view=print")]
        assert print_view["canonical"] == site.url("/item/2/3") and print_view["depth"] == 3
        orphan = by_url[site.url("/orphan/3")]
        assert orphan["depth"] == 0 and orphan["parent"].startswith(site.url("/sitemap-"))
        assert all(line["depth"] <= MAX_DEPTH for line in lines)

        assert final["visited"] == len(lines) and final["failed"] == 0
        assert final["sitemap_pages"] > 0 and final["sitemap_errors"] == []
        skipped = final["skipped"]
        assert skipped["robots"] >= 1 and skipped["scope"] >= 1 and skipped["dedup"] > 0 and skipped["depth"] >= 1
        assert skipped["budget"] == 0
        assert final["discovered"] == len(lines)
        assert site.fetched["/robots.txt"] == 1  # once for every worker: the shared cache


def test_max_pages_bounds_a_crawl(crawler: Stack) -> None:
    with CrawlSite(Shape(orphans=0)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/calendar/2026/1")], "max_depth": 100, "max_pages": 7,
                                 "robots_sitemaps": False})
        final = finished(crawler, record["id"])
        assert final["queued"] == 7 and final["visited"] == 7 and final["skipped"]["budget"] >= 1
        assert len(site.visits) == 7 and all(site.is_trap(url) for url in site.visits)
        assert len(results(crawler, record["id"])) == 7
        for part in ("", ":seen", ":pages"):  # the frontier expires with the batch's results
            assert crawler.redis.ttl(f"browserd:crawl:{record['id']}{part}") > 0


def test_max_duration_stops_queueing_after_the_start_pages(crawler: Stack) -> None:
    with CrawlSite(Shape(orphans=0)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/calendar/2026/1"), site.url("/about")], "max_depth": 100,
                                 "max_pages": 100, "max_duration": 0.001, "robots_sitemaps": False})
        final = finished(crawler, record["id"])
        assert final["queued"] == final["visited"] == 2 and final["skipped"]["budget"] >= 1
        assert set(site.visits) == {site.url("/calendar/2026/1"), site.url("/about")}


def test_crawl_delay_spaces_the_sites_pages(crawler: Stack) -> None:
    with CrawlSite(Shape(sections=1, items=2, orphans=0), Manners(crawl_delay=1)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/section/0")], "max_depth": 1, "robots_sitemaps": False})
        final = finished(crawler, record["id"])
        assert final["visited"] == 4  # the section, its two items, home
        waits = [data for line in results(crawler, record["id"])
                 for kind, data in crawler.events(line["job_id"]) if kind == "politeness"]
        spaced = [w for w in waits if w.get("kind") == "navigation"]
        assert spaced and all(w["min_delay"] == 1 for w in spaced)  # the site's Crawl-delay, as the domain's delay


def test_a_fractional_crawl_delay_spaces_the_sites_pages_by_that_fraction(crawler: Stack) -> None:
    """robots.txt's ``Crawl-delay: 0.5``: half a second between two page requests at the site, measured there."""
    with CrawlSite(Shape(sections=1, items=12, orphans=0), Manners(crawl_delay=0.5)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/section/0")], "max_depth": 1, "robots_sitemaps": False,
                                 "exclude": ["/calendar/"]})
        final = finished(crawler, record["id"])
        assert final["visited"] == 14  # the section, its twelve items, home
        waits = [data for line in results(crawler, record["id"])
                 for kind, data in crawler.events(line["job_id"]) if kind == "politeness"]
        spaced = [w for w in waits if w.get("kind") == "navigation"]
        assert spaced and all(w["min_delay"] == 0.5 for w in spaced)
        starts = sorted(site.starts)
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        # The 13 pages the section links were found at once, and 4 could run at once: their
        # navigations were reserved half a second apart, 6 s from the first to the last. Each reaches
        # the site some time after its turn (a context's first navigation is slower), so one gap may
        # be short and the next long: the span is measured, less that latency (up to 1.5 s: on a slow
        # run the first item, a context's first navigation, came 0.9 s later than its turn while the
        # last came on time: a 5.1 s span). With no delay (the fraction dropped, as before) the 13
        # would have come in about a second: 4.5 s still tells the two apart.
        assert len(starts) == 14 and starts[-1] - starts[1] >= 12 * 0.5 - 1.5, gaps


def test_a_trailing_slash_rule_makes_a_and_a_slash_one_page(crawler: Stack) -> None:
    """A site that answers /about and /about/ alike: kept as written (the default), they are two
    pages; under strip, or a site rule of add, each is visited once, under the rule's spelling."""
    with CrawlSite(Shape(sections=2, items=1, orphans=0, slashes=True)) as site:
        base = {"start_urls": [site.url("/")], "max_depth": 1, "robots_sitemaps": False, "exclude": ["/calendar/"]}
        kept = finished(crawler, crawl(crawler, base)["id"])
        slashed = {site.url(p) for p in ("/about/", "/about////", "/section/0/", "/item/0/0/")}
        assert set(site.slashed_visits()) == slashed
        assert kept["visited"] == len(site.visits)

        site.visits.clear()
        record = crawl(crawler, {**base, "trailing_slash": "strip"})
        stripped = finished(crawler, record["id"])
        lines = results(crawler, record["id"])
        assert site.slashed_visits() == [] and [u for u, n in site.visits.items() if n > 1] == []
        assert {line["url"] for line in lines} == set(site.visits) >= {site.url("/"), site.url("/about"),
                                                                       site.url("/item/0/0")}
        assert stripped["visited"] == len(lines) == kept["visited"] - len(slashed) and stripped["skipped"]["dedup"] > 0

        site.visits.clear()
        record = crawl(crawler, {**base, "trailing_slash": "strip", "trailing_slash_sites": {"127.0.0.1": "add"}})
        added = finished(crawler, record["id"])
        urls = {line["url"] for line in results(crawler, record["id"])}
        assert urls == set(site.visits) and [u for u, n in site.visits.items() if n > 1] == []
        assert {site.url("/about/"), site.url("/section/1/"), site.url("/item/0/0/"), site.url("/")} <= urls
        assert site.url("/about") not in urls and added["visited"] == stripped["visited"]

        status, answer = crawler.call("POST", "/v1/crawls", {**base, "trailing_slash_sites": {"http://x/": "add"}})
        assert status == 422 and "trailing_slash_sites" in [f["field"] for f in answer["fields"]], answer


def test_sitemap_modified_since_keeps_the_sitemap_pages_changed_since_and_lines_carry_lastmod(crawler: Stack) -> None:
    """Orphan n was last modified on 2026-10-(n+1): since the 15th, orphans 14 to 19 are queued,
    0 to 13 counted skipped.lastmod; pages the sitemap gives no readable lastmod (none, or
    nonsense) are queued as ever."""
    with CrawlSite(Shape(sections=1, items=2, orphans=20)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/")], "max_depth": 0,
                                 "sitemap_modified_since": "2026-10-15T01:00:00+02:00"})  # 10-14 23:00 UTC
        final = finished(crawler, record["id"])
        by_url = {line["url"]: line for line in results(crawler, record["id"])}
        recent = {site.url(f"/orphan/{n}") for n in range(14, 20)}
        assert set(by_url) == set(site.visits) == recent | {site.url("/"), site.url("/item/0/1")}
        assert final["skipped"]["lastmod"] == 14 and final["failed"] == 0
        assert final["sitemap_pages"] == 24  # in scope, as listed: 20 orphans and 4 others (2 of them one page)
        for n in range(14, 20):
            assert by_url[site.url(f"/orphan/{n}")]["lastmod"] == f"{site.lastmod(n)}T00:00:00+00:00"
        assert by_url[site.url("/")]["lastmod"] is None and by_url[site.url("/item/0/1")]["lastmod"] is None

        site.visits.clear()
        record = crawl(crawler, {"start_urls": [site.url("/")], "max_depth": 0})
        everything = finished(crawler, record["id"])
        lines = results(crawler, record["id"])
        assert everything["skipped"]["lastmod"] == 0 and len(lines) == 22
        assert {line["lastmod"] for line in lines if "/orphan/" in line["url"]} == \
            {f"{site.lastmod(n)}T00:00:00+00:00" for n in range(20)}

        for bad in ("yesterday", 2026, "2026-02-30", "x" * 100):
            status, answer = crawler.call("POST", "/v1/crawls", {"start_urls": [site.url("/")],
                                                                 "sitemap_modified_since": bad})
            assert status == 422 and "sitemap_modified_since" in [f["field"] for f in answer["fields"]], answer


def test_bad_crawls_are_refused_naming_the_field(crawler: Stack) -> None:
    before = crawler.redis.zcard("browserd:crawls")
    cases = [
        ({}, "body"),
        ({"start_urls": ["ftp://x.example/"]}, "start_urls.0"),
        ({"start_urls": ["http://x.example/"], "include": ["(a)\\1"]}, "include"),
        ({"start_urls": ["http://x.example/"], "max_depth": -1}, "max_depth"),
        ({"start_urls": ["http://x.example/"], "max_pages": 0}, "max_pages"),
        ({"start_urls": ["http://x.example/"], "task": "t", "script": [{"wait": {"seconds": 1}}]}, "body"),
        ({"start_urls": ["http://x.example/"], "script": [{"no_such_action": {}}]}, "script"),
        ({"start_urls": ["http://x.example/"], "labels": {"crawl": "mine"}}, "body"),
        ({"start_urls": ["http://x.example/"], "output_schema": {"type": "object"}}, "body"),
        ({"start_urls": ["http://x.example/"], "surprise": 1}, "surprise"),
    ]
    for body, field in cases:
        status, answer = crawler.call("POST", "/v1/crawls", body)
        assert status == 422, (body, answer)
        assert field in [f["field"] for f in answer["fields"]], (body, answer)
    assert crawler.redis.zcard("browserd:crawls") == before  # nothing was created
    status, _ = crawler.call("GET", "/v1/crawls/" + "0" * 32)
    assert status == 404
    status, _ = crawler.call("GET", "/v1/crawls/not-an-id/results")
    assert status == 404


def test_the_cli_crawls_with_progress_and_prints_results(crawler: Stack) -> None:
    with CrawlSite(Shape(orphans=0)) as site:
        done = browserd(crawler, "crawl", site.url("/section/1"), "--max-depth", "1", "--max-pages", "5",
                        "--exclude", "/about", "--extract", "--spec", '{"robots_sitemaps": false}', "--wait")
        err = done.stderr.decode()
        assert done.returncode == 0, err
        crawl_id = done.stdout.decode().strip()
        assert "1 pages queued" in err and "progress: 5/5" in err and "5 pages visited (0 failed)" in err
        assert "budget" in err  # the section links to more pages than the budget

        out = browserd(crawler, "crawl", "--results", crawl_id)
        assert out.returncode == 0, out.stderr.decode()
        lines = [json.loads(line) for line in out.stdout.decode().splitlines()]
        assert len(lines) == 5 and lines[0]["url"] == site.url("/section/1") and lines[0]["depth"] == 0
        assert {line["depth"] for line in lines[1:]} == {1} and {line["parent"] for line in lines[1:]} == {lines[0]["url"]}
        assert len(site.visits) == 5

        refused = browserd(crawler, "crawl", site.url("/"), "--include", "(a)\\1")
        assert refused.returncode == 1 and "include" in refused.stderr.decode()


def test_a_hostile_site_cannot_lead_the_crawl_off_its_scope_or_past_its_gate(crawler: Stack) -> None:
    with CrawlSite(Shape(sections=1, items=1, orphans=2), Manners(hostile=True)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/")], "max_depth": 1, "max_pages": 50})
        final = finished(crawler, record["id"])
        lines = results(crawler, record["id"])
        urls = {line["url"] for line in lines}
        assert all(url.startswith(site.origin + "/") for url in urls)  # no private address, no other host
        assert [url for url, n in site.visits.items() if n > 1] == []
        assert urls >= {site.url("/about"), site.url("/orphan/0"), site.url("/orphan/1")}
        assert len([u for u in urls if u.startswith(site.url("/about"))]) == 1  # 1000 spellings, one page
        assert any("169.254.169.254" in e and "egress policy refused" in e for e in final["sitemap_errors"])
        assert final["skipped"]["dedup"] >= 1 and final["skipped"]["scope"] >= 3  # 10.0.0.1, metadata, localhost


def test_a_job_labelled_with_a_crawl_cannot_add_pages_to_it(crawler: Stack) -> None:
    with CrawlSite(Shape(sections=2, items=1, orphans=0)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/about")], "max_depth": 0, "robots_sitemaps": False})
        final = finished(crawler, record["id"])
        assert final["queued"] == 1
        job = crawler.submit({"script": [{"go_to_url": {"url": site.url("/")}}], "labels": {"crawl": record["id"]}})
        crawler.wait_state(job["id"], {"succeeded"}, timeout=120)
        after = finished(crawler, record["id"])
        assert after["queued"] == 1 and after["discovered"] == 1 and len(results(crawler, record["id"])) == 1


def test_cancel_stops_a_crawl(crawler: Stack) -> None:
    with CrawlSite(Shape(orphans=0)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/calendar/2026/1")], "max_depth": 100, "max_pages": 500,
                                 "robots_sitemaps": False})
        wait_until(lambda: batch(crawler, record["id"], "crawls")["visited"] >= 3, 120, "three pages visited")
        status, cancelled = crawler.call("POST", f"/v1/crawls/{record['id']}/cancel")
        assert status == 202 and cancelled["state"] in {"cancelling", "completed"}
        final = finished(crawler, record["id"])
        assert final["queued"] < 500 and final["counts"]["queued"] == final["counts"]["running"] == 0
        lines = results(crawler, record["id"])
        assert len(lines) == final["queued"] and {line["status"] for line in lines} <= {"succeeded", "cancelled"}
        assert len(site.visits) <= final["queued"]


def test_the_clients_start_follow_cancel_and_read_a_crawl(crawler: Stack) -> None:
    with CrawlSite(Shape(sections=2, items=2, orphans=0)) as site:
        spec = CrawlSpec(start_urls=[site.url("/")], max_depth=1, robots_sitemaps=False, exclude=["/calendar/"])
        with Client(crawler.url, TOKEN) as api:
            started = api.start_crawl(spec)
            final = api.wait_crawl(started.id, interval=0.2)
            lines = list(api.crawl_results(started.id))
        assert final.state.value == "completed" and final.visited == final.queued == len(lines) == 4
        assert {line.url for line in lines} == {site.url(p) for p in ("/", "/about", "/section/0", "/section/1")}
        assert all(line.status == "succeeded" for line in lines)  # calendar excluded, /private/ disallowed

        async def in_asyncio() -> tuple[Any, Any, list[Any]]:
            async with AsyncClient(crawler.url, TOKEN) as aio:
                started = await aio.start_crawl({"start_urls": [site.url("/calendar/2026/1")], "max_depth": 100,
                                                 "max_pages": 200, "robots_sitemaps": False})
                cancelled = await aio.cancel_crawl(started.id)
                final = await aio.wait_crawl(started.id, interval=0.2)
                return cancelled, final, [line async for line in aio.crawl_results(started.id)]

        cancelled, final, lines = asyncio.run(in_asyncio())
        assert cancelled.state.value in {"cancelling", "completed"} and final.state.value == "completed"
        assert final.queued == len(lines) < 200


def test_a_429_with_retry_after_slows_the_site_for_every_page_after_it(crawler: Stack) -> None:
    """Runs last: the back-off it leaves on 127.0.0.1 is removed at its end."""
    retry_after = 10  # long enough that the pages found on the 429 page come within it, even on a loaded machine
    try:
        with CrawlSite(Shape(sections=1, items=1, orphans=0), Manners(busy=retry_after)) as site:
            record = crawl(crawler, {"start_urls": [site.url("/busy")], "max_depth": 1, "robots_sitemaps": False,
                                     "retry_blocked": 0})  # the refusal as it stands (retries: the test below)
            final = finished(crawler, record["id"])
            assert final["visited"] == 3 and final["retried"] == 0  # /busy, then the two pages its 429 page links
            assert site.visits[site.url("/busy")] == 1
            by_url = {line["url"]: line for line in results(crawler, record["id"])}
            busy = [data for kind, data in crawler.events(by_url[site.url("/busy")]["job_id"])
                    if kind == "politeness" and data.get("kind") == "backoff"]
            assert busy == [{"kind": "backoff", "domain": "127.0.0.1", "reason": "HTTP 429", "level": 1,
                             "seconds": busy[0]["seconds"], "retry_after": retry_after}], busy
            assert 0 < busy[0]["seconds"] <= retry_after
            refused = by_url[site.url("/busy")]  # the site's refusal is not taken for the page
            assert (refused["status"], refused["category"], refused["data"]) == ("failed", "blocked_by_site", None)
            assert refused["error"].startswith(f"the site answered HTTP 429 to {site.url('/busy')}, Retry-After 10s")
            assert final["failed"] == 1
            for path in ("/about", "/section/0"):  # found on the 429 page: each waited for the site's turn
                waits = [data for kind, data in crawler.events(by_url[site.url(path)]["job_id"])
                         if kind == "politeness" and data.get("kind") == "navigation"]
                assert waits and waits[0]["domain"] == "127.0.0.1" and waits[0]["seconds"] > 0, (path, waits)
                assert waits[0]["min_delay"] == 0, "the wait came from the back-off, not a configured delay"
            level = crawler.redis.hget("browserd:polite:127.0.0.1:backoff", "level")
            assert level == "1", level  # shared in Redis, for every worker
            assert worker_sample(crawler, "browserd_politeness_backoffs_total", reason="http_429") == 1
            assert worker_sample(crawler, "browserd_crawl_pages_total", outcome="succeeded") >= 2
            assert worker_sample(crawler, "browserd_crawl_pages_total", outcome="failed") >= 1
    finally:
        crawler.redis.delete("browserd:polite:127.0.0.1:backoff")


def test_a_page_the_site_refused_is_visited_again_once_the_site_recovers(crawler: Stack) -> None:
    """/busy answers 429 (Retry-After 1) once, then 200: the crawl visits it again after the
    back-off, as the same page (queued once, one results line: the succeeded visit); a page the
    site keeps refusing is tried ``retry_blocked`` times more, then fails as refused."""
    try:
        with CrawlSite(Shape(sections=1, items=1, orphans=0), Manners(busy=1, busy_for=1)) as site:
            record = crawl(crawler, {"start_urls": [site.url("/busy")], "max_depth": 1, "robots_sitemaps": False})
            final = finished(crawler, record["id"])
            lines = results(crawler, record["id"])
            by_url = {line["url"]: line for line in lines}
            assert site.visits[site.url("/busy")] == 2 and site.busy_served == 1  # refused, then read: once
            busy = by_url[site.url("/busy")]
            assert (busy["status"], busy["category"], busy["depth"], busy["parent"]) == ("succeeded", None, 0, None)
            assert "Busy, served" in busy["data"]["markdown"]
            assert len(lines) == final["queued"] == final["visited"] == 3 and final["failed"] == 0
            assert final["retried"] == 1 and final["counts"]["failed"] == 1 and final["counts"]["succeeded"] == 3
            assert [u for u, n in site.visits.items() if n > 1 and u != site.url("/busy")] == []
            first = [j for j in crawler.redis.lrange(f"browserd:batch:{final['batch_id']}:jobs", 0, -1)
                     if j != busy["job_id"]][0]
            refused = crawler.job(first)
            assert refused["state"] == "failed" and refused["result"]["category"] == "blocked_by_site", refused
            assert f"visited again later in the run (job {busy['job_id']})" in refused["result"]["error"]
        crawler.redis.delete("browserd:polite:127.0.0.1:backoff")

        with CrawlSite(Shape(sections=1, items=1, orphans=0), Manners(busy=1)) as site:  # refuses for ever
            record = crawl(crawler, {"start_urls": [site.url("/busy")], "max_depth": 0, "robots_sitemaps": False,
                                     "retry_blocked": 1, "max_pages": 1})
            final = finished(crawler, record["id"])
            lines = results(crawler, record["id"])
            assert site.visits[site.url("/busy")] == 2 and site.busy_served == 0
            assert len(lines) == final["queued"] == final["visited"] == final["failed"] == 1  # one page, its budget
            assert final["retried"] == 1 and final["counts"]["failed"] == 2 and final["skipped"]["budget"] == 0
            assert (lines[0]["status"], lines[0]["category"]) == ("failed", "blocked_by_site")
            assert "visited again" not in lines[0]["error"]  # the last try: none after it

        status, answer = crawler.call("POST", "/v1/crawls", {"start_urls": [site.url("/")], "retry_blocked": 11})
        assert status == 422 and "retry_blocked" in [f["field"] for f in answer["fields"]], answer
    finally:
        crawler.redis.delete("browserd:polite:127.0.0.1:backoff")
