"""``browserd run "TASK" --start-url URL [--script FILE]``: one job, locally, no queue.

Starts a pool of one browser, runs the job through the same pipeline as a worker (limits,
offloading, artifacts, politeness; with ``BROWSERD_REDIS_URL`` also stored auth profiles,
credential sets and recipes), prints the result and per-step timings, and closes Chrome on the way
out (Ctrl-C cancels the job first, so the result is still printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from config import load_settings, setup_logging
from daemon.cli.access import access_fields, add_access_flags
from daemon.cli.job_inputs import add_input_flags, input_fields
from daemon.cli.output import EXIT_FAILED, EXIT_USAGE, UsageError, cost_line, json_argument
from workers.jobs.errors import SpecError
from workers.jobs.model.actions import validate_script
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.specs.checks import check_output_schema


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run one job locally in a one-browser pool and print the result")
    p.add_argument("task", nargs="?", help="what the agent should do (omit with --script)")
    p.add_argument("--start-url", help="page opened before the first step")
    p.add_argument("--script", type=Path, help="JSON file with a list of actions to run instead of the agent")
    p.add_argument("--output-schema", metavar="FILE_OR_JSON",
                   help="JSON schema the job's data must satisfy: a file, or the JSON itself")
    add_access_flags(p)
    add_input_flags(p)
    p.add_argument("--max-steps", type=int, help="agent steps before giving up")
    p.add_argument("--timeout", type=float, help="wall-clock limit of the job in seconds")
    p.add_argument("--profile", metavar="NAME", help="start from this stored auth profile (needs BROWSERD_REDIS_URL)")
    p.add_argument("--save-profile", metavar="NAME", help="save the end state to this auth profile when the job "
                   "succeeds (needs BROWSERD_REDIS_URL)")
    p.add_argument("--credentials", metavar="NAME", help="type from this stored credential set (needs "
                   "BROWSERD_REDIS_URL)")
    p.add_argument("--json", action="store_true", help="print the whole JobResult as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        spec = JobSpec(**_spec_fields(args))
        if spec.output_schema is not None:  # bounded as when a job is submitted to the API
            check_output_schema(spec.output_schema)
    except (ValidationError, ValueError, SpecError) as exc:
        print(f"browserd run: invalid job: {exc}", file=sys.stderr)
        return EXIT_USAGE
    setup_logging(settings.log_level if settings.log_level != "INFO" else "WARNING", json_lines=settings.log_json)
    result = asyncio.run(_run(spec, settings, show_steps=not args.json))
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        _print(result)
    return 0 if result.status is JobStatus.succeeded else EXIT_FAILED


def _spec_fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {**access_fields(args), **input_fields(args, "run")}
    if args.script:
        try:
            fields["script"] = validate_script(json.loads(args.script.read_text()))
        except OSError as exc:
            raise UsageError(f"run: cannot read the script {args.script}: {exc.strerror or exc}") from None
    else:
        fields["task"] = args.task
    if args.start_url:
        fields["start_url"] = args.start_url
    if args.output_schema is not None:
        fields["output_schema"] = json_argument("--output-schema", args.output_schema)
    if args.max_steps is not None:  # 0 too: the spec's validation says why it is refused
        fields["options"] = {"max_steps": args.max_steps}
    if args.timeout is not None:
        fields["timeout"] = args.timeout
    for name in ("profile", "save_profile", "credentials"):
        if getattr(args, name):
            fields[name] = getattr(args, name)
    return fields


async def _run(spec: Any, settings: Any, *, show_steps: bool) -> Any:
    from cdp import (  # the browser layer and the agent load only when a job runs
        BrowserPool,
        PoolConfig,
    )
    from workers.jobs.store.connection import connect
    from workers.pipeline import LocalRecords, run_local

    cancelled = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, cancelled.set)
    config = PoolConfig.from_settings(settings)
    config.browsers, config.warm = 1, 0
    redis = connect(settings.redis_url) if settings.redis_url else None  # profiles, credential sets, recipes
    try:
        async with BrowserPool(config) as pool:
            records = LocalRecords(on_step=_show_step if show_steps else None, is_cancelled=cancelled.is_set)
            return await run_local(spec, settings=settings, browsers=pool, records=records, redis=redis)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if redis is not None:
            await redis.aclose()


async def _show_step(step: Any) -> None:
    names = ", ".join(f"{a.name}{'' if a.ok else ' FAILED'}" for a in step.actions) or "-"
    print(f"step {step.step:>3}  dom {step.dom_seconds:6.2f}s  llm {step.llm_seconds:6.2f}s  "
          f"actions {step.action_seconds:6.2f}s  tokens {step.input_tokens}/{step.output_tokens}  "
          f"{names}  {step.url or ''}", flush=True)
    if step.error:
        print(f"          error: {step.error}", flush=True)
    if step.verification is not None and not step.verification.accepted:
        print(f"          done refused: {step.verification.reason}", flush=True)


def _print(result: Any) -> None:
    print(f"status: {result.status}" + (f" ({result.category})" if result.category else ""))
    if result.error:
        print(f"error: {result.error}")
    if result.final_answer:
        print(f"final answer: {result.final_answer}")
    if result.verification is not None:  # why the models' claim of done was accepted, or refused
        v = result.verification
        print(f"verified: {', '.join(v.checks)}" if v.accepted else f"not verified: {v.reason}")
    if result.data is not None:
        print("data: " + json.dumps(result.data, ensure_ascii=False, indent=2))
    t = result.totals
    print(f"totals: {t.steps} steps, {t.actions} actions, {t.input_tokens}/{t.output_tokens} tokens in/out, "
          f"{t.llm_calls} LLM calls, {t.seconds:.2f}s")
    if result.cost_usd is not None:
        print(cost_line(result.cost_usd, result.unpriced_models))
