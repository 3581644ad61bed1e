"""The CDP connection, launcher and page helpers against a real headless Chromium."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import pytest

from cdp import (
    Browser,
    BrowserGone,
    BrowserPool,
    CDPError,
    CDPTimeout,
    ChromeLaunchError,
    ChromeNotFound,
    EvaluationError,
    PoolConfig,
    find_chrome,
    process_tree,
)
from cdp.launcher import merge_feature_switches
from tests.support.procs import chrome_pids
from tests.support.sockets import listening_pids


@pytest.mark.e2e  # launches Chrome
async def test_launch_and_close_leaves_no_process_behind(site):
    browser = await Browser.launch()
    try:
        pids = set(process_tree(browser.pid))
        assert len(pids) > 1 and browser.pid in chrome_pids()  # the browser and its zygotes/renderers
        profile = browser.process.user_data_dir
    finally:
        await browser.close()
    assert not (chrome_pids() & pids)
    assert not profile.exists(), "the temporary profile must be deleted"


async def test_missing_chrome_binary_gives_a_clear_error(monkeypatch):
    with pytest.raises(ChromeNotFound, match="BROWSERD_CHROME_PATH"):
        find_chrome("/nonexistent/chrome")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ChromeNotFound, match="apt-get install chromium"):
        find_chrome(None)


@pytest.mark.e2e  # launches Chrome
async def test_chrome_that_fails_to_start_reports_its_stderr(tmp_path):
    tmp_path.chmod(0o755)  # a root worker runs Chrome as its own user (cdp.confinement): it must reach the binary
    for parent in tmp_path.parents:
        if parent.stat().st_uid == os.geteuid():
            parent.chmod(parent.stat().st_mode | 0o005)
    fake = tmp_path / "fake-chrome"
    fake.write_text("#!/bin/sh\necho 'cannot open display: simulated failure' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(ChromeLaunchError, match="simulated failure") as info:
        await Browser.launch(str(fake), timeout=5)
    assert "exited with code 3" in str(info.value)


async def test_goto_evaluate_title_screenshot(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(site.url("cdp/basic.html"))
        assert await page.title() == "Basic page"
        assert await page.url() == site.url("cdp/basic.html")
        assert await page.evaluate("document.body.dataset.ready") == "yes"
        assert await page.evaluate("Promise.resolve(6 * 7)") == 42
        with pytest.raises(EvaluationError, match="boom"):
            await page.evaluate("(() => { throw new Error('boom') })()")
        png = await page.screenshot()
        assert png.startswith(b"\x89PNG") and len(png) > 1000


async def test_goto_network_idle_waits_for_late_requests(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        await page.goto(site.url("cdp/slow.html"), wait_until="networkidle")
        assert await page.evaluate("document.images.length") == 1


async def test_numbers_past_64_bits_from_a_page_are_read(pool):
    """The read loop parses with orjson; Chrome writes ``1e20`` as an integer past 64 bits, and a
    page's numbers must read as the doubles they are, the connection going on."""
    async with pool.lease() as lease:
        assert await lease.page.evaluate("1e20") == 10**20
        assert await lease.page.evaluate("[-1e25, 2**53, 0.5]") == [-1e25, 2**53, 0.5]
        assert await lease.page.evaluate("'still answering'") == "still answering"


async def test_protocol_error_is_typed(pool):
    async with pool.lease() as lease:
        with pytest.raises(CDPError) as info:
            await lease.page.session.send("No.suchMethod")
        assert info.value.method == "No.suchMethod" and info.value.code == -32601


async def test_command_timeout_raises_cdp_timeout(pool):
    async with pool.lease() as lease:
        page = lease.page
        started = time.monotonic()
        with pytest.raises(CDPTimeout) as info:
            # A promise that never settles keeps Runtime.evaluate from answering.
            await page.evaluate("new Promise(() => {})", timeout=0.5)
        assert info.value.method == "Runtime.evaluate"
        assert time.monotonic() - started < 5
        assert await page.evaluate("1 + 1") == 2  # the connection is still healthy


async def test_events_and_wait_for(pool, site):
    async with pool.lease() as lease:
        page = lease.page
        seen: list[str] = []
        off = page.session.on("Page.frameNavigated", lambda p: seen.append(p["frame"]["url"]))
        waiter = asyncio.ensure_future(
            page.session.wait_for("Page.loadEventFired", timeout=10)
        )
        await page.session.send("Page.navigate", {"url": site.url("cdp/basic.html")})
        assert "timestamp" in await waiter
        off()
        assert seen == [site.url("cdp/basic.html")]


