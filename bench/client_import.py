"""What ``import daemon.client`` costs: the public client must not load the server.

    python -m bench.client_import [--runs N]

Imports ``daemon.client`` in N fresh interpreters (``python -X importtime`` would count its own
overhead; a wall clock around the import in a new process is what a user's script pays) and prints
one JSON line: ``seconds`` (the median), ``server_modules`` (the server's dependencies it loaded:
none is the goal) and ``modules`` (how many modules were on ``sys.modules`` after the import,
counting the interpreter's own).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

# The server's dependencies the client has no use for; tests/client/test_import.py asserts the same.
SERVER_MODULES = ("celery", "kombu", "redis", "prometheus_client", "fsspec", "cryptography", "jsonschema", "re2",
                  "langchain_core", "langchain_openai", "openai", "fastapi", "uvicorn", "websockets", "redbeat")

_PROBE = """
import json, sys, time
start = time.perf_counter()
import daemon.client
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "modules": sorted(sys.modules)}))
"""


def probe() -> dict[str, object]:
    """One fresh interpreter's import of ``daemon.client``: its time and the modules it left loaded."""
    out = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def server_modules(modules: list[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules} & set(SERVER_MODULES))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh interpreters to time (default 9)")
    args = parser.parse_args()
    runs = [probe() for _ in range(max(1, args.runs))]
    last = runs[-1]["modules"]
    print(json.dumps({"seconds": round(statistics.median(r["seconds"] for r in runs), 3),
                      "server_modules": server_modules(last), "modules": len(last),
                      "workers_modules": sum(1 for m in last if m.startswith("workers.")), "runs": len(runs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
