"""The agent's two strategies on the MiniWoB++ oracle tasks: model calls and tokens per solved task.

``python -m bench.agent [--tasks N] [--horizon N] [--max-steps N]``

Each of the 39 tasks of tests/agent/test_miniwob.py runs through the whole stack (real ChatOpenAI
client, scripted OpenAI-compatible endpoint on 127.0.0.1, real Chromium) once with the default
``planner_navigator`` strategy and once with ``rolling_horizon``; the model is the scripted oracle
(tests/agent/miniwob_oracle.py), which sees only what a real model would. A task is solved when
the job succeeded and MiniWoB's reward is positive. Tokens are what a real model would be sent and
would write, estimated as the agent estimates them (characters / 3): the messages and the offered
tool schema of each request, and the arguments of each answer. Prints one JSON line:
``{"planner_navigator": {"tasks", "solved", "llm_calls_per_solved", "tokens_per_solved"},
"rolling_horizon": {...}}``. Needs the dev extra ``miniwob`` (``pip install --no-deps miniwob``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

from cdp import BrowserPool, NetworkPolicy, PoolConfig
from config import load_settings
from tests.agent.miniwob_oracle import HorizonOracle, oracle
from tests.agent.test_miniwob import HTML, ORACLE_TASKS, reward, start_episode
from tests.support.llm_server import LLMServer, Reply
from tests.support.servers import serve
from tests.support.jobs import run_job
from workers.agent.messages import CHARS_PER_TOKEN
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus

Responder = Callable[[dict[str, Any]], Reply]
MINIWOB_NETWORK = "127.0.0.1/32"  # where the task pages are served: closed to jobs unless opened


def estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def costed(responder: Responder) -> Responder:
    """``responder`` with each answer's usage set to the estimated tokens of the request and answer."""

    def answer(request: dict[str, Any]) -> Reply:
        reply = responder(request)
        sent = json.dumps(request.get("messages", [])) + json.dumps(request.get("tools", []))
        written = reply.args if isinstance(reply.args, str) else json.dumps(reply.args or reply.content)
        reply.usage = (estimate(sent), estimate(written))
        return reply

    return answer


async def strategy(name: str, tasks: list[str], pool: BrowserPool, miniwob: Any, args: argparse.Namespace
                   ) -> dict[str, Any]:
    solved = calls = tokens = 0
    for task in tasks:
        with LLMServer() as llm:
            llm.responder = costed(HorizonOracle(args.horizon) if name == "rolling_horizon" else oracle)
            settings = load_settings(llm_base_url=llm.base_url, openai_api_key="bench", job_timeout=120,
                                     allowed_networks=[MINIWOB_NETWORK])  # each job opens the pages' address
            options = {"max_steps": args.max_steps, "strategy": name, "horizon": args.horizon}
            async with pool.lease() as lease:
                utterance = await start_episode(lease, miniwob, task)
                result = await run_job(JobSpec(task=utterance, options=options), lease, settings=settings)
                got = await reward(lease)
        calls += result.totals.llm_calls
        tokens += result.totals.input_tokens + result.totals.output_tokens
        solved += result.status == JobStatus.succeeded and got > 0
    return {"tasks": len(tasks), "solved": solved,
            "llm_calls_per_solved": round(calls / solved, 2) if solved else None,
            "tokens_per_solved": round(tokens / solved) if solved else None}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    tasks = ORACLE_TASKS[:args.tasks] if args.tasks else ORACLE_TASKS
    assert HTML is not None, "miniwob is not installed (pip install --no-deps miniwob)"
    with serve(HTML) as miniwob:
        # MiniWoB's pages are served on 127.0.0.1: the egress proxy opens that address, nothing else
        egress = NetworkPolicy.build(False, [MINIWOB_NETWORK])
        async with BrowserPool(PoolConfig(browsers=1, warm=1, egress=egress)) as pool:
            return {name: await strategy(name, tasks, pool, miniwob, args)
                    for name in ("planner_navigator", "rolling_horizon")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=0, help="only the first N tasks (0: all 39)")
    parser.add_argument("--horizon", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=30)
    print(json.dumps(asyncio.run(main_async(parser.parse_args()))))


if __name__ == "__main__":
    main()
