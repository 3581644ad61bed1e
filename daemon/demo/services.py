"""The processes the demo runs for itself: redis-server (when none is configured), a worker, the API.

Each is a child of the demo with its output in a log file under the demo's temp dir. They are
stopped in reverse order when the demo ends, fails or is interrupted; and the kernel sends each a
SIGTERM should the demo itself die without cleaning up (``PR_SET_PDEATHSIG``), so none outlives it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from cdp import die_with_parent


class ServiceError(Exception):
    """A service did not start; the message says which and shows the end of its log."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Service:
    def __init__(self, name: str, args: list[str], env: dict[str, str], logdir: Path) -> None:
        self.name = name
        self.log_path = logdir / f"{name}.log"
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, preexec_fn=die_with_parent(signal.SIGTERM))

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self, grace: float = 30.0) -> None:
        if self.alive:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        self.popen.wait()


class Services:
    """Starts services and stops every one of them on ``close()`` (last started, first stopped)."""

    def __init__(self) -> None:
        self.dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"browserd-demo-{os.getpid()}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.started: list[Service] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> Service:
        service = Service(name, args, env, self.dir)
        self.started.append(service)
        return service

    def redis(self) -> str:
        """An embedded redis-server on a free port, data in the temp dir; returns its URL."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceError("BROWSERD_REDIS_URL is unset and redis-server is not installed; "
                               "install it (apt-get install redis-server) or point BROWSERD_REDIS_URL at a Redis")
        port = free_port()
        service = self.start("redis", [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                                       "--save", "", "--appendonly", "no"], dict(os.environ))
        self.wait(service, lambda: _redis_answers(port), 15, "redis-server to answer")
        return f"redis://127.0.0.1:{port}/0"

    def wait(self, service: Service, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not service.alive:
                raise ServiceError(f"{service.name} exited while starting; its log ends with:\n{service.log_tail()}")
            if ready():
                return
            time.sleep(0.2)
        raise ServiceError(f"timed out after {timeout:g}s waiting for {what}; {service.name}'s log ends with:\n"
                           f"{service.log_tail()}")

    def close(self) -> None:
        for service in reversed(self.started):
            service.stop()
        self.started.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


def _redis_answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False


def http_ok(url: str) -> bool:
    with contextlib.suppress(OSError):
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    return False
