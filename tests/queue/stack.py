"""A real browserd deployment for tests: redis-server, the API and Celery worker processes.

Every process is started as a subprocess with its own environment and always stopped; a worker
killed with SIGKILL takes its Chrome with it (PDEATHSIG), which the tests check.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol


from cdp import process_tree
from config.redis_client import connect_sync
from tests.support.redis_server import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-" + os.urandom(6).hex()


def wait_until(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Proc:
    """A subprocess with its output in a log file, stopped gently then firmly."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logdir: Path) -> None:
        self.node = ""  # a worker's Celery node name
        self.name = name
        self.log_path = logdir / f"{name}.log"
        log = open(self.log_path, "wb")
        self.popen = subprocess.Popen(args, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        log.close()

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def stop(self, grace: float = 20.0) -> None:
        if self.alive:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill9()
        self.popen.wait()

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()


class RedisBackend(Protocol):
    """What a stack runs on instead of its own redis-server (a Sentinel group): a URL, stopped with it."""

    url: str

    def stop(self) -> None: ...


class Stack:
    """redis-server + ``browserd serve`` + any number of ``browserd worker`` processes.

    ``backend``: the Redis the stack uses (and stops when it closes) instead of starting one."""

    def __init__(self, *, aof: bool = False, redis_password: str | None = None, backend: RedisBackend | None = None,
                 env: dict[str, str] | None = None, **settings: Any) -> None:
        """``settings`` are BROWSERD_* settings; ``env``, other variables every process gets (an S3's)."""
        self.dir = Path(tempfile.mkdtemp(prefix="browserd-queue-test-"))
        self.backend: RedisBackend = backend or RedisServer(aof=aof, password=redis_password).start()
        self.api_port = free_port()
        self.url = f"http://127.0.0.1:{self.api_port}"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "BROWSERD_REDIS_URL": self.backend.url,
            "BROWSERD_API_TOKEN": TOKEN,
            "BROWSERD_API_PORT": str(self.api_port),
            "BROWSERD_API_URL": self.url,
            "BROWSERD_POOL_WARM": "2",
            "BROWSERD_LOG_LEVEL": "INFO",
            # the fixture site and scripted LLM are on 127.0.0.1, a private network jobs must open
            "BROWSERD_ALLOWED_NETWORKS": os.environ.get("BROWSERD_ALLOWED_NETWORKS", "127.0.0.1/32"),
            **{f"BROWSERD_{k.upper()}": str(v) for k, v in settings.items()},
            **(env or {}),
        }
        # the one client factory: a Sentinel URL's client follows the master through a fail-over
        self.redis = connect_sync(self.backend.url, socket_timeout=None, retries=5 if backend else 0)
        self.workers: list[Proc] = []
        self.api: Proc | None = None
        self._count = 0

    @property
    def redis_server(self) -> RedisServer:
        """The stack's own redis-server (not there when it runs on a ``backend``)."""
        assert isinstance(self.backend, RedisServer), "this stack runs on another Redis backend"
        return self.backend

    # --- processes -------------------------------------------------------------------------

    def start_api(self) -> Stack:
        self.api = Proc("api", [sys.executable, "-m", "daemon", "serve"], self.env, self.dir)
        wait_until(self._api_up, 60, f"the API on port {self.api_port} ({self.api.log_path})")
        return self

    def _api_up(self) -> bool:
        assert self.api is not None
        if not self.api.alive:
            raise AssertionError(f"the API exited:\n{self.api.log()}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(self.url + "/healthz", timeout=1) as resp:
                return resp.status == 200
        return False

    def start_worker(self, concurrency: int = 4, queues: str | None = None, env: dict[str, str] | None = None) -> Proc:
        """A worker process; ``queues`` (e.g. ``high``) limits the job queues it consumes; ``env``
        adds to (or overrides) the stack's variables for this worker alone."""
        self._count += 1
        args = [sys.executable, "-m", "daemon", "worker", f"--concurrency={concurrency}",
                f"--name=test{self._count}@%h", *([f"--queues={queues}"] if queues else [])]
        worker = Proc(f"worker{self._count}", args, {**self.env, **(env or {})}, self.dir)
        worker.node = f"test{self._count}@{socket.gethostname()}"  # its one name: records, Flower, metrics
        self.workers.append(worker)
        wait_until(lambda: self._worker_up(worker), 90, f"{worker.name} to report ready ({worker.log_path})")
        return worker

    def start_beat(self, max_interval: float = 1.0) -> Proc:
        """``browserd beat`` (stopped with the workers): fires schedules and the reconciler."""
        beat = Proc("beat", [sys.executable, "-m", "daemon", "beat", f"--max-interval={max_interval:g}"],
                    self.env, self.dir)
        self.workers.append(beat)

        def started() -> bool:
            if not beat.alive:
                raise AssertionError(f"beat exited:\n{beat.log()}")
            return "beat: Starting" in beat.log(100_000)

        wait_until(started, 120, "beat to start")
        return beat

    def _worker_up(self, worker: Proc) -> bool:
        if not worker.alive:
            raise AssertionError(f"{worker.name} exited:\n{worker.log()}")
        return any(f":{worker.pid}:" in w for w in self.redis.zrange("browserd:workers", 0, -1))

    def worker_of(self, job: dict[str, Any]) -> Proc:
        """The worker process running the job's current attempt (the record names its Celery node)."""
        return next(w for w in self.workers if w.node == job["worker"])

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        if self.api is not None:
            self.api.stop()
        self.redis.close()
        self.backend.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- the API ---------------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, *, token: str | None = TOKEN,
             raw: bytes | None = None) -> tuple[int, Any]:
        """(status, parsed JSON body) of one request."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None or method == "POST":  # the API takes no POST without a JSON content type
            req.add_header("Content-Type", "application/json")
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            body_bytes = exc.read()
            try:
                return exc.code, json.loads(body_bytes)
            except ValueError:
                return exc.code, body_bytes.decode(errors="replace")

    def fetch(self, path: str) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of a GET of a file the API serves (an artifact), with the token."""
        req = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        status, job = self.call("POST", "/v1/jobs", spec)
        assert status in (200, 201), (status, job)
        return job

    def job(self, job_id: str) -> dict[str, Any]:
        status, job = self.call("GET", f"/v1/jobs/{job_id}")
        assert status == 200, (status, job)
        return job

    def wait_state(self, job_id: str, states: set[str], timeout: float = 60) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            job = self.job(job_id)
            return job if job["state"] in states else None

        try:
            return wait_until(reached, timeout, f"job {job_id} to reach {sorted(states)}", interval=0.05)
        except AssertionError as exc:  # say where the job stood and what its workers last logged
            job = self.job(job_id)
            where = {k: job.get(k) for k in ("state", "paused", "attempts", "worker", "progress", "error")}
            logs = "\n".join(f"--- worker {i}:\n{w.log(3000)}" for i, w in enumerate(self.workers))
            raise AssertionError(f"{exc}\njob: {where}\n{logs}") from None

    def events(self, job_id: str) -> list[tuple[str, dict[str, Any]]]:
        """All events so far (not following), as (type, data)."""
        req = urllib.request.Request(f"{self.url}/v1/jobs/{job_id}/events?follow=false",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return parse_sse(resp.read().decode())


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.split("\n\n"):
        kind, data = "message", None
        for line in block.splitlines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:].strip())
        if data is not None:
            out.append((kind, data))
    return out


def tree_of(proc: Proc) -> list[int]:
    """The process and its descendants (its Chrome among them)."""
    return process_tree(proc.pid)


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


@contextlib.contextmanager
def stack(*, aof: bool = False, redis_password: str | None = None, env: dict[str, str] | None = None,
          **settings: Any) -> Iterator[Stack]:
    s = Stack(aof=aof, redis_password=redis_password, env=env, **settings)
    try:
        s.start_api()
        yield s
    finally:
        s.close()


def script(url: str, waits: int = 1, text: str = "ok") -> list[dict[str, Any]]:
    """A script-mode job: open ``url``, wait ``waits`` times one second, finish with ``text``."""
    return [{"go_to_url": {"url": url}}, *[{"wait": {"seconds": 1}}] * waits, {"done": {"text": text}}]
