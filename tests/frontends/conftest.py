"""One real stack for the console and MCP tests: redis-server, the API, a worker with Chromium, and
the scripted model (``model.scripted``); and a redis-server per module for the in-process app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.frontends.model import scripted
from tests.queue.stack import Stack
from tests.support.llm_server import LLMServer
from tests.support.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A redis-server for one module's in-process console app."""
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def frontend_stack() -> Iterator[tuple[Stack, LLMServer]]:
    with LLMServer() as llm:
        llm.responder = scripted(llm)
        s = Stack(llm_base_url=llm.base_url, openai_api_key="sk-test", job_timeout=60, visibility_timeout=120,
                  metrics_port=0)
        try:
            s.start_api()
            s.start_worker(concurrency=2)
            yield s, llm
        finally:
            s.close()
