"""Process-table checks: every Chrome a test run starts must be gone when it is done.

Each run tags its processes with a unique ``BROWSERD_TEST_RUN`` environment value, which Chrome
and all its children inherit; counting by tag keeps parallel test runs from seeing each other's
browsers.
"""

from __future__ import annotations

import os
import uuid

RUN_TAG = os.environ.setdefault("BROWSERD_TEST_RUN", uuid.uuid4().hex)
_NEEDLE = f"BROWSERD_TEST_RUN={RUN_TAG}".encode()


def chrome_pids(tag: bytes = _NEEDLE) -> set[int]:
    """Running (non-zombie) Chrome processes started by this test run."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
            name = stat[stat.find(b"(") + 1 : stat.rfind(b")")].lower()
            if b"chrom" not in name or stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z":
                continue
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                if tag in fh.read():
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))