async def test_tabs_opened_by_the_page_are_found(pool, site):
    async with pool.lease() as lease:
        await lease.page.goto(site.url("cdp/basic.html"))
        known = {p.target_id for p in await lease.pages()}
        # A user's click (a gesture), not a script's, or Chrome blocks the popup.
        await lease.page.session.send(
            "Runtime.evaluate", {"expression": "document.getElementById('popup').click()", "userGesture": True}
        )
        popup = await lease.wait_for_new_page(known, timeout=10)
        assert popup is not None
        await popup.wait_for_lifecycle("load", timeout=10)
        assert (await popup.url()).endswith("basic.html?tab=2")
        assert len(await lease.pages()) == 2
        await lease.switch_to(popup)
        assert lease.page is popup
        await lease.close_page(popup)
        assert len(await lease.pages()) == 1


async def test_very_large_reply(pool):
    async with pool.lease() as lease:
        size = 40 * 1024 * 1024
        value = await lease.page.evaluate(f"'x'.repeat({size})", timeout=60)
        assert len(value) == size


@pytest.mark.e2e  # launches Chrome
async def test_attach_to_a_running_browser_by_http_endpoint():
    owner = await Browser.launch(debugging="port")
    try:
        pool = BrowserPool(PoolConfig(cdp_urls=[f"http://127.0.0.1:{owner.process.port}"], warm=1))
        async with pool:
            async with pool.lease() as lease:
                assert await lease.page.evaluate("navigator.userAgent")
        assert owner.alive, "detaching must not close a browser we did not launch"
    finally:
        await owner.close()


@pytest.mark.e2e  # launches Chrome
async def test_browser_killed_fails_pending_calls_at_once():
    browser = await Browser.launch()
    try:
        context = await browser.new_context()
        page = await browser.new_page(context)
        pending = asyncio.ensure_future(page.evaluate("new Promise(() => {})", timeout=30))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        os.kill(browser.pid, 9)
        with pytest.raises(BrowserGone):
            await pending
        assert time.monotonic() - started < 1.0
        assert not browser.alive
        with pytest.raises(BrowserGone):
            await page.evaluate("1")
    finally:
        await browser.close()


async def test_typed_calls_through_cdp_use(pool):
    async with pool.lease() as lease:
        typed = lease.browser.connection.typed
        assert (await typed.Browser.getVersion())["product"].startswith(("Chrome/", "HeadlessChrome/"))
        reply = await typed.Runtime.evaluate(
            params={"expression": "21 * 2", "returnByValue": True}, session_id=lease.page.session.session_id
        )
        assert reply["result"]["value"] == 42


@pytest.mark.e2e  # launches Chrome
async def test_chrome_leaves_no_scratch_files_behind():
    import tempfile
    from pathlib import Path

    scratch = Path(tempfile.gettempdir())
    before = set(scratch.glob("org.chromium.Chromium.*"))
    browser = await Browser.launch()
    await browser.close()
    assert set(scratch.glob("org.chromium.Chromium.*")) == before


def test_chromes_scratch_folder_is_short_enough_for_its_socket_whatever_tmpdir_is() -> None:
    """Where Chrome's ``$TMPDIR`` goes for a profile: beside it while Chrome's socket fits there,
    else in a short folder, named after the profile (so its removal finds it)."""
    from pathlib import Path

    from cdp.confinement import CHROME_SOCKET, SHORT_ROOTS, SOCKET_PATH_MAX, scratch_of, socket_fits

    short = Path("/tmp/run") / "browserd-chrome-abcd1234"
    assert scratch_of(short) == Path("/tmp/run/cabcd1234")
    deep = Path("/tmp") / ("a-rather-long-temporary-directory-" + "x" * 60) / "browserd-chrome-abcd1234"
    scratch = scratch_of(deep)
    assert str(scratch).startswith(SHORT_ROOTS) and scratch.name.endswith("cabcd1234") and socket_fits(scratch)
    assert len(str(scratch) + CHROME_SOCKET) <= SOCKET_PATH_MAX < len(str(deep.parent / "cabcd1234") + CHROME_SOCKET)
    assert scratch_of(deep) == scratch  # the same answer each time: the launch makes it, the removal finds it


