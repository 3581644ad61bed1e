"""One egress policy for everything a job's browser does (issue 13, parts 1 and 2).

Every vector here leaked with per-page ``Fetch`` interception alone. Origins are told apart by
name on loopback: ``*.test`` names resolve to 127.0.0.1 in the tests' egress proxy, and the
denied server records every request that reaches it, so "blocked" means it saw nothing.
No test sends traffic beyond loopback: private and metadata addresses are refused by the proxy
before it dials (the decision log shows no address was chosen).
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
import pytest_asyncio

from cdp import BrowserPool, PoolConfig
from config import load_settings
from config.networks import network_kind
from tests.support.jobs import run_job
from tests.support.servers import WebSocketRecorder
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus

ALLOWED = ["allowed.test", "other.test", "127.0.0.1"]


@pytest_asyncio.fixture
async def ws_server() -> AsyncIterator[WebSocketRecorder]:
    async with WebSocketRecorder() as recorder:
        yield recorder


async def run(pool, spec: JobSpec, settings=None):
    """Run ``spec``; returns the result and the lease gate's decisions."""
    async with pool.lease() as lease:
        result = await run_job(spec, lease, settings=settings)
        decisions = list(lease.egress.decisions)
    return result, decisions


def visit(url: str, seconds: float = 1.5, **spec) -> JobSpec:
    return JobSpec(script=[{"go_to_url": {"url": url}}, {"wait": {"seconds": seconds}},
                           {"extract_fields": {"fields": {"status": "#status"}}}], **spec)


def refused_hosts(decisions) -> set[str]:
    return {d.host for d in decisions if not d.allowed}


# --- vectors that leaked through per-page Fetch interception ----------------------------------


async def test_subresources_of_an_allowed_cross_origin_iframe_are_judged(pool, site, other_site, denied_site):
    evil = denied_site.url("agent/secret.html", host="evil.test")
    inner = f"http://other.test:{other_site.port}/egress/frame-leak.html?target={quote(evil, safe='')}"
    page = f"http://allowed.test:{site.port}/egress/frame-host.html?frame={quote(inner, safe='')}"
    result, decisions = await run(pool, visit(page, allowed_domains=ALLOWED))
    assert result.status == JobStatus.succeeded, result.error
    assert "other.test" in {d.host for d in decisions if d.allowed}, "the cross-origin frame itself loads"
    assert denied_site.paths == [], "neither the frame's image at load nor its later fetch got through"
    assert refused_hosts(decisions) == {"evil.test"}


async def test_service_worker_install_fetch_is_judged(pool, site, denied_site):
    evil = quote(denied_site.url("agent/secret.html", host="evil.test"), safe="")
    result, decisions = await run(pool, visit(site.url(f"egress/workers.html?sw=1&target={evil}"), 2.0,
                                              allowed_domains=ALLOWED))
    assert result.data == {"status": "service worker registered"}, "the worker ran its install handler"
    assert denied_site.paths == []
    assert "evil.test" in refused_hosts(decisions)


async def test_shared_worker_fetch_is_judged(pool, site, denied_site):
    evil = quote(denied_site.url("agent/secret.html", host="evil.test"), safe="")
    result, decisions = await run(pool, visit(site.url(f"egress/workers.html?shared=1&target={evil}"),
                                              allowed_domains=ALLOWED))
    assert result.data["status"].startswith("shared worker: fetch failed"), "the worker ran, its fetch failed"
    assert denied_site.paths == []
    assert "evil.test" in refused_hosts(decisions)


@pytest.mark.parametrize("host, status, connections", [
    ("evil.test", "websocket failed", 0),
    ("other.test", "websocket open", 1),  # the control: the same page reaches an allowed socket
])
async def test_websocket_is_judged_like_any_connection(pool, site, ws_server, host, status, connections):
    ws = quote(f"ws://{host}:{ws_server.port}/", safe="")
    result, decisions = await run(pool, visit(site.url(f"egress/workers.html?ws={ws}"), allowed_domains=ALLOWED))
    assert result.data == {"status": status}
    assert ws_server.connections == connections
    assert [d.allowed for d in decisions if d.host == host and d.method == "CONNECT"] == [bool(connections)]


# --- vectors Fetch interception already stopped; the proxy stops them too ----------------------


async def test_redirect_to_a_denied_origin(pool, denied_site):
    evil = quote(denied_site.url("agent/secret.html", host="evil.test"), safe="")
    spec = JobSpec(start_url=denied_site.url(f"redirect?to={evil}", host="allowed.test"), allowed_domains=ALLOWED,
                   script=[{"done": {"text": "never"}}])
    result, decisions = await run(pool, spec)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert [p.split("?")[0] for p in denied_site.paths] == ["/redirect"], "only the allowed hop was served"


async def test_popup_to_a_denied_origin(pool, site, denied_site):
    evil = quote(denied_site.url("agent/secret.html", host="evil.test"), safe="")
    spec = JobSpec(allowed_domains=ALLOWED, script=[
        {"go_to_url": {"url": site.url(f"egress/workers.html?popup=1&target={evil}")}},
        {"click_element": {"index": 1}},
        {"wait": {"seconds": 1}},
    ])
    result, decisions = await run(pool, spec)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert denied_site.paths == []
    assert "evil.test" in refused_hosts(decisions)


# --- private networks, judged on the resolved address -------------------------------------------


@pytest.fixture
def closed(llm):
    """Settings with no private network opened (the tests' environment opens 127.0.0.1/32)."""
    return load_settings(allowed_networks=[], llm_base_url=llm.base_url, openai_api_key="test-key")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "rebind.test"])
