"""Small helpers the benchmarks share: serving generated pages over http on 127.0.0.1."""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


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
