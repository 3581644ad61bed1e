"""Attacks that go around the egress gate when Chrome misbehaves (issue 22), shared by the pytests of
tests/cdp/test_isolation.py and ``python -m bench.attacks``. Each returns what reached a place the
job's rule refuses (datagrams, recorded paths): blocked means nothing.

They use only what any version of the pool offers (a pool, its leases, ``process_tree``), so each
one shows the leak on a tree without the isolation, and its absence with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from typing import Any

from cdp import BrowserPool, PoolConfig, process_tree
from cdp.egress import NetworkPolicy, suffix_resolver
from config import Settings
from tests.support.jobs import run_job
from tests.support.servers import SITE, RecordingServer, serve
from tests.support.testhost import TestHost, test_host
from workers.jobs.model.spec import JobSpec

PAGES = ["127.0.0.1/32"]  # the fixture pages' own address, opened per job
NETWORK_SERVICE = b"--utility-sub-type=network.mojom.NetworkService"


def isolation_pool(**config: Any) -> BrowserPool:
    """A pool as a worker runs it: every context through a closed-by-default egress gate."""
    return BrowserPool(PoolConfig(browsers=1, warm=1, egress=NetworkPolicy(),
                                  resolver=suffix_resolver(".test", "127.0.0.1"), **config))


def visit(url: str, seconds: float, networks: list[str] = PAGES) -> JobSpec:
    return JobSpec(script=[{"go_to_url": {"url": url}}, {"wait": {"seconds": seconds}}],
                   allowed_networks=networks)  # type: ignore[arg-type]


# --- WebRTC -------------------------------------------------------------------------------------


def webrtc_datagrams(settings: Settings, **config: Any) -> int:
    """A page opens an RTCPeerConnection whose STUN server and remote peer are an address the job's
    rule refuses, on a host with a non-loopback interface (a test host of our own): the UDP datagrams
    that reached that address (ICE checks carry page-chosen bytes in their USERNAME)."""
    with test_host() as host:
        return host.run(lambda: _webrtc_on(host, settings, config))


async def _webrtc_on(host: TestHost, settings: Settings, config: dict[str, Any]) -> int:
    receivers = []
    for _ in range(2):  # the STUN server's port and the fake peer's
        receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        receiver.bind((host.peer, 0))
        receiver.setblocking(False)
        receivers.append(receiver)
    stun, peer = (r.getsockname()[1] for r in receivers)
    try:
        with serve(SITE) as site:
            async with isolation_pool(**config) as pool, pool.lease() as lease:
                url = site.url(f"isolation/webrtc.html?to={host.peer}&port={peer}&stun={stun}")
                result = await run_job(visit(url, 3.0), lease, settings=settings)
                assert result.status == "succeeded", result.error
        return sum(_drain(receiver) for receiver in receivers)
    finally:
        for receiver in receivers:
            receiver.close()


def _drain(receiver: socket.socket) -> int:
    count = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            receiver.recv(4096)
            count += 1
    return count


# --- a network service that dies ---------------------------------------------------------------


def network_service_pids(pool: BrowserPool) -> list[int]:
    """The network-service processes of the pool's browsers."""
    found = []
    for root in pool.browser_pids():
        for pid in process_tree(root):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as fh:
                if NETWORK_SERVICE in fh.read():
                    found.append(pid)
    return found


async def after_network_service_killed(site_url: str, denied: RecordingServer, settings: Settings,
                                       **config: Any) -> list[str]:
    """A job runs; the browser's network service is killed (``kill -9``, as an OOM kill would); the
    next job takes a warm context and loads a refused loopback address. The paths that reached it."""
    denied.paths.clear()
    async with isolation_pool(**config) as pool:
        async with pool.lease() as lease:
            first = await run_job(visit(site_url, 0.2), lease, settings=settings)
            assert first.status == "succeeded", first.error
        pids = network_service_pids(pool)
        assert pids, "the browser has a network-service process"
        os.kill(pids[0], signal.SIGKILL)
        await asyncio.sleep(0.1)  # Chrome notices and restarts it
        async with pool.lease() as lease:
            await run_job(visit(denied.url("agent/secret.html"), 1.0, networks=[]), lease, settings=settings)
    return list(denied.paths)


# --- Chrome's own traffic ---------------------------------------------------------------------


async def default_context_reaches(pool: BrowserPool, denied: RecordingServer) -> list[str]:
    """Stands in for Chrome's own background traffic (component updates, accounts, safe browsing): those
    requests belong to no job's context and so have no proxy, like a tab of the browser's default
    context, opened here by CDP. The paths it reached on the recorder (on the worker's loopback)."""
    denied.paths.clear()
    async with pool.lease() as lease:  # a lease only to reach the browser the pool launched
        page = await lease.browser.new_page(None)
        try:
            with contextlib.suppress(Exception):
                await page.goto(denied.url("chrome-own-traffic"), timeout=3)
            await asyncio.sleep(0.5)
        finally:
            await lease.browser.connection.root.send("Target.closeTarget", {"targetId": page.target_id})
    return list(denied.paths)
