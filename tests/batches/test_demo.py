"""``browserd demo`` as CI runs it: a subprocess on a machine with no Redis configured and no LLM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from daemon.demo import PRODUCTS
from tests.queue.stack import ROOT
from tests.support.procs import RUN_DIR

pytestmark = pytest.mark.e2e  # browserd demo starts redis-server, the API, workers and Chromium

CLEARED = ("BROWSERD_REDIS_URL", "BROWSERD_API_URL", "BROWSERD_API_TOKEN", "BROWSERD_LLM_BASE_URL",
           "OPENAI_API_KEY", "BROWSERD_OPENAI_API_KEY")


def processes_with(marker: bytes) -> list[int]:
    """Processes whose environment carries ``marker`` (every descendant of the demo inherits it), or a
    directory under it (Chrome run as its own user gets a ``$TMPDIR`` of its own there: cdp.confinement)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if any(var == marker or var.startswith(marker + b"/") for var in environ.split(b"\0")):
                found.append(int(entry))
    return found


def test_demo_runs_to_completion_and_leaves_nothing_behind(tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="d", dir=RUN_DIR))  # short: Chrome's socket path must fit in 108 bytes
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(TMPDIR=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "daemon", "demo"], env=env, cwd=tmp_path,
                          capture_output=True, timeout=600)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"

    assert "started an embedded redis-server" in err
    assert "no LLM configured" in err and "script-mode jobs" in err
    assert f"progress: {len(PRODUCTS)}/{len(PRODUCTS)}" in err
    assert out.splitlines()[1].split() == ["product", "price", "stock", "status"]
    for product in PRODUCTS:
        row = next(line for line in out.splitlines() if line.startswith(product.name + " "))
        assert f"${product.price:.2f}" in row and row.rstrip().endswith("succeeded")
    assert "/metrics" in out and "browserd_jobs_total" in out and "browserd_workers_up 1.0" in out
    assert f"{len(PRODUCTS)} of {len(PRODUCTS)} jobs succeeded" in out

    assert processes_with(f"TMPDIR={home}".encode()) == []  # redis, worker, API and Chrome all gone
    assert not list(home.glob("browserd-demo-*"))  # its logs and Redis dir removed
    shutil.rmtree(home)


def test_ctrl_c_stops_everything_the_demo_started() -> None:
    home = Path(tempfile.mkdtemp(prefix="d", dir=RUN_DIR))
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(TMPDIR=str(home), PYTHONPATH=str(ROOT))
    demo = subprocess.Popen([sys.executable, "-m", "daemon", "demo"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert demo.stderr is not None
        for raw in demo.stderr:  # interrupt once its services are up and the batch is going
            if b"jobs queued" in raw:
                break
        demo.send_signal(signal.SIGINT)
        rest = demo.stderr.read().decode()
        assert demo.wait(120) == 130
    finally:
        if demo.poll() is None:
            demo.kill()
    assert "interrupted; stopping everything" in rest
    assert processes_with(f"TMPDIR={home}".encode()) == []
    shutil.rmtree(home)
