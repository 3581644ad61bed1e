"""Metrics as Prometheus sees them: exposed over HTTP, parsed, after real events and real Redis data."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import kombu
import pytest
from fastapi import FastAPI

from cdp import BrowserPool, PoolConfig
from tests.ops.exposition import Samples, names, parse, scrape, value
from tests.support.redis_server import RedisServer, free_port
from config import load_settings
from workers.instrument import instrument_pool, serve_metrics
from workers.jobs import metrics
from workers.jobs.model.result import JobResult, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.store.connection import connect
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys

REPO = Path(__file__).resolve().parents[2]

# Every metric issue 6 asks for, as the sample names a scrape shows.
REQUIRED = {
    "browserd_jobs_total", "browserd_jobs_in_state", "browserd_queue_depth", "browserd_job_duration_seconds_count",
    "browserd_job_queue_wait_seconds_count", "browserd_agent_steps_total", "browserd_step_duration_seconds_count",
    "browserd_llm_requests_total", "browserd_llm_tokens_total", "browserd_llm_latency_seconds_count",
    "browserd_pool_browsers", "browserd_pool_leases_in_use", "browserd_pool_lease_wait_seconds_count",
    "browserd_browser_crashes_total", "browserd_browser_recycles_total", "browserd_dom_capture_seconds_count",
    "browserd_dom_elements_count", "browserd_workers_up",
    # issue 16
    "browserd_build_info", "browserd_pool_memory_bytes",  # browserd_worker_up: only with a live worker
    "browserd_worker_info",
}
NODE = "celery@ops-test"  # the Celery node name the worker's metrics server is told


@pytest.fixture
def worker_server() -> Iterator[str]:
    port = free_port()
    server = metrics.start_worker_metrics_server(port, "127.0.0.1", node=NODE)
    yield f"http://127.0.0.1:{port}/metrics"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("host", "bound"), [(None, "127.0.0.1"), ("0.0.0.0", "0.0.0.0")])
def test_worker_metrics_listen_on_loopback_unless_opened(host: str | None, bound: str) -> None:
    """Nothing beyond the worker's machine reads its metrics unless BROWSERD_METRICS_HOST opens them (the
    image, compose and Kubernetes do, for Prometheus)."""
    settings = load_settings(metrics_port=0, **({"metrics_host": host} if host else {}))
    server = serve_metrics(settings, NODE)
    assert server is not None
    try:
        assert server.server_address[0] == bound
        assert httpx.get(f"http://127.0.0.1:{server.server_port}/metrics").status_code == 200
    finally:
        server.shutdown()
        server.server_close()


def test_a_second_worker_on_the_host_serves_its_metrics_on_a_free_port(caplog: pytest.LogCaptureFixture) -> None:
    """Two workers on one host with the default port: the second moves to a free port and says which
    (issue 29: it served none while the README said "as many as you like")."""
    first = serve_metrics(load_settings(metrics_port=0), NODE)
    assert first is not None
    taken = first.server_port
    try:
        with caplog.at_level(logging.WARNING, logger="browserd.worker"):
            second = serve_metrics(load_settings(metrics_port=taken), NODE)
        assert second is not None and second.server_port != taken
        try:
            assert httpx.get(f"http://127.0.0.1:{second.server_port}/metrics").status_code == 200
            assert f"port {taken} is taken" in caplog.text and f":{second.server_port} instead" in caplog.text
        finally:
            second.shutdown()
            second.server_close()
    finally:
        first.shutdown()
        first.server_close()


def publish(url: str, queue: str, priorities: list[int]) -> None:
    """Messages into a Celery queue through kombu's Redis transport, as ``apply_async`` sends them."""
    with kombu.Connection(url) as conn:
        producer = conn.Producer()
        for priority in priorities:
            producer.publish({"job": "x"}, routing_key=queue, declare=[kombu.Queue(queue)], priority=priority)


async def seed_store(url: str, keys: Keys) -> None:
    """Four jobs: one succeeded, one running, two queued. Live: a worker, two runtimes of one prefork
    node, one record of an older version (no node name); one worker long gone."""
    store = JobStore(connect(url), result_ttl=600, keys=keys)
    spec = JobSpec(script=[{"done": {"text": "ok"}}])
    ids = [(await store.create(spec, max_steps=5)).job_id for _ in range(4)]
    for job_id in ids[:2]:
        claim = await store.start(job_id, worker="w1", max_attempts=3, stale_after=30)
        assert claim.outcome == "run"
    assert await store.finish(ids[0], 1, JobResult(status=JobStatus.succeeded))
    for worker, node in (("w1", "browserd-1@h"), ("w2", "browserd-2@h"), ("w3", "browserd-2@h")):
        await store.worker_heartbeat(worker, {"node": node, "host": "h"}, ttl=10)
    await store.worker_heartbeat("w-old", {"host": "h"}, ttl=10)
    await store.redis.zadd(keys.workers, {"w-dead": time.time() - 3600})
    await store.redis.aclose()


