"""What the job commands of the CLI share: the API client, error reporting, and how jobs print."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon.cli.progress import WorkerWatch
from daemon.client import ApiUnreachable, Client, RequestRefused
from workers.jobs.model.record import EventType
from workers.jobs.model.status import FINAL_STATES, JobStatus

# Every command's exit codes: one table (docs/reference/cli.md shows it, tests/cli/test_exit_codes.py
# checks it command by command).
EXIT_DONE = 0  # done: the job (or batch) succeeded, the listing or change was made
EXIT_FAILED = 1  # the job failed or was cancelled, or the API refused the request (what it named is wrong)
EXIT_USAGE = 2  # bad arguments, an unreadable file given on the command line, or bad configuration
EXIT_UNREACHABLE = 3  # the API could not be reached: nothing is known about the job
EXIT_UNFINISHED = 4  # `status` of a job still queued or running
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_CODES = {EXIT_DONE: "done", EXIT_FAILED: "a job failed or was cancelled, or the API refused the request",
              EXIT_USAGE: "bad arguments or configuration (nothing was sent)",
              EXIT_UNREACHABLE: "the API could not be reached", EXIT_UNFINISHED: "status: the job is not finished",
              EXIT_INTERRUPTED: "interrupted (Ctrl-C)"}


class UsageError(Exception):
    """A flag or argument the command cannot use, told before anything is sent (exit 2); the
    message names the flag."""


def json_argument(flag: str, value: str) -> Any:
    """A flag that takes JSON or the path of a JSON file (``--output-schema schema.json`` or
    ``--output-schema '{"type": "object"}'``)."""
    text = value
    if not value.lstrip().startswith(("{", "[")):
        try:
            text = Path(value).read_text()
        except OSError as exc:
            raise UsageError(f"{flag}: {value!r} is neither JSON nor a readable file ({exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: not valid JSON: {exc}") from None


def json_file(path: str, what: str) -> Any:
    """The JSON in the file at ``path`` (``-``: stdin), for a command's positional file argument;
    ``UsageError`` (exit 2) names ``what`` could not be read."""
    try:
        return json.loads(sys.stdin.read() if path == "-" else Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {what} from {path}: {exc}") from None


def client() -> Client:
    return Client()  # BROWSERD_API_URL and BROWSERD_API_TOKEN (or --api-url / --token)


def api_command(handler: Callable[..., int]) -> Callable[..., int]:
    """Print the API's message (not a traceback) when a request fails; exit 1, or 3 if unreachable."""

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> int:
        try:
            return handler(*args, **kwargs)
        except ApiUnreachable as exc:
            print(f"browserd: {exc}", file=sys.stderr)
            return EXIT_UNREACHABLE
        except RequestRefused as exc:
            print(f"browserd: {refusal(exc)} (HTTP {exc.status})", file=sys.stderr)
            if exc.quota is not None:  # over a tenant's quota: which, and when it frees
                when = f"retry after {exc.retry_after:g}s" if exc.retry_after is not None else "it does not free for this request"
                print(f"  quota {exc.quota}: {when}", file=sys.stderr)
            for field in exc.fields:  # the message names the first few; list any it left out
                if f"{field.get('field')}: {field.get('message')}" not in exc.message:
                    print(f"  {field.get('field')}: {field.get('message')}", file=sys.stderr)
            return EXIT_FAILED

    return run


UNAUTHORIZED = ("the API refused the token: set BROWSERD_API_TOKEN (or pass --token) to the API's own "
                "BROWSERD_API_TOKEN or to a tenant key from 'browserd tenant create'; a revoked key stops working")


def refusal(exc: RequestRefused) -> str:
    """The API's refusal as a CLI user reads it: an unauthorized request names the variable and the
    flag that carry the token (the API's own words are about an HTTP header)."""
    return UNAUTHORIZED if exc.status == 401 else exc.message


def exit_code(job: dict[str, Any]) -> int:
    """0 only for a job that succeeded; 1 when it failed or was cancelled; 4 while it is unfinished."""
    state = job.get("state")
    if state == JobStatus.succeeded:
        return 0
    return EXIT_FAILED if state in FINAL_STATES else EXIT_UNFINISHED


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
    if job.get("waiting_for_human"):
        parts.append(f"waiting_for_human ({job['waiting_for_human']})")
    elif job.get("paused"):
        parts.append("paused")
    if len(job.get("runs") or []) > 1:
        parts.append(f"run {len(job['runs'])}")
    if job.get("session"):
        parts.append(f"session={job['session']}")
    return "  ".join(parts)


def print_job(job: dict[str, Any]) -> None:
    print(summary(job))
    if job.get("error"):
        print(f"error: {job['error']}")
    result = job.get("result") or {}
    if result.get("final_answer"):
        print(f"answer: {result['final_answer']}")
    check = result.get("verification") or {}
    if check:  # why the models' claim of done was accepted, or refused
        print(f"verified: {', '.join(check.get('checks') or [])}" if check.get("accepted")
              else f"not verified: {check.get('reason')}")
    if result.get("data") is not None:
        print("data: " + json.dumps(result["data"], default=str))
    if result.get("cost_usd") is not None:
        print(cost_line(result["cost_usd"], result.get("unpriced_models") or []))


def cost_line(usd: float, unpriced: list[str]) -> str:
    """What a run's LLM calls cost, and which models the table has no price for."""
    return f"cost: ${usd:.4f}" + (f" (unpriced: {', '.join(unpriced)})" if unpriced else "")


REQUESTS = (EventType.cancel_requested, EventType.pause_requested, EventType.resume_requested)


def describe_event(kind: str, data: dict[str, Any]) -> str | None:
    """One line for an event of the stream; None for one the terminal does not show (a type this
    client does not know yet, from a newer server, too)."""
    if kind == EventType.state:
        extra = "".join(f" {k}={data[k]}" for k in ("attempt", "run", "worker", "category", "reason") if data.get(k))
        return f"state: {data.get('state')}{extra}"
    if kind == EventType.step:
        actions = ", ".join(
            a.get("name", "?") + ("" if a.get("ok", True) else " (failed)") for a in data.get("actions") or []
        )
        return f"step {data.get('step')}: {actions or '-'}" + (f"  [{data['url']}]" if data.get("url") else "")
    if kind in REQUESTS:
        return kind.replace("_", " ")
    if kind == EventType.session:
        return f"session {data.get('session')}" + (f": {data['reason']}" if data.get("reason") else "")
    return None


def follow(api: Client, job_id: str, out: Any = sys.stdout, watch: WorkerWatch | None = None) -> dict[str, Any]:
    """Print the job's events as they happen, however long it is silent; returns the final job.
    ``watch`` (while the job is queued) is told when the job leaves the queue."""
    for event in api.follow(job_id):
        if watch is not None and event.type == EventType.state and event.data.get("state") != JobStatus.queued:
            watch.started()
        line = describe_event(event.type, event.data)
        if line:
            print(line, file=out, flush=True)
    return api.get(job_id).model_dump(mode="json")
