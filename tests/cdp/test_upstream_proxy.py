"""A job's upstream proxy chained behind the egress proxy, with a real pproxy process (no browser)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdp.egress import EgressProxy, NetworkPolicy
from cdp.upstream import UpstreamProxy
from tests.cdp.test_egress_proxy import LOOPBACK, exchange, origin, proxy  # noqa: F401  (fixtures)
from tests.support.proxies import PASSWORD, USERNAME, ProxyProcess, free_port, running_proxy


@pytest.fixture(scope="module")
def upstream() -> Iterator[ProxyProcess]:
    with running_proxy() as p:
        yield p


def _via(proxy_process: ProxyProcess, scheme: str, password: str = PASSWORD) -> UpstreamProxy:
    return UpstreamProxy(scheme, "127.0.0.1", proxy_process.port, USERNAME, password)


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_tunnels_and_plain_requests_go_through_the_upstream_proxy(proxy: EgressProxy, origin, upstream,
                                                                        scheme):
    gate = await proxy.open_gate(LOOPBACK)
    gate.admit(LOOPBACK, _via(upstream, scheme))
    before = len(upstream.passed(origin.port))
    reply = await exchange(gate.port, f"GET http://127.0.0.1:{origin.port}/plain HTTP/1.1\r\n"
                           f"Host: 127.0.0.1:{origin.port}\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 200") and b"GET /plain HTTP/1.1|" in reply
    tunnel = await exchange(gate.port, f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n"
                            f"GET /tunnelled HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert tunnel.startswith(b"HTTP/1.1 200 Connection Established") and b"GET /tunnelled" in tunnel
    assert len(upstream.passed_at_least(origin.port, before + 2)) == before + 2, upstream.lines
    assert gate.upstream_failure is None


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_wrong_credentials_are_a_proxy_failure_without_the_password(proxy: EgressProxy, origin, upstream,
                                                                          scheme):
    gate = await proxy.open_gate(LOOPBACK)
    gate.admit(LOOPBACK, _via(upstream, scheme, password="wrong-password"))
    reply = await exchange(gate.port, f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 502")
    failure = gate.upstream_failure or ""
    assert "refused the credentials" in failure
    assert "wrong-password" not in gate.upstream_failure and f"{USERNAME}:***@" in gate.upstream_failure
    assert not origin.requests


async def test_an_unreachable_proxy_is_a_proxy_failure(proxy: EgressProxy, origin):
    gate = await proxy.open_gate(LOOPBACK)
    gate.admit(LOOPBACK, UpstreamProxy("http", "127.0.0.1", free_port()))
    reply = await exchange(gate.port, f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 502")
    assert "cannot connect" in (gate.upstream_failure or "")


async def test_the_policy_still_judges_the_destination_before_the_proxy_sees_it(proxy: EgressProxy, origin,
                                                                                 upstream):
    closed = NetworkPolicy.build(False, [])  # loopback not opened: the destination is refused
    gate = await proxy.open_gate(LOOPBACK)
    gate.admit(closed, _via(upstream, "http"))
    before = list(upstream.lines)
    reply = await exchange(gate.port, f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 403")
    assert upstream.lines == before and not origin.requests
    assert gate.upstream_failure is None


async def test_the_proxy_address_must_be_open_to_the_job(proxy: EgressProxy, upstream):
    """The destination 127.0.0.2 is opened, the proxy's 127.0.0.1 is not: the proxy is refused."""
    only_two = NetworkPolicy.build(False, ["127.0.0.2/32"])
    gate = await proxy.open_gate(LOOPBACK)
    gate.admit(only_two, _via(upstream, "http"))
    reply = await exchange(gate.port, b"CONNECT 127.0.0.2:9 HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 502")
    assert "its address is refused by the job's network policy" in (gate.upstream_failure or "")
