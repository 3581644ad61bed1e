"""How well the queue overlaps waiting: jobs/minute at worker concurrency 1, 4, 16 and 32.

``python -m bench.queue`` starts its own redis-server, API, scripted LLM server and fixture site,
then, for each concurrency, one ``browserd worker`` process running a batch of jobs whose every
step waits 1 s on the model (agent jobs; ``--mode script`` uses script jobs with 1 s ``wait``
steps instead). It prints one JSON line:

- ``jobs_per_min_cN``: jobs finished per minute, first enqueue to last finish;
- ``speedup_c16``, ``speedup_c32``: c16 and c32 over c1, measured side by side in this run (goal:
  15x and 28x);
- ``enqueue_to_first_cmd_p50_ms``: median time from the job record's creation (enqueue) to the
  first CDP command the worker sent for it (``first_command_at``, recorded by the worker), with
  the worker idle and jobs submitted one at a time;
- ``peak_mem_per_job_mb``: peak PSS of the worker process and its Chrome during the c32 batch,
  minus the idle worker's, divided by 32;
- ``cpu_s_per_job_c1``, ``cpu_s_per_job_c32``: CPU-seconds a job during the batch: the machine's
  (``total``: the API, Redis and the scripted model included; on two cores, what bounds the c32
  rate once they are busy), the worker's Chrome and the worker's own process.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.support import CpuSpan
from cdp import process_tree
from tests.queue.stack import Proc, Stack, stack, wait_until
from tests.support.llm_server import LLMServer, Reply
from tests.support.servers import serve

SITE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "site"
MODEL_DELAY = 1.0
LEVELS = (1, 4, 16, 32)
JOB_TAG = re.compile(r"bench job (\d+)")


def pss_bytes(root_pid: int) -> int:
    total = 0
    for pid in process_tree(root_pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                total += next(int(line.split()[1]) * 1024 for line in fh if line.startswith(b"Pss:"))
        except (OSError, StopIteration, ValueError):
            continue
    return total


class ScriptedModel:
    """A model that takes 1 s per answer. Per job (told apart by its task): the planner plans, the
    navigator answers ``steps`` times (a no-op ``wait 0`` until the last, which is ``done``), and
    the planner confirms."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        tools = request.get("tools") or [{}]
        tool = tools[0].get("function", {}).get("name")
        found = JOB_TAG.search(json.dumps(request["messages"]))
        key = found.group(1) if found else ""
        with self.lock:
            if tool == "AgentOutput":
                self.calls[key] += 1
            calls = self.calls[key]
        if tool == "AgentOutput":
            action = {"done": {"text": "ok", "success": True}} if calls >= self.steps else {"wait": {"seconds": 0}}
            state = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "go on"}
            return Reply.tool({"current_state": state, "action": [action]}, delay=MODEL_DELAY)
        done = calls >= self.steps
        return Reply.tool({"observation": "page", "challenges": "", "done": done, "next_steps": "" if done else "go on",
                           "final_answer": "ok" if done else "", "reasoning": "bench", "web_task": True},
                          delay=MODEL_DELAY)


def spec_for(mode: str, url: str, n: int, steps: int) -> dict[str, Any]:
    if mode == "agent":
        return {"task": f"bench job {n}: read the page", "start_url": url,
                "options": {"planning_interval": 100, "max_steps": steps + 5}}
    waits = [{"wait": {"seconds": MODEL_DELAY}}] * steps
    return {"script": [{"go_to_url": {"url": url}}, *waits, {"done": {"text": "ok"}}]}


def ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def finish_all(s: Stack, ids: list[str], timeout: float = 600) -> list[dict[str, Any]]:
    """Every job's final record, waiting for them in order and asking about one at a time.

    The figures come from the records' own timestamps, never from when the bench saw a job end, so
    how often it looks changes no figure, only what looking costs. Asking about every pending job
    each 0.2 s was about a hundred ``GET /v1/jobs/{id}`` a sweep in c32's batch of 96 (against 6 at
    c1): on a 2-core machine the API answering and the bench asking took 32 CPU-seconds of a c32
    batch, against the worker's 33 and its browsers' 43 (docs/development.md), growing with the
    concurrency, which understated the speedups.
    """
    done: dict[str, dict[str, Any]] = {}
    pending = list(ids)

    def all_done() -> bool:
        while pending:
            job = s.job(pending[0])
            if job["state"] not in ("succeeded", "failed", "cancelled"):
                return False
            done[pending.pop(0)] = job
        return True

    wait_until(all_done, timeout, f"{len(ids)} jobs to finish", interval=0.2)
    failed = [j for j in done.values() if j["state"] != "succeeded"]
    if failed:
        raise SystemExit(f"bench: {len(failed)} jobs did not succeed, e.g. {failed[0]['error']}")
    return [done[i] for i in ids]


