"""Small helpers the benchmarks share: serving generated pages over http on 127.0.0.1, and counting
the CPU a run spent (the machine's, and each process tree's)."""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cdp import process_cpu_seconds, process_tree
from cdp.launcher import CLOCK_TICKS


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serve_path(root: Path) -> Iterator[str]:
    """Serve ``root`` on a free port of 127.0.0.1; yields the origin."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def serve_directory(files: dict[str, str]) -> Iterator[str]:
    """Write ``files`` (name → text) to a temp dir and serve it; yields the origin."""
    with tempfile.TemporaryDirectory(prefix="browserd-bench-") as tmp:
        for name, text in files.items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        with serve_path(Path(tmp)) as origin:
            yield origin


def cpu_seconds(root_pid: int, tree: bool = True) -> float:
    """CPU-seconds a process tree has used: each live process's own, plus what its reaped children
    used (a Chrome renderer that ended with its context is counted in its parent's). Without
    ``tree``, the process's own only (a worker without its Chrome)."""
    total = 0.0
    for pid in process_tree(root_pid) if tree else [root_pid]:
        with contextlib.suppress(OSError):
            total += process_cpu_seconds(pid, reaped=tree)
    return total


def machine_cpu_seconds() -> float:
    """CPU-seconds the whole machine has spent busy (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as fh:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fh.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


class CpuSpan:
    """CPU-seconds spent between ``start`` and ``stop``: the machine's, each named process tree's
    (``trees``) and each named process's own (``own``)."""

    def __init__(self, trees: dict[str, int], own: dict[str, int] | None = None) -> None:
        self.trees, self.own = trees, own or {}
        self._start: dict[str, float] = {}
        self.spent: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        return {"machine": machine_cpu_seconds(), **{name: cpu_seconds(pid) for name, pid in self.trees.items()},
                **{name: cpu_seconds(pid, tree=False) for name, pid in self.own.items()}}

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> dict[str, float]:
        end = self._read()
        self.spent = {name: end[name] - self._start[name] for name in end}
        return self.spent
