"""After a batch, every metric issue 6 names is exposed with values that match what happened."""

from __future__ import annotations

from tests.batches.helpers import (
    quick_script,
    submit_batch,
    wait_completed,
    worker_metrics_url,
)
from tests.ops.exposition import names, scrape, value
from tests.ops.test_metrics import REQUIRED
from tests.queue.stack import Stack
from tests.support.servers import StaticServer


def test_metrics_after_a_batch(ops: Stack, site: StaticServer) -> None:
    worker_url = worker_metrics_url(ops)
    before = scrape(worker_url)
    specs = [{"script": quick_script(site.url("/cdp/basic.html"), n)} for n in range(12)]
    specs.append({"task": "an agent job: finish", "start_url": site.url("/cdp/basic.html"),
                  "options": {"planning_interval": 100}})
    specs.append({"script": [{"go_to_url": {"url": site.url("/cdp/basic.html")}}, {"click_element": {"index": 9999}}]})
    status, record = submit_batch(ops, specs)
    assert status == 201
    final = wait_completed(ops, record["id"], timeout=180)
    assert final["counts"]["succeeded"] == 13 and final["counts"]["failed"] == 1

    worker = scrape(worker_url)
    daemon = scrape(ops.url + "/metrics")  # no bearer token: /metrics is outside auth
    assert REQUIRED <= names(worker) | names(daemon), REQUIRED - (names(worker) | names(daemon))

    def grew(name: str, **labels: str) -> float:
        return value(worker, name, **labels) - value(before, name, **labels)

    assert grew("browserd_jobs_total", state="succeeded", category="none") == 13
    assert grew("browserd_jobs_total", state="failed", category=final_category(ops, record["id"])) == 1
    assert grew("browserd_job_duration_seconds_count") == 14
    assert grew("browserd_job_queue_wait_seconds_count") == 14
    assert grew("browserd_job_duration_seconds_sum") > 0
    assert grew("browserd_agent_steps_total") >= 12 * 2
    assert grew("browserd_step_duration_seconds_count", phase="action") >= 13  # each script job navigated
    assert grew("browserd_step_duration_seconds_count", phase="llm") >= 1  # the agent job asked the model
    assert grew("browserd_step_duration_seconds_count", phase="dom") >= 1
    assert grew("browserd_pool_lease_wait_seconds_count") >= 14
    assert sum(v for (n, _), v in worker.items() if n == "browserd_llm_requests_total") >= 1
    assert sum(v for (n, _), v in worker.items() if n == "browserd_llm_tokens_total") > 0
    assert grew("browserd_dom_capture_seconds_count") >= 1
    assert value(worker, "browserd_pool_browsers", state="ready") >= 1
    assert value(worker, "browserd_pool_leases_in_use") == 0
    assert value(worker, "browserd_browser_crashes_total") == 0

    assert value(daemon, "browserd_redis_up") == 1
    assert value(daemon, "browserd_workers_up") == 1
    assert value(daemon, "browserd_jobs_in_state", state="succeeded") >= 13
    assert value(daemon, "browserd_jobs_in_state", state="running") == 0
    assert all(value(daemon, "browserd_queue_depth", queue=q) == 0 for q in ("high", "normal", "low"))


def final_category(s: Stack, batch_id: str) -> str:
    from tests.batches.helpers import results

    return next(line["category"] for line in results(s, batch_id) if line["status"] == "failed")
