"""Reading a batch request: a JSON array, a JSON object with ``jobs`` and ``defaults``, or JSONL.

Forms accepted by ``POST /v1/batches`` (and ``browserd batch``):

* ``[spec, spec, ...]``;
* ``{"jobs": [spec, ...], "defaults": {...}, "webhook_url": "..."}``;
* JSONL, one spec per line; an optional first line ``{"defaults": {...}, "webhook_url": "..."}``
  (no ``task``/``script``: ``defaults`` is not a JobSpec field, so the header cannot be mistaken
  for a job).

``defaults`` is merged under every spec (nested objects such as ``options`` and ``labels`` key by
key; the item wins). Every merged spec is validated before anything is written: one bad item
refuses the whole batch, with its index and field named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import HttpUrl, TypeAdapter, ValidationError

from config import Settings
from daemon.errors import ApiError, FieldError, field_name
from workers.models import JobSpec

MAX_BATCH = 100_000
_URL = TypeAdapter(HttpUrl)


@dataclass
class BatchRequest:
    jobs: list[dict[str, Any]]
    defaults: dict[str, Any] = field(default_factory=dict)
    webhook_url: str | None = None


def refuse(where: str, message: str) -> ApiError:
    return ApiError(422, "invalid_request", f"{where}: {message}", fields=[FieldError(field=where, message=message)])


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
        unknown = set(value) - {"jobs", "defaults", "webhook_url"}
        if unknown:
            raise refuse(sorted(unknown)[0], "unknown field; a batch object has jobs, defaults and webhook_url")
        if not isinstance(value["jobs"], list):
            raise refuse("jobs", "must be a list of job specs")
        request = BatchRequest(jobs=value["jobs"], defaults=value.get("defaults") or {},
                               webhook_url=value.get("webhook_url"))
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
        return {"jobs": items, "defaults": header.get("defaults"), "webhook_url": header.get("webhook_url")}
    return items


def _checked(request: BatchRequest) -> BatchRequest:
    if not request.jobs:
        raise refuse("jobs", "the batch holds no jobs")
    if len(request.jobs) > MAX_BATCH:
        raise refuse("jobs", f"at most {MAX_BATCH} jobs per batch; split it")
    if not isinstance(request.defaults, dict):
        raise refuse("defaults", "must be an object of JobSpec fields")
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
    from daemon.api import check_spec

    specs = []
    for index, item in enumerate(request.jobs):
        where = f"jobs[{index}]"
        if not isinstance(item, dict):
            raise refuse(where, "must be an object (a job spec)")
        try:
            spec = JobSpec.model_validate(merged(request.defaults, item) if request.defaults else item)
            specs.append(check_spec(spec, settings))
        except ValidationError as exc:
            raise _item_error(where, exc) from None
        except ApiError as exc:
            fields = [FieldError(field=f"{where}.{f.field}", message=f.message) for f in exc.fields or []]
            raise ApiError(422, "invalid_request", f"{where}: {exc.message}", fields=fields) from None
    return specs


def _item_error(where: str, exc: ValidationError) -> ApiError:
    fields = []
    for err in exc.errors():
        name = field_name(("body", *err.get("loc", ())))
        path = where if name == "body" else f"{where}.{name}"
        fields.append(FieldError(field=path, message=str(err.get("msg", "invalid")).removeprefix("Value error, ")))
    summary = "; ".join(f"{f.field}: {f.message}" for f in fields[:5])
    return ApiError(422, "invalid_request", summary, fields=fields)
