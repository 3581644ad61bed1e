"""Process-table checks: every Chrome a test run starts must be gone when it is done.

Each run gets its own temporary directory (``TMPDIR``), which every process the tests start
inherits, including Celery workers. Chrome's profile lives there, and Chrome passes the profile
path to every child it starts (zygotes, renderers, utilities), so a process whose command line
names the run's directory is one of ours, even after its parent died. Parallel test runs on one
machine therefore never see each other's browsers.
"""

from __future__ import annotations

import os
import tempfile
import uuid

RUN_DIR = os.path.join(tempfile.gettempdir(), f"browserd-test-{uuid.uuid4().hex[:12]}")
os.makedirs(RUN_DIR, exist_ok=True)
os.environ["TMPDIR"] = RUN_DIR
tempfile.tempdir = None  # forget the cached default so this process uses RUN_DIR too
_NEEDLE = RUN_DIR.encode()


def chrome_pids() -> set[int]:
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
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                if _NEEDLE in fh.read():
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))
