"""What the job commands of the CLI share: the API client, error reporting, and how jobs print."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

from config import load_settings
from daemon.client import ApiClient, ApiError

FINAL = {"succeeded", "failed", "cancelled"}


def client() -> ApiClient:
    return ApiClient.from_settings(load_settings())


def api_command(handler: Callable[..., int]) -> Callable[..., int]:
    """Print the API's message (not a traceback) when a request fails; exit status 1."""

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> int:
        try:
            return handler(*args, **kwargs)
        except ApiError as exc:
            print(f"browserd: {exc.message}", file=sys.stderr)
            for field in exc.body.get("fields") or []:
                print(f"  {field.get('field')}: {field.get('message')}", file=sys.stderr)
            return 1

    return run


def exit_code(job: dict[str, Any]) -> int:
    """0 for a succeeded job, 1 for failed or cancelled, 0 for one still running."""
    return 1 if job.get("state") in ("failed", "cancelled") else 0


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def summary(job: dict[str, Any]) -> str:
    progress = job.get("progress") or {}
    parts = [f"{job['id']}  {job['state']}", f"attempts={job.get('attempts', 0)}",
             f"step {progress.get('step', 0)}/{progress.get('max_steps', 0)}"]
    if job.get("category"):
        parts.append(f"category={job['category']}")
    if job.get("worker"):
        parts.append(f"worker={job['worker']}")
    return "  ".join(parts)


def print_job(job: dict[str, Any]) -> None:
    print(summary(job))
    if job.get("error"):
        print(f"error: {job['error']}")
    result = job.get("result") or {}
    if result.get("final_answer"):
        print(f"answer: {result['final_answer']}")
    if result.get("data") is not None:
        print("data: " + json.dumps(result["data"], default=str))


def describe_event(kind: str, data: dict[str, Any]) -> str | None:
    if kind == "state":
        extra = "".join(f" {k}={data[k]}" for k in ("attempt", "worker", "category", "reason") if data.get(k))
        return f"state: {data.get('state')}{extra}"
    if kind == "step":
        actions = ", ".join(
            a.get("name", "?") + ("" if a.get("ok", True) else " (failed)") for a in data.get("actions") or []
        )
        return f"step {data.get('step')}: {actions or '-'}" + (f"  [{data['url']}]" if data.get("url") else "")
    if kind == "cancel_requested":
        return "cancel requested"
    return None


def follow(api: ApiClient, job_id: str, out: Any = sys.stdout) -> dict[str, Any]:
    """Print the job's events as they happen; returns the finished job."""
    for kind, data in api.events(job_id):
        line = describe_event(kind, data)
        if line:
            print(line, file=out, flush=True)
    return api.job(job_id)
