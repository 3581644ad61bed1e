"""Every job ends, once, under faults: a batch run while workers, Redis and the API are killed.

``python -m bench.chaos [--jobs 300] [--chaos-seconds 60]`` starts its own deployment (redis-server
with an append-only file, the API, ``browserd beat`` and two ``browserd worker`` processes), a
webhook receiver and a page server, all on 127.0.0.1. It submits a batch of short script jobs
(each with a job webhook, the batch with its own), and while they run it does, at random moments:

* ``kill -9`` a worker (its Chrome and side consumer die with it) and start a replacement;
* stop Redis (SIGTERM, which flushes its append-only file) and start it again from that file;
* ``kill -9`` the API and start it again;

and, all along, submits single jobs with idempotency keys, retrying each until the API answers
(as a client would when the API dies under it). Then it waits for everything to settle (bounded:
it always ends by itself) and prints one JSON line:

``{"jobs", "final", "stuck", "ran_twice", "webhooks_expected", "webhooks_delivered_once",
"batch_completed", "seconds"}``

``stuck``: jobs not in a final state at the end. ``ran_twice``: jobs whose event stream shows two
final states, or a second ``running`` without the first attempt being declared lost (``retrying``)
in between: a job run twice at once or finished twice. A job rerun after its worker was killed is
the promised behaviour (it shows ``retrying``), not a double run. ``webhooks_delivered_once``:
delivery ids (one per job webhook, one for the batch) the receiver got exactly once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.queue.hooks import Hooks
from tests.queue.stack import Proc, Stack
from tests.support.servers import serve

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "site"
FINAL = {"succeeded", "failed", "cancelled"}
SETTINGS = dict(
    job_timeout=20, visibility_timeout=30, max_attempts=5, metrics_port=0,
    reconcile_interval=2, stale_job_seconds=8, orphan_job_seconds=5, log_level="INFO",
    webhook_allowed_networks="127.0.0.1/32",  # the bench's webhook receiver listens on loopback
)
SETTLE_SECONDS = 300.0  # after the chaos, at most this long for every job, batch and webhook to settle


class Chaos:
    def __init__(self, s: Stack, page: str, hooks: Hooks, seed: int) -> None:
        self.s, self.page, self.hooks = s, page, hooks
        self.random = random.Random(seed)
        self.singles: dict[str, str] = {}  # idempotency key -> job id
        self.actions: list[str] = []
        self.stop = threading.Event()

    # --- the faults ----------------------------------------------------------------------------

    def kill_worker(self) -> None:
        alive = [w for w in self.s.workers if w.name.startswith("worker") and w.alive]
        if alive:
            victim = self.random.choice(alive)
            victim.kill9()
            self.actions.append("kill -9 worker")
        self.spawn_worker()

    def spawn_worker(self) -> None:
        self.s._count += 1
        args = [sys.executable, "-m", "daemon", "worker", "--concurrency=4", f"--name=chaos{self.s._count}-%h"]
        self.s.workers.append(Proc(f"worker{self.s._count}", args, self.s.env, self.s.dir))

    def restart_redis(self) -> None:
        self.s.redis_server.restart(downtime=self.random.uniform(0.5, 3.0))
        self.actions.append("redis restart")

    def kill_api(self) -> None:
        assert self.s.api is not None
        self.s.api.kill9()
        self.actions.append("kill -9 api")
        time.sleep(self.random.uniform(0.2, 2.0))
        self.s.start_api()

    def run(self, seconds: float) -> None:
        faults = [self.kill_worker, self.restart_redis, self.kill_api]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(self.random.uniform(3.0, 9.0))
            self.random.choice(faults)()
            self.keep_workers()

    def keep_workers(self, count: int = 2) -> None:
        """A worker started while Redis was away exits (it cannot start): replace it."""
        alive = [w for w in self.s.workers if w.name.startswith("worker") and w.alive]
        for _ in range(count - len(alive)):
            self.spawn_worker()

    # --- a client submitting single jobs through it all -------------------------------------------

    def submit_singles(self, count: int, hook: str) -> None:
        for n in range(count):
            if self.stop.is_set():
                return
            key = f"chaos-{n}"
            spec = {"script": script(self.page, f"single {n}"), "idempotency_key": key, "webhook_url": hook}
            while not self.stop.is_set():
                with contextlib.suppress(Exception):
                    status, job = self.s.call("POST", "/v1/jobs", spec)
                    if status in (200, 201):
                        previous = self.singles.setdefault(key, job["id"])
                        assert previous == job["id"], f"idempotency key {key} named two jobs"
                        break
                time.sleep(0.5)
            time.sleep(self.random.uniform(0.5, 2.0))


def script(page: str, text: str) -> list[dict[str, Any]]:
    return [{"go_to_url": {"url": page}}, {"wait": {"seconds": 1}}, {"done": {"text": text}}]


def call(s: Stack, method: str, path: str) -> Any:
    """The API's answer, or None while it (or Redis) is away."""
    with contextlib.suppress(Exception):
        status, body = s.call(method, path)
        if status == 200:
            return body
    return None


