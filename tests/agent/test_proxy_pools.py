"""Proxy pools on real pages in real Chromium, through real pproxy processes chained behind the
egress gate: a job keeps its proxy, moves to the other after a 429 or when the agent reports
``blocked_by_site``, goes past a dead proxy (cooled down), and the egress policy still refuses a
destination it does not open; the pool's credentials show nowhere but on the wire to the proxy."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from prometheus_client import REGISTRY

from config import Settings, load_settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan
from tests.agent.test_browser_settings import Site as Probe, elsewhere  # noqa: F401  (127.0.0.2, not opened)
from tests.support.jobs import run_job
from tests.support.proxies import PASSWORD, USERNAME, ProxyProcess, free_port, running_proxy
from tests.support.servers import StaticServer
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.pipeline.features.proxy_pools import sticky_index

pytestmark = pytest.mark.e2e


class Site:
    """Pages on 127.0.0.1: ``/limited`` answers 429 the first time, then 200; ``/wall`` shows a bot
    wall the first time, then the price; ``/page`` always 200 (with an image on ``leak_to``)."""

    def __init__(self, leak_to: str = "") -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.hits: dict[str, int] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                n = site.hits[self.path] = site.hits.get(self.path, 0) + 1
                status, body = 200, f"<html><body><h1 id=t>page {self.path}</h1></body></html>"
                if self.path == "/limited" and n == 1:
                    status, body = 429, "<html><body><h1 id=t>Too many requests</h1></body></html>"
                elif self.path == "/limited":
                    body = "<html><body><h1 id=t>limited ok</h1></body></html>"
                elif self.path == "/wall":
                    body = ("<html><body><h1 id=t>Verify you are human</h1></body></html>" if n == 1 else
                            "<html><body><h1 id=t>Blue mug</h1><p>Price: 12.00 EUR</p></body></html>")
                elif self.path == "/page":
                    body = f"<html><body><h1 id=t>page</h1><img src='{leak_to}' alt=x></body></html>"
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

        self.server = StaticServer(handler=Handler).start()
        self.port, self.origin = self.server.port, self.server.origin

    def close(self) -> None:
        self.server.stop()


@pytest.fixture
def shop(elsewhere: Probe) -> Iterator[Site]:
    site = Site(leak_to=f"http://127.0.0.2:{elsewhere.port}/leak.png")
    yield site
    site.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[ProxyProcess, ProxyProcess]]:
    with running_proxy() as a, running_proxy() as b:
        yield a, b


def _pool(*servers: str, **options: object) -> dict[str, object]:
    proxies = [{"server": s, "username": USERNAME, "password": PASSWORD, "label": f"p{i}"} for i, s in enumerate(servers)]
    return {"res": {"proxies": proxies, **options}}


def _settings(pools: dict[str, object], base: Settings | None = None) -> Settings:
    made = load_settings(proxy_pools=pools)
    return made if base is None else base.model_copy(update={"proxy_pools": made.proxy_pools})


def _job_at(index: int, size: int = 2) -> str:
    while True:
        job = uuid.uuid4().hex
        if sticky_index(job, size) == index:
            return job


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _script(*steps: dict[str, object]) -> JobSpec:
    return JobSpec(script=list(steps), proxy_pool="res")


async def test_a_job_keeps_one_proxy_of_its_pool(pool, shop, upstream):
    a, b = upstream
    settings = _settings(_pool(a.server(), b.server("socks5")))
    spec = _script({"go_to_url": {"url": f"{shop.origin}/one"}}, {"go_to_url": {"url": f"{shop.origin}/two"}},
                   {"extract_fields": {"fields": {"t": "#t"}}})
    for index, (mine, other) in enumerate(((a, b), (b, a))):
        before_mine, before_other = len(mine.passed(shop.port)), len(other.passed(shop.port))
        async with pool.lease() as lease:
            result = await run_job(spec, lease, settings=settings, job_id=_job_at(index))
        assert result.status == JobStatus.succeeded, result.error
        assert len(mine.passed_at_least(shop.port, before_mine + 2)) >= before_mine + 2, mine.lines
        assert len(other.passed(shop.port)) == before_other  # sticky: the other never carried this job


async def test_a_429_moves_the_job_to_the_other_proxy(pool, shop, upstream):
    a, b = upstream
    settings = _settings(_pool(a.server(), b.server()))
    rotations = _metric("browserd_proxy_rotations_total", pool="res", reason="http_429")
    blocks = _metric("browserd_proxy_blocks_total", pool="res", proxy="p0", reason="http_429")
    before_a, before_b = len(a.passed(shop.port)), len(b.passed(shop.port))
    spec = _script({"go_to_url": {"url": f"{shop.origin}/limited"}}, {"wait": {"seconds": 1.5}},
                   {"go_to_url": {"url": f"{shop.origin}/limited"}}, {"extract_fields": {"fields": {"t": "#t"}}})
    async with pool.lease() as lease:
        result = await run_job(spec, lease, settings=settings, job_id=_job_at(0))
    assert result.status == JobStatus.succeeded, result.error
    assert result.data == {"t": "limited ok"}
    assert len(a.passed_at_least(shop.port, before_a + 1)) == before_a + 1, a.lines  # the 429, through the first proxy
    assert len(b.passed_at_least(shop.port, before_b + 1)) >= before_b + 1, b.lines  # the page again, through the other
    assert _metric("browserd_proxy_rotations_total", pool="res", reason="http_429") == rotations + 1
    assert _metric("browserd_proxy_blocks_total", pool="res", proxy="p0", reason="http_429") == blocks + 1


async def test_a_dead_proxy_is_cooled_down_and_the_job_goes_on_through_the_next(pool, shop, upstream):
    _, b = upstream
    dead = f"http://127.0.0.1:{free_port()}"
    settings = _settings(_pool(dead, b.server()))
    failures = _metric("browserd_proxy_failures_total", pool="res", proxy="p0")
    before = len(b.passed(shop.port))
    async with pool.lease() as lease:
        result = await run_job(_script({"go_to_url": {"url": f"{shop.origin}/one"}},
                                       {"extract_fields": {"fields": {"t": "#t"}}}),
                               lease, settings=settings, job_id=_job_at(0))
    assert result.status == JobStatus.succeeded, result.error
    assert len(b.passed(shop.port)) >= before + 1
    assert _metric("browserd_proxy_failures_total", pool="res", proxy="p0") == failures + 1
    assert _metric("browserd_proxy_cooled_down", pool="res", proxy="p0") == 1


async def test_a_pool_with_no_live_proxy_fails_proxy_error_naming_labels_only(pool, shop, caplog):
    settings = _settings(_pool(f"http://127.0.0.1:{free_port()}", f"socks5://127.0.0.1:{free_port()}"))
    caplog.set_level(logging.DEBUG)
    async with pool.lease() as lease:
        result = await run_job(_script({"go_to_url": {"url": f"{shop.origin}/one"}}), lease, settings=settings)
    assert result.category == FailureCategory.proxy_error, result.error
    assert "of pool 'res'" in result.error and "cannot connect" in result.error
    shown = result.model_dump_json() + caplog.text
    assert PASSWORD not in shown and USERNAME not in shown


async def test_the_egress_policy_still_judges_every_destination_through_the_pool(pool, shop, elsewhere, upstream,
                                                                                 caplog):
    a, b = upstream
    settings = _settings(_pool(a.server(), b.server("socks5")))
    caplog.set_level(logging.DEBUG)
    spec = JobSpec(script=[{"go_to_url": {"url": f"{shop.origin}/page"}}, {"wait": {"seconds": 0.5}}],
                   proxy_pool="res", denied_domains=["denied.test"])
    async with pool.lease() as lease:
        result = await run_job(spec, lease, settings=settings)
    assert result.status == JobStatus.succeeded, result.error
    # 127.0.0.2 is not opened: the page's image there reached neither proxy, let alone the server
    assert elsewhere.requests == [] and a.passed(elsewhere.port) == [] and b.passed(elsewhere.port) == []
    async with pool.lease() as lease:
        refused = await run_job(JobSpec(script=[{"go_to_url": {"url": "http://denied.test/"}}], proxy_pool="res",
                                        denied_domains=["denied.test"]), lease, settings=settings)
    assert refused.status == JobStatus.failed and "denied.test" in (refused.error or "")
    # the credentials: on the wire to the proxy only; never in the record, the logs, or to the site
    shown = result.model_dump_json() + refused.model_dump_json() + caplog.text + repr(shop.requests)
    assert PASSWORD not in shown and USERNAME not in shown and "proxy-authorization" not in shown.lower()


async def test_the_agent_reporting_blocked_by_site_moves_the_job_and_it_goes_on(pool, shop, upstream, llm, settings):
    a, b = upstream
    url = f"{shop.origin}/wall"
    llm.add(PLANNER, plan(), plan(done=True, final_answer="A bot wall stops us."),
            plan(done=True, final_answer="The blue mug costs 12.00 EUR."))
    llm.add(NAVIGATOR, act({"done": {"text": "bot wall", "success": False, "reason": "blocked_by_site"}}),
            act({"go_to_url": {"url": url}}),
            act({"done": {"text": "The blue mug costs 12.00 EUR.", "success": True, "evidence": ["Price: 12.00 EUR"]}}))
    before_a, before_b = len(a.passed(shop.port)), len(b.passed(shop.port))
    spec = JobSpec(task="Read the blue mug's price", start_url=url, proxy_pool="res")
    async with pool.lease() as lease:
        result = await run_job(spec, lease, settings=_settings(_pool(a.server(), b.server()), settings),
                               job_id=_job_at(0))
    assert result.status == JobStatus.succeeded, result.error
    assert "12.00" in (result.final_answer or "")
    # the wall came through the first proxy, the price (the page again) through the other
    assert shop.hits["/wall"] == 2 and len(a.passed(shop.port)) > before_a and len(b.passed(shop.port)) > before_b
    prompts = repr(llm.requests)
    assert "another proxy of its pool" in prompts  # the agent was told it may try again
    assert PASSWORD not in prompts and USERNAME not in prompts and "127.0.0.1:" + str(a.port) not in prompts
