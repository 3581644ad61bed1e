"""``browserd inspect`` on fixture pages (the real CLI, in a subprocess) and on the 24 saved real pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

import cdp
from cdp import BrowserPool, PoolConfig
from daemon.cli.commands.inspect import render
from tests.conftest import SHARED_PAGES
from tests.support.servers import StaticServer, serve

pytestmark = pytest.mark.e2e  # browserd inspect in a subprocess, or a pool of its own

OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"
SHARED = sorted(p.relative_to(SHARED_PAGES).as_posix() for p in SHARED_PAGES.rglob("*.html")) if SHARED_PAGES.is_dir() else []


# The command's Chrome keeps its profile in a temp dir of its own, so leftovers can be counted exactly.
COMMAND_TMP = os.path.join(tempfile.gettempdir(), f"inspect-{uuid.uuid4().hex[:12]}")


def browserd(*args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """The real command, in a subprocess (``settings``: more environment, e.g. BROWSERD_ALLOWED_NETWORKS)."""
    os.makedirs(COMMAND_TMP, exist_ok=True)
    env = {**os.environ, "BROWSERD_CHROME_ARGS": json.dumps([OFFLINE]), "TMPDIR": COMMAND_TMP, **settings}
    return subprocess.run(
        [sys.executable, "-m", "daemon.cli", "inspect", *args],
        capture_output=True, text=True, timeout=120, env=env, cwd=Path(__file__).resolve().parents[2],
    )


def left_running() -> set[int]:
    return cdp.chrome_pids(COMMAND_TMP)


def test_inspect_text_and_json(site):
    out = browserd(site.url("/dom/modal.html"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Modal\n") and "[1]<button>Accept />" in out.stdout
    out = browserd(site.url("/dom/scroll.html"), "--format", "json", "--viewport-expansion", "-1")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    ids = {el["attributes"].get("id") for el in data["elements"]}
    assert {"b0", "b1", "b2", "b3"} <= ids
    first = data["elements"][0]
    assert {"index", "tag", "attributes", "text", "box", "frame_id", "backend_node_id"} <= set(first)
    assert not left_running()  # the command closed its browser


def test_inspect_prints_a_page_holding_half_an_emoji(site):
    """A script cut a string inside an emoji: the lone surrogate left in the DOM made the command
    fail when it printed (UTF-8 cannot encode it); it now shows as U+FFFD, in both formats."""
    out = browserd(site.url("/dom/cut_emoji.html"), "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    texts = {el["attributes"].get("id"): (el["text"], el["value"]) for el in data["elements"]}
    assert texts["deal"] == ("Deals of the day \ufffd…", None) and texts["q"] == ("", "\ufffd")
    assert data["title"] == "Deals of the day \ufffd"
    out = browserd(site.url("/dom/cut_emoji.html"))
    assert out.returncode == 0, out.stderr
    assert "Deals of the day \ufffd" in out.stdout
    assert not left_running()


def test_inspect_fails_cleanly_and_closes_chrome():
    out = browserd("http://unreachable.invalid/")
    assert out.returncode == 1 and "navigation to http://unreachable.invalid/ failed" in out.stderr
    assert not left_running()


def test_a_closed_network_says_it_was_blocked_and_how_to_open_it(site):
    """Not ``net::ERR_EMPTY_RESPONSE``: the rule that refused the page, and the flag that opens it."""
    closed = browserd(site.url("/dom/modal.html"), BROWSERD_ALLOWED_NETWORKS="")
    assert closed.returncode == 1 and "ERR_" not in closed.stderr
    assert closed.stderr.strip() == (
        f"browserd inspect: blocked: {site.url('/dom/modal.html')}: address 127.0.0.1 is loopback, a private network "
        "the job has not opened; open it with --allow-network 127.0.0.1/32 (job field allowed_networks), within what "
        "the operator allows: BROWSERD_ALLOWED_NETWORKS, opened for every job of the operator's own, and a tenant's "
        "allowed_networks for its jobs")
    opened = browserd(site.url("/dom/modal.html"), "--allow-network", "127.0.0.1/32", BROWSERD_ALLOWED_NETWORKS="")
    assert opened.returncode == 0 and "[1]<button>Accept />" in opened.stdout, opened.stderr
    denied = browserd(site.url("/dom/modal.html"), "--deny", "127.0.0.1")
    assert denied.returncode == 1 and "--deny 127.0.0.1 (job field denied_domains)" in denied.stderr
    bad = browserd(site.url("/dom/modal.html"), "--allow-network", "localhost")
    assert bad.returncode == 2 and "'localhost' is not an IP network" in bad.stderr
    assert not left_running()


@pytest.fixture(scope="module")
def shared_site() -> Iterator[StaticServer]:
    if not SHARED:
        pytest.skip(f"no saved pages in {SHARED_PAGES}")
    with serve(SHARED_PAGES) as server:
        yield server


@pytest_asyncio.fixture(scope="module")
async def offline_pool() -> AsyncIterator[BrowserPool]:
    async with BrowserPool(PoolConfig(browsers=1, warm=1, chrome_args=[OFFLINE])) as pool:
        yield pool


@pytest.mark.parametrize("name", SHARED or ["(none)"])
async def test_inspect_every_saved_page(shared_site, offline_pool, name):
    async with offline_pool.lease() as lease:
        # 10 s, not render's 30: a saved page whose resources never come (offline) is shown as it is
        text = await render(lease.page, shared_site.url(name), viewport_expansion=-1, timeout=10)
        assert text.count("untrusted_content_") == 3  # the note, the opening and the closing tag
        assert "[Start of page]" in text
        # the page was just shown once waiting for "load"; the JSON view need not wait for it again
        # (the saved eBay page never reaches load offline, with or without its scripts and iframe: it
        # waited render's full 30 s twice, the slowest test in CI)
        data = json.loads(await render(lease.page, shared_site.url(name), fmt="json", wait="domcontentloaded"))
        for el in data["elements"]:
            assert el["backend_node_id"] > 0 and el["box"][2] > 0 and el["box"][3] > 0


def test_inspect_shows_a_page_still_loading_after_its_timeout(tmp_path):
    """An image that never arrives holds back ``load``; ``--timeout`` bounds the wait and the page is shown."""
    import socket
    import time

    with socket.socket() as hang:  # takes connections and never answers
        hang.bind(("127.0.0.1", 0))
        hang.listen(8)
        (tmp_path / "slow.html").write_text(
            f'<title>Slow</title><img src="http://127.0.0.1:{hang.getsockname()[1]}/never.png"><button>Go</button>'
        )
        with serve(tmp_path) as server:
            started = time.monotonic()
            out = browserd(server.url("/slow.html"), "--timeout", "2")
            took = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    assert "did not reach 'load' in time; showing it as it is" in out.stderr
    assert "<button>Go />" in out.stdout
    assert took < 25, f"--timeout 2 still took {took:.0f}s"
    assert not left_running()
