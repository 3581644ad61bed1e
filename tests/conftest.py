"""Shared fixtures. Everything is real: Chromium, HTTP servers; nothing here is mocked."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from cdp import BrowserPool, PoolConfig
from tests.support.procs import RUN_DIR, chrome_pids
from tests.support.servers import StaticServer, serve

FIXTURES = Path(__file__).parent / "fixtures"
SHARED_PAGES = Path(__file__).resolve().parents[2] / "shared" / "pages"


@pytest.fixture(scope="session")
def site() -> Iterator[StaticServer]:
    """tests/fixtures/site over http on 127.0.0.1."""
    with serve(FIXTURES / "site") as server:
        yield server


@pytest.fixture(scope="session")
def other_site() -> Iterator[StaticServer]:
    """The same files on a second port: a different origin, for cross-origin iframes."""
    with serve(FIXTURES / "site") as server:
        yield server


@pytest_asyncio.fixture(scope="session")
async def pool() -> AsyncIterator[BrowserPool]:
    """One shared pool of one browser for tests that only need a page."""
    async with BrowserPool(PoolConfig(browsers=1, warm=2)) as p:
        yield p


@pytest.fixture(scope="session", autouse=True)
def no_chrome_left_behind() -> Iterator[None]:
    """Fail the run if any Chrome it started is still running at the end."""
    yield
    deadline = time.monotonic() + 10
    while (leaked := chrome_pids()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not leaked, f"Chrome processes left running after the tests: {sorted(leaked)}"
    shutil.rmtree(RUN_DIR, ignore_errors=True)
