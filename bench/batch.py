"""How fast the API accepts a big batch: ``POST /v1/batches`` with 10,000 script jobs.

``python -m bench.batch [--jobs N]`` starts its own redis-server and ``browserd serve`` (no worker:
this measures acceptance, not running), posts the batch as JSONL with shared defaults, checks
that every job was recorded and published, and prints one JSON line:
``{"jobs", "accept_seconds", "jobs_per_second"}``. ``accept_seconds`` is the wall time of the
request, from sending the body to the batch id coming back (validation, records, publish).

While it is accepted, a thread asks ``/healthz`` again and again: ``healthz_max_s`` is its slowest
answer (the API's event loop is not held by a large batch: parsing and checking run in a thread).
``redis_bytes_per_job`` is Redis's ``used_memory`` growth over the batch, per job: the job record
(spec, labels, indexes), its event stream's first entry, and its broker message.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request

from tests.queue.stack import TOKEN, stack
from workers.jobs.metrics import queue_keys


def body(jobs: int) -> bytes:
    header = {"defaults": {"labels": {"bench": "batch"}, "timeout": 60, "priority": "normal"}}
    lines = [json.dumps(header)]
    for n in range(jobs):
        script = [{"go_to_url": {"url": f"http://127.0.0.1:9/item/{n}"}}, {"done": {"text": f"item {n}"}}]
        lines.append(json.dumps({"script": script, "labels": {"n": str(n % 10)}}))
    return ("\n".join(lines) + "\n").encode()


def post(url: str, data: bytes) -> tuple[float, dict]:
    req = urllib.request.Request(url + "/v1/batches", data=data, method="POST", headers={
        "Content-Type": "application/x-ndjson", "Authorization": f"Bearer {TOKEN}"})
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as resp:
        reply = json.loads(resp.read())
    return time.perf_counter() - started, reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    args = parser.parse_args()
    data = body(args.jobs)
    with stack() as s:
        post(s.url, body(20))  # warm the API (imports, script cache) before measuring
        before = int(s.redis.info("memory")["used_memory"])
        with Healthz(s.url) as health:
            seconds, batch = post(s.url, data)
        grown = int(s.redis.info("memory")["used_memory"]) - before
        published = sum(s.redis.llen(key) for key in queue_keys("normal"))
        assert batch["total"] == args.jobs and batch["counts"]["queued"] == args.jobs, batch
        assert published == args.jobs + 20, published
    print(json.dumps({"jobs": args.jobs, "accept_seconds": round(seconds, 3),
                      "jobs_per_second": round(args.jobs / seconds), "body_bytes": len(data),
                      "healthz_max_s": round(health.slowest, 3), "healthz_answers": health.answers,
                      "redis_bytes_per_job": round(grown / args.jobs)}))


class Healthz:
    """Asks ``/healthz`` in a loop on a thread while the block runs; keeps its slowest answer."""

    def __init__(self, url: str) -> None:
        self.url, self.slowest, self.answers = url + "/healthz", 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._ask, daemon=True)

    def __enter__(self) -> Healthz:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _ask(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=60) as resp:
                resp.read()
            self.slowest = max(self.slowest, time.perf_counter() - started)
            self.answers += 1
            self._stop.wait(0.05)


if __name__ == "__main__":
    main()
