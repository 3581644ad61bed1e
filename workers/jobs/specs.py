"""Checking what users submit: one job spec, or a batch in any of its accepted forms.

``check_spec`` is what pydantic cannot check alone (a script's actions, a timeout the queue can
honour); ``max_steps_of`` is the step budget a job is recorded with.

Batch forms accepted by ``POST /v1/batches`` (and ``browserd batch``):

* ``[spec, spec, ...]``;
* ``{"jobs": [spec, ...], "defaults": {...}, "webhook_url": "...", "mode": "auto"}``;
* JSONL, one spec per line; an optional first line ``{"defaults": {...}, "webhook_url": "...", "mode": "auto"}``
  (no ``task``/``script``: ``defaults`` is not a JobSpec field, so the header cannot be mistaken
  for a job).

``defaults`` is merged under every spec (nested objects such as ``options`` and ``labels`` key by
key; the item wins). Every merged spec is validated before anything is written: one bad item
refuses the whole batch, with its index and field named. Every refusal is a ``SpecError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import HttpUrl, TypeAdapter, ValidationError

from config import Settings
from workers.jobs.actions import validate_script
from workers.jobs.destinations import networks, url_refusal
from workers.jobs.errors import FieldProblem, SpecError
from workers.jobs.keys import new_id
from workers.jobs.models import JobSpec
from workers.jobs.output import check_schema
from workers.jobs.politeness import limits_for
from workers.jobs.secrets import seal_spec
from workers.jobs.queue import max_job_timeout
from workers.jobs.recipes import automatic

MAX_BATCH = 100_000
BATCH_MODES = ("agent", "auto")
_URL = TypeAdapter(HttpUrl)


@dataclass
class BatchRequest:
    jobs: list[dict[str, Any]]
    defaults: dict[str, Any] = field(default_factory=dict)
    webhook_url: str | None = None
    mode: str = "agent"  # "auto": the agent jobs record a recipe and replay it (``recipes.automatic``)


def refuse(where: str, message: str) -> SpecError:
    return SpecError.at(where, message)


def field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", "options", "max_steps")`` -> ``options.max_steps``; the body itself -> ``body``."""
    parts = [str(p) for p in loc]
    where = parts.pop(0) if parts and parts[0] in ("body", "query", "path", "header") else "body"
    if not parts or (where == "body" and len(parts) == 1 and parts[0].isdigit()):
        return where  # the body as a whole (or a position in unparseable JSON)
    return ".".join(parts)


def problems_of(exc: ValidationError, where: str | None = None) -> SpecError:
    """pydantic's errors as field problems, each field prefixed with ``where`` when given."""
    problems = []
    for err in exc.errors():
        name = field_name(("body", *err.get("loc", ())))
        path = name if where is None else (where if name == "body" else f"{where}.{name}")
        problems.append(FieldProblem(path, str(err.get("msg", "invalid")).removeprefix("Value error, ")))
    return SpecError(problems)


def max_steps_of(spec: JobSpec, settings: Settings) -> int:
    """The step budget a job is recorded with: a script's length, or the agent's ``max_steps``."""
    if spec.script is not None:
        return len(spec.script)
    return spec.options.max_steps or settings.max_steps


def check_spec(spec: JobSpec, settings: Settings) -> JobSpec:
    """What pydantic cannot check alone: the script's actions, the output schema, a timeout the
    queue can honour, a webhook receiver that is not plainly private, politeness no looser than the
    operator allows; and the secrets, sealed."""
    if spec.output_schema is not None:
        problems = check_schema(spec.output_schema)
        if problems:
            raise refuse("output_schema", "; ".join(problems))
    if spec.timeout is not None and spec.timeout > max_job_timeout(settings):
        raise refuse("timeout", f"at most {max_job_timeout(settings):g} seconds here "
                     "(BROWSERD_VISIBILITY_TIMEOUT bounds how long one job may run)")
    keep = spec.options.keep_session
    if keep is not None and spec.script is not None:
        raise refuse("options.keep_session", "only agent jobs (a task) keep a session for follow-up tasks")
    if keep is not None and keep > settings.keep_session_max:
        raise refuse("options.keep_session", f"at most {settings.keep_session_max:g} seconds here "
                     "(BROWSERD_KEEP_SESSION_MAX)")
    if spec.script is not None:
        if len(spec.script) > settings.max_script_actions:
            raise refuse("script", f"{len(spec.script)} actions; at most {settings.max_script_actions} "
                         "(BROWSERD_MAX_SCRIPT_ACTIONS)")
        try:
            spec.script = validate_script(spec.script)
        except ValueError as exc:
            raise refuse("script", str(exc)) from None
    if spec.webhook_url is not None:
        check_webhook_url(str(spec.webhook_url), settings)
    secret = spec.proxy.password_secret if spec.proxy is not None else None
    if secret is not None and spec.credentials is None and secret not in spec.secrets:
        raise refuse("proxy.password_secret", f"{secret!r} is not one of the job's 'secrets', and the job names no "
                     "'credentials' set that could hold it")
    limits_for(spec.politeness, settings)  # a looser limit than the operator allows is refused here
    return seal_spec(spec, settings)


