"""``browserd serve`` itself (a real process): a request head that never completes does not hold a
connection, and the access log (at DEBUG) never writes the token of a console link."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.queue.stack import ROOT, Proc, wait_until
from tests.support.redis_server import free_port

TOKEN = "serve-limits-token-" + os.urandom(4).hex()
GIVE_UP = 60.0  # far beyond the head deadline (daemon.api.server.HEAD_SECONDS): only a stuck connection gets here


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Proc]]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERD_")}
    env = {**clean, "PYTHONPATH": str(ROOT), "BROWSERD_REDIS_URL": "redis://127.0.0.1:1/0",
           "BROWSERD_API_TOKEN": TOKEN, "BROWSERD_LOG_LEVEL": "DEBUG"}
    api = Proc("api", [sys.executable, "-m", "daemon", "serve", "--port", str(port)], env,
               Path(tmp_path_factory.mktemp("serve")))
    try:
        def up() -> bool:
            assert api.alive, api.log()
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(up, 60, "serve to answer")
        yield port, api
    finally:
        api.stop()


pytestmark = pytest.mark.e2e  # python -m daemon serve


def test_the_access_log_masks_a_console_links_token(served: tuple[int, Proc]) -> None:
    port, api = served
    resp = httpx.get(f"http://127.0.0.1:{port}/ui/settings?token={TOKEN}&x=1", timeout=10)
    assert resp.status_code == 303 and TOKEN not in resp.headers["location"]
    wait_until(lambda: "/ui/settings?token=" in api.log(100_000), 30, "the access log line")
    log = api.log(100_000)
    assert "/ui/settings?token=********&x=1" in log and TOKEN not in log


def _closed_by_server(sock: socket.socket) -> bytes | None:
    """What the server sent before closing, or None while the connection is still open."""
    try:
        data = sock.recv(65536)
    except TimeoutError:
        return None
    except ConnectionError:
        return b""
    return data if not data else data + (_closed_by_server(sock) or b"")


def test_a_head_that_never_completes_is_closed(served: tuple[int, Proc]) -> None:
    port, _ = served
    silent = socket.create_connection(("127.0.0.1", port))
    drip = socket.create_connection(("127.0.0.1", port))
    for sock in (silent, drip):
        sock.settimeout(0.2)
    drip.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
    results: dict[str, bytes | None] = {"silent": None, "drip": None}
    deadline = time.monotonic() + GIVE_UP
    try:
        while None in results.values() and time.monotonic() < deadline:
            if results["drip"] is None:
                try:
                    drip.sendall(b"X-Slow: y\r\n")  # one more header line, never the blank line that ends the head
                except OSError:
                    results["drip"] = b""
            for name, sock in (("silent", silent), ("drip", drip)):
                if results[name] is None:
                    results[name] = _closed_by_server(sock)
    finally:
        silent.close()
        drip.close()
    assert results == {"silent": b"", "drip": b""}, results
    # and the server still answers complete requests
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
