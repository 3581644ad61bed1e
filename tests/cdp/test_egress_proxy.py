"""The egress proxy on its own, spoken to over raw sockets on 127.0.0.1 (no browser needed)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator

import pytest_asyncio

from cdp.egress import DenyAll, EgressProxy, NetworkPolicy
from config.hosts import parse_address
from workers.agent.firewall import JobEgress, UrlPolicy

LOOPBACK = NetworkPolicy.build(False, ["127.0.0.1/32"])


class EchoServer:
    """An HTTP/1.1 origin on 127.0.0.1 answering each request with its method, path and body."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        body = await reader.readexactly(length) if length else b""
        if b"transfer-encoding: chunked" in head.lower():
            body = await reader.readuntil(b"0\r\n\r\n")
        self.requests.append(head + body)
        reply = head.split(b"\r\n")[0] + b"|" + body
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nKeep-Alive: timeout=5\r\n\r\n%s" % (len(reply), reply))
        await writer.drain()
        writer.close()


@pytest_asyncio.fixture
async def origin() -> AsyncIterator[EchoServer]:
    echo = EchoServer()
    server = await asyncio.start_server(echo.handle, "127.0.0.1", 0)
    echo.port = server.sockets[0].getsockname()[1]
    async with server:
        yield echo


@pytest_asyncio.fixture
async def proxy() -> AsyncIterator[EgressProxy]:
    p = EgressProxy(default_rule=LOOPBACK)
    yield p
    await p.close()