async def test_daemon_metrics_read_jobs_queues_and_workers_from_redis(redis: RedisServer) -> None:
    keys = Keys("ops-test:")
    await seed_store(redis.url, keys)
    publish(redis.url, "high", [0, 9])
    publish(redis.url, "normal", [0, 4, 9])
    publish(redis.url, "webhooks", [0])
    app = FastAPI()
    endpoint = metrics.MetricsApp.from_url(redis.url, keys)
    app.add_route("/metrics", endpoint, include_in_schema=False)
    reply = await get(app)
    endpoint.close()
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parse(reply.text)
    assert value(samples, "browserd_redis_up") == 1
    assert {s: value(samples, "browserd_jobs_in_state", state=s) for s in ("queued", "running", "succeeded", "failed")} == {
        "queued": 2, "running": 1, "succeeded": 1, "failed": 0
    }
    assert {q: value(samples, "browserd_queue_depth", queue=q) for q in ("high", "normal", "low", "webhooks")} == {
        "high": 2, "normal": 3, "low": 0, "webhooks": 1
    }
    assert value(samples, "browserd_workers_up") == 3
    # one series per live Celery node; the worker whose heartbeat is an hour old has none
    assert {dict(labels)["worker"]: v for (n, labels), v in samples.items() if n == "browserd_worker_up"} == {
        "browserd-1@h": 1, "browserd-2@h": 1, "w-old": 1
    }


def test_the_webhook_queue_is_counted_under_its_own_name() -> None:
    """The queue depth counts every queue a worker consumes, the webhooks' and the sessions' own included."""
    from workers.jobs.queue.names import QUEUES as JOB_QUEUES
    from workers.jobs.queue.names import SESSIONS_QUEUE, WEBHOOK_QUEUE

    assert metrics.DEPTH_QUEUES == (*JOB_QUEUES, WEBHOOK_QUEUE, SESSIONS_QUEUE)


async def test_openmetrics_is_served_when_asked_for(redis: RedisServer) -> None:
    """Prometheus asks for OpenMetrics first; every family name must then be unique (no jobs/jobs_total clash)."""
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as openmetrics_families,
    )

    endpoint = metrics.MetricsApp.from_url(redis.url, Keys("ops-om:"))
    accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75," \
             "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"  # what Prometheus 2.x sends
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=endpoint), base_url="http://api") as client:
        om = await client.get("/metrics", headers={"Accept": accept})
        text = await client.get("/metrics")
    endpoint.close()
    assert om.headers["content-type"].startswith("application/openmetrics-text")
    assert om.text.endswith("# EOF\n")
    families = {f.name: f.type for f in openmetrics_families(om.text)}  # raises on a clashing family name
    assert families["browserd_jobs"] == "counter" and families["browserd_jobs_in_state"] == "gauge"
    assert families["browserd_build"] == "info"
    assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert value(parse(text.text), "browserd_redis_up") == 1


def test_build_info_names_the_installed_version(worker_server: str) -> None:
    import importlib.metadata

    version = importlib.metadata.version("browserd")
    assert value(scrape(worker_server), "browserd_build_info", version=version) == 1


def test_a_worker_names_its_celery_node(worker_server: str) -> None:
    """The join key from a worker's scrape address (``instance``) to ``browserd_worker_up{worker}``."""
    assert [dict(labels) for (name, labels) in scrape(worker_server) if name == "browserd_worker_info"] == [
        {"worker": NODE}
    ]


def test_batch_schedule_and_webhook_events_are_counted(worker_server: str) -> None:
    before = scrape(worker_server)
    metrics.observe_batch_submitted()
    metrics.observe_batch_completed()
    metrics.observe_schedule_run("run")
    metrics.observe_schedule_run("skipped")
    metrics.observe_webhook("delivered", 0.02)
    after = scrape(worker_server)
    for name, labels in [("browserd_batches_submitted_total", {}), ("browserd_batches_completed_total", {}),
                         ("browserd_schedule_runs_total", {"outcome": "run"}),
                         ("browserd_schedule_runs_total", {"outcome": "skipped"}),
                         ("browserd_webhook_deliveries_total", {"outcome": "delivered"}),
                         ("browserd_webhook_delivery_seconds_count", {})]:
        assert value(after, name, **labels) - value(before, name, **labels) == 1, name
    assert ("browserd_webhook_deliveries_total", (("outcome", "given_up"),)) in after  # zero from the start
    with pytest.raises(ValueError):
        metrics.observe_webhook("lost", 1.0)
    with pytest.raises(ValueError):
        metrics.observe_schedule_run("maybe")