class MemoryPeak(threading.Thread):
    """Samples the worker tree's PSS every 2 s: reading PSS costs ~2.5 ms of CPU per Chrome process
    (~0.2 s for the c16 tree), so sampling faster would take CPU from the jobs being measured."""

    INTERVAL = 2.0

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, pss_bytes(self.pid))
            time.sleep(self.INTERVAL)


class Specs:
    """Numbered job specs (the number tells the scripted model which job is asking)."""

    def __init__(self, mode: str, url: str, steps: int) -> None:
        self.mode, self.url, self.steps, self.count = mode, url, steps, 0

    def next(self) -> dict[str, Any]:
        self.count += 1
        return spec_for(self.mode, self.url, self.count, self.steps)


@dataclass
class Throughput:
    """One batch on an idle worker: jobs per minute, peak PSS above idle, CPU-seconds a job."""

    jobs_per_min: float
    peak_bytes: int
    cpu_per_job: dict[str, float]


def throughput(s: Stack, worker: Proc, specs: Specs, jobs: int) -> Throughput:
    idle = pss_bytes(worker.pid)
    meter = MemoryPeak(worker.pid)
    cpu = CpuSpan({"worker_tree": worker.pid}, own={"worker": worker.pid})
    meter.start()
    cpu.start()
    ids = [s.submit(specs.next())["id"] for _ in range(jobs)]
    done = finish_all(s, ids)
    spent = cpu.stop()
    meter.running = False
    meter.join()
    span = max(ts(j["finished_at"]) for j in done) - min(ts(j["created_at"]) for j in done)
    # the machine's (the API, Redis, the scripted model and this bench included), the worker's Chrome
    # and the worker's own process
    split = {"total": spent["machine"], "chrome": spent["worker_tree"] - spent["worker"], "worker": spent["worker"]}
    return Throughput(jobs / span * 60, max(0, meter.peak - idle), {k: round(v / jobs, 3) for k, v in split.items()})


def first_command_latency(s: Stack, specs: Specs, samples: int) -> float:
    """Median enqueue -> first CDP command, in ms, one job at a time on an idle worker."""
    delays = []
    for _ in range(samples):
        job = finish_all(s, [s.submit(specs.next())["id"]])[0]
        delays.append((ts(job["first_command_at"]) - ts(job["created_at"])) * 1000)
        time.sleep(0.3)
    return statistics.median(delays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["agent", "script"], default="agent")
    parser.add_argument("--steps", type=int, default=10, help="1 s model waits (agent) or waits (script) per job")
    parser.add_argument("--jobs-per-slot", type=int, default=3, help="batch size = this x concurrency (min 6)")
    parser.add_argument("--latency-samples", type=int, default=15)
    parser.add_argument("--warm", default="concurrency", help="BROWSERD_POOL_WARM per worker (default: its concurrency)")
    args = parser.parse_args()

    out: dict[str, Any] = {}
    with serve(SITE) as site, LLMServer() as llm:
        llm.responder = ScriptedModel(args.steps)
        specs = Specs(args.mode, site.url("/cdp/basic.html"), args.steps)
        settings = {"job_timeout": 300, "visibility_timeout": 900, "llm_base_url": llm.base_url,
                    "openai_api_key": "sk-bench", "log_level": "WARNING"}
        with stack(**settings) as s:
            for level in LEVELS:
                # As many warm contexts as the worker runs jobs at once, as a deployment would set
                # BROWSERD_POOL_WARM for it: a burst then never waits for contexts to be created.
                s.env["BROWSERD_POOL_WARM"] = str(level if args.warm == "concurrency" else args.warm)
                worker = s.start_worker(level)
                finish_all(s, [s.submit(specs.next())["id"]])  # warm-up
                got = throughput(s, worker, specs, max(6, args.jobs_per_slot * level))
                out[f"jobs_per_min_c{level}"] = round(got.jobs_per_min, 1)
                out[f"cpu_s_per_job_c{level}"] = got.cpu_per_job
                if level == LEVELS[-1]:
                    out["peak_mem_per_job_mb"] = round(got.peak_bytes / level / 2**20, 1)
                if level == 4:
                    out["enqueue_to_first_cmd_p50_ms"] = round(first_command_latency(s, specs, args.latency_samples), 1)
                worker.stop()
    for level in LEVELS[2:]:
        out[f"speedup_c{level}"] = round(out[f"jobs_per_min_c{level}"] / out["jobs_per_min_c1"], 2)
    keys = ["jobs_per_min_c1", "jobs_per_min_c4", "jobs_per_min_c16", "jobs_per_min_c32", "speedup_c16", "speedup_c32",
            "enqueue_to_first_cmd_p50_ms", "peak_mem_per_job_mb", "cpu_s_per_job_c1", "cpu_s_per_job_c32"]
    extra = {"mode": args.mode, "steps_per_job": args.steps, "pool_warm": args.warm}
    print(json.dumps({**{k: out[k] for k in keys}, **extra}))


if __name__ == "__main__":
    main()
