"""A webhook receiver for end-to-end tests: answers 200 on 127.0.0.1 and keeps each (event, body)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from workers.webhooks import EVENT_HEADER


class Sink:
    """A webhook receiver answering 200, keeping each (event, body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                sink.posts.append((self.headers[EVENT_HEADER], body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def events(self, event: str) -> list[dict[str, Any]]:
        return [body for name, body in list(self.posts) if name == event]


@pytest.fixture
def sink() -> Iterator[Sink]:
    sink = Sink()
    try:
        yield sink
    finally:
        sink.httpd.shutdown()
        sink.httpd.server_close()
