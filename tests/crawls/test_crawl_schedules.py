"""A scheduled crawl end to end: real redis-server, API, a Celery worker with Chromium, the generated
site. Run, plant changes in the site, run again, run once more unchanged: the change feed (API, CLI)
lists exactly the planted changes, and ``items.changed`` is POSTed for the run that changed only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.batches.helpers import wait_completed
from tests.batches.test_cli import browserd
from tests.queue.stack import Stack, stack, wait_until
from tests.support.crawl_site import CrawlSite, Shape
from tests.support.webhook_sink import Sink, sink  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def crawler() -> Iterator[Stack]:
    with stack(webhook_allowed_networks="127.0.0.1/32") as s:  # the receiver is on 127.0.0.1
        s.start_worker(concurrency=4)
        yield s


def changes(s: Stack, schedule_id: str) -> list[dict[str, Any]]:
    status, body = s.call("GET", f"/v1/schedules/{schedule_id}/changes")
    assert status == 200, body
    return body


def test_a_scheduled_crawls_change_feed_lists_exactly_the_planted_changes(crawler: Stack, sink: Sink) -> None:
    with CrawlSite(Shape(sections=2, items=4, orphans=6)) as site:
        spec = {"start_urls": [site.url("/")], "max_depth": 2, "max_pages": 200, "webhook_url": sink.url}
        status, made = crawler.call("POST", "/v1/schedules", {"name": "site", "every": 3600, "enabled": False,
                                                             "crawl": spec})
        assert status == 201, made
        sid = made["id"]

        def run_once(n: int) -> str:
            status, run = crawler.call("POST", f"/v1/schedules/{sid}/run")
            assert status == 201 and run["schedule_id"] == sid, run
            wait_completed(crawler, run["id"], 300)
            wait_until(lambda: len(changes(crawler, sid)) == n, 60, f"run {n} compared")
            wait_until(lambda: len(sink.events("batch.finished")) == n, 60, f"run {n}'s batch.finished")
            return str(run["id"])

        first = run_once(1)
        site.plant(changed=2, gone=1, added=1)
        second = run_once(2)
        third = run_once(3)  # nothing changed since

    feed = changes(crawler, sid)
    assert [c["run"] for c in feed] == [first, second, third]
    assert feed[0]["previous_run"] is None
    planted = site.planted()
    got = feed[1]["counts"]
    assert {k: got[k] for k in planted} == planted and got["pages_failed"] == 0, got
    revised = {site.url(f"/item/{s}/{i}") for s, i in site.revised}
    assert {c["key"] for c in feed[1]["changed"]} == revised
    assert all(set(c["fields"]) == {"markdown"} and "revised" in c["fields"]["markdown"]["after"]
               for c in feed[1]["changed"])
    assert [c["key"] for c in feed[1]["removed"]] == feed[1]["pages_removed"] == [site.url("/orphan/0")]
    assert [c["key"] for c in feed[1]["added"]] == feed[1]["pages_added"] == [site.url("/orphan/6")]
    assert not any(feed[2]["counts"].values()), feed[2]["counts"]

    posted = sink.events("items.changed")  # only for the run that changed something
    assert [p["changes"]["run"] for p in posted] == [second], posted
    assert posted[0]["changes"]["counts"] == feed[1]["counts"]

    out = browserd(crawler, "changes", sid)
    assert out.returncode == 0, out.stderr.decode()
    text = out.stdout.decode()
    assert f"run {first}" in text and "baseline" in text
    assert "2 changed, 1 removed, 1 pages gone, 1 pages new" in text and f"page gone: {site.url('/orphan/0')}" in text
    since = browserd(crawler, "changes", sid, "--since", feed[1]["at"], "--json")
    assert [c["run"] for c in json.loads(since.stdout)] == [third]
    bad = browserd(crawler, "changes", sid, "--since", "yesterday")
    assert bad.returncode != 0 and "--since" in bad.stderr.decode()
