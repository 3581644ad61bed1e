"""``python -m bench.takeover``: a console takeover's input latency and the live view's frame rate.

A real stack (redis-server, the API, one worker with Chromium) runs a script job on a page that
reports, to a beacon server of this bench, the moment (``Date.now()``) each key reaches it. The
bench signs in to the console, takes control of the job through the console's own endpoints, and
sends ``--keys`` key presses one post at a time (``--gap`` seconds apart), each stamped before its
post; latency is the page's moment minus that stamp (the same machine's clock). Meanwhile it
watches the live view (``/ui/jobs/{id}/live``) and counts the frames it receives; the page keeps a
small animation running, so Chromium has something to send. Prints one JSON line:
``{"keys", "seen", "latency_ms_p50", "latency_ms_p95", "frames", "fps", "seconds", "target_p95_ms",
"target_fps", "load_average"}``. Targets: p95 <= 150 ms, >= 5 frames per second.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.queue.stack import TOKEN, Stack, wait_until
from tests.support.servers import serve

SITE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "site"
TARGET_P95_MS, TARGET_FPS = 150.0, 5.0


class Beacon:
    """Where the page says when each event reached it (``?kind=key&t=<ms>``)."""

    def __init__(self) -> None:
        self.seen: list[float] = []
        beacon = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                query = parse_qs(urlsplit(self.path).query)
                if query.get("kind") == ["key"]:
                    beacon.seen.append(float(query["t"][0]) / 1000)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/seen"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


class Frames:
    """Counts the live view's frames while it runs (a thread reading the console's event stream)."""

    def __init__(self, web: httpx.Client, job_id: str) -> None:
        self.times: list[float] = []
        self.stop = False
        self.thread = threading.Thread(target=self._read, args=(web, job_id), daemon=True)
        self.thread.start()

    def _read(self, web: httpx.Client, job_id: str) -> None:
        with web.stream("GET", f"/ui/jobs/{job_id}/live", timeout=None) as stream:
            for line in stream.iter_lines():
                if line == "event: frame":
                    self.times.append(time.time())
                if self.stop:
                    return

    def between(self, start: float, end: float) -> int:
        return sum(start <= t <= end for t in self.times)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run(keys: int, gap: float) -> dict[str, Any]:
    beacon = Beacon()
    stack = Stack(job_timeout=600, visibility_timeout=900, pause_max_seconds=600)
    try:
        stack.start_api()
        stack.start_worker(1)
        with serve(SITE) as site:
            page = site.url("/human/type.html") + "?beacon=" + beacon.url
            script = [{"go_to_url": {"url": page}}] + [{"wait": {"seconds": 1}}] * 500
            job = stack.submit({"script": script, "timeout": 600})
            wait_until(lambda: stack.job(job["id"])["progress"]["step"] >= 2, 120, "the job to open its page")
            return _measure(stack, job["id"], beacon, keys, gap)
    finally:
        stack.close()


def _measure(stack: Stack, job_id: str, beacon: Beacon, keys: int, gap: float) -> dict[str, Any]:
    web = httpx.Client(base_url=stack.url, follow_redirects=False, timeout=30)
    viewer = httpx.Client(base_url=stack.url, follow_redirects=False, timeout=30)
    try:
        for client in (web, viewer):
            assert client.post("/ui/login", data={"token": TOKEN, "next": "/ui/"}).status_code == 303
        text = web.get(f"/ui/jobs/{job_id}").text
        headers = {"X-CSRF-Token": re.search(r'name="csrf" value="([0-9a-f]+)"', text).group(1)}  # type: ignore[union-attr]
        taken = web.post(f"/ui/jobs/{job_id}/control", headers=headers)
        taken.raise_for_status()
        wait_until(lambda: any(k == "takeover" for k, _ in stack.events(job_id)), 30, "the worker to listen")
        frames = Frames(viewer, job_id)
        time.sleep(3.0)  # the screencast starts within the live view's poll
        web.post(f"/ui/jobs/{job_id}/control", headers=headers).raise_for_status()  # renewed (as the console does)
        click = [{"kind": "mouse", "type": t, "x": 0.3, "y": 0.3} for t in ("mousePressed", "mouseReleased")]
        web.post(f"/ui/jobs/{job_id}/control/events", headers=headers, json=click).raise_for_status()
        time.sleep(0.5)
        sent: list[float] = []
        started = time.time()
        for i in range(keys):
            char = "abcdefghij"[i % 10]
            sent.append(time.time())
            answer = web.post(f"/ui/jobs/{job_id}/control/events", headers=headers, json=[
                {"kind": "key", "type": "keyDown", "key": char, "text": char},
                {"kind": "key", "type": "keyUp", "key": char}])
            answer.raise_for_status()
            time.sleep(gap)
        ended = time.time()
        wait_until(lambda: len(beacon.seen) >= keys, 15, "the page to see every key")
        frames.stop = True
        web.post(f"/ui/jobs/{job_id}/control", headers=headers).raise_for_status()  # still ours
        web.post(f"/ui/jobs/{job_id}/hand-back", headers=headers)
        stack.call("POST", f"/v1/jobs/{job_id}/cancel")
        latencies = [(seen - at) * 1000 for at, seen in zip(sent, sorted(beacon.seen))]
        if os.environ.get("BENCH_DEBUG"):
            print([round(x) for x in latencies], file=sys.stderr)
        seconds = ended - started
        count = frames.between(started, ended)
        return {"keys": keys, "seen": len(beacon.seen),
                "latency_ms_p50": round(statistics.median(latencies), 1),
                "latency_ms_p95": round(percentile(latencies, 0.95), 1),
                "frames": count, "fps": round(count / seconds, 2), "seconds": round(seconds, 2),
                "target_p95_ms": TARGET_P95_MS, "target_fps": TARGET_FPS,
                "load_average": round(os.getloadavg()[0], 2)}
    finally:
        web.close()
        viewer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=60, help="key presses sent (default 60)")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between two posts (default 0.1)")
    args = parser.parse_args()
    print(json.dumps(run(args.keys, args.gap)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
