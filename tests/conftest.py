"""Shared fixtures. Everything is real: Chromium, HTTP servers; nothing here is mocked."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from cdp import BrowserPool, PoolConfig
from cdp.egress import NetworkPolicy, suffix_resolver
from tests.support.procs import RUN_DIR, chrome_pids
from tests.support.redis_server import RedisServer, redis_server
from tests.support.servers import StaticServer, serve

# Fixture pages are served from 127.0.0.1, a private network jobs may not reach by default: the
# test run opens exactly that address (workers started by tests inherit it). Tests of the private-
# network block build their own settings without it.
os.environ.setdefault("BROWSERD_ALLOWED_NETWORKS", "127.0.0.1/32")
# Artifacts of the jobs tests run (and of the workers they start) go to a scratch folder, never to
# the default /var/lib/browserd; tests of artifacts give their stack its own folder.
if "BROWSERD_ARTIFACTS_URL" not in os.environ:
    _ARTIFACTS = tempfile.mkdtemp(prefix="browserd-test-artifacts-")
    atexit.register(shutil.rmtree, _ARTIFACTS, True)
    os.environ["BROWSERD_ARTIFACTS_URL"] = "file://" + _ARTIFACTS
LOOPBACK_ONLY = NetworkPolicy.build(False, ["127.0.0.1/32"])
# ``*.test`` names (RFC 2606) are 127.0.0.1 to the egress proxy: distinct hostnames for allowed and
# denied origins, all served on loopback.
TEST_NAMES = suffix_resolver(".test", "127.0.0.1")

FIXTURES = Path(__file__).parent / "fixtures"
# The e2e marker, applied to every test that needs a browser or a server process, and the guard that
# fails a fast test starting one (docs/development.md, "The fast tier").
pytest_plugins = ["tests.support.tiers"]
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


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    """A private redis-server for the test module that asks for one (free port, stopped after)."""
    with redis_server() as server:
        yield server


@pytest_asyncio.fixture(scope="session")
async def pool() -> AsyncIterator[BrowserPool]:
    """One shared pool of one browser for tests that only need a page."""
    async with BrowserPool(PoolConfig(browsers=1, warm=2)) as p:
        yield p


def egress_config(**overrides: object) -> PoolConfig:
    """A pool whose contexts go through the egress proxy (as workers' pools do)."""
    return PoolConfig(**{"browsers": 1, "warm": 2, "egress": LOOPBACK_ONLY, "resolver": TEST_NAMES, **overrides})


@pytest.fixture(scope="session", autouse=True)
def no_chrome_left_behind() -> Iterator[None]:
    """Fail the run if any Chrome it started is still running at the end."""
    yield
    deadline = time.monotonic() + 10
    while (leaked := chrome_pids()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not leaked, f"Chrome processes left running after the tests: {sorted(leaked)}"
    shutil.rmtree(RUN_DIR, ignore_errors=True)
