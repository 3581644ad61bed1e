"""Which processes listen on a TCP port, read from /proc (Linux): a DevTools port would be one."""

from __future__ import annotations

import contextlib
import os


def _listening_inodes() -> set[str]:
    """Socket inodes of every TCP socket in the LISTEN state on this host (IPv4 and IPv6)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":
                    inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    found.add(link[8:-1])
    except OSError:
        pass
    return found


def listening_pids(pids: list[int]) -> set[int]:
    """Those of ``pids`` that hold a listening TCP socket (a DevTools port would be one)."""
    listening = _listening_inodes()
    return {pid for pid in pids if _socket_inodes(pid) & listening}
