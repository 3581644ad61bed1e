"""Webhook metrics are exported where Prometheus scrapes: the worker's /metrics (issue 25, item 1).

Deliveries run in the worker's side consumer, a process that serves no /metrics, so
``browserd_webhook_deliveries_total`` read 0 while receivers got their POSTs. The side process now
counts into files the worker's own endpoint adds in; the counts must equal what the receiver saw.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.batches.helpers import quick_script, submit_batch, wait_completed, worker_metrics_url
from tests.batches.test_webhooks import Receiver, receiver  # noqa: F401 (the fixture: 503, then 200, per event)
from tests.ops.exposition import scrape, value
from tests.queue.stack import Stack, stack, wait_until
from tests.support.servers import StaticServer
from workers.webhooks import EVENT_HEADER

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def hooked() -> Iterator[Stack]:
    with stack(metrics_port=0, webhook_allowed_networks="127.0.0.1/32", job_timeout=60) as s:
        s.start_worker(2)
        yield s


def test_the_workers_webhook_counters_match_what_the_receiver_saw(hooked: Stack, site: StaticServer,
                                                                    receiver: Receiver) -> None:
    url = worker_metrics_url(hooked)
    assert value(scrape(url), "browserd_webhook_deliveries_total", outcome="delivered") == 0
    jobs = [{"script": quick_script(site.url("/cdp/basic.html"), n), "webhook_url": receiver.url} for n in range(3)]
    status, body = submit_batch(hooked, {"jobs": jobs, "webhook_url": receiver.url})
    assert status == 201, body
    wait_completed(hooked, body["id"], timeout=120)
    # 3 job.finished + 1 batch.finished, the first of each event type answered 503 and retried
    wait_until(lambda: len(receiver.requests) >= 6, 120, "every webhook to be delivered")

    def counted() -> dict[str, float] | None:
        samples = scrape(url)
        seen = {outcome: value(samples, "browserd_webhook_deliveries_total", outcome=outcome)
                for outcome in ("delivered", "retrying", "given_up", "refused")}
        return seen if seen["delivered"] + seen["retrying"] >= len(receiver.requests) else None

    seen = wait_until(counted, 30, "the worker's /metrics to count the deliveries")
    with receiver.lock:
        answered_503 = sum(1 for n, (h, _) in enumerate(receiver.requests)
                           if not any(h2[EVENT_HEADER] == h[EVENT_HEADER] for h2, _ in receiver.requests[:n]))
        total = len(receiver.requests)
    assert seen == {"delivered": total - answered_503, "retrying": answered_503, "given_up": 0, "refused": 0}
    assert value(scrape(url), "browserd_webhook_delivery_seconds_count") == total
