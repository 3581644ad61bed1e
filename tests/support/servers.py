"""Static HTTP servers on 127.0.0.1 for fixture pages (a second one gives a cross-origin host)."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


class StaticServer:
    """Serves one directory; ``url(path)`` builds an address on it."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=f"static-{self.port}", daemon=True)

    def url(self, path: str = "/") -> str:
        return self.origin + "/" + path.lstrip("/")

    def start(self) -> StaticServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def serve(root: Path) -> Iterator[StaticServer]:
    server = StaticServer(root).start()
    try:
        yield server
    finally:
        server.stop()
