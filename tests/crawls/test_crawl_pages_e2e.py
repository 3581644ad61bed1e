"""What a crawl does on each page and tells about it, end to end (real redis-server, API, a Celery
worker with Chromium, the generated site, a real webhook receiver):

- a saved recipe replayed on each page (no model), the links still read from the page;
- each page's own webhook, POSTed once per page;
- the per-pattern cap bounding the calendar trap whatever ``max_depth``, reported in the record;
- Prometheus's skipped-links counter counting exactly what the crawls' records count, through a
  cancel (links held for a resume are not skips) and a budget cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.batches.helpers import batch, wait_completed
from tests.batches.helpers import results as batch_results
from tests.batches.test_cli import browserd
from tests.crawls.test_crawls_e2e import crawl
from tests.queue.stack import Stack, stack, wait_until
from tests.queue.test_politeness import worker_sample
from tests.support.crawl_site import CrawlSite, Manners, Shape
from tests.support.llm_server import LLMServer
from workers.jobs.crawls.urls import SKIP, normalise, pattern
from workers.jobs.recipes.models import Recipe, RecipeStep
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.store.connection import connect
from workers.jobs.store.keys import Keys

pytestmark = pytest.mark.e2e

SKIPPED = "browserd_crawl_links_skipped_total"


@pytest.fixture(scope="module")
def llm() -> Iterator[LLMServer]:
    """A model the workers are configured with (a recipe job could heal with it) that no test queues a
    reply on: a replay asks it nothing."""
    with LLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def crawler(llm: LLMServer) -> Iterator[Stack]:
    # the receiver runs on 127.0.0.1: opened to webhooks, as an operator would
    with stack(metrics_port=0, webhook_allowed_networks="127.0.0.1/32", llm_base_url=llm.base_url,
               openai_api_key="sk-test") as s:
        s.start_worker(concurrency=4)
        yield s


class Receiver:
    """A webhook receiver on 127.0.0.1 that keeps every body POSTed to it, by path."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        kept = self.posts

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                kept.append((self.path, json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with contextlib.closing(Receiver()) as r:
        yield r


def save_recipe(s: Stack, recipe: Recipe) -> None:
    async def save() -> None:
        redis = connect(s.backend.url)
        try:
            assert await RecipeStore(redis, Keys()).save(recipe) is not None
        finally:
            await redis.aclose()
    asyncio.run(save())


def test_each_page_replays_a_recipe_and_posts_its_own_webhook(crawler: Stack, receiver: Receiver,
                                                              llm: LLMServer) -> None:
    with CrawlSite(Shape(sections=2, items=2, orphans=0)) as site:
        # recorded elsewhere (its start URL): each page's job replays it on its own page
        save_recipe(crawler, Recipe(name="heading", task="read the page's heading", start_url=site.url("/about"),
                                    steps=[RecipeStep(action="extract_fields", params={"fields": {"title": "h1"}},
                                                      expect_data=True)]))
        record = crawl(crawler, {"start_urls": [site.url("/section/0")], "max_depth": 1, "robots_sitemaps": False,
                                 "recipe": "heading", "heal": False, "page_webhook_url": receiver.url + "/page",
                                 "webhook_url": receiver.url + "/done", "labels": {"run": "recipe"}})
        final = wait_completed(crawler, record["id"], 600, kind="crawls")
        lines = batch_results(crawler, record["id"], kind="crawls")
        expected = {site.url(p) for p in ("/section/0", "/item/0/0", "/item/0/1", "/")}
        assert {line["url"] for line in lines} == expected, lines  # the links were read from each page as ever
        assert final["visited"] == 4 and final["failed"] == 0, lines
        titles = {line["url"]: line["data"] for line in lines}  # the recipe ran on the page, not on /about
        assert titles == {site.url("/section/0"): {"title": "Section 0"}, site.url("/item/0/0"): {"title": "Item 0/0"},
                          site.url("/item/0/1"): {"title": "Item 0/1"}, site.url("/"): {"title": "Home"}}, lines
        assert [url for url, n in site.visits.items() if n > 1] == [] and site.url("/about") not in site.visits
        assert llm.requests == []  # replayed: not one model call
        job = crawler.job(lines[0]["job_id"])
        assert job["spec"]["recipe"] == "heading" and job["spec"]["webhook_url"] == receiver.url + "/page"

        def delivered() -> bool:
            return len([p for p, _ in receiver.posts if p == "/page"]) >= 4 and any(p == "/done" for p, _ in receiver.posts)
        wait_until(delivered, 120, "a webhook per page and one at the end")
        pages = Counter(body["job"]["id"] if isinstance(body.get("job"), dict) else body.get("id")
                        for path, body in receiver.posts if path == "/page")
        assert pages == Counter({line["job_id"]: 1 for line in lines}), receiver.posts  # each page once
        assert all(body["event"] == "job.finished" for path, body in receiver.posts if path == "/page")
        done = [body for path, body in receiver.posts if path == "/done"]
        assert len(done) == 1 and done[0]["event"] == "batch.finished"


def _skip_counts(s: Stack) -> dict[str, float]:
    """The skipped-links counter by reason, summed over the API (seeds, resumes) and every worker."""
    with urllib.request.urlopen(s.url + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    api = {sample.labels["reason"]: sample.value for family in text_string_to_metric_families(text)
           for sample in family.samples if sample.name == SKIPPED}
    return {reason: api.get(reason, 0.0) + worker_sample(s, SKIPPED, reason=reason)
            for reason in (SKIP.scope, SKIP.depth, SKIP.robots, SKIP.dedup, SKIP.budget, SKIP.quota, SKIP.trap)}


def test_the_trap_cap_bounds_the_calendar_whatever_the_depth(crawler: Stack) -> None:
    before = _skip_counts(crawler)
    with CrawlSite(Shape(sections=1, items=2, orphans=0)) as site:
        record = crawl(crawler, {"start_urls": [site.url("/")], "max_depth": 100, "max_pages": 1000,
                                 "max_pages_per_pattern": 6, "robots_sitemaps": False})
        final = wait_completed(crawler, record["id"], 600, kind="crawls")
        trap = [url for url in site.visits if site.is_trap(url)]
        assert len(trap) == 6, trap  # not 100 hops of months: six pages of the calendar's pattern
        assert {url for url in site.visits if not site.is_trap(url)} == site.pages(100)  # the rest all visited
        calendar = pattern(normalise(site.url("/calendar/2026/1")) or "")
        assert final["skipped"]["trap"] >= 1 and final["traps"] == [{"pattern": calendar,
                                                                      "skipped": final["skipped"]["trap"]}]
        assert final["skipped"]["budget"] == 0 and final["queued"] == len(site.visits)
        for part in (":patterns", ":traps"):  # expire with the crawl's other keys
            assert crawler.redis.ttl(f"browserd:crawl:{record['id']}{part}") > 0
    after = _skip_counts(crawler)
    assert after[SKIP.trap] - before[SKIP.trap] == final["skipped"]["trap"]


def test_prometheus_counts_the_skips_the_records_count(crawler: Stack) -> None:
    """A cancelled crawl (its running pages' links held for a resume: no skip) and a budget cut:
    the counter moved by exactly the records' ``skipped``, reason by reason."""
    before = _skip_counts(crawler)
    with CrawlSite(Shape(sections=2, items=3, orphans=0), Manners(hold=0.3)) as site:
        cut = crawl(crawler, {"start_urls": [site.url("/")], "max_depth": 3, "max_pages": 6,
                              "robots_sitemaps": False})
        long = crawl(crawler, {"start_urls": [site.url("/calendar/2026/1"), site.url("/section/1")], "max_depth": 100,
                               "max_pages": 500, "robots_sitemaps": False, "max_pages_per_pattern": None})
        wait_until(lambda: batch(crawler, long["id"], "crawls")["visited"] >= 3, 180, "three pages visited")
        status, _ = crawler.call("POST", f"/v1/crawls/{long['id']}/cancel")
        assert status == 202
        records = [wait_completed(crawler, c["id"], 600, kind="crawls") for c in (cut, long)]
        assert records[0]["skipped"]["budget"] >= 1 and records[0]["queued"] == 6
        wait_until(lambda: batch(crawler, long["id"], "crawls")["counts"]["running"] == 0, 60, "the cancel settled")
        records[1] = batch(crawler, long["id"], "crawls")
        assert records[1]["frontier"] >= 1  # what it had still to visit is kept, not counted skipped
    after = _skip_counts(crawler)
    for reason in after:
        assert after[reason] - before[reason] == sum(r["skipped"][reason] for r in records), (reason, records)


def test_the_cli_crawls_with_a_recipe_a_page_webhook_and_a_cap(crawler: Stack, receiver: Receiver) -> None:
    with CrawlSite(Shape(sections=1, items=3, orphans=0)) as site:
        save_recipe(crawler, Recipe(name="cli-heading", task="read the heading", params={"part": "x"},
                                    steps=[RecipeStep(action="extract_fields", params={"fields": {"title": "h1"}})]))
        done = browserd(crawler, "crawl", site.url("/section/0"), "--max-depth", "1", "--recipe", "cli-heading",
                        "--param", "part=y", "--page-webhook", receiver.url + "/cli", "--max-pages-per-pattern", "2",
                        "--spec", '{"robots_sitemaps": false}', "--wait", "--json")
        assert done.returncode == 0, done.stderr.decode()
        record = json.loads(done.stdout)
        assert record["spec"]["recipe"] == "cli-heading" and record["spec"]["params"] == {"part": "y"}
        assert record["spec"]["max_pages_per_pattern"] == 2 and record["skipped"]["trap"] == 1  # 3 items, 2 queued
        assert record["traps"][0]["pattern"].endswith("/item/{n}/{n}") and "trap 1" in done.stderr.decode()
        wait_until(lambda: len(receiver.posts) >= record["queued"], 120, "a webhook per page")
        assert len(receiver.posts) == record["queued"] == 4  # the section, two items, home

        nocap = browserd(crawler, "crawl", site.url("/about"), "--max-depth", "0", "--max-pages-per-pattern", "0",
                         "--spec", '{"robots_sitemaps": false}', "--json")
        assert nocap.returncode == 0 and json.loads(nocap.stdout)["spec"]["max_pages_per_pattern"] is None
        for args, says in ((["--recipe", "no-such"], "recipe"), (["--recipe", "cli-heading"], "params.part"),
                           (["--recipe", "cli-heading", "--param", "part"], "NAME=VALUE"),
                           (["--page-webhook", "http://10.0.0.1/x"], "page_webhook_url"),
                           (["--max-pages-per-pattern", "-3"], "max_pages_per_pattern"),
                           (["--task", "t", "--recipe", "cli-heading"], "not allowed with")):
            refused = browserd(crawler, "crawl", site.url("/"), *args)
            assert refused.returncode != 0 and says in refused.stderr.decode(), (args, refused.stderr.decode())
