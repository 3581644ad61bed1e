"""A Redis Sentinel group for a test run: a master, a replica and three sentinels on free loopback ports.

The sentinels use Debian's ``redis-sentinel`` (from the package of that name, which ``.ci/setup``
installs) or, where only ``redis-server`` is installed, ``redis-server CONF --sentinel``: the same
program. Their timeouts are short (the master is judged down after ``DOWN_AFTER_MS``), so a fail-over
takes a few seconds. ``url`` is browserd's Sentinel form of ``BROWSERD_REDIS_URL``. Everything is
stopped by ``stop``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from tests.support.redis_server import RedisServer, free_port

MASTER_NAME = "browserd"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 4000
QUORUM = 2


def sentinel_command(conf: Path) -> list[str]:
    binary = shutil.which("redis-sentinel")
    if binary is not None:
        return [binary, str(conf)]
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("neither redis-sentinel nor redis-server is on PATH (apt-get install redis-sentinel)")
    return [server, str(conf), "--sentinel"]


class SentinelProc:
    """One ``redis-sentinel`` watching the master ``MASTER_NAME``."""

    def __init__(self, master_port: int) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="browserd-sentinel-"))
        self.conf = self.dir / "sentinel.conf"
        self.conf.write_text("\n".join([
            f"port {self.port}", "bind 127.0.0.1", f"dir {self.dir}", "protected-mode no",
            f"logfile {self.dir / 'sentinel.log'}",
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {QUORUM}",
            f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {MASTER_NAME} 1", "",
        ]))
        self.proc = subprocess.Popen(sentinel_command(self.conf), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        self.client = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=2)

    def master(self) -> dict[str, str] | None:
        """What this sentinel knows of the master, or None while it does not answer."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"redis-sentinel exited: {self.log()}")
        with contextlib.suppress(redis.RedisError):
            return self.client.sentinel_master(MASTER_NAME)
        return None

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.dir / "sentinel.log").read_text()[-3000:]
        return ""

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()  # SIGTERM, then SIGKILL if it has not exited within 10 s
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class SentinelGroup:
    """A master, a replica and three sentinels; ``kill_master`` (``kill -9``) and ``wait_failover``."""

    def __init__(self) -> None:
        self.master = RedisServer().start()
        self.replica = RedisServer(args=("--replicaof", "127.0.0.1", str(self.master.port))).start()
        self.servers = [self.master, self.replica]
        self.sentinels: list[SentinelProc] = []
        try:
            self.sentinels = [SentinelProc(self.master.port) for _ in range(3)]
            self._wait_ready(60.0)
        except BaseException:
            self.stop()
            raise
        hosts = ";".join(f"sentinel://127.0.0.1:{s.port}" for s in self.sentinels)
        self.url = f"{hosts}/0?master_name={MASTER_NAME}"

    def _wait_ready(self, timeout: float) -> None:
        """Until the replica is in sync and every sentinel knows the replica and the two other sentinels
        (they find each other through the master in a few seconds): only then can they fail over."""
        deadline = time.monotonic() + timeout
        client = redis.Redis(host="127.0.0.1", port=self.replica.port, decode_responses=True)
        try:
            while time.monotonic() < deadline:
                synced = client.info("replication").get("master_link_status") == "up"
                known = [s.master() for s in self.sentinels]
                if synced and all(k and int(k["num-slaves"]) >= 1 and int(k["num-other-sentinels"]) >= 2
                                  for k in known):
                    return
                time.sleep(0.2)
        finally:
            client.close()
        logs = "\n".join(s.log() for s in self.sentinels)
        raise RuntimeError(f"the sentinel group did not form within {timeout}s:\n{logs}")

    def master_port(self) -> int | None:
        """The master's port as the sentinels' majority names it."""
        ports = []
        for sentinel in self.sentinels:
            with contextlib.suppress(redis.RedisError):
                found = sentinel.client.sentinel_get_master_addr_by_name(MASTER_NAME)
                if found:
                    ports.append(int(found[1]))
        return max(set(ports), key=ports.count) if ports else None

    def kill_master(self) -> None:
        """``kill -9`` the current master."""
        self.master.halt(kill=True)

    def wait_failover(self, timeout: float = 60.0) -> float:
        """Seconds until the sentinels name the replica as master (after ``kill_master``)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.master_port() == self.replica.port:
                return time.monotonic() - started
            time.sleep(0.05)
        logs = "\n".join(s.log() for s in self.sentinels)
        raise RuntimeError(f"no fail-over within {timeout}s:\n{logs}")

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()
