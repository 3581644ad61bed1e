"""Fixtures of the agent tests: settings, a scripted LLM endpoint, a server that records requests."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from cdp import BrowserPool
from config import Settings, load_settings
from tests.conftest import FIXTURES, egress_config
from tests.support.llm_server import LLMServer
from tests.support.servers import RecordingServer, StaticServer, serve


@pytest_asyncio.fixture(scope="session")
async def pool() -> AsyncIterator[BrowserPool]:
    """Jobs run only on leases with an egress gate, as in a worker: one browser, contexts proxied."""
    async with BrowserPool(egress_config()) as p:
        yield p


@pytest.fixture
def llm() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


@pytest.fixture
def settings(llm: LLMServer) -> Settings:
    return load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=12, job_timeout=120)


@pytest.fixture
def denied_site() -> Iterator[RecordingServer]:
    with RecordingServer() as server:
        yield server


@pytest.fixture
def download_site(tmp_path: Path) -> Iterator[StaticServer]:
    """hostile/downloads.html with its two files: report.csv (24 bytes) and big.bin (1.5 MB)."""
    root = tmp_path / "site"
    root.mkdir()
    shutil.copy(FIXTURES / "site" / "hostile" / "downloads.html", root)
    (root / "small.csv").write_text("name,price\nkettle,39.90\n")
    (root / "big.bin").write_bytes(b"x" * 1_500_000)
    with serve(root) as server:
        yield server