def test_priority_messages_sit_in_the_lists_the_collector_reads(redis: RedisServer) -> None:
    """kombu files each priority step under its own list; the depth must count them all."""
    publish(redis.url, "low", [0, 3, 6, 9])
    client = metrics.redis.Redis.from_url(redis.url, decode_responses=True)
    used = {key for key in metrics.queue_keys("low") if client.llen(key)}
    listed = set(client.scan_iter("low*"))
    client.close()
    assert len(used) > 1, "messages of different priorities should land in different lists"
    assert listed == used


async def test_unreachable_redis_is_reported_not_raised() -> None:
    endpoint = metrics.MetricsApp.from_url(f"redis://127.0.0.1:{free_port()}/0")
    reply = await get(endpoint)
    endpoint.close()
    samples = parse(reply.text)
    assert reply.status_code == 200
    assert value(samples, "browserd_redis_up") == 0
    assert "browserd_jobs_in_state" not in names(samples) and "browserd_workers_up" not in names(samples)


def test_worker_events_are_counted(worker_server: str) -> None:
    before = scrape(worker_server)
    metrics.observe_job_finished(JobStatus.succeeded, None, duration=2.0, queue_wait=0.25)
    metrics.observe_job_finished("failed", FailureCategory.timeout, duration=600.0, queue_wait=3.0)
    metrics.observe_step(StepRecord(step=1, dom_seconds=0.1, llm_seconds=1.5, action_seconds=0.3))
    metrics.observe_step(StepRecord(step=2, dom_seconds=0.2, action_seconds=0.1))  # a script step: no LLM
    metrics.observe_llm_call("gpt-test", "ok", 1.2, tokens_in=1000, tokens_out=50)
    metrics.observe_llm_call("gpt-test", "something new", 0.5)
    metrics.observe_dom_capture(0.08, 42)
    after = scrape(worker_server)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("browserd_jobs_total", state="succeeded", category="none") == 1
    assert delta("browserd_jobs_total", state="failed", category="timeout") == 1
    assert delta("browserd_job_duration_seconds_count") == 2
    assert delta("browserd_job_duration_seconds_sum") == pytest.approx(602.0)
    assert delta("browserd_job_queue_wait_seconds_bucket", le="0.5") == 1
    assert delta("browserd_agent_steps_total") == 2
    assert delta("browserd_step_duration_seconds_count", phase="dom") == 2
    assert delta("browserd_step_duration_seconds_count", phase="llm") == 1
    assert delta("browserd_step_duration_seconds_sum", phase="action") == pytest.approx(0.4)
    assert delta("browserd_llm_requests_total", model="gpt-test", outcome="ok") == 1
    assert delta("browserd_llm_requests_total", model="gpt-test", outcome="error") == 1
    assert delta("browserd_llm_tokens_total", model="gpt-test", direction="input") == 1000
    assert delta("browserd_llm_tokens_total", model="gpt-test", direction="output") == 50
    assert delta("browserd_llm_latency_seconds_count", model="gpt-test") == 2
    assert delta("browserd_dom_capture_seconds_count") == 1
    assert delta("browserd_dom_elements_sum") == 42
    # series that must exist before their first event, so rate() and ratios work from the start
    assert ("browserd_jobs_total", (("category", "llm_auth"), ("state", "failed"))) in after
    assert not any(name.endswith("_created") for name in names(after))


def test_job_states_must_be_final() -> None:
    with pytest.raises(ValueError, match="running"):
        metrics.observe_job_finished(JobStatus.running)
    with pytest.raises(ValueError):
        metrics.observe_job_finished(JobStatus.failed, "not-a-category")


def test_model_label_is_bounded() -> None:
    label = metrics._BoundedLabel(3)
    assert [label(f"m{i}") for i in range(5)] + [label("m1")] == ["m0", "m1", "m2", "other", "other", "m1"]


