"""A webhook receiver for fault tests: answers ``status`` (200), keeps every POST with its delivery id and answer."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from workers.webhooks import DELIVERY_HEADER


class Hooks:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.status = 200  # what it answers: set 503 for a receiver that is down
        self.lock = threading.Lock()
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = hooks.status
                with hooks.lock:
                    hooks.posts.append({"delivery": self.headers[DELIVERY_HEADER], "at": time.time(),
                                        "answered": status, **body})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Hooks:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def deliveries(self) -> Counter[str]:
        """How many POSTs each delivery id got."""
        with self.lock:
            return Counter(p["delivery"] for p in self.posts)

    def of(self, delivery_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [p for p in self.posts if p["delivery"] == delivery_id]
