"""The browser pool: isolation, faults, recycling and resource use, on real Chromium."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from cdp import BrowserGone, BrowserPool, PoolClosed, PoolConfig, TargetCrashed
from tests.support.procs import chrome_pids, open_fds

pytestmark = pytest.mark.e2e  # every test starts a pool of its own


async def test_leases_do_not_share_cookies_or_storage(pool, site):
    url = site.url("cdp/basic.html")
    async with pool.lease() as first:
        await first.page.goto(url)
        await first.page.evaluate("document.cookie = 'who=first; max-age=3600'; localStorage.setItem('who', 'first')")
        assert await first.page.evaluate("document.cookie") == "who=first"
        async with pool.lease() as second:
            await second.page.goto(url)
            assert await second.page.evaluate("document.cookie") == ""
            assert await second.page.evaluate("localStorage.getItem('who')") is None
    async with pool.lease() as later:  # a released context leaves nothing behind for the next
        await later.page.goto(url)
        assert await later.page.evaluate("document.cookie") == ""


async def test_killed_browser_fails_its_lease_and_the_pool_heals(site):
    async with BrowserPool(PoolConfig(browsers=1, warm=1)) as pool:
        lease = await pool.acquire()
        await lease.page.goto(site.url("cdp/basic.html"))
        pending = asyncio.ensure_future(lease.page.evaluate("new Promise(() => {})", timeout=30))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        os.kill(lease.browser.pid, 9)
        with pytest.raises(BrowserGone):
            await pending
        assert time.monotonic() - started < 1.0, "a dead browser must be noticed within a second"
        with pytest.raises(BrowserGone):
            _ = lease.page
        await pool.release(lease)
        assert pool.stats().crashes == 1
        async with pool.lease(timeout=30) as fresh:
            await fresh.page.goto(site.url("cdp/basic.html"))
            assert await fresh.page.title() == "Basic page"
        assert pool.stats().browsers["ready"] == 1


async def test_renderer_crash_fails_the_lease_not_the_browser(pool, site):
    lease = await pool.acquire()
    try:
        await lease.page.goto(site.url("cdp/basic.html"))
        pending = asyncio.ensure_future(lease.page.evaluate("new Promise(() => {})", timeout=30))
        await asyncio.sleep(0.1)
        crash = asyncio.ensure_future(lease.page.session.send("Page.crash", timeout=5))
        with pytest.raises(TargetCrashed):
            await pending
        crash.cancel()
        with pytest.raises(TargetCrashed):
            await lease.page.evaluate("1")
        assert lease.browser.alive
    finally:
        await pool.release(lease)
    async with pool.lease() as other:
        await other.page.goto(site.url("cdp/basic.html"))
        assert await other.page.title() == "Basic page"


async def test_200_sequential_leases_keep_processes_and_fds_flat(site):
    url = site.url("cdp/basic.html")
    async with BrowserPool(PoolConfig(browsers=1, warm=2)) as pool:

        async def one() -> None:
            async with pool.lease() as lease:
                await lease.page.goto(url)

        for _ in range(20):  # settle: warm contexts, renderer processes, caches
            await one()
        await asyncio.sleep(1)
        procs_before, fds_before = len(chrome_pids()), open_fds()
        for _ in range(200):
            await one()
        await asyncio.sleep(2)  # disposals run in the background
        procs_after, fds_after = len(chrome_pids()), open_fds()
        assert pool.stats().leases_served == 220
    assert procs_after <= procs_before + 3, (procs_before, procs_after)
    assert fds_after <= fds_before + 5, (fds_before, fds_after)


async def test_20_concurrent_leases_over_2_browsers(site):
    url = site.url("cdp/basic.html")
    async with BrowserPool(PoolConfig(browsers=2, warm=2)) as pool:

        async def job(n: int) -> tuple[int, str]:
            async with pool.lease(timeout=60) as lease:
                await lease.page.goto(f"{url}?job={n}")
                await lease.page.evaluate(f"localStorage.setItem('n', '{n}')")
                return lease.browser_index, await lease.page.evaluate("localStorage.getItem('n')")

        results = await asyncio.gather(*(job(n) for n in range(20)))
        assert [value for _, value in results] == [str(n) for n in range(20)]
        assert {index for index, _ in results} == {0, 1}, "leases should spread over both browsers"
        assert pool.stats().leases_in_use == 0


async def test_browser_is_recycled_after_max_leases(site):
    async with BrowserPool(PoolConfig(browsers=1, warm=1, max_leases=3)) as pool:
        first_pid = pool.browser_pids()[0]
        held = await pool.acquire()
        for _ in range(2):
            async with pool.lease(timeout=30) as lease:
                await lease.page.goto(site.url("cdp/basic.html"))
        # The third lease drained the browser; the held lease still works until released.
        assert pool.stats().recycles == {"max_leases": 1}
        await held.page.goto(site.url("cdp/basic.html"))
        async with pool.lease(timeout=30) as lease:
            assert lease.browser.pid != first_pid
        await pool.release(held)
        deadline = time.monotonic() + 10
        while first_pid in chrome_pids() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert first_pid not in chrome_pids(), "the drained browser is closed once its last lease ends"


async def _until(check, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the pool did not get there in time"
        await asyncio.sleep(0.05)


async def test_the_recycle_at_max_leases_hands_over_to_a_standby_started_ahead(site):
    """No cold start inside a long batch: the successor is launched a tenth of the leases early, takes
    no lease while it waits, and serves the lease after the recycle; a lease in flight at the handover
    goes on in the old browser, which closes once it ends."""
    url = site.url("cdp/basic.html")
    async with BrowserPool(PoolConfig(browsers=1, warm=1, max_leases=10)) as pool:
        first_pid = pool.browser_pids()[0]
        for _ in range(8):
            async with pool.lease(timeout=30) as lease:
                await lease.page.goto(url)
        assert pool.stats().browsers["standby"] == 0 and pool.browser_pids() == [first_pid]
        held = await pool.acquire()  # the 9th: its successor starts now
        assert held.browser.pid == first_pid
        await _until(lambda: pool.stats().browsers["standby"] == 1 and pool.stats().warm_contexts >= 2)
        [standby_pid] = [pid for pid in pool.browser_pids() if pid != first_pid]
        async with pool.lease(timeout=30) as lease:  # a standby takes no lease: the 10th is the old one's
            assert lease.browser.pid == first_pid
        assert pool.stats().recycles == {"max_leases": 1}
        async with pool.lease(timeout=30) as lease:  # served by the standby: no browser launched at the drain
            assert lease.browser.pid == standby_pid
            await lease.page.goto(url)
            assert await lease.page.title() == "Basic page"
        assert set(pool.browser_pids()) == {first_pid, standby_pid}
        await held.page.goto(url)  # the lease in flight still works in the draining browser
        assert await held.page.title() == "Basic page"
        await pool.release(held)
        await _until(lambda: first_pid not in chrome_pids())
        assert pool.browser_pids() == [standby_pid] and pool.stats().browsers["ready"] == 1


async def test_a_standby_that_dies_is_dropped_and_the_recycle_still_serves(site):
    async with BrowserPool(PoolConfig(browsers=1, warm=1, max_leases=4)) as pool:
        first_pid = pool.browser_pids()[0]
        for _ in range(3):
            async with pool.lease(timeout=30):
                pass
        await _until(lambda: pool.stats().browsers["standby"] == 1)
        [standby_pid] = [pid for pid in pool.browser_pids() if pid != first_pid]
        os.kill(standby_pid, 9)
        await _until(lambda: pool.stats().browsers["standby"] == 0 and standby_pid not in pool.browser_pids())
        assert pool.stats().crashes == 0  # no lease was in it
        for _ in range(2):  # the 4th drains the first browser: a new one starts then
            async with pool.lease(timeout=30) as lease:
                await lease.page.goto(site.url("cdp/basic.html"))
        assert lease.browser.pid not in (first_pid, standby_pid)
        assert pool.stats().browsers["ready"] == 1


async def test_browser_over_memory_limit_is_recycled():
    async with BrowserPool(PoolConfig(browsers=1, warm=0, max_memory_mb=64, health_interval=0.2)) as pool:
        deadline = time.monotonic() + 15
        while not pool.stats().recycles and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert pool.stats().recycles.get("memory", 0) >= 1


async def test_acquire_after_close_raises_pool_closed():
    pool = BrowserPool(PoolConfig(browsers=1, warm=0))
    await pool.start()
    await pool.close()
    with pytest.raises(PoolClosed):
        await pool.acquire(timeout=1)


async def test_profiles_of_browsers_that_died_with_their_process_are_swept(tmp_path):
    from cdp import Browser, sweep_stale_profiles

    host = os.uname().nodename
    dead = tmp_path / "browserd-chrome-dead"
    dead.mkdir()
    (dead / "Default").mkdir()
    os.symlink(f"{host}-{2**22 + 12345}", dead / "SingletonLock")  # beyond pid_max: never running
    fresh = tmp_path / "browserd-chrome-starting"  # no lock yet: a browser still starting
    fresh.mkdir()
    browser = await Browser.launch()
    try:
        live = browser.process.user_data_dir
        assert sweep_stale_profiles(str(tmp_path)) == 1
        assert not dead.exists() and fresh.exists() and live.exists()
    finally:
        await browser.close()
