"""One real stack for the console and MCP tests: redis-server, the API, a worker with Chromium, and
the scripted model (``model.scripted``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.frontends.model import scripted
from tests.queue.stack import Stack
from tests.support.llm_server import LLMServer


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