def states_of(s: Stack, job_id: str) -> list[str]:
    raw = s.redis.xrange(f"browserd:job:{job_id}:events")
    return [json.loads(fields["data"])["state"] for _, fields in raw if fields.get("type") == "state"]


def collect_finals(s: Stack, job_ids: list[str], finals: dict[str, str]) -> None:
    """Add to ``finals`` the jobs of ``job_ids`` now in a final state (read from the store)."""
    for job_id in job_ids:
        if job_id not in finals:
            state = s.redis.hget(f"browserd:job:{job_id}", "state")
            if state in FINAL:
                finals[job_id] = state


def ran_twice(states: list[str]) -> bool:
    finals = sum(1 for st in states if st in FINAL)
    doubled = any(a == "running" and b == "running" for a, b in zip(states, states[1:]))
    return finals > 1 or doubled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300, help="jobs in the batch")
    parser.add_argument("--singles", type=int, default=20, help="single jobs submitted during the chaos")
    parser.add_argument("--chaos-seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    started = time.monotonic()
    with serve(FIXTURES) as site, Hooks() as hooks:
        s = Stack(aof=True, **SETTINGS)
        try:
            result = run(s, site.url("/cdp/basic.html"), hooks, args, seed)
        finally:
            s.close()
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result))


def run(s: Stack, page: str, hooks: Hooks, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    s.start_api()
    s.start_worker(4)
    s.start_worker(4)
    s.start_beat()
    chaos = Chaos(s, page, hooks, seed)
    jobs = [{"script": script(page, f"item {n}"), "webhook_url": hooks.url} for n in range(args.jobs)]
    status, batch = s.call("POST", "/v1/batches", {"jobs": jobs, "webhook_url": hooks.url})
    assert status == 201, (status, batch)
    submitter = threading.Thread(target=chaos.submit_singles, args=(args.singles, hooks.url), daemon=True)
    submitter.start()
    chaos.run(args.chaos_seconds)
    submitter.join(60)
    chaos.stop.set()

    job_ids = list(s.redis.lrange(f"browserd:batch:{batch['id']}:jobs", 0, -1)) + list(chaos.singles.values())
    expected = {f"job.finished:{j}" for j in job_ids} | {f"batch.finished:{batch['id']}"}
    deadline = time.monotonic() + SETTLE_SECONDS
    finals: dict[str, str] = {}
    completed = False
    while time.monotonic() < deadline:
        collect_finals(s, job_ids, finals)
        record = call(s, "GET", f"/v1/batches/{batch['id']}")
        completed = bool(record and record["state"] == "completed")
        if len(finals) == len(job_ids) and completed and set(hooks.deliveries()) >= expected:
            break
        chaos.keep_workers()
        time.sleep(1.0)
    time.sleep(5.0)  # a duplicate webhook would show up now
    delivered = hooks.deliveries()
    return {
        "jobs": len(job_ids),
        "final": len(finals),
        "stuck": len(job_ids) - len(finals),
        "ran_twice": sum(1 for j in job_ids if ran_twice(states_of(s, j))),
        "webhooks_expected": len(expected),
        "webhooks_delivered_once": sum(1 for d in expected if delivered.get(d) == 1),
        "batch_completed": completed,
        "seconds": 0.0,
        "faults": {a: chaos.actions.count(a) for a in sorted(set(chaos.actions))},
        "seed": seed,
    }


if __name__ == "__main__":
    main()
