#!/usr/bin/env python3
"""Container health check: ``browserd-healthcheck api|worker`` (or a URL); exit 0 when healthy.

``api`` asks the API's /healthz on BROWSERD_API_PORT (2xx is healthy). ``worker`` reads the
worker's own metrics on BROWSERD_METRICS_PORT and is healthy only while its pool has a ready
browser (``browserd_pool_browsers{state="ready"}`` above 0): a worker process that answers but
whose Chrome cannot start, or keeps dying, is unhealthy. A recycle replaces a browser at once;
the check's retries ride over that moment. Standard library only, so the image needs no curl.
"""

import os
import re
import sys
import urllib.request

TARGETS = {
    "api": lambda: f"http://127.0.0.1:{os.environ.get('BROWSERD_API_PORT', '8080')}/healthz",
    "worker": lambda: f"http://127.0.0.1:{os.environ.get('BROWSERD_METRICS_PORT', '9464')}/metrics",
}
# One sample of the pool gauge for ready browsers, in the text format the worker serves by default.
READY = re.compile(r'^browserd_pool_browsers\{(?:[^}]*,)?state="ready"(?:,[^}]*)?\}\s+(\S+)', re.M)


def ready_browsers(exposition: str) -> float:
    return sum(float(value) for value in READY.findall(exposition))


def main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "api"
    url = TARGETS[target]() if target in TARGETS else target
    try:
        with urllib.request.urlopen(url, timeout=4) as reply:
            if not 200 <= reply.status < 300:
                return 1
            body = reply.read().decode("utf-8", "replace")
    except Exception as exc:  # any failure is "unhealthy"; say why in `docker inspect`
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1
    if target == "worker" and ready_browsers(body) <= 0:
        print(f"unhealthy: {url}: the browser pool has no ready browser", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