async def test_loopback_is_closed_by_default_whatever_the_name(pool, denied_site, closed, host):
    """A literal loopback address, a DNS name resolving to it, a name a resolver maps there."""
    spec = JobSpec(start_url=denied_site.url("agent/secret.html", host=host), script=[{"done": {"text": "never"}}])
    result, decisions = await run(pool, spec, closed)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert "loopback" in result.error
    assert denied_site.paths == []
    tried = [d for d in decisions if d.host == host]
    assert tried and all(d.address is None for d in tried), "refused on the resolved address, never dialled"


async def test_a_job_opens_loopback_with_allowed_networks(pool, denied_site, closed):
    spec = JobSpec(start_url=denied_site.url("agent/secret.html", host="127.0.0.1"), allowed_networks=["127.0.0.1/32"],
                   script=[{"done": {"text": "read"}}])
    result, _ = await run(pool, spec, closed)
    assert result.status == JobStatus.succeeded, result.error
    assert "/agent/secret.html" in denied_site.paths


async def test_the_operator_opens_every_private_network_with_one_setting(pool, denied_site, llm):
    opened = load_settings(allowed_networks=[], allow_private_networks=True, llm_base_url=llm.base_url,
                           openai_api_key="test-key")
    spec = JobSpec(start_url=denied_site.url("agent/secret.html", host="127.0.0.1"), script=[{"done": {"text": "read"}}])
    result, _ = await run(pool, spec, opened)
    assert result.status == JobStatus.succeeded, result.error
    assert "/agent/secret.html" in denied_site.paths


@pytest.mark.parametrize("url, kind", [
    ("http://10.0.0.1/", "private (RFC 1918)"),
    ("http://192.168.1.1/admin", "private (RFC 1918)"),
    ("http://169.254.169.254/latest/meta-data/", "link-local (cloud metadata)"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("https://[fd00::1]/", "unique local"),
    ("http://[::ffff:169.254.169.254]/", "link-local (cloud metadata)"),
    ("http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "link-local (cloud metadata)"),  # NAT64
    ("http://[::ffff:0:a9fe:a9fe]/", "link-local (cloud metadata)"),  # SIIT
    ("http://[::a9fe:a9fe]/", "link-local (cloud metadata)"),  # IPv4-compatible
    ("http://[fec0::1]/", "site-local"),
])
async def test_private_and_metadata_addresses_are_refused_before_any_connection(pool, url, kind):
    spec = JobSpec(start_url=url, script=[{"done": {"text": "never"}}])
    result, decisions = await run(pool, spec)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    refused = [d for d in decisions if not d.allowed]
    assert refused and all(d.address is None for d in refused), "refused on the resolved address, never dialled"
    assert kind in refused[0].refusal


async def test_a_denied_name_with_a_trailing_dot_is_refused_from_the_page_and_the_agent(pool, site, denied_site):
    """``evil.test`` denied: a hostile page's fetch and iframe to ``evil.test.`` (the same name to DNS),
    and the job's own navigation to ``EVIL.test.``, are refused by name (issue 22, finding 6)."""
    target = quote(denied_site.url("agent/secret.html", host="evil.test."), safe="")
    page = site.url(f"agent/firewall.html?fetch=1&frame=1&target={target}")
    result, _ = await run(pool, visit(page, denied_domains=["evil.test"], allowed_networks=["127.0.0.1/32"]))
    assert result.status == JobStatus.succeeded, result.error
    assert denied_site.paths == []
    notes = " ".join(a.result or "" for step in result.steps for a in step.actions)
    assert "secret.html?via=fetch: domain not allowed" in notes and "secret.html?via=frame: domain not allowed" in notes
    spec = JobSpec(start_url=denied_site.url("agent/secret.html", host="EVIL.test."), denied_domains=["evil.test"],
                   allowed_networks=["127.0.0.1/32"], script=[{"done": {"text": "never"}}])
    result, _ = await run(pool, spec)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert denied_site.paths == []


@pytest.mark.e2e  # a pool of its own
async def test_a_job_without_an_egress_gate_does_not_start(site):
    """A pool without the proxy cannot enforce the policy on workers and sockets: default-deny."""
    async with BrowserPool(PoolConfig(browsers=1, warm=0)) as bare, bare.lease() as lease:
        result = await run_job(JobSpec(start_url=site.url("agent/secret.html"), script=[{"done": {}}]), lease)
    assert result.status == JobStatus.failed and "no egress proxy" in result.error


# --- pure parts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("address, kind", [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("10.1.2.3", "private (RFC 1918)"), ("172.16.0.1", "private (RFC 1918)"), ("172.31.255.255", "private (RFC 1918)"),
    ("192.168.0.1", "private (RFC 1918)"), ("169.254.169.254", "link-local (cloud metadata)"),
    ("100.64.0.1", "carrier-grade NAT"), ("100.127.255.255", "carrier-grade NAT"),
    ("fc00::1", "unique local"), ("fd12:3456::1", "unique local"), ("fe80::1", "link-local"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private (RFC 1918)"), ("224.0.0.1", "multicast"), ("192.0.2.1", "reserved"),
    ("8.8.8.8", None), ("172.32.0.1", None), ("2606:4700::1111", None),
])
def test_network_kinds(address, kind):
    assert network_kind(ipaddress.ip_address(address)) == kind


def test_allowed_networks_are_validated():
    assert JobSpec(task="x", allowed_networks=["10.1.0.0/16", "127.0.0.1"]).allowed_networks == ["10.1.0.0/16", "127.0.0.1/32"]
    with pytest.raises(ValueError, match="is not an IP network"):
        JobSpec(task="x", allowed_networks=["intranet.example"])
    with pytest.raises(Exception, match="BROWSERD_ALLOWED_NETWORKS"):
        load_settings(allowed_networks="10.0.0.0/8,not-a-net")
