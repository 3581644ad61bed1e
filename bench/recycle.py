"""Finished jobs are recorded at once on a pool that recycles its browsers often, and the worker's
webhook counter agrees with what receivers got (issue 25, items 0 and 1).

``python -m bench.recycle [--jobs 60] [--max-leases 4] [--concurrency 4]`` starts its own stack
(redis-server, the API, one ``browserd worker`` whose pool recycles each browser after
``--max-leases`` leases), a page server and a webhook receiver on 127.0.0.1, submits a batch of
short script jobs each with a job webhook, waits for the batch and every delivery, and prints one
JSON line:

``{"jobs", "recycles", "max_record_delay_s", "webhook_metric_matches", "deliveries_seen",
"deliveries_counted", "seconds"}``

``max_record_delay_s``: the longest time between a job's work ending (``result.finished_at``,
stamped when its last step ended) and its record being final (``finished_at``, written by the
store); the target is 2 s or less (it was the job's own timeout when a cleanup swallowed a cancel).
``recycles``: browsers retired for ``max_leases`` during the batch (the worker's log).
``webhook_metric_matches``: the worker's ``browserd_webhook_deliveries_total{outcome="delivered"}``
(from the ``/metrics`` Prometheus scrapes, though deliveries run in its side process) equals the
POSTs the receiver answered 200.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.batches.helpers import quick_script, results, wait_completed, worker_metrics_url
from tests.ops.exposition import parse, value
from tests.queue.hooks import Hooks
from tests.queue.stack import Stack, wait_until
from tests.support.servers import serve

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "site"
SETTLE_SECONDS = 120.0  # at most this long for every webhook to arrive after the batch completed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--max-leases", type=int, default=4, help="BROWSERD_POOL_MAX_LEASES: recycle every N leases")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    started = time.monotonic()
    with serve(FIXTURES) as site, Hooks() as hooks:
        s = Stack(pool_max_leases=args.max_leases, pool_warm=2, job_timeout=40, metrics_port=0,
                  webhook_allowed_networks="127.0.0.1/32")
        try:
            result = run(s, site.url("/cdp/basic.html"), hooks, args)
        finally:
            s.close()
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result))


def run(s: Stack, page: str, hooks: Hooks, args: argparse.Namespace) -> dict[str, Any]:
    s.start_api()
    worker = s.start_worker(args.concurrency)
    jobs = [{"script": quick_script(page, n), "webhook_url": hooks.url} for n in range(args.jobs)]
    status, batch = s.call("POST", "/v1/batches", {"jobs": jobs})
    assert status == 201, (status, batch)
    wait_completed(s, batch["id"], timeout=600)
    delays = []
    for line in results(s, batch["id"]):
        job = s.job(line["id"])
        if job["result"] and job["result"].get("finished_at") and job["finished_at"]:
            worked = datetime.fromisoformat(job["result"]["finished_at"])
            delays.append((datetime.fromisoformat(job["finished_at"]) - worked).total_seconds())
    wait_until(lambda: len(hooks.deliveries()) >= args.jobs, SETTLE_SECONDS, "every job's webhook")
    seen = sum(1 for post in hooks.posts if post["answered"] == 200)
    counted = wait_counted(worker_metrics_url(s), seen)
    return {
        "jobs": len(delays),
        "recycles": worker.log(10_000_000).count("(max_leases)"),
        "max_record_delay_s": round(max(delays, default=0.0), 3),
        "webhook_metric_matches": counted == seen,
        "deliveries_seen": seen,
        "deliveries_counted": counted,
    }


def wait_counted(url: str, seen: int) -> int:
    """The worker's delivered count, read until it reaches ``seen`` (the side process counts a
    delivery just after the receiver answered) or a few seconds pass."""
    deadline = time.monotonic() + 10.0
    while True:
        with urllib.request.urlopen(url, timeout=10) as resp:
            counted = int(value(parse(resp.read().decode()), "browserd_webhook_deliveries_total", outcome="delivered"))
        if counted >= seen or time.monotonic() > deadline:
            return counted
        time.sleep(0.2)


if __name__ == "__main__":
    main()
