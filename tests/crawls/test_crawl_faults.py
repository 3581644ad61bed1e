"""A crawl survives its faults (issue 28): a worker killed (SIGKILL) mid-crawl and a Redis restarted
from its append-only file mid-crawl lose no discovered URL and queue none twice.

One deployment for the module: redis-server with its AOF, the API and two workers (each runs the
reconciler, so a dead worker's running page is sent again once its heartbeat is stale; no beat).
The site holds each answer, so pages are under way when the fault strikes. What is checked is the
crawl's own promise: every page the site must show is visited, each normalised URL has exactly one
page job (one results line), all of them succeeded; a page the site answered twice is one whose
job was running on the killed worker and was sent again (its job's ``attempts`` says so), never a
second job for the same URL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.batches.helpers import results, wait_completed
from tests.queue.stack import Stack, stack, wait_until
from tests.support.crawl_site import CrawlSite, Manners, Shape

pytestmark = pytest.mark.e2e

MAX_DEPTH = 3
SETTINGS = dict(job_timeout=30, visibility_timeout=40, max_attempts=3, metrics_port=0, reconcile_interval=2,
                stale_job_seconds=8, orphan_job_seconds=3)


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(aof=True, **SETTINGS) as s:
        s.start_worker(2)
        s.start_worker(2)
        yield s


def start(s: Stack, site: CrawlSite) -> dict[str, Any]:
    status, record = s.call("POST", "/v1/crawls", {"start_urls": [site.url("/")], "max_depth": MAX_DEPTH,
                                                   "max_pages": 1000})
    assert status == 201, record
    return record


def under_way(s: Stack, crawl_id: str, visited: int) -> dict[str, Any]:
    def far_enough() -> dict[str, Any] | None:
        record = s.call("GET", f"/v1/crawls/{crawl_id}")[1]
        return record if record["visited"] >= visited and record["counts"]["running"] > 0 else None

    return wait_until(far_enough, 120, f"crawl {crawl_id} under way", interval=0.05)


def check_once_each(s: Stack, site: CrawlSite, crawl_id: str) -> list[dict[str, Any]]:
    record = wait_completed(s, crawl_id, 300, kind="crawls")
    lines = results(s, crawl_id, "crawls")
    per_url = Counter(line["url"] for line in lines)
    assert [u for u, n in per_url.items() if n > 1] == [], "a URL was queued twice"
    assert all(line["status"] == "succeeded" for line in lines), [(l["url"], l["error"]) for l in lines
                                                                   if l["status"] != "succeeded"]
    missed = site.pages(MAX_DEPTH) - set(per_url)
    assert not missed, f"discovered pages lost: {sorted(missed)}"
    assert record["queued"] == len(lines) == record["visited"], record
    twice = {url for url, n in site.visits.items() if n > 1}
    retried = {line["url"] for line in lines if s.job(line["job_id"])["attempts"] > 1}
    assert twice <= retried, f"answered twice with no retry: {sorted(twice - retried)}"
    return lines


def test_a_worker_killed_mid_crawl_loses_no_url_and_queues_none_twice(deploy: Stack) -> None:
    # a page's visit outlasts the kill
    with CrawlSite(Shape(sections=3, items=5, orphans=4), Manners(hold=1.5)) as site:
        record = start(deploy, site)
        now = under_way(deploy, record["id"], visited=4)
        running = [line for line in results(deploy, record["id"], "crawls") if line["status"] == "running"]
        assert running, now
        victim = deploy.worker_of(deploy.job(running[0]["job_id"]))
        victim.kill9()
        deploy.workers.remove(victim)
        cut = [line["job_id"] for line in running
               if (job := deploy.job(line["job_id"]))["state"] == "running" and job["worker"] == victim.node]
        lines = check_once_each(deploy, site, record["id"])
    assert cut, "the killed worker had a page under way"
    assert all(deploy.job(job_id)["attempts"] > 1 for job_id in cut), "the killed worker's pages ran again"
    deploy.start_worker(2)  # the module's next test has two workers again


def test_a_redis_restart_mid_crawl_loses_no_url_and_queues_none_twice(deploy: Stack) -> None:
    with CrawlSite(Shape(sections=3, items=5, orphans=4), Manners(hold=0.4)) as site:
        record = start(deploy, site)
        under_way(deploy, record["id"], visited=4)
        deploy.redis_server.restart(downtime=5)  # pages end, and find links, while Redis is away
        check_once_each(deploy, site, record["id"])
