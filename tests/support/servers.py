"""Static HTTP servers on 127.0.0.1 for fixture pages (a second one gives a cross-origin host)."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import websockets

SITE = Path(__file__).resolve().parents[1] / "fixtures" / "site"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


class StaticServer:
    """Serves one directory (or answers with ``handler``, a test's own); ``url(path)`` builds an address on it."""

    def __init__(self, root: Path | None = None, handler: Any = None) -> None:
        handler = handler or functools.partial(_QuietHandler, directory=str(root))
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


class RecordingServer:
    """Serves the fixture site on ``localhost`` (or any name resolving to 127.0.0.1) and records every
    path asked for; ``/redirect?to=URL`` answers 302 to URL."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        recorder = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802  (webhook receivers: recorded, redirected or 200)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.paths.append(self.path)
                if not self._redirected():
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def _redirected(self) -> bool:
                if not self.path.startswith("/redirect?to="):
                    return False
                self.send_response(302)
                self.send_header("Location", unquote(self.path.split("=", 1)[1]))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return True

            def do_GET(self) -> None:  # noqa: N802
                recorder.paths.append(self.path)
                if self.path.startswith("/redirect?to="):
                    self.send_response(302)
                    self.send_header("Location", unquote(self.path.split("=", 1)[1]))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                super().do_GET()

        handler = functools.partial(Handler, directory=str(SITE))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "localhost") -> str:
        return f"http://{host}:{self.port}/{path.lstrip('/')}"

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class WebSocketRecorder:
    """A websocket server on 127.0.0.1 (``async with``) that counts the connections it accepts."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: websockets.Server | None = None

    async def _handler(self, ws: websockets.ServerConnection) -> None:
        self.connections += 1
        await ws.send("hello")

    async def __aenter__(self) -> WebSocketRecorder:
        self._server = await websockets.serve(self._handler, "127.0.0.1", 0)
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


class VisitRecorder:
    """A small site on 127.0.0.1 that records when each page load arrived and how many were in flight.

    Every path answers a tiny HTML page after ``hold`` seconds (so concurrent loads overlap visibly),
    except ``/robots.txt``, which answers ``robots`` (404 when None; a ``(status, location)`` pair
    answers a redirect) and is counted. ``visits`` holds (path, arrival time) for pages;
    ``most_in_flight`` the most page loads open at once. Used by the politeness tests, which
    measure what jobs did to a site at the site.
    """

    def __init__(self, hold: float = 0.0, robots: str | tuple[int, str] | None = None) -> None:
        self.hold = hold
        self.robots = robots
        self.visits: list[tuple[str, float]] = []
        self.robots_fetches = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/robots.txt":
                    recorder._robots(self)
                elif self.path == "/favicon.ico":
                    self._answer(404, b"", "text/plain")
                else:
                    recorder._page(self)

            def _answer(self, status: int, body: bytes, kind: str, location: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                if location:
                    self.send_header("Location", location)
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/{path.lstrip('/')}"

    def _robots(self, handler: Any) -> None:
        with self._lock:
            self.robots_fetches += 1
        if self.robots is None:
            handler._answer(404, b"no robots.txt", "text/plain")
        elif isinstance(self.robots, tuple):
            handler._answer(self.robots[0], b"", "text/plain", location=self.robots[1])
        else:
            handler._answer(200, self.robots.encode(), "text/plain")

    def _page(self, handler: Any) -> None:
        with self._lock:
            self.visits.append((handler.path, time.monotonic()))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.hold)
            handler._answer(200, f"<html><title>{handler.path}</title><body>page</body></html>".encode(), "text/html")
        finally:
            with self._lock:
                self.in_flight -= 1

    def arrivals(self, prefix: str) -> list[float]:
        """Arrival times of the pages under ``prefix``, in order."""
        with self._lock:
            return sorted(t for path, t in self.visits if path.startswith(prefix))

    def __enter__(self) -> VisitRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
