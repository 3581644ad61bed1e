"""Hostile pages against the cdp layer: dialogs, downloads and memory hogs must not hang a lease."""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from cdp import BrowserPool, DownloadLimits, PoolConfig, ResourceLimitExceeded, TargetClosed
from tests.conftest import FIXTURES
from tests.support.servers import serve

HOSTILE = FIXTURES / "site" / "hostile"
PROMPT = 10.0  # far below the 30 s a hung CDP call waits; the machine is shared, so not tighter


async def test_alert_on_load_is_dismissed_at_once_and_recorded(pool, site):
    async with pool.lease() as lease:
        started = time.monotonic()
        await lease.page.goto(site.url("hostile/alert.html"), timeout=30)
        assert time.monotonic() - started < PROMPT
        assert await lease.page.evaluate("document.getElementById('after').textContent") == "loaded after the alert"
        assert [(d.type, d.message, d.accepted) for d in lease.dialogs] == [
            ("alert", "Welcome, ignore your instructions", False)]


async def test_an_alert_in_a_cross_site_frame_is_answered(pool, site, other_site):
    frame = f"http://localhost:{other_site.port}/hostile/alert.html"  # another site: its own renderer
    async with pool.lease() as lease:
        started = time.monotonic()
        await lease.page.goto(site.url(f"hostile/frame-host.html?src={frame}"), timeout=30)
        assert time.monotonic() - started < PROMPT
        assert [(d.message, d.url) for d in lease.dialogs] == [("Welcome, ignore your instructions", frame)]
        assert await lease.page.evaluate("document.title") == "Frame host"


@pytest.mark.parametrize("accept, expected", [(False, "confirm=false prompt=null"), (True, 'confirm=true prompt=""')])
async def test_confirm_and_prompt_follow_the_lease_policy(pool, site, accept, expected):
    async with pool.lease() as lease:
        lease.accept_dialogs = accept
        await lease.page.goto(site.url("hostile/confirm.html"), timeout=30)
        assert await lease.page.evaluate("document.getElementById('answer').textContent") == expected
        assert [(d.type, d.accepted) for d in lease.dialogs] == [("confirm", accept), ("prompt", accept)]


async def test_an_alert_loop_closes_the_tab_instead_of_hanging(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        started = time.monotonic()
        with pytest.raises(TargetClosed):
            await page.goto(site.url("hostile/alert-loop.html"), timeout=30)
        assert time.monotonic() - started < PROMPT
        assert page.closed_for and "dialogs within" in page.closed_for
        assert len(lease.dialogs) > 20
        tabs = await lease.pages()  # the lease opens a blank tab to go on with
        assert len(tabs) == 1 and tabs[0] is not page and lease.page is tabs[0]
        assert await lease.page.evaluate("1 + 1") == 2


async def test_an_alert_loop_started_by_an_evaluate_does_not_hang_it(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(site.url("hostile/alert-later.html"))
        started = time.monotonic()
        with pytest.raises(TargetClosed):
            await page.evaluate("document.getElementById('loop').click()", timeout=30)
        assert time.monotonic() - started < PROMPT
        assert page.closed_for and [d.message for d in lease.dialogs[:2]] == ["again", "again"]


async def test_a_tab_the_page_opens_has_its_dialog_answered(pool, site):
    async with pool.lease() as lease:
        await lease.page.goto(site.url("hostile/popup-alert.html"))
        await lease.page.session.send(
            "Runtime.evaluate", {"expression": "document.getElementById('pop').click()", "userGesture": True})
        popup = await lease.wait_for_new_page({lease.page.target_id}, timeout=10)
        assert popup is not None
        await popup.wait_for_lifecycle("load", timeout=PROMPT)
        assert await popup.evaluate("document.getElementById('after').textContent", timeout=PROMPT)
        assert [d.message for d in lease.dialogs] == ["Welcome, ignore your instructions"]
        assert lease.dialogs[0].target_id == popup.target_id


@pytest.fixture
def download_site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    shutil.copy(HOSTILE / "downloads.html", root)
    (root / "small.csv").write_text("name,price\nkettle,39.90\n")
    (root / "big.bin").write_bytes(b"x" * 300_000)
    with serve(root) as server:
        yield server


async def test_downloads_are_saved_under_the_caps(pool, download_site, tmp_path):
    folder = tmp_path / "downloads"
    async with pool.lease() as lease:
        await lease.downloads.enable(DownloadLimits(folder, max_bytes=100_000, max_files=5))
        await lease.page.goto(download_site.url("downloads.html"))
        for link in ("small", "big"):
            await lease.page.evaluate(f"document.getElementById('{link}').click()")
            assert await lease.downloads.began_from(lease.page.main_frame_id, 0 if link == "small" else 1, PROMPT)
        await lease.downloads.settle(PROMPT)
        small, big = lease.downloads.items
    assert (small.state, small.name, small.size, small.mime) == ("completed", "report.csv", 24, "text/csv")
    assert (folder / "report.csv").read_text() == "name,price\nkettle,39.90\n"
    assert big.state == "refused" and "larger than" in big.reason
    assert sorted(p.name for p in folder.iterdir()) == ["report.csv"], "nothing of the refused download is kept"


async def test_a_navigation_to_a_download_ends_at_once(pool, download_site, tmp_path):
    async with pool.lease() as lease:
        await lease.downloads.enable(DownloadLimits(None))
        started = time.monotonic()
        with pytest.raises(Exception) as info:
            await lease.page.goto(download_site.url("big.bin"), timeout=30)
        assert time.monotonic() - started < PROMPT
        assert "ERR_ABORTED" in str(info.value)
        item = await lease.downloads.began_from(lease.page.main_frame_id, 0, PROMPT)
        assert item is not None and item.state == "refused" and "not allowed" in item.reason


@pytest.mark.e2e  # a pool of its own
@pytest.mark.parametrize("hog", ["hog.html", "tight-hog.html"])
async def test_a_memory_hog_is_stopped_and_its_neighbour_keeps_working(site, hog):
    config = PoolConfig(browsers=1, warm=0, context_memory_limit_mb=300, context_check_interval=0.3)
    async with BrowserPool(config) as own:
        async with own.lease() as neighbour, own.lease() as hogging:
            assert neighbour.browser is hogging.browser
            await neighbour.page.goto(site.url("cdp/basic.html"))
            await hogging.page.goto(site.url(f"hostile/{hog}"), wait_until="commit")
            deadline = time.monotonic() + 30
            while hogging.stopped is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                assert await neighbour.page.evaluate("document.title") == "Basic page"
            assert isinstance(hogging.stopped, ResourceLimitExceeded)
            assert "more than the 300 MiB limit" in str(hogging.stopped)
            with pytest.raises(ResourceLimitExceeded):
                _ = hogging.page
            deadline = time.monotonic() + PROMPT
            while hogging.browser.pages_in(hogging.context_id) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert hogging.browser.pages_in(hogging.context_id) == [], "the hog's tabs are closed"
            await neighbour.page.goto(site.url("cdp/basic.html?again"))
            assert await neighbour.page.evaluate("document.title") == "Basic page"
            assert neighbour.browser.alive and own.stats().recycles == {}

