"""Fixtures of the agent tests: settings, a scripted LLM endpoint, a server that records requests."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from config import Settings, load_settings
from tests.support.llm_server import LLMServer

SITE = Path(__file__).resolve().parents[1] / "fixtures" / "site"


@pytest.fixture
def llm() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


@pytest.fixture
def settings(llm: LLMServer) -> Settings:
    return load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=12, job_timeout=120)


class RecordingServer:
    """Serves the fixture site on ``localhost`` and records every path asked for."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        recorder = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                recorder.paths.append(self.path)
                super().do_GET()

        handler = functools.partial(Handler, directory=str(SITE))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://localhost:{self.port}/{path.lstrip('/')}"


@pytest.fixture
def denied_site() -> Iterator[RecordingServer]:
    server = RecordingServer()
    server._thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
