"""A batch's body in any of its accepted forms, read into jobs and shared options (``BatchRequest``).

Forms accepted by ``POST /v1/batches`` (and ``browserd batch``):

* ``[spec, spec, ...]``;
* ``{"jobs": [spec, ...], "defaults": {...}, "webhook_url": "...", "mode": "auto", "max_cost_usd": 5}``;
* JSONL, one spec per line; an optional first line ``{"defaults": {...}, "webhook_url": "...", "mode": "auto",
  "max_cost_usd": 5}``
  (no ``task``/``script``: ``defaults`` is not a JobSpec field, so the header cannot be mistaken
  for a job).

``defaults`` is merged under every spec (nested objects such as ``options`` and ``labels`` key by
key; the item wins). The jobs themselves are checked by ``checks.validate_jobs``. Pure: a
schedule's template (``schedules.models``) is a ``BatchRequest`` too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import HttpUrl, TypeAdapter, ValidationError

from config.messages import error_message
from workers.jobs.errors import SpecError

MAX_BATCH = 100_000
MAX_COST_USD = 1_000_000.0
BATCH_MODES = ("agent", "auto")
_URL = TypeAdapter(HttpUrl)


@dataclass
class BatchRequest:
    jobs: list[dict[str, Any]]
    defaults: dict[str, Any] = field(default_factory=dict)
    webhook_url: str | None = None
    mode: str = "agent"  # "auto": the agent jobs record a recipe and replay it (``recipes.checks.automatic``)
    max_cost_usd: float | None = None  # the batch's LLM cost at which it stops starting jobs


def parse_body(raw: bytes) -> BatchRequest:
    """The request's jobs and shared options, from any of the accepted forms."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise SpecError.at("body", "empty; send a JSON array of job specs or JSONL, one spec per line")
    try:
        try:
            value = json.loads(text)
        except ValueError:
            value = _jsonl(text)
    except RecursionError:
        raise SpecError.at("body", "nested too deeply") from None
    if isinstance(value, list):
        request = BatchRequest(jobs=value)
    elif isinstance(value, dict) and "jobs" in value:
        unknown = set(value) - {"jobs", "defaults", "webhook_url", "mode", "max_cost_usd"}
        if unknown:
            raise SpecError.at(sorted(unknown)[0],
                               "unknown field; a batch object has jobs, defaults, webhook_url, mode and max_cost_usd")
        if not isinstance(value["jobs"], list):
            raise SpecError.at("jobs", "must be a list of job specs")
        request = BatchRequest(jobs=value["jobs"], defaults=value.get("defaults") or {},
                               webhook_url=value.get("webhook_url"), mode=value.get("mode", "agent"),
                               max_cost_usd=value.get("max_cost_usd"))
    elif isinstance(value, dict):  # a single line of JSONL: one job
        request = BatchRequest(jobs=[value])
    else:
        raise SpecError.at("body", "send a JSON array of job specs, an object with 'jobs', or JSONL")
    return _checked(request)


def _jsonl(text: str) -> Any:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    items = [json_line(n, line) for n, line in lines]
    if items and is_header(items[0]):
        return {"jobs": items[1:], **header_fields(items[0])}
    return items


def json_line(n: int, line: str | bytes) -> Any:
    """Line ``n`` of a JSONL body, parsed; a line that is not JSON is named by its number."""
    try:
        return json.loads(line)
    except ValueError as exc:
        raise SpecError.at(f"line {n}", f"not valid JSON ({exc.msg} at column {exc.colno})") from None


def is_header(item: Any) -> bool:
    """A JSONL body's optional first line: an object with ``defaults`` (not a JobSpec field)."""
    return isinstance(item, dict) and "defaults" in item


def header_fields(header: dict[str, Any]) -> dict[str, Any]:
    return {"defaults": header.get("defaults"), "webhook_url": header.get("webhook_url"),
            "mode": header.get("mode", "agent"), "max_cost_usd": header.get("max_cost_usd")}


def _checked(request: BatchRequest) -> BatchRequest:
    check_count(len(request.jobs))
    return checked_options(request)


def check_count(jobs: int) -> None:
    """A batch holds at least one job and at most ``MAX_BATCH``."""
    if not jobs:
        raise SpecError.at("jobs", "the batch holds no jobs")
    if jobs > MAX_BATCH:
        raise SpecError.at("jobs", f"at most {MAX_BATCH} jobs per batch; split it")


def checked_options(request: BatchRequest) -> BatchRequest:
    """The batch's shared options checked (defaults, mode, cost cap, webhook), its jobs not: the
    streamed reader checks these from the header line, before the first job."""
    if not isinstance(request.defaults, dict):
        raise SpecError.at("defaults", "must be an object of JobSpec fields")
    if request.mode not in BATCH_MODES:
        raise SpecError.at("mode", f"{request.mode!r}: one of {', '.join(BATCH_MODES)} (auto: the first successful "
                           "agent job is recorded as a recipe, the others replay it)")
    cap = request.max_cost_usd
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap <= MAX_COST_USD):
        raise SpecError.at("max_cost_usd", f"{cap!r}: a number of USD above 0, at most {MAX_COST_USD:g} (the batch "
                           "stops starting jobs once its jobs' LLM calls cost that much)")
    if request.webhook_url is not None:
        try:
            request.webhook_url = str(_URL.validate_python(request.webhook_url))
        except ValidationError as exc:
            raise SpecError.at("webhook_url", error_message(exc.errors()[0])) from None
    return request


def merged(defaults: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """``item`` over ``defaults``; nested objects are merged key by key."""
    out = dict(defaults)
    for key, value in item.items():
        base = out.get(key)
        out[key] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    return out