async def exchange(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def test_forwards_a_body_by_length_and_by_chunks_and_closes_after_one_request(proxy, origin):
    gate = await proxy.open_gate()
    url = f"http://127.0.0.1:{origin.port}/form?a=1"
    reply = await exchange(gate.port, f"POST {url} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                      "Proxy-Connection: keep-alive\r\n\r\nhello".encode())
    assert reply.startswith(b"HTTP/1.1 200 OK") and reply.endswith(b"POST /form?a=1 HTTP/1.1|hello")
    assert b"Connection: close" in reply and b"Keep-Alive" not in reply
    assert b"proxy-connection" not in origin.requests[0].lower()
    reply = await exchange(gate.port, f"POST {url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      "5\r\nhello\r\n0\r\n\r\n".encode())
    assert reply.endswith(b"5\r\nhello\r\n0\r\n\r\n")


async def test_a_request_that_is_not_for_a_proxy_is_refused(proxy):
    """A page that reaches a gate's port directly sends origin-form requests: nothing is forwarded."""
    gate = await proxy.open_gate()
    reply = await exchange(gate.port, b"GET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400") and not gate.decisions


async def test_a_gate_is_never_a_destination_even_with_loopback_open(proxy):
    gate, other = await proxy.open_gate(), await proxy.open_gate()
    reply = await exchange(gate.port, f"CONNECT 127.0.0.1:{other.port} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 403") and b"egress proxy" in reply
    assert gate.decisions[-1].address is None


async def test_a_side_door_is_judged_by_its_gates_rule_and_is_never_a_destination(proxy, origin):
    """What browserd fetches for a job (robots.txt) goes in through a side door on this process's
    loopback, under the job's rule; while open, the door is refused as a destination like a gate."""
    gate, other = await proxy.open_gate(), await proxy.open_gate()
    async with gate.side_door() as door:
        port = int(door.rsplit(":", 1)[1])
        reply = await exchange(port, f"GET http://127.0.0.1:{origin.port}/robots.txt HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 200") and gate.decisions[-1].allowed
        looped = await exchange(other.port, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert looped.startswith(b"HTTP/1.1 403") and b"egress proxy" in looped
        gate.admit(DenyAll("the job's browser context is closed"))
        assert await exchange(port, f"GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode()) == b""
    assert proxy.doors == set(), "the door closes with the fetch"


async def test_a_host_service_on_a_namespaced_gates_port_number_is_not_the_proxy(origin):
    """Gates made elsewhere (the browsers' network namespace; here another loopback address) have port
    numbers of that loopback: a host service that happens to use the same number stays reachable
    (CI once saw a job's shop refused as "browserd's egress proxy")."""
    async def elsewhere(host: str) -> socket.socket:
        sock = socket.socket()
        sock.bind(("127.0.0.3", origin.port))  # the same number as the host service
        sock.listen()
        sock.setblocking(False)
        return sock

    proxy = EgressProxy(default_rule=LOOPBACK, listen=elsewhere)
    try:
        gate = await proxy.open_gate()
        assert gate.port == origin.port
        reader, writer = await asyncio.open_connection("127.0.0.3", gate.port)
        writer.write(f"GET http://127.0.0.1:{origin.port}/shop HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"GET /shop HTTP/1.1|")
    finally:
        await proxy.close()


async def test_a_gate_refuses_everything_until_a_job_admits_its_rule(origin):
    proxy = EgressProxy()  # default rule: DenyAll
    try:
        gate = await proxy.open_gate()
        request = f"GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        tunnel = f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n".encode()
        assert await exchange(gate.port, request) == b"", "a refused request is closed unanswered"
        assert b"403 Forbidden" in (refused := await exchange(gate.port, tunnel))
        assert b"no job holds this browser context" in refused
        assert [d.refusal for d in gate.decisions] == ["no job holds this browser context"] * 2
        gate.admit(LOOPBACK)
        assert (await exchange(gate.port, request)).startswith(b"HTTP/1.1 200")
        assert len(origin.requests) == 1
    finally:
        await proxy.close()


async def test_closing_a_gate_cuts_its_open_tunnels(proxy, origin):
    gate = await proxy.open_gate()
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.port)
    writer.write(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n".encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    await gate.close()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    assert isinstance(gate.rule, DenyAll) and gate not in proxy.gates
    writer.close()


# --- names and addresses in any spelling (issue 22, finding 6) ---------------------------------


def _resolving_to(address: str):  # type: ignore[no-untyped-def]
    """A resolver answering ``address`` for every name, as DNS does whatever the trailing dots (and
    as DNS64 does with a synthesised AAAA record): what the gate then judges is the name and address."""
    async def resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        literal = parse_address(host)
        return [literal] if literal is not None else [ipaddress.ip_address(address)]

    return resolve


async def test_a_denied_name_is_refused_in_any_spelling_even_where_it_resolves_to_an_open_address(origin):
    """``evil.example`` denied: ``evil.example.`` (and its other spellings) resolves just the same, to an
    address the job opened; the tunnel and the forwarded request are refused by name, nothing dialled."""
    rule = JobEgress(UrlPolicy.build(job_denied=["evil.example", "127.0.0.1"]), LOOPBACK)
    proxy = EgressProxy(default_rule=rule, resolver=_resolving_to("127.0.0.1"))
    try:
        gate = await proxy.open_gate()
        for host in ("evil.example.", "EVIL.Example..", "api.evil.example.", "2130706433", "0x7f.1", "[::ffff:7f00:1]"):
            reply = await exchange(gate.port, f"CONNECT {host}:{origin.port} HTTP/1.1\r\n\r\n".encode())
            assert reply.startswith(b"HTTP/1.1 403") and b"domain not allowed" in reply, host
            forwarded = f"GET http://{host}:{origin.port}/secret HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            assert await exchange(gate.port, forwarded) == b"", host
        assert origin.requests == []
        assert all(d.address is None and (d.refusal or "").startswith("domain not allowed: ") for d in gate.decisions)
        assert {d.host for d in gate.decisions} == {"evil.example", "api.evil.example", "127.0.0.1", "::ffff:7f00:1"}
        gate.admit(JobEgress(UrlPolicy.build(job_denied=["other.example"]), LOOPBACK))
        allowed = f"GET http://Evil.Example.:{origin.port}/ok HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        reply = await exchange(gate.port, allowed)
        assert reply.endswith(b"GET /ok HTTP/1.1|"), "an allowed name still goes through, respelled or not"
    finally:
        await proxy.close()


async def test_a_nat64_address_of_a_closed_one_is_refused_before_dialling(proxy):
    """``64:ff9b::a9fe:a9fe`` is 169.254.169.254 through a NAT64 gateway; a name a DNS64 resolver
    answers with ``64:ff9b::7f00:2`` is 127.0.0.2. Both closed, whatever loopback address the job opened."""
    gate = await proxy.open_gate(NetworkPolicy())
    reply = await exchange(gate.port, b"CONNECT [64:ff9b::a9fe:a9fe]:80 HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 403") and b"link-local" in reply
    for literal in ("[64:ff9b:1::a9fe:a9fe]", "[::ffff:0:a9fe:a9fe]", "[::a9fe:a9fe]", "[fec0::1]"):
        reply = await exchange(gate.port, f"CONNECT {literal}:80 HTTP/1.1\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 403"), literal
    dns64 = EgressProxy(default_rule=LOOPBACK, resolver=_resolving_to("64:ff9b::7f00:2"))
    try:
        other = await dns64.open_gate()
        reply = await exchange(other.port, b"CONNECT metadata.example:80 HTTP/1.1\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 403") and b"loopback" in reply
    finally:
        await dns64.close()
    assert all(d.address is None for d in [*gate.decisions, *other.decisions])
