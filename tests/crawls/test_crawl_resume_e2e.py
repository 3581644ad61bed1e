"""A cancelled crawl resumed (issue 28), end to end: real redis-server, API, a Celery worker with
Chromium, the generated site (hostile: a thousand spellings of one page, private and metadata
addresses, script URLs). Cancelled mid-crawl, then resumed: the union of the pages the site
answered is the full crawl's, none answered twice; the results hold one line per URL; a crawl
that completed cannot be resumed (409)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from daemon.client import AsyncClient, Client
from tests.batches.helpers import results, wait_completed
from tests.batches.test_cli import browserd
from tests.queue.stack import TOKEN, Stack, stack, wait_until
from tests.support.crawl_site import CrawlSite, Manners, Shape
from tests.support.webhook_sink import Sink, sink  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e

MAX_DEPTH = 3


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(metrics_port=0, webhook_allowed_networks="127.0.0.1/32") as s:  # the receiver is on 127.0.0.1
        s.start_worker(concurrency=2)
        yield s


def test_a_crawl_cancelled_mid_way_and_resumed_visits_every_page_once(deploy: Stack, sink: Sink) -> None:
    with CrawlSite(Shape(sections=3, items=5, orphans=4), Manners(hold=0.6, hostile=True)) as site:
        status, record = deploy.call("POST", "/v1/crawls", {"start_urls": [site.url("/")], "max_depth": MAX_DEPTH,
                                                            "max_pages": 1000, "webhook_url": sink.url})
        assert status == 201, record
        cid = record["id"]

        def under_way() -> dict[str, Any] | None:
            now = deploy.call("GET", f"/v1/crawls/{cid}")[1]
            return now if now["visited"] >= 3 and now["counts"]["queued"] > 0 else None

        wait_until(under_way, 120, "the crawl under way", interval=0.05)
        status, cancelled = deploy.call("POST", f"/v1/crawls/{cid}/cancel", {})
        assert status == 202, cancelled
        stopped = wait_completed(deploy, cid, 120, kind="crawls")
        assert stopped["frontier"] > 0 and stopped["counts"]["cancelled"] > 0, stopped
        before = dict(site.visits)
        assert set(before) < site.pages(MAX_DEPTH) | {u for u in before if site.is_trap(u)}  # stopped short

        status, resumed = deploy.call("POST", f"/v1/crawls/{cid}/resume", {})
        assert status == 202 and resumed["state"] == "running" and resumed["frontier"] == 0, resumed
        final = wait_completed(deploy, cid, 300, kind="crawls")
        lines = results(deploy, cid, "crawls")

        twice = [url for url, n in site.visits.items() if n > 1]
        assert twice == [], f"visited twice: {twice}"
        missed = site.pages(MAX_DEPTH) - set(site.visits)
        assert not missed, f"discovered pages lost: {sorted(missed)}"
        assert not any("/private/" in url for url in site.visits)
        per_url = Counter(line["url"] for line in lines)
        assert [u for u, n in per_url.items() if n > 1] == [], "a URL has two lines"
        assert set(per_url) == set(site.visits) | {line["url"] for line in lines if line["status"] == "cancelled"}
        assert all(u.startswith(site.url("/")) for u in per_url), "off its scope"
        # a page that was running at the cancel ended cancelled (the site answered it): not visited again
        ran_at_cancel = {line["url"] for line in lines if line["status"] == "cancelled"}
        assert ran_at_cancel <= set(before), ran_at_cancel
        assert {line["status"] for line in lines} <= {"succeeded", "cancelled"}
        assert final["queued"] == len(lines) and final["resumed"] == resumed["resumed"] > 0
        assert final["visited"] + final["counts"]["cancelled"] == final["queued"] and final["frontier"] == 0
        assert final["skipped"]["budget"] == 0
        # its end webhook once at the cancel and once more at its true end (not taken for the first's repeat)
        wait_until(lambda: len(sink.events("batch.finished")) == 2, 60, "the resumed crawl's batch.finished")
        first, second = (body["batch"] for body in sink.events("batch.finished"))
        assert first["id"] == second["id"] == final["batch_id"] and first["cancel_requested"], first
        assert second["state"] == "completed" and not second["cancel_requested"], second
        assert second["counts"] == final["counts"] and first["counts"] != second["counts"]
        for part in ("", ":seen", ":pages"):  # expires with the batch's results once more
            assert deploy.redis.ttl(f"browserd:crawl:{cid}{part}") > 0

        status, again = deploy.call("POST", f"/v1/crawls/{cid}/resume", {})  # completed: nothing to resume
        assert status == 409 and again["error"] == "conflict", again
        assert deploy.call("POST", f"/v1/crawls/{'0' * 32}/resume", {})[0] == 404


def test_the_cli_and_the_clients_resume_a_crawl(deploy: Stack) -> None:
    with CrawlSite(Shape(sections=1, items=2, orphans=0), Manners(hold=0.3)) as site:
        spec = {"start_urls": [site.url("/calendar/2026/1")], "max_depth": 100, "max_pages": 12,
                "robots_sitemaps": False}
        with Client(deploy.url, TOKEN) as api:
            started = api.start_crawl(spec)
            api.cancel_crawl(started.id)
            stopped = api.wait_crawl(started.id, interval=0.2)
            assert stopped.frontier > 0, (stopped.counts, stopped.skipped, dict(site.visits),
                                          [(l.status, l.error, l.category) for l in api.crawl_results(started.id)])
            resumed = api.resume_crawl(started.id)
            assert resumed.state.value == "running" and resumed.frontier == 0
            cut = browserd(deploy, "crawl", "--cancel", started.id, "--json")
            assert cut.returncode == 0, cut.stderr.decode()
            api.wait_crawl(started.id, interval=0.2)
            done = browserd(deploy, "crawl", "--resume", started.id, "--wait", "--json")
            final = json.loads(done.stdout)
            cancelled = final["counts"]["cancelled"]  # a page running at the --cancel: read, not visited again
            assert done.returncode == (1 if cancelled else 0), done.stderr.decode()
            assert final["state"] == "completed" and final["queued"] == final["visited"] + cancelled == 12, final
            again = browserd(deploy, "crawl", "--resume", started.id)  # completed: refused, said why
            assert again.returncode != 0 and "not cancelled" in again.stderr.decode(), again.stderr.decode()

            async def in_asyncio() -> Any:
                async with AsyncClient(deploy.url, TOKEN) as aio:
                    return await aio.resume_crawl(started.id)

            with pytest.raises(Exception, match="409"):
                asyncio.run(in_asyncio())
            # the lines of a resumed crawl read a window at a time: the same lines (a resumed page once)
            whole = [line.job_id for line in api.crawl_results(started.id)]
            assert len(whole) == final["queued"] == 12
            for offset, limit in ((0, 5), (5, 5), (10, 5), (3, 1), (12, 4)):
                window = [line.job_id for line in api.crawl_results(started.id, offset=offset, limit=limit)]
                assert window == whole[offset:offset + limit], (offset, limit)
            refused = deploy.call("GET", f"/v1/crawls/{started.id}/results?offset=-1")
            assert refused[0] == 422 and "offset" in json.dumps(refused[1]), refused
        assert [url for url, n in site.visits.items() if n > 1] == [] and len(site.visits) == 12
