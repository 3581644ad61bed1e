"""What recipes save: LLM calls and time of reruns, on the demo shop as recorded and as changed.

``python -m bench.replay`` starts its own redis-server, API, one worker, the scripted model (every
answer takes 1 s, as in bench.queue) and the demo shop. It records one search-and-extract agent
job, saves it as a recipe, reruns it ``--reruns`` times on the unchanged shop (each with another
query), then changes the shop (classes renamed, a banner above the button, its text changed,
results reversed) and reruns it as many times again: the first changed rerun heals with the agent
and saves a new version, the others replay that. It prints one JSON line:

- ``reruns``: reruns per phase;
- ``llm_calls_recorded``: LLM requests of the recorded agent job;
- ``llm_calls_per_rerun_unchanged`` / ``_changed``: LLM requests per rerun (the scripted server counts them);
- ``heal_rate``: reruns that healed and succeeded over reruns that needed healing;
- ``success_rate``: succeeded reruns over all reruns (and per phase: ``success_rate_unchanged``, ``_changed``);
- ``rerun_seconds_over_agent_seconds``: the median unchanged rerun's run time over the recorded
  job's (worker start to finish, from the job records).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tests.queue.stack import Stack, stack
from tests.support.llm_server import LLMServer
from tests.support.shop import CHANGED_FIELDS, ShopModel, SwitchableShop, task

MODEL_DELAY = 1.0
NETWORKS = ["127.0.0.1/32"]
QUERIES = ("mug", "tent", "vest", "jacket", "shoes", "filter", "stove", "poles", "pad", "sun", "gaiters", "map",
           "kit", "hoody", "pants", "merino", "headlamp", "bivy", "backpack", "down")
RECIPE = "bench-shop"


@dataclass
class Phase:
    """The reruns of one phase: how each ended, what it cost."""

    runs: int = 0
    succeeded: int = 0
    needed_healing: int = 0
    healed: int = 0
    llm_calls: int = 0
    seconds: list[float] = field(default_factory=list)


def run_seconds(job: dict[str, Any]) -> float:
    return (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["started_at"])).total_seconds()


def finish(s: Stack, spec: dict[str, Any]) -> dict[str, Any]:
    job = s.submit({"allowed_networks": NETWORKS, **spec})
    return s.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=300)


def rerun(s: Stack, model: ShopModel, count: int) -> Phase:
    phase = Phase()
    for n in range(count):
        calls = model.calls
        job = finish(s, {"recipe": RECIPE, "params": {"q": QUERIES[n % len(QUERIES)]}})
        phase.runs += 1
        phase.llm_calls += model.calls - calls
        ok = job["state"] == "succeeded"
        phase.succeeded += ok
        steps = (job.get("result") or {}).get("steps") or []
        if any(st["replayed"] and st["error"] for st in steps):
            phase.needed_healing += 1
            phase.healed += ok
        phase.seconds.append(run_seconds(job))
    return phase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=20, help="reruns on the unchanged shop, and as many changed")
    args = parser.parse_args()
    model = ShopModel(delay=MODEL_DELAY)
    with SwitchableShop() as shop, LLMServer() as llm:
        llm.responder = model
        settings = {"llm_base_url": llm.base_url, "openai_api_key": "sk-bench", "log_level": "WARNING",
                    "job_timeout": 300, "pool_warm": 1}
        with stack(**settings) as s:
            s.start_worker(concurrency=1)
            recorded = finish(s, {"task": task("mug"), "start_url": shop.url("/"), "options": {"planning_interval": 100}})
            if recorded["state"] != "succeeded":
                raise SystemExit(f"bench: the recorded job failed: {recorded['error']}")
            status, saved = s.call("POST", f"/v1/jobs/{recorded['id']}/recipe", {"name": RECIPE})
            if status != 201:
                raise SystemExit(f"bench: saving the recipe failed: {saved}")
            unchanged = rerun(s, model, args.reruns)
            shop.change()
            model.fields = CHANGED_FIELDS  # what a model reading the changed page would pick
            changed = rerun(s, model, args.reruns)
    both = unchanged.runs + changed.runs
    needed = unchanged.needed_healing + changed.needed_healing
    print(json.dumps({
        "reruns": args.reruns,
        "llm_calls_recorded": recorded["result"]["totals"]["llm_calls"],
        "llm_calls_per_rerun_unchanged": round(unchanged.llm_calls / unchanged.runs, 3),
        "llm_calls_per_rerun_changed": round(changed.llm_calls / changed.runs, 3),
        "heal_rate": round((unchanged.healed + changed.healed) / needed, 3) if needed else None,
        "success_rate": round((unchanged.succeeded + changed.succeeded) / both, 3),
        "rerun_seconds_over_agent_seconds": round(statistics.median(unchanged.seconds) / run_seconds(recorded), 3),
        "success_rate_unchanged": round(unchanged.succeeded / unchanged.runs, 3),
        "success_rate_changed": round(changed.succeeded / changed.runs, 3),
        "reruns_healed": needed,
        "agent_seconds": round(run_seconds(recorded), 2),
        "rerun_seconds_p50": round(statistics.median(unchanged.seconds), 3),
        "model_delay_seconds": MODEL_DELAY,
    }))


if __name__ == "__main__":
    main()
