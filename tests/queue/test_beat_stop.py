"""``browserd beat`` with Redis away stops on the first SIGTERM (issue 29: it ignored SIGTERM and
SIGINT for minutes, after a 100-line CRITICAL traceback; docker stop and systemd waited for SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.queue.stack import ROOT, Proc, wait_until
from tests.support.redis_server import free_port

pytestmark = pytest.mark.e2e

# docker stop's grace period: beat must be gone well within it (the old beat took minutes)
DOCKER_GRACE = 10


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_beat_stops_on_the_first_signal_while_redis_is_away(signum: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BROWSERD_LOG_LEVEL": "INFO",
           "BROWSERD_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}  # nothing listens there
    beat = Proc("beat", [sys.executable, "-m", "daemon", "beat", "--max-interval=1"], env, Path(tempfile.mkdtemp()))
    try:
        wait_until(lambda: "beat: Starting" in beat.log(100_000), 120, "beat to start")
        beat.popen.send_signal(signum)
        try:
            beat.popen.wait(DOCKER_GRACE)
        except subprocess.TimeoutExpired:
            pytest.fail(f"beat ignored {signal.Signals(signum).name}:\n{beat.log()}")
        log = beat.log(100_000)
        assert f"{signal.Signals(signum).name} received, stopping" in log
        assert "Traceback" not in log, log
    finally:
        beat.kill9()
