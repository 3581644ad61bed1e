"""Process-table checks: every Chrome a test run starts must be gone when it is done.

Each run gets its own temporary directory (``TMPDIR``), which every process the tests start
inherits, including Celery workers. Chrome's profile lives there and Chrome passes the profile
path to every child it starts, so ``cdp.chrome_pids(RUN_DIR)`` finds exactly this run's browser
processes, even after their parent died; parallel test runs never see each other's browsers.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import cdp

_BASE = tempfile.gettempdir()
if os.path.basename(_BASE).startswith("browserd-test-"):  # a pytest-xdist worker, under its controller's run
    _BASE = os.path.dirname(_BASE)  # a sibling, not nested: paths stay short (Chrome's socket, 107 bytes)
RUN_DIR = os.path.join(_BASE, f"browserd-test-{uuid.uuid4().hex[:12]}")
os.makedirs(RUN_DIR, exist_ok=True)
os.environ["TMPDIR"] = RUN_DIR
tempfile.tempdir = None  # forget the cached default so this process uses RUN_DIR too


def chrome_pids() -> set[int]:
    """Running Chrome processes started by this test run."""
    return cdp.chrome_pids(RUN_DIR)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))
