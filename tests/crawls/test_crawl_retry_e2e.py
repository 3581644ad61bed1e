"""A refused page's job run again after its worker was lost (issue 28): if its page was queued
again before the worker died (``crawl_retry.lua`` ran in its settle, the record did not), the
redelivered attempt does not visit the site a second time, and its line stays hidden behind the
job that visits the page again. Real redis-server, API and worker; the lost worker's state is
what Redis holds after such a kill: the job queued for its second attempt, its page marked
``retried_as``."""

from __future__ import annotations

import json

import pytest

from tests.batches.helpers import results, wait_completed
from tests.queue.stack import stack
from tests.support.crawl_site import CrawlSite, Shape

pytestmark = pytest.mark.e2e


def test_a_redelivered_refused_page_job_whose_page_was_queued_again_does_not_visit_the_site() -> None:
    with stack(metrics_port=0) as s, CrawlSite(Shape(sections=1, items=1, orphans=0)) as site:
        status, record = s.call("POST", "/v1/crawls", {"start_urls": [site.url("/about")], "max_depth": 0,
                                                       "robots_sitemaps": False})
        assert status == 201, record
        crawl_id, batch_id = record["id"], record["batch_id"]
        job_id = s.redis.lrange(f"browserd:batch:{batch_id}:jobs", 0, -1)[0]
        pages = f"browserd:crawl:{crawl_id}:pages"
        page = json.loads(s.redis.hget(pages, job_id))
        stand_in = "e" * 32  # the job the lost attempt's retry step queued (never published here)
        s.redis.hset(pages, job_id, json.dumps({**page, "retried_as": stand_in}))
        s.redis.hset(f"browserd:job:{job_id}", "attempts", 1)  # its first attempt ran on the lost worker
        s.start_worker(concurrency=2)
        final = wait_completed(s, crawl_id, 120, kind="crawls")
        job = s.job(job_id)
        assert job["state"] == "failed" and job["result"]["category"] == "blocked_by_site", job
        assert f"job {stand_in} visits it again" in job["result"]["error"]
        assert site.visits == {}  # the site was not asked again
        assert results(s, crawl_id, "crawls") == []  # its line is the stand-in's, not this one's
        assert final["counts"]["failed"] == 1
