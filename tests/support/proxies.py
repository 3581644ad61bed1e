"""A real upstream proxy process on 127.0.0.1 (pproxy, from PyPI) that records what passed through it.

pproxy serves HTTP (CONNECT and forward) and SOCKS5 on one port, with username/password; with
``-v`` it prints one line per connection it opened (``http 127.0.0.1:x -> 127.0.0.1:y``) and one
per refused login (``Unauthorized ...``). ``--auth 0``: pproxy otherwise remembers an address that
once logged in and lets it in without credentials for 30 days, which would hide wrong passwords.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from tests.support.redis_server import free_port

USERNAME, PASSWORD = "crawler", "s3cret-proxy-pass"


class ProxyProcess:
    """``pproxy`` listening on ``port``; ``lines`` is its log so far."""

    def __init__(self, username: str = USERNAME, password: str = PASSWORD) -> None:
        self.port = free_port()
        self.username, self.password = username, password
        self.lines: list[str] = []
        self._proc: subprocess.Popen[str] | None = None

    def server(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> ProxyProcess:
        listen = f"http+socks5://127.0.0.1:{self.port}#{self.username}:{self.password}"
        self._proc = subprocess.Popen([sys.executable, "-m", "pproxy", "-l", listen, "--auth", "0", "-v"],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return self
            if self._proc.poll() is not None:
                raise RuntimeError(f"pproxy exited: {self.lines}")
            time.sleep(0.05)
        raise RuntimeError("pproxy did not start listening")

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line.rstrip())

    def passed(self, port: int) -> list[str]:
        """Log lines of connections the proxy opened to 127.0.0.1:``port``."""
        return [line for line in self.lines if line.endswith(f"-> 127.0.0.1:{port}")]

    def passed_at_least(self, port: int, count: int, timeout: float = 10.0) -> list[str]:
        """``passed(port)`` once it holds ``count`` lines (or the timeout). pproxy logs a connection
        from its own process and a thread reads the pipe: a line can land just after the request it
        records was answered, so a count read at once could miss it (a flaky failure, once)."""
        deadline = time.monotonic() + timeout
        while len(self.passed(port)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.passed(port)

    def refused_logins(self) -> list[str]:
        return [line for line in self.lines if line.startswith("Unauthorized")]

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


@contextlib.contextmanager
def running_proxy(**kwargs: str) -> Iterator[ProxyProcess]:
    proxy = ProxyProcess(**kwargs).start()
    try:
        yield proxy
    finally:
        proxy.stop()
