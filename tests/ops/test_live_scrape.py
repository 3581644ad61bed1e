"""A real stack (redis-server, ``browserd serve``, a ``browserd worker``) scraped as Prometheus would:
``promtool check metrics`` finds nothing to fix, the series issue 16 adds carry what happened, and
every series the dashboard and the alert rules query exists in a real scrape (Redis's through a
real redis_exporter)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.batches.conftest import finish_at_once
from tests.batches.helpers import quick_script, submit_batch, wait_completed, worker_metrics_url
from tests.ops.exposition import Samples, names, parse, value
from tests.ops.test_alerts import tool
from tests.queue.stack import Stack, wait_until
from tests.support.llm_server import LLMServer
from tests.support.redis_server import free_port
from tests.support.servers import StaticServer

DOCKER = Path(__file__).resolve().parents[2] / "docker"
SERIES = re.compile(r"\b(?:browserd|process|redis)_[a-z0-9_]+\b")


@dataclass
class Scrape:
    text: str  # the exposition exactly as served (text format 0.0.4)
    samples: Samples


def fetch(url: str) -> Scrape:
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    return Scrape(text, parse(text))


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with LLMServer() as llm:
        llm.responder = finish_at_once
        yield from _stack(llm)


def _stack(llm: LLMServer) -> Iterator[Stack]:
    s = Stack(metrics_port=0, llm_base_url=llm.base_url, openai_api_key="sk-test")
    try:
        s.start_api()
        s.start_worker(concurrency=2)
        yield s
    finally:
        s.close()


@dataclass
class Scrapes:
    api: Scrape
    worker: Scrape
    worker_url: str
    worker_name: str  # the Celery node name the worker's heartbeat records


@pytest.fixture(scope="module")
def scrapes(stack: Stack, site: StaticServer) -> Scrapes:
    """What a user does (a batch of a script job and an agent job, a look-up of a job that does not exist),
    then one scrape of each."""
    page = site.url("/cdp/basic.html")
    jobs = [{"script": quick_script(page, 1)}, {"task": "finish", "start_url": page, "options": {"planning_interval": 100}}]
    status, record = submit_batch(stack, jobs)
    assert status == 201, record
    wait_completed(stack, record["id"], timeout=120)
    assert stack.call("GET", "/v1/jobs/" + "0" * 32)[0] == 404
    worker_url = worker_metrics_url(stack)
    (worker_id,) = stack.redis.zrange("browserd:workers", 0, -1)
    worker_name = stack.redis.hget(f"browserd:worker:{worker_id}", "node")
    # the batch's completion is counted by whoever finished its last job, just after the state changed
    wait_until(lambda: value(fetch(worker_url).samples, "browserd_batches_completed_total") == 1, 30,
               "the worker to count the completed batch")
    return Scrapes(fetch(stack.url + "/metrics"), fetch(worker_url), worker_url, worker_name)


@pytest.mark.parametrize("target", ["api", "worker"])
def test_promtool_check_metrics_is_clean(scrapes: Scrapes, target: str) -> None:
    scrape: Scrape = getattr(scrapes, target)
    done = subprocess.run([tool("promtool"), "check", "metrics"], input=scrape.text, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_the_new_series_tell_what_happened(scrapes: Scrapes) -> None:
    api, worker = scrapes.api.samples, scrapes.worker.samples
    assert scrapes.worker_name == f"test1@{socket.gethostname()}"  # Celery's name for --name=test1@%h
    assert value(api, "browserd_worker_up", worker=scrapes.worker_name) == 1
    assert value(worker, "browserd_worker_info", worker=scrapes.worker_name) == 1
    assert "browserd_worker_info" not in names(api)  # the API serves the same registry but is no worker
    assert value(api, "browserd_workers_up") == 1
    assert value(api, "browserd_queue_depth", queue="webhooks") == 0
    assert value(api, "browserd_batches_submitted_total") == 1
    assert value(worker, "browserd_batches_completed_total") == 1
    requests = "browserd_api_requests_total"
    assert value(api, requests, route="/v1/batches", method="POST", status="2xx") == 1
    assert value(api, requests, route="/v1/jobs/{job_id}", method="GET", status="4xx") == 1
    assert value(api, requests, route="/v1/batches/{batch_id}", method="GET", status="2xx") >= 1
    assert value(api, "browserd_api_request_duration_seconds_count", route="/v1/batches", method="POST") == 1
    assert value(worker, "browserd_pool_memory_bytes") > 10 * 2**20
    for samples in (api, worker):
        (build,) = [dict(labels) for (name, labels), _ in samples.items() if name == "browserd_build_info"]
        assert build["version"] and build["version"] != "unknown"


def test_the_api_speaks_openmetrics_to_prometheus(stack: Stack, scrapes: Scrapes) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    request = urllib.request.Request(stack.url + "/metrics", headers={
        "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
        families = {f.name for f in text_string_to_metric_families(reply.read().decode())}
    assert {"browserd_jobs", "browserd_jobs_in_state", "browserd_worker_up", "browserd_api_requests"} <= families


@pytest.fixture(scope="module")
def redis_exporter(stack: Stack) -> Iterator[str]:
    """The compose stack's redis-exporter, as the Debian package ships it, on the test Redis."""
    binary = shutil.which("redis_exporter") or tool("prometheus-redis-exporter")
    port = free_port()
    proc = subprocess.Popen([binary, f"-redis.addr={stack.redis_server.url}", f"-web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_until(lambda: _answers(url, proc), 30, "redis_exporter")
        yield url
    finally:
        proc.terminate()
        proc.wait(15)


def _answers(url: str, proc: subprocess.Popen[bytes]) -> bool:
    assert proc.poll() is None, "redis_exporter exited"
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def test_every_series_the_dashboard_and_alerts_query_is_scraped(scrapes: Scrapes, redis_exporter: str) -> None:
    dashboard = json.loads((DOCKER / "grafana/dashboards/browserd.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    queries += [v["definition"] for v in dashboard["templating"]["list"] if v.get("definition")]
    rules = yaml.safe_load((DOCKER / "prometheus/alerts.yml").read_text())["groups"]
    queries += [r["expr"] for g in rules for r in g["rules"]]
    used = {name for q in queries for name in SERIES.findall(q)}
    scraped = names(scrapes.api.samples) | names(scrapes.worker.samples) | names(fetch(redis_exporter).samples)
    assert {"process_cpu_seconds_total", "redis_memory_used_bytes", "browserd_worker_up"} <= used
    assert used <= scraped, sorted(used - scraped)


def test_the_worker_healthcheck_passes_on_a_real_worker(scrapes: Scrapes) -> None:
    port = scrapes.worker_url.split(":")[-1].split("/")[0]
    env = {"PATH": "/usr/bin:/bin", "BROWSERD_METRICS_PORT": port}
    done = subprocess.run([sys.executable, str(DOCKER / "healthcheck.py"), "worker"], env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_prometheus_scrapes_the_stack_and_loads_the_rules(stack: Stack, scrapes: Scrapes, tmp_path: Path) -> None:
    """A real Prometheus (it asks for OpenMetrics first) scrapes the API and the worker without an error."""
    port = free_port()
    rules = tmp_path / "alerts.yml"
    shutil.copy(DOCKER / "prometheus/alerts.yml", rules)
    api_target = stack.url.removeprefix("http://")
    worker_target = scrapes.worker_url.removeprefix("http://").removesuffix("/metrics")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": "browserd-api", "static_configs": [{"targets": [api_target]}]},
                           {"job_name": "browserd-worker", "static_configs": [{"targets": [worker_target]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    proc = subprocess.Popen([tool("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{port}/api/v1"
    try:
        def scraped() -> list[dict[str, object]] | None:
            assert proc.poll() is None, "prometheus exited"
            try:
                with urllib.request.urlopen(api + "/targets", timeout=2) as reply:
                    targets = json.loads(reply.read())["data"]["activeTargets"]
            except OSError:
                return None
            return targets if len(targets) == 2 and all(t["lastScrape"][:4] != "0001" for t in targets) else None

        targets = wait_until(scraped, 60, "prometheus to scrape both targets")
        health = sorted((t["labels"]["job"], t["health"], t["lastError"]) for t in targets)
        assert health == [("browserd-api", "up", ""), ("browserd-worker", "up", "")]
        # the API's live worker and the worker's own series, joined as the dashboard does, have one name
        for expr in ("browserd_worker_up",
                     "process_resident_memory_bytes * on (job, instance) group_left (worker) browserd_worker_info"):
            query = urllib.parse.urlencode({"query": expr})
            with urllib.request.urlopen(f"{api}/query?{query}", timeout=10) as reply:
                result = json.loads(reply.read())["data"]["result"]
            assert [r["metric"]["worker"] for r in result] == [scrapes.worker_name], expr
        with urllib.request.urlopen(api + "/rules", timeout=10) as reply:
            groups = json.loads(reply.read())["data"]["groups"]
        loaded = {r["name"]: r["health"] for g in groups for r in g["rules"]}
        assert set(loaded) == {rule["alert"] for g in yaml.safe_load(rules.read_text())["groups"] for rule in g["rules"]}
        assert "err" not in loaded.values(), loaded
    finally:
        proc.terminate()
        proc.wait(30)
