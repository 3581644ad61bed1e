"""A private redis-server for a test run: free port, temp dir, always stopped; no persistence, or
an append-only file (``aof=True``, as in the compose file) so it can be restarted from it."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode


_XDIST = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... under pytest-xdist
_SLICE = 4000  # ports per xdist worker, below the kernel's ephemeral range (32768-)
_PICKS = itertools.count()


def free_port() -> int:
    """A port free now on 127.0.0.1. Under pytest-xdist each worker picks from its own slice (gw0:
    10000-13999, gw1: 14000-...): a port the kernel hands out (bind to 0) was taken by the other
    worker's process between our check and our server's bind (an API failed 'address already in use')."""
    if not _XDIST.startswith("gw"):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]
    base = 10000 + int(_XDIST[2:]) * _SLICE
    for _ in range(_SLICE):
        port = base + next(_PICKS) % _SLICE
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {base}-{base + _SLICE - 1}")


class RedisServer:
    """``redis-server`` bound to 127.0.0.1 on a free port; ``url`` points at database 0. With
    ``password``, the server requires it and ``url`` carries it as ``?password=`` (redis-py's form)."""

    def __init__(self, *, aof: bool = False, password: str | None = None, args: tuple[str, ...] = ()) -> None:
        """``args``: more of redis-server's options (``--replicaof host port`` for a replica)."""
        self.aof, self.password, self.args = aof, password, args
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH (apt-get install redis-server)")
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(prefix="browserd-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0" + (f"?{urlencode({'password': password})}" if password else "")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> RedisServer:
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
            "--save", "", "--appendonly", "yes" if self.aof else "no", "--protected-mode", "yes",
            *(["--requirepass", self.password] if self.password else []), *self.args,
        ]
        log = open(self.dir / "redis.log", "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.dir / 'redis.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout}s")

    def halt(self, *, kill: bool = False) -> None:
        """Stop the process, keeping its directory (and append-only file) for ``start`` again.

        ``kill``: SIGKILL (writes of the last second may be lost), else SIGTERM (flushes the file).
        """
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self, downtime: float = 0.0, *, kill: bool = False) -> None:
        """Stop, stay away ``downtime`` seconds, and start again on the same port, from the AOF."""
        self.halt(kill=kill)
        time.sleep(downtime)
        self.start()

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()
