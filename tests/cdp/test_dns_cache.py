"""The egress gate's DNS cache (``cdp.egress.DnsCache``): answers and failures kept a short while, one
lookup per name at a time, lookups on threads of its own (not asyncio's six-thread default pool).

The lookups are plain functions standing in for ``socket.getaddrinfo`` (which answers from the
machine's resolver: its answers cannot be chosen by a test); the cache, its threads and the event loop
are the real ones."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading

import pytest

from cdp.egress import DnsCache, system_resolver

ADDRESS = ipaddress.ip_address("192.0.2.7")


class Lookups:
    """Answers ADDRESS for every name but ``missing`` (no such name), counting what it is asked."""

    def __init__(self, missing: str = "gone.example") -> None:
        self.asked: list[str] = []
        self.missing = missing
        self.lock = threading.Lock()

    def __call__(self, host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        with self.lock:
            self.asked.append(host)
        if host == self.missing:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ADDRESS]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_an_answer_is_kept_for_its_ttl_then_asked_again() -> None:
    lookups, clock = Lookups(), Clock()
    dns = DnsCache(lookups, ttl=30, failure_ttl=10, clock=clock)
    assert await dns("cdn.example", 443) == [ADDRESS]
    assert await dns("cdn.example", 80) == [ADDRESS], "the port does not change a name's addresses"
    assert lookups.asked == ["cdn.example"]
    clock.now += 31
    assert await dns("cdn.example", 443) == [ADDRESS]
    assert lookups.asked == ["cdn.example", "cdn.example"]


async def test_a_failure_is_kept_too_and_raised_as_the_resolver_raised_it() -> None:
    lookups, clock = Lookups(), Clock()
    dns = DnsCache(lookups, ttl=30, failure_ttl=10, clock=clock)
    for _ in range(3):
        with pytest.raises(socket.gaierror) as caught:
            await dns("gone.example", 443)
        assert caught.value.errno == socket.EAI_NONAME and "not known" in str(caught.value)
    assert lookups.asked == ["gone.example"], "a name that does not resolve is not asked again at once"
    clock.now += 11
    with pytest.raises(socket.gaierror):
        await dns("gone.example", 443)
    assert lookups.asked == ["gone.example", "gone.example"]


async def test_callers_asking_for_a_name_being_looked_up_share_the_one_lookup() -> None:
    release = threading.Event()
    lookups = Lookups()

    def slow(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        release.wait(10)
        return lookups(host)

    dns = DnsCache(slow)
    waiting = [asyncio.ensure_future(dns("fonts.example", 443)) for _ in range(20)]
    await asyncio.sleep(0.05)
    release.set()
    assert await asyncio.gather(*waiting) == [[ADDRESS]] * 20
    assert lookups.asked == ["fonts.example"] and dns.lookups == 1


async def test_more_names_than_the_default_pool_has_threads_are_looked_up_at_once() -> None:
    """Twelve lookups that each wait for all twelve to have started: with six threads (asyncio's
    default pool on two cores) they could never all start, and the barrier would break."""
    names = [f"host{n}.example" for n in range(12)]
    barrier = threading.Barrier(len(names), timeout=10)

    def together(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        barrier.wait()
        return [ADDRESS]

    dns = DnsCache(together)
    assert await asyncio.gather(*(dns(n, 443) for n in names)) == [[ADDRESS]] * len(names)


async def test_an_ip_literal_is_its_own_answer_and_never_looked_up() -> None:
    lookups = Lookups()
    dns = DnsCache(lookups)
    assert await dns("127.0.0.1", 80) == [ipaddress.ip_address("127.0.0.1")]
    assert await dns("::1", 80) == [ipaddress.ip_address("::1")]
    assert lookups.asked == []


async def test_the_system_resolver_answers_localhost_through_the_cache() -> None:
    assert ipaddress.ip_address("127.0.0.1") in await system_resolver("localhost", 80)
