"""Peer crawlers and scrapers the benchmarks run beside browserd, each in a virtualenv of its own.

A peer is installed from PyPI on first use into ``~/.cache/browserd-bench/{name}`` (never into
browserd's ``.venv``: its dependencies are not browserd's), and runs on the system Chromium
(``CHROMIUM``): no browser is downloaded. ``bench.crawl`` uses it for crawl4ai's deep crawl.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOME = Path.home() / ".cache" / "browserd-bench"
CHROMIUM = "/usr/bin/chromium"


def peer_python(name: str, package: str, module: str) -> Path:
    """The interpreter of the peer's virtualenv ``name``, with ``package`` installed (``module`` is
    what it imports as): made and installed on first use."""
    home = HOME / name
    python = home / "bin" / "python"
    if not python.exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    if subprocess.run([str(python), "-c", f"import {module}"], capture_output=True).returncode != 0:
        print(f"bench: installing {package} into {home} (pip, from PyPI)", file=sys.stderr)
        subprocess.run([str(python), "-m", "pip", "install", "-q", package], check=True)
    return python
