"""Watch a launched browser's network service: when it dies, its browser must not serve another job.

Chrome runs its network stack in a utility process (``--utility-sub-type=network.mojom.NetworkService``).
When that process dies (a crash, an OOM kill) Chrome restarts it silently, and every browser context
that existed before, the pool's warm ones included, comes back *without its proxy*: without a network
namespace its fetches, WebSockets and name lookups then go direct, around the egress gate (issue 22).
So the pool treats a network-service death like a crash: the browser drains (no new lease), its warm
contexts are dropped, and the jobs running in it are stopped (``NetworkServiceRestarted``).

The signal is the process itself, not CDP: the network service is no CDP target, and
``SystemInfo.getProcessInfo`` would have to be polled. At launch the watch finds the process in the
browser's tree and opens a pidfd on it (Linux 5.3+); the pidfd turns readable the moment the process
exits, and the event loop calls back in the same turn, before Chrome has even restarted the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable

from cdp.launcher import process_tree

log = logging.getLogger("browserd.cdp")

NETWORK_SERVICE = b"--utility-sub-type=network.mojom.NetworkService"
FIND_TIMEOUT = 10.0  # seconds after launch the network service has to appear


def network_service_pids(root_pid: int) -> list[int]:
    """The network-service processes in ``root_pid``'s tree (one, normally)."""
    found = []
    for pid in process_tree(root_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if NETWORK_SERVICE in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found


class NetworkServiceWatch:
    """A pidfd on one browser's network service; ``on_exit()`` runs on the loop when it dies."""

    def __init__(self, pid: int, pidfd: int, on_exit: Callable[[], None]) -> None:
        self.pid = pid
        self._pidfd = pidfd
        self._on_exit = on_exit
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(pidfd, self._exited)

    def __repr__(self) -> str:
        return f"<NetworkServiceWatch pid={self.pid}>"

    @classmethod
    async def start(cls, root_pid: int, on_exit: Callable[[], None], *,
                    timeout: float = FIND_TIMEOUT) -> NetworkServiceWatch | None:
        """Watch the network service of the browser ``root_pid``; None when none appears in ``timeout``
        (a network service running in the browser process, or no pidfd on this system)."""
        if not hasattr(os, "pidfd_open"):
            return None
        deadline = time.monotonic() + timeout
        while True:
            pids = await asyncio.to_thread(network_service_pids, root_pid)
            if pids:
                try:
                    return cls(pids[0], os.pidfd_open(pids[0]), on_exit)
                except ProcessLookupError:  # it died between the look and the open: the watch's job
                    on_exit()
                    return None
                except OSError as exc:
                    log.warning("cannot watch the network service of browser pid %s: %s", root_pid, exc)
                    return None
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.05)

    def _exited(self) -> None:
        self.close()
        self._on_exit()

    def close(self) -> None:
        if self._pidfd < 0:
            return
        with contextlib.suppress(ValueError, RuntimeError):
            self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = -1
