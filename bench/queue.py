"""How well the queue overlaps waiting: jobs/minute at worker concurrency 1, 4 and 16.

``python -m bench.queue`` starts its own redis-server, API, scripted LLM server and fixture site,
then, for each concurrency, one ``browserd worker`` process running a batch of jobs whose every
step waits 1 s on the model (agent jobs; ``--mode script`` uses script jobs with 1 s ``wait``
steps instead). It prints one JSON line:

- ``jobs_per_min_cN``: jobs finished per minute, first enqueue to last finish;
- ``speedup_c16``: c16 over c1, measured side by side in this run;
- ``enqueue_to_first_cmd_p50_ms``: median time from the job record's creation (enqueue) to the
  first CDP command the worker sent for it (``first_command_at``, recorded by the worker), with
  the worker idle and jobs submitted one at a time;
- ``peak_mem_per_job_mb``: peak PSS of the worker process and its Chrome during the c16 batch,
  minus the idle worker's, divided by 16.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import threading
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from cdp import process_tree
from tests.queue.stack import Proc, Stack, stack, wait_until
from tests.support.llm_server import LLMServer, Reply
from tests.support.servers import serve

SITE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "site"
MODEL_DELAY = 1.0
LEVELS = (1, 4, 16)
JOB_TAG = re.compile(r"bench job (\d+)")
STEPS = 3  # model waits per job: planner, navigator, planner (agent); three 1 s waits (script)


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
    """Answers like a model that takes 1 s: plan, act ``done``, confirm; tracked per job by its task."""

    def __init__(self) -> None:
        self.navigated: dict[str, bool] = defaultdict(bool)
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        tools = request.get("tools") or [{}]
        tool = tools[0].get("function", {}).get("name")
        found = JOB_TAG.search(json.dumps(request["messages"]))
        key = found.group(1) if found else ""
        if tool == "AgentOutput":
            with self.lock:
                self.navigated[key] = True
            state = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "finish"}
            return Reply.tool({"current_state": state, "action": [{"done": {"text": "ok", "success": True}}]},
                              delay=MODEL_DELAY)
        with self.lock:
            done = self.navigated[key]
        return Reply.tool({"observation": "page", "challenges": "", "done": done, "next_steps": "" if done else "finish",
                           "final_answer": "ok" if done else "", "reasoning": "bench", "web_task": True},
                          delay=MODEL_DELAY)


def spec_for(mode: str, url: str, n: int) -> dict[str, Any]:
    if mode == "agent":
        return {"task": f"bench job {n}: read the page", "start_url": url, "options": {"planning_interval": 10}}
    waits = [{"wait": {"seconds": MODEL_DELAY}}] * STEPS
    return {"script": [{"go_to_url": {"url": url}}, *waits, {"done": {"text": "ok"}}]}


def ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def finish_all(s: Stack, ids: list[str], timeout: float = 600) -> list[dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}

    def all_done() -> bool:
        for job_id in ids:
            if job_id not in done:
                job = s.job(job_id)
                if job["state"] in ("succeeded", "failed", "cancelled"):
                    done[job_id] = job
        return len(done) == len(ids)

    wait_until(all_done, timeout, f"{len(ids)} jobs to finish", interval=0.2)
    failed = [j for j in done.values() if j["state"] != "succeeded"]
    if failed:
        raise SystemExit(f"bench: {len(failed)} jobs did not succeed, e.g. {failed[0]['error']}")
    return [done[i] for i in ids]


class MemoryPeak(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, pss_bytes(self.pid))
            time.sleep(0.2)


def throughput(s: Stack, worker: Proc, mode: str, url: str, jobs: int, counter: list[int]) -> tuple[float, int]:
    """(jobs per minute, peak PSS bytes above idle) for one batch on an idle worker."""
    idle = pss_bytes(worker.pid)
    meter = MemoryPeak(worker.pid)
    meter.start()
    ids = []
    for _ in range(jobs):
        counter[0] += 1
        ids.append(s.submit(spec_for(mode, url, counter[0]))["id"])
    done = finish_all(s, ids)
    meter.running = False
    meter.join()
    span = max(ts(j["finished_at"]) for j in done) - min(ts(j["created_at"]) for j in done)
    return jobs / span * 60, max(0, meter.peak - idle)


def first_command_latency(s: Stack, mode: str, url: str, samples: int, counter: list[int]) -> float:
    """Median enqueue -> first CDP command, in ms, one job at a time on an idle worker."""
    delays = []
    for _ in range(samples):
        counter[0] += 1
        job = finish_all(s, [s.submit(spec_for(mode, url, counter[0]))["id"]])[0]
        delays.append((ts(job["first_command_at"]) - ts(job["created_at"])) * 1000)
        time.sleep(0.3)
    return statistics.median(delays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["agent", "script"], default="agent")
    parser.add_argument("--jobs-per-slot", type=int, default=4, help="batch size = this x concurrency (min 6)")
    parser.add_argument("--latency-samples", type=int, default=15)
    args = parser.parse_args()

    out: dict[str, Any] = {}
    counter = [0]
    with serve(SITE) as site, LLMServer() as llm:
        llm.responder = ScriptedModel()
        settings = {"job_timeout": 120, "visibility_timeout": 600, "llm_base_url": llm.base_url,
                    "openai_api_key": "sk-bench", "log_level": "WARNING", "pool_warm": 4}
        with stack(**settings) as s:
            url = site.url("/cdp/basic.html")
            for level in LEVELS:
                worker = s.start_worker(level)
                finish_all(s, [s.submit(spec_for(args.mode, url, 0))["id"]])  # warm-up
                rate, peak = throughput(s, worker, args.mode, url, max(6, args.jobs_per_slot * level), counter)
                out[f"jobs_per_min_c{level}"] = round(rate, 1)
                if level == LEVELS[-1]:
                    out["peak_mem_per_job_mb"] = round(peak / level / 2**20, 1)
                if level == 4:
                    out["enqueue_to_first_cmd_p50_ms"] = round(
                        first_command_latency(s, args.mode, url, args.latency_samples, counter), 1)
                worker.stop()
    out["speedup_c16"] = round(out["jobs_per_min_c16"] / out["jobs_per_min_c1"], 2)
    keys = ["jobs_per_min_c1", "jobs_per_min_c4", "jobs_per_min_c16", "speedup_c16",
            "enqueue_to_first_cmd_p50_ms", "peak_mem_per_job_mb"]
    print(json.dumps({**{k: out[k] for k in keys}, "mode": args.mode}))


if __name__ == "__main__":
    main()