@pytest.mark.e2e  # launches Chrome
@pytest.mark.parametrize("as_root_user", [True, False], ids=["chrome-user-if-root", "same-user"])
async def test_a_long_tmpdir_still_launches_chrome(monkeypatch: pytest.MonkeyPatch, as_root_user: bool) -> None:
    """Chrome puts its singleton socket below its ``$TMPDIR``: with a ``TMPDIR`` longer than about
    60 characters every launch aborted (``Socket path too long``). The profile stays in ``TMPDIR``
    (where ``chrome_pids`` finds this run's browsers); the socket goes somewhere short, and is gone
    after the browser."""
    import tempfile
    from pathlib import Path

    from cdp.confinement import SHORT_ROOTS, Confinement, scratch_of

    long = Path(tempfile.gettempdir()) / ("a-rather-long-temporary-directory-" + "x" * 60)
    long.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(long))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again (and after the test)
    confinement = None if as_root_user else Confinement.for_host("")  # "": Chrome runs as this user
    browser = await Browser.launch(confinement=confinement)
    try:
        profile = browser.process.user_data_dir
        assert profile.parent == long and len(str(profile)) > 100
        assert any(pid for pid in chrome_pids())  # found by its profile, as every test's leftovers are
        scratch = scratch_of(profile)
        assert str(scratch).startswith(SHORT_ROOTS) and any(scratch.glob("org.chromium.Chromium.*/SingletonSocket"))
        assert (await browser.connection.typed.Browser.getVersion())["product"]
    finally:
        await browser.close()
    assert not profile.exists() and list(long.iterdir()) == [] and not scratch.exists()


async def _steady(read: Callable[[], set[int]], settled: Callable[[set[int]], bool], timeout: float = 5.0) -> set[int]:
    """``read()`` once ``settled`` holds for it twice in a row 0.5 s apart, or as it is at ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: set[int] | None = None
    while True:
        found = read()
        if settled(found) and found == last:
            return found
        if asyncio.get_running_loop().time() > deadline:
            return found
        last = found if settled(found) else None
        await asyncio.sleep(0.5)


def _renderers(browser: Browser) -> set[int]:
    found = set()
    for pid in process_tree(browser.pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"--type=renderer" in fh.read():
                    found.add(pid)
        except OSError:
            continue
    return found


@pytest.mark.e2e  # launches Chrome
async def test_each_context_costs_one_renderer(site):
    """A job's context must not bring Chrome's hidden omnibox WebUI renderers or a spare along:
    those tripled the CPU and memory of every job."""
    browser = await Browser.launch()
    try:
        before = await _steady(lambda: _renderers(browser), lambda found: len(found) >= 1)  # the first tab's
        for _ in range(3):
            page = await browser.new_page(await browser.new_context())
            await page.goto(site.url("/cdp/basic.html"))
        # Under load a renderer being swapped out can outlive the navigation for a moment; what
        # matters is what stays: one renderer per context, nothing hidden or spare beside it.
        added = await _steady(lambda: _renderers(browser) - before, lambda found: len(found) == 3)
        assert len(added) == 3
        targets = (await browser.connection.root.send("Target.getTargets", {"filter": [{}]}))["targetInfos"]
        assert not [t["url"] for t in targets if t["type"] == "browser_ui"]
    finally:
        await browser.close()


def test_feature_switches_are_merged_so_ours_survive_the_users():
    args = merge_feature_switches(["--a", "--disable-features=X,Y", "--b=1", "--disable-features=Y,Z", "--enable-features=E"])
    assert args == ["--a", "--disable-features=X,Y,Z", "--b=1", "--enable-features=E"]


@pytest.mark.e2e  # launches Chrome
async def test_a_launched_browser_opens_no_devtools_port():
    """Pages must not reach the debugger: the browser speaks over a pipe and listens on nothing."""
    browser = await Browser.launch()
    try:
        context = await browser.new_context()
        page = await browser.new_page(context)
        assert await page.evaluate("1 + 1") == 2
        assert not (browser.process.user_data_dir / "DevToolsActivePort").exists()
        assert listening_pids(process_tree(browser.pid)) == set(), "no chrome process listens on a TCP port"
    finally:
        await browser.close()
