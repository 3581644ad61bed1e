"""A private S3-compatible server for a test: moto's server mode (``python -m moto.server``) on a
free loopback port, always stopped. Clients reach it the way a deployment reaches its S3: through
the AWS variables of the environment (``env``: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``), which botocore, and so s3fs, reads by itself."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import s3fs

from tests.support.redis_server import free_port

BUCKET = "browserd-artifacts"  # the bucket ``s3_server`` makes


class S3Server:
    """moto's S3 on 127.0.0.1; ``env`` is what a process needs to use it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="browserd-s3-"))
        self.env = {"AWS_ACCESS_KEY_ID": "testing-key", "AWS_SECRET_ACCESS_KEY": "testing-secret",
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> S3Server:
        log = open(self.dir / "moto.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto exited: {(self.dir / 'moto.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto did not answer on port {self.port} within {timeout}s")

    def filesystem(self) -> Any:
        """An s3fs filesystem of the test's own on this server (no listings cache: it reads what is there)."""
        return s3fs.S3FileSystem(key=self.env["AWS_ACCESS_KEY_ID"], secret=self.env["AWS_SECRET_ACCESS_KEY"],
                                 endpoint_url=self.endpoint, use_listings_cache=False, skip_instance_cache=True)

    def make_bucket(self, name: str) -> None:
        self.filesystem().mkdir(name)

    def keys(self, prefix: str) -> list[str]:
        """Every object under ``bucket/prefix``, as ``bucket/key``."""
        fs = self.filesystem()
        try:
            return sorted(fs.find(prefix))
        except FileNotFoundError:
            return []

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """A started server with the bucket ``BUCKET``."""
    server = S3Server().start()
    try:
        server.make_bucket(BUCKET)
        yield server
    finally:
        server.stop()