def check_webhook_url(url: str, settings: Settings, where: str = "webhook_url") -> None:
    """Refuse a receiver that is plainly not public (an IP literal, localhost); names are judged when
    delivering, on the addresses they resolve to then."""
    reason = url_refusal(url, networks(settings.webhook_allowed_networks))
    if reason:
        raise refuse(where, reason)


def parse_body(raw: bytes) -> BatchRequest:
    """The request's jobs and shared options, from any of the accepted forms."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise refuse("body", "empty; send a JSON array of job specs or JSONL, one spec per line")
    try:
        try:
            value = json.loads(text)
        except ValueError:
            value = _jsonl(text)
    except RecursionError:
        raise refuse("body", "nested too deeply") from None
    if isinstance(value, list):
        request = BatchRequest(jobs=value)
    elif isinstance(value, dict) and "jobs" in value:
        unknown = set(value) - {"jobs", "defaults", "webhook_url", "mode"}
        if unknown:
            raise refuse(sorted(unknown)[0], "unknown field; a batch object has jobs, defaults, webhook_url and mode")
        if not isinstance(value["jobs"], list):
            raise refuse("jobs", "must be a list of job specs")
        request = BatchRequest(jobs=value["jobs"], defaults=value.get("defaults") or {},
                               webhook_url=value.get("webhook_url"), mode=value.get("mode", "agent"))
    elif isinstance(value, dict):  # a single line of JSONL: one job
        request = BatchRequest(jobs=[value])
    else:
        raise refuse("body", "send a JSON array of job specs, an object with 'jobs', or JSONL")
    return _checked(request)


def _jsonl(text: str) -> Any:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    items = []
    for n, line in lines:
        try:
            items.append(json.loads(line))
        except ValueError as exc:
            raise refuse(f"line {n}", f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if items and isinstance(items[0], dict) and "defaults" in items[0]:
        header = items.pop(0)
        return {"jobs": items, "defaults": header.get("defaults"), "webhook_url": header.get("webhook_url"),
                "mode": header.get("mode", "agent")}
    return items


def _checked(request: BatchRequest) -> BatchRequest:
    if not request.jobs:
        raise refuse("jobs", "the batch holds no jobs")
    if len(request.jobs) > MAX_BATCH:
        raise refuse("jobs", f"at most {MAX_BATCH} jobs per batch; split it")
    if not isinstance(request.defaults, dict):
        raise refuse("defaults", "must be an object of JobSpec fields")
    if request.mode not in BATCH_MODES:
        raise refuse("mode", f"{request.mode!r}: one of {', '.join(BATCH_MODES)} (auto: the first successful agent job "
                     "is recorded as a recipe, the others replay it)")
    if request.webhook_url is not None:
        try:
            request.webhook_url = str(_URL.validate_python(request.webhook_url))
        except ValidationError as exc:
            raise refuse("webhook_url", exc.errors()[0]["msg"]) from None
    return request


def merged(defaults: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """``item`` over ``defaults``; nested objects are merged key by key."""
    out = dict(defaults)
    for key, value in item.items():
        base = out.get(key)
        out[key] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    return out


def validate_jobs(request: BatchRequest, settings: Settings) -> list[JobSpec]:
    """Every job as a checked ``JobSpec``; the first bad one refuses the batch (422, ``jobs[i].field``)."""
    if request.webhook_url is not None:
        check_webhook_url(request.webhook_url, settings)
    specs = []
    for index, item in enumerate(request.jobs):
        where = f"jobs[{index}]"
        if not isinstance(item, dict):
            raise refuse(where, "must be an object (a job spec)")
        try:
            spec = JobSpec.model_validate(merged(request.defaults, item) if request.defaults else item)
            specs.append(check_spec(spec, settings))
        except ValidationError as exc:
            raise problems_of(exc, where) from None
        except SpecError as exc:
            raise exc.within(where) from None
    return automatic(specs, f"batch-{new_id()}") if request.mode == "auto" else specs
