"""The public client is free of the server: ``import daemon.client`` loads none of its dependencies.

A user's script that only talks to the API over HTTP must not pay for (or need) Celery, Redis,
Prometheus, fsspec, cryptography, the output-schema engine or the LLM stack. Checked in a fresh
interpreter, so nothing this test run imported before counts; no browser and no Redis needed.
The time it takes is ``python -m bench.client_import``'s business, not a test's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.client_import import SERVER_MODULES

ROOT = Path(__file__).resolve().parents[2]

PROBE = "import sys, json\nimport daemon.client\nprint(json.dumps(sorted(sys.modules)))\n"


def test_importing_the_client_loads_no_server_dependency() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted({m.split(".")[0] for m in loaded} & set(SERVER_MODULES)) == []
    browser_or_api = [m for m in loaded if m.split(".")[0] in ("cdp", "dom")
                      or m.startswith(("workers.agent", "daemon.api"))]
    assert browser_or_api == []
