#!/usr/bin/env python3
"""Container health check: ``browserd-healthcheck api|worker`` (or a URL); exit 0 when it answers 2xx.

``api`` asks the API's /healthz on BROWSERD_API_PORT; ``worker`` asks the worker's metrics server
on BROWSERD_METRICS_PORT, which answers only while the worker process runs. Standard library only,
so the image needs no curl.
"""

import os
import sys
import urllib.request

TARGETS = {
    "api": lambda: f"http://127.0.0.1:{os.environ.get('BROWSERD_API_PORT', '8080')}/healthz",
    "worker": lambda: f"http://127.0.0.1:{os.environ.get('BROWSERD_METRICS_PORT', '9464')}/metrics",
}


def main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "api"
    url = TARGETS[target]() if target in TARGETS else target
    try:
        with urllib.request.urlopen(url, timeout=4) as reply:
            return 0 if 200 <= reply.status < 300 else 1
    except Exception as exc:  # any failure is "unhealthy"; say why in `docker inspect`
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