async def until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for the pool to get somewhere (a generous deadline, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def get(app: Any, path: str = "/metrics") -> httpx.Response:
    """One request to an ASGI app, in process."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as client:
        return await client.get(path)


@pytest.mark.e2e  # a pool of its own
async def test_pool_metrics_follow_a_real_pool(worker_server: str) -> None:
    async def read() -> Samples:
        return await asyncio.to_thread(scrape, worker_server)

    before = await read()
    async with BrowserPool(PoolConfig(browsers=1, warm=1, max_leases=2)) as pool:
        detach = instrument_pool(pool)
        async with pool.lease():
            held = await read()
        await until(lambda: pool.stats().leases_in_use == 0)
        async with pool.lease():  # the second lease retires the browser: max_leases
            pass
        await until(lambda: pool.stats().browsers["ready"] == 1 and pool.stats().browsers["draining"] == 0)
        os.kill(pool.browser_pids()[0], signal.SIGKILL)
        await until(lambda: pool.stats().crashes == 1)
        after = await read()
        detach()
        detached = await read()

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert value(held, "browserd_pool_leases_in_use") == 1
    assert value(held, "browserd_pool_browsers", state="ready") == 1
    assert value(held, "browserd_pool_memory_bytes") > 10 * 2**20  # a live Chrome's processes, PSS
    assert delta("browserd_pool_lease_wait_seconds_count") == 2
    assert delta("browserd_browser_recycles_total", reason="max_leases") == 1
    assert delta("browserd_browser_crashes_total") == 1
    assert value(after, "browserd_pool_leases_in_use") == 0
    assert "browserd_pool_browsers" not in names(detached)


@pytest.mark.e2e  # a pool of its own
async def test_every_metric_is_exposed(redis: RedisServer, worker_server: str) -> None:
    """The union of what a worker and the daemon serve holds every metric the issue lists."""
    async with BrowserPool(PoolConfig(browsers=1, warm=1)) as pool:
        detach = instrument_pool(pool)
        async with pool.lease():
            pass
        metrics.observe_job_finished(JobStatus.succeeded, duration=1.0, queue_wait=0.1)
        metrics.observe_step(StepRecord(step=1, dom_seconds=0.1, llm_seconds=0.2, action_seconds=0.3))
        metrics.observe_llm_call("gpt-test", "ok", 0.5, 10, 5)
        metrics.observe_dom_capture(0.1, 10)
        worker = await asyncio.to_thread(scrape, worker_server)
        detach()
    endpoint = metrics.MetricsApp.from_url(redis.url, Keys("ops-every:"))
    daemon = parse((await get(endpoint)).text)
    endpoint.close()
    exposed = names(worker) | names(daemon)
    assert REQUIRED <= exposed, sorted(REQUIRED - exposed)
    assert REQUIRED <= metrics.metric_names()
    browserd = {n for n in exposed if n.startswith("browserd_")}
    assert browserd <= metrics.metric_names(), sorted(browserd - metrics.metric_names())
    assert all(v >= 0 for (n, _), v in {**worker, **daemon}.items() if n.startswith("browserd_"))


PREFORK = textwrap.dedent(
    """
    import multiprocessing, sys
    from workers.jobs import metrics
    from workers.jobs.model.status import JobStatus

    def child(n):
        for _ in range(n):
            metrics.observe_job_finished(JobStatus.succeeded, duration=1.0)

    server = metrics.start_worker_metrics_server(int(sys.argv[1]), "127.0.0.1", node="browserd-1@h")
    ctx = multiprocessing.get_context("fork")
    for n in (2, 3):  # two pool children, as Celery's prefork forks them; both exit before the scrape
        p = ctx.Process(target=child, args=(n,))
        p.start()
        p.join()
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def test_prefork_children_are_merged_when_multiprocess_dir_is_set(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", PREFORK, str(port)], env=env, cwd=REPO, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        samples = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        proc.communicate("", timeout=30)
    assert value(samples, "browserd_jobs_total", state="succeeded", category="none") == 5
    assert value(samples, "browserd_job_duration_seconds_count") == 5
    assert value(samples, "browserd_worker_info", worker="browserd-1@h") == 1


def test_docs_document_every_metric() -> None:
    page = (REPO / "docs" / "metrics.md").read_text()
    families = [f for m in metrics.EVENT_METRICS for f in m.describe()]
    families += [*metrics.POOLS.describe(), *metrics.WORKER_INFO.describe(), *metrics.RedisCollector._families(None)]
    exposed = {f.name + {"counter": "_total", "info": "_info"}.get(f.type, "") for f in families}
    missing = {name for name in exposed if f"`{name}`" not in page and f"`{name}{{" not in page}
    assert not missing, sorted(missing)
