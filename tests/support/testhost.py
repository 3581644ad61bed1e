"""A test host of our own: a network namespace with a non-loopback interface, for attacks that need one.

WebRTC gathers candidates only on non-loopback interfaces, as every real host has; the machine's own
must never be a target. So a test makes a namespace (``ip netns add``, root) holding a veth pair with
``198.18.0.1/24`` and ``198.18.0.2/24`` (RFC 2544's benchmarking range; both ends in the namespace, so
nothing leaves it), and runs an asyncio program in a thread that joined it: the sockets that thread
opens, and the Chrome it launches, belong to the test host.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import subprocess
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from cdp.netns import CLONE_NEWNET

T = TypeVar("T")


@dataclass(frozen=True)
class TestHost:
    name: str
    local: str = "198.18.0.1"  # the interface a browser sees
    peer: str = "198.18.0.2"  # another address on the test host: where an attack's datagrams would land

    def run(self, program: Callable[[], Awaitable[T]]) -> T:
        """``asyncio.run(program())`` in a thread inside this host's namespace; returns its result."""
        outcome: dict[str, object] = {}

        def inside() -> None:
            fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
            try:
                if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns into the test host")
                outcome["value"] = asyncio.run(program())  # type: ignore[arg-type]
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc
            finally:
                os.close(fd)

        thread = threading.Thread(target=inside, name=f"testhost-{self.name}")
        thread.start()
        thread.join()
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["value"]  # type: ignore[return-value]


@contextlib.contextmanager
def test_host() -> Iterator[TestHost]:
    """A fresh test host (removed after); needs root, as CI and the dev machine run."""
    host = TestHost(f"browserd-t-{uuid.uuid4().hex[:8]}")
    steps = [["netns", "add", host.name],
             ["-n", host.name, "link", "set", "lo", "up"],
             ["-n", host.name, "link", "add", "t0", "type", "veth", "peer", "name", "t1"],
             ["-n", host.name, "addr", "add", f"{host.local}/24", "dev", "t0"],
             ["-n", host.name, "addr", "add", f"{host.peer}/24", "dev", "t1"],
             ["-n", host.name, "link", "set", "t0", "up"],
             ["-n", host.name, "link", "set", "t1", "up"]]
    try:
        for step in steps:
            subprocess.run(["ip", *step], check=True, capture_output=True)
        yield host
    finally:
        subprocess.run(["ip", "netns", "del", host.name], capture_output=True)


test_host.__test__ = False  # type: ignore[attr-defined]  (a helper, not a pytest test)
TestHost.__test__ = False  # type: ignore[attr-defined]
