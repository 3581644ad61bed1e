"""browserd's Python client: ``Client`` (blocking) and ``AsyncClient``, over httpx.

    from daemon.client import Client

    with Client("http://127.0.0.1:8080", token="...") as browserd:
        job = browserd.submit({"task": "Find the price of the blue mug", "start_url": "https://shop.example/"})
        done = browserd.wait(job.id)          # follows the job's events until it is final
        print(done.state, done.result.final_answer if done.result else done.error)

Both clients return the API's own pydantic models (``JobRecord``, ``BatchRecord``, ``Schedule``,
...), so a field means the same thing in the API, the CLI (which uses ``Client``) and your code.
With no arguments they read ``BROWSERD_API_URL`` and ``BROWSERD_API_TOKEN`` like the CLI.

Errors: ``RequestRefused`` when the API answered with an error (``status``, ``code``, ``message``
and the bad ``fields``), ``ApiUnreachable`` when it could not be reached at all.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, SecretStr, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from config import Settings, load_settings
from workers.jobs.batches.models import BatchRecord, ResultLine
from workers.jobs.crawls.models import CrawlLine, CrawlRecord, CrawlSpec
from workers.jobs.model.record import EventType, FollowUpAccepted, JobEvent, JobPage, JobRecord, SubmittedJob
from workers.jobs.model.browsing import Viewport
from workers.jobs.model.result import ArtifactLink
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES, InputFile
from workers.jobs.model.status import FINAL_STATES
from workers.jobs.profiles.models import ProfileInfo, StorageState
from workers.jobs.secrets.models import CredentialInfo
from workers.jobs.recipes.models import RecipeInfo
from workers.jobs.schedules.changes import RunChanges
from workers.jobs.schedules.models import Schedule
from workers.jobs.tenants.models import TenantInfo, TenantKey, TenantList, TenantUsage
from workers.jobs.sessions.models import (
    COMMAND_WAIT,
    OPEN_WAIT,
    CommandResult,
    SessionList,
    SessionRecord,
    SessionView,
    TabList,
)
from workers.jobs.webhooks.models import GivenUpDelivery

STREAM_READ_TIMEOUT = 60.0  # the API sends a keep-alive every few seconds; silence this long: reconnect
BATCH_SUBMIT_TIMEOUT = 120.0  # a batch of 100,000 jobs is checked and recorded before the answer
SESSION_OPEN_TIMEOUT = OPEN_WAIT + 30.0  # the API waits OPEN_WAIT for a worker to lease a context and open the page
SESSION_COMMAND_TIMEOUT = COMMAND_WAIT + 15.0  # ... and COMMAND_WAIT for a command's reply
RECONNECT_PAUSE = 1.0
RECONNECT_MAX = 30.0
RETRY_STATUSES = (502, 503, 504)  # a proxy or the API restarting: the job is still there
Model = TypeVar("Model", bound=BaseModel)


class ClientError(Exception):
    """Base of the client's errors."""


class ApiUnreachable(ClientError):
    """No answer from the API (refused, timed out, wrong address)."""


class RequestRefused(ClientError):
    """The API answered with an error; ``message`` is its own explanation, ``fields`` the bad ones;
    over a tenant's quota (429), ``quota`` names it and ``retry_after`` says in how many seconds it
    frees (None: not for this request)."""

    def __init__(self, status: int, code: str, message: str, fields: list[dict[str, str]] | None = None, *,
                 quota: str | None = None, retry_after: float | None = None) -> None:
        when = f"; retry after {retry_after:g}s" if retry_after is not None else ""
        super().__init__(f"{message}{when} (HTTP {status})")
        self.status, self.code, self.message, self.fields = status, code, message, fields or []
        self.quota, self.retry_after = quota, retry_after


def api_url(settings: Settings) -> str:
    if settings.api_url:
        return settings.api_url.rstrip("/")
    host = "127.0.0.1" if settings.api_host in ("0.0.0.0", "::") else settings.api_host
    return f"http://{host}:{settings.api_port}"


def _q(value: str) -> str:
    return quote(value, safe="")


@dataclass(frozen=True)
class Call:
    """One request, described once for both clients: method, path, body, query and the answer's type."""

    method: str
    path: str
    json: Any = None
    content: bytes | None = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    answer: Any = None  # a pydantic model, a TypeAdapter target, or None for no body

    def build(self, http: httpx.Client | httpx.AsyncClient, default_timeout: float) -> httpx.Request:
        params = {k: v for k, v in self.params.items() if v is not None}
        headers = dict(self.headers)
        if self.method == "POST" and self.json is None and self.content is None:
            headers["Content-Type"] = "application/json"  # a bodyless POST too: the API refuses others (CSRF)
        return http.build_request(self.method, self.path, json=self.json, content=self.content, params=params,
                                  headers=headers, timeout=self.timeout or default_timeout)

    def parse(self, response: httpx.Response) -> Any:
        if self.answer is None or not response.content:
            return None
        return TypeAdapter(self.answer).validate_json(response.content)


def refused(response: httpx.Response, raw: bytes) -> RequestRefused:
    try:
        body = json.loads(raw)
        retry = body.get("retry_after")
        return RequestRefused(response.status_code, body.get("error", "http_error"),
                              body.get("message") or raw.decode(errors="replace"), body.get("fields"),
                              quota=body.get("quota"), retry_after=float(retry) if retry is not None else None)
    except (ValueError, AttributeError):
        return RequestRefused(response.status_code, "http_error",
                              raw.decode(errors="replace") or response.reason_phrase)


def _spec(value: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """The body a model stands for, its secrets in clear (a ``JobSpec``'s ``secrets``, ``totp``, a
    proxy's password): pydantic's JSON dump would send them as asterisks, which the API would take
    as the values."""
    if not isinstance(value, BaseModel):
        return value
    return to_jsonable_python(_revealed(value.model_dump(exclude_none=True)))


def _revealed(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: _revealed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_revealed(v) for v in value]
    return value


def input_file(path: str | Path, name: str | None = None) -> InputFile:
    """A file to send with a job (``JobSpec.input_files``; its ``upload_file`` action names it by
    ``name``, the file's own name by default), read from ``path`` here. ``ValueError`` names what is
    wrong before anything is sent: a path that is not a readable file, a file over the size one
    input file may have (``MAX_INPUT_FILE_BYTES``), a name that is not a plain file name."""
    source = Path(path)
    if not source.is_file():
        raise ValueError(f"{source}: no such file")
    size = source.stat().st_size
    if size > MAX_INPUT_FILE_BYTES:
        raise ValueError(f"{source}: {size} bytes; an input file may have at most {MAX_INPUT_FILE_BYTES >> 20} MiB")
    try:
        content = source.read_bytes()
    except OSError as exc:
        raise ValueError(f"{source}: cannot read it: {exc.strerror or exc}") from None
    try:
        return InputFile(name=name or source.name, content_base64=base64.b64encode(content).decode())
    except ValidationError as exc:
        raise ValueError(f"{source}: {exc.errors()[0]['msg']}") from None


class Calls:
    """Every API call the clients make, as ``Call`` values (the one place paths and types live)."""

    @staticmethod
    def submit(spec: BaseModel | dict[str, Any]) -> Call:
        return Call("POST", "/v1/jobs", json=_spec(spec), answer=SubmittedJob)

    @staticmethod
    def get(job_id: str) -> Call:
        return Call("GET", f"/v1/jobs/{_q(job_id)}", answer=JobRecord)

    @staticmethod
    def artifacts(job_id: str) -> Call:
        return Call("GET", f"/v1/jobs/{_q(job_id)}/artifacts", answer=list[ArtifactLink])

    @staticmethod
    def artifact(job_id: str, name: str) -> Call:
        return Call("GET", f"/v1/jobs/{_q(job_id)}/artifacts/{_q(name)}")

    @staticmethod
    def cancel(job_id: str) -> Call:
        return Call("POST", f"/v1/jobs/{_q(job_id)}/cancel", answer=JobRecord)

    @staticmethod
    def given_up(limit: int) -> Call:
        return Call("GET", "/v1/webhooks/given-up", params={"limit": limit}, answer=list[GivenUpDelivery])

    @staticmethod
    def redeliver(delivery_id: str | None) -> Call:
        """One given-up webhook delivery again, or (None) all of them."""
        if delivery_id is None:
            return Call("POST", "/v1/webhooks/given-up/redeliver", answer=dict[str, int])
        return Call("POST", f"/v1/webhooks/given-up/{_q(delivery_id)}/redeliver", answer=GivenUpDelivery)

    @staticmethod
    def steer(job_id: str, action: str) -> Call:
        """pause | resume | hand-back."""
        return Call("POST", f"/v1/jobs/{_q(job_id)}/{action}", answer=JobRecord)

    @staticmethod
    def job_input(job_id: str, name: str, value: str) -> Call:
        return Call("POST", f"/v1/jobs/{_q(job_id)}/input", json={"name": name, "value": value}, answer=JobRecord)

    @staticmethod
    def follow_up(job_id: str, task: str) -> Call:
        return Call("POST", f"/v1/jobs/{_q(job_id)}/follow-up", json={"task": task}, answer=FollowUpAccepted)

    @staticmethod
    def jobs(state: str | None, labels: dict[str, str] | None, limit: int, cursor: int | None,
             schedule: str | None = None, tenant: str | None = None) -> Call:
        label = [f"{k}={v}" for k, v in (labels or {}).items()] or None
        return Call("GET", "/v1/jobs", params={"state": state, "label": label, "schedule": schedule, "limit": limit,
                                               "cursor": cursor, "tenant": tenant},
                    answer=JobPage)

    @staticmethod
    def events(job_id: str, follow: bool, last_event_id: str | None) -> Call:
        headers = {"Accept": "text/event-stream", **({"Last-Event-ID": last_event_id} if last_event_id else {})}
        return Call("GET", f"/v1/jobs/{_q(job_id)}/events", params={"follow": str(follow).lower()},
                    headers=headers, timeout=STREAM_READ_TIMEOUT)

    @staticmethod
    def submit_batch(body: bytes) -> Call:
        return Call("POST", "/v1/batches", content=body, headers={"Content-Type": "application/x-ndjson"},
                    timeout=BATCH_SUBMIT_TIMEOUT, answer=BatchRecord)

    @staticmethod
    def batch(batch_id: str, action: str = "") -> Call:
        path = f"/v1/batches/{_q(batch_id)}" + (f"/{action}" if action else "")
        return Call("POST" if action else "GET", path, answer=BatchRecord)

    @staticmethod
    def batches(limit: int, before: float | None) -> Call:
        return Call("GET", "/v1/batches", params={"limit": limit, "before": before}, answer=list[BatchRecord])

    @staticmethod
    def results(batch_id: str) -> Call:
        return Call("GET", f"/v1/batches/{_q(batch_id)}/results", timeout=STREAM_READ_TIMEOUT)

    @staticmethod
    def start_crawl(spec: CrawlSpec | dict[str, Any]) -> Call:
        return Call("POST", "/v1/crawls", json=_spec(spec), answer=CrawlRecord)

    @staticmethod
    def crawls(limit: int, before: float | None) -> Call:
        return Call("GET", "/v1/crawls", params={"limit": limit, "before": before}, answer=list[CrawlRecord])

    @staticmethod
    def crawl(crawl_id: str, action: str = "") -> Call:
        path = f"/v1/crawls/{_q(crawl_id)}" + (f"/{action}" if action else "")
        return Call("POST" if action else "GET", path, answer=CrawlRecord)

    @staticmethod
    def crawl_results(crawl_id: str, offset: int = 0, limit: int | None = None) -> Call:
        return Call("GET", f"/v1/crawls/{_q(crawl_id)}/results", params={"offset": offset or None, "limit": limit},
                    timeout=STREAM_READ_TIMEOUT)

    @staticmethod
    def schedules() -> Call:
        return Call("GET", "/v1/schedules", answer=list[Schedule])

    @staticmethod
    def create_schedule(spec: BaseModel | dict[str, Any]) -> Call:
        return Call("POST", "/v1/schedules", json=_spec(spec), answer=Schedule)

    @staticmethod
    def schedule(schedule_id: str, action: str = "") -> Call:
        """'' (get), pause, resume, run (a batch), runs (batches), delete."""
        path = f"/v1/schedules/{_q(schedule_id)}"
        if action == "delete":
            return Call("DELETE", path)
        if action == "runs":
            return Call("GET", path + "/runs", answer=list[BatchRecord])
        if action == "run":
            return Call("POST", path + "/run", answer=BatchRecord)
        return Call("POST" if action else "GET", path + (f"/{action}" if action else ""), answer=Schedule)

    @staticmethod
    def schedule_changes(schedule_id: str, since: datetime | float | None, limit: int | None) -> Call:
        when = since.isoformat() if isinstance(since, datetime) else since
        return Call("GET", f"/v1/schedules/{_q(schedule_id)}/changes", params={"since": when, "limit": limit},
                    answer=list[RunChanges])

    @staticmethod
    def put_profile(name: str, state: BaseModel | dict[str, Any], if_version: int | None) -> Call:
        return Call("PUT", f"/v1/profiles/{_q(name)}", json=_spec(state), params={"if_version": if_version},
                    answer=ProfileInfo)

    @staticmethod
    def profiles(tenant: str | None = None) -> Call:
        return Call("GET", "/v1/profiles", params={"tenant": tenant}, answer=list[ProfileInfo])

    @staticmethod
    def put_credentials(name: str, secrets: dict[str, str], domains: list[str] | None, tenant: str | None) -> Call:
        body = {"name": name, "secrets": secrets, **({"domains": domains} if domains is not None else {})}
        return Call("POST", "/v1/credentials", json=body, params={"tenant": tenant}, answer=CredentialInfo)

    @staticmethod
    def credentials(name: str | None = None, tenant: str | None = None) -> Call:
        if name is None:
            return Call("GET", "/v1/credentials", params={"tenant": tenant}, answer=list[CredentialInfo])
        return Call("GET", f"/v1/credentials/{_q(name)}", params={"tenant": tenant}, answer=CredentialInfo)

    @staticmethod
    def delete_credentials(name: str, tenant: str | None) -> Call:
        return Call("DELETE", f"/v1/credentials/{_q(name)}", params={"tenant": tenant})

    @staticmethod
    def export_profile(name: str) -> Call:
        return Call("GET", f"/v1/profiles/{_q(name)}", answer=StorageState)

    @staticmethod
    def delete_profile(name: str) -> Call:
        return Call("DELETE", f"/v1/profiles/{_q(name)}")

    @staticmethod
    def save_recipe(job_id: str, name: str, params: dict[str, str] | None) -> Call:
        body: dict[str, Any] = {"name": name, **({"params": params} if params is not None else {})}
        return Call("POST", f"/v1/jobs/{_q(job_id)}/recipe", json=body, answer=RecipeInfo)

    @staticmethod
    def recipes(tenant: str | None = None) -> Call:
        return Call("GET", "/v1/recipes", params={"tenant": tenant}, answer=list[RecipeInfo])

    @staticmethod
    def recipe(name: str, version: int | None = None) -> Call:
        return Call("GET", f"/v1/recipes/{_q(name)}", params={"version": version}, answer=RecipeInfo)

    @staticmethod
    def delete_recipe(name: str) -> Call:
        return Call("DELETE", f"/v1/recipes/{_q(name)}")

    @staticmethod
    def tenants() -> Call:
        return Call("GET", "/v1/tenants", answer=TenantList)

    @staticmethod
    def create_tenant(name: str, limits: BaseModel | dict[str, Any] | None) -> Call:
        return Call("POST", "/v1/tenants", json={"name": name, "limits": _spec(limits or {})}, answer=TenantKey)

    @staticmethod
    def tenant(name: str, action: str = "") -> Call:
        """'' (get), rotate (a new key), revoke."""
        path = f"/v1/tenants/{_q(name)}"
        if action == "rotate":
            return Call("POST", path + "/rotate", answer=TenantKey)
        return Call("POST" if action else "GET", path + (f"/{action}" if action else ""), answer=TenantInfo)

    @staticmethod
    def tenant_limits(name: str, limits: BaseModel | dict[str, Any]) -> Call:
        return Call("PUT", f"/v1/tenants/{_q(name)}/limits", json=_spec(limits), answer=TenantInfo)

    @staticmethod
    def tenant_usage(name: str) -> Call:
        return Call("GET", f"/v1/tenants/{_q(name)}/usage", answer=TenantUsage)

    @staticmethod
    def readyz() -> Call:
        return Call("GET", "/readyz", answer=dict[str, Any])


class SessionCalls:
    """The interactive session calls (``/v1/sessions``), described once for both clients."""

    @staticmethod
    def open(options: dict[str, Any]) -> Call:
        return Call("POST", "/v1/sessions", json={k: v for k, v in options.items() if v is not None},
                    timeout=SESSION_OPEN_TIMEOUT, answer=SessionRecord)

    @staticmethod
    def list() -> Call:
        return Call("GET", "/v1/sessions", answer=SessionList)

    @staticmethod
    def get(session_id: str) -> Call:
        return Call("GET", f"/v1/sessions/{_q(session_id)}", answer=SessionRecord)

    @staticmethod
    def command(session_id: str, name: str, body: dict[str, Any]) -> Call:
        """navigate, click, type, select, scroll: POSTed, answered with the action's result."""
        return Call("POST", f"/v1/sessions/{_q(session_id)}/{name}", json={k: v for k, v in body.items() if v is not None},
                    timeout=SESSION_COMMAND_TIMEOUT, answer=CommandResult)

    @staticmethod
    def state(session_id: str, text: bool) -> Call:
        return Call("GET", f"/v1/sessions/{_q(session_id)}/state", params={"text": str(text).lower()},
                    timeout=SESSION_COMMAND_TIMEOUT, answer=SessionView)

    @staticmethod
    def screenshot(session_id: str) -> Call:
        return Call("GET", f"/v1/sessions/{_q(session_id)}/screenshot", timeout=SESSION_COMMAND_TIMEOUT)

    @staticmethod
    def tabs(session_id: str) -> Call:
        return Call("GET", f"/v1/sessions/{_q(session_id)}/tabs", timeout=SESSION_COMMAND_TIMEOUT, answer=TabList)

    @staticmethod
    def close(session_id: str) -> Call:
        return Call("DELETE", f"/v1/sessions/{_q(session_id)}", timeout=SESSION_COMMAND_TIMEOUT, answer=CommandResult)


def _session_options(start_url: str | None, allowed_networks: list[str] | None, idle_timeout: float | None,
                     viewport: Viewport | tuple[int, int] | None, allowed_domains: list[str] | None = None,
                     denied_domains: list[str] | None = None) -> dict[str, Any]:
    """The body of ``POST /v1/sessions``; a (width, height) pair is sent unchecked, as given, for the
    server to judge (422 naming the field)."""
    if isinstance(viewport, Viewport):
        size: dict[str, int] | None = viewport.model_dump()
    else:
        size = {"width": viewport[0], "height": viewport[1]} if viewport else None
    return {"start_url": start_url, "allowed_networks": allowed_networks, "allowed_domains": allowed_domains,
            "denied_domains": denied_domains, "idle_timeout": idle_timeout,
            "viewport": size}


def batch_body(jobs: list[BaseModel | dict[str, Any]], defaults: dict[str, Any] | None,
               webhook_url: str | None) -> bytes:
    body: dict[str, Any] = {"jobs": [_spec(j) for j in jobs], "defaults": defaults or {}}
    if webhook_url:
        body["webhook_url"] = webhook_url
    return json.dumps(body).encode()


class SseParser:
    """Server-sent events from lines; ``feed`` returns the event a blank line completes."""

    def __init__(self) -> None:
        self.kind, self.id, self.data = "message", "", []  # type: ignore[var-annotated]

    def feed(self, line: str) -> JobEvent | None:
        if line.startswith("event:"):
            self.kind = line[6:].strip()
        elif line.startswith("id:"):
            self.id = line[3:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].strip())
        elif not line and self.data:
            event = JobEvent(id=self.id, type=self.kind, data=json.loads("\n".join(self.data)))
            self.kind, self.id, self.data = "message", "", []
            return event
        return None


def is_final(record: JobRecord) -> bool:
    """The kernel's rule (``FINAL_STATES``), so a client never stops following a job the workers still run."""
    return record.state in FINAL_STATES


def live_count(readyz: dict[str, Any] | None) -> int:
    """``/readyz``'s worker count; an API that is not ready (no worker, Redis down) counts none."""
    return int((readyz or {}).get("workers") or 0)


def result_line(raw: str) -> ResultLine:
    return ResultLine.model_validate_json(raw)


def artifact_target(folder: str | Path, name: str) -> Path:
    """Where ``save_artifacts`` writes artifact ``name``: in ``folder`` (created), never outside it."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    return out / Path(name).name


RETRYABLE = (httpx.TransportError, ApiUnreachable, RequestRefused)  # what ``Reconnect.failed`` may forgive


class Reconnect:
    """How ``follow`` resumes a job's event stream, one rule for both clients (only how they sleep
    differs): always from the last event id seen (``Last-Event-ID``); ``RECONNECT_PAUSE`` after a
    stream that ended before the job was final; after a failure to reach the API a pause that
    doubles up to ``RECONNECT_MAX``, back to the start once events flow again."""

    def __init__(self, after: str | None) -> None:
        self.last, self.delay = after, RECONNECT_PAUSE

    def passes(self, event: JobEvent) -> bool:
        """True for an event to hand on (its id is where to resume); False for the stream's end."""
        if event.type == EventType.end:
            return False
        self.last, self.delay = event.id or self.last, RECONNECT_PAUSE
        return True

    def ended(self, record: JobRecord) -> float | None:
        """After a stream closed: None when the job is final, else the pause before resuming it."""
        return None if is_final(record) else RECONNECT_PAUSE

    def failed(self, exc: Exception) -> float:
        """The pause before trying again; re-raises a refusal that retrying cannot change."""
        if isinstance(exc, RequestRefused) and exc.status not in RETRY_STATUSES:
            raise exc
        pause, self.delay = self.delay, min(self.delay * 2, RECONNECT_MAX)
        return pause


def unreachable(base_url: str, exc: Exception) -> ApiUnreachable:
    return ApiUnreachable(f"cannot reach the API at {base_url}: {exc}; is 'browserd serve' running, "
                          "and is BROWSERD_API_URL right?")


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _settings_url_token(base_url: str | None, token: str | None) -> tuple[str, str | None]:
    if base_url is not None:
        return base_url.rstrip("/"), token
    settings = load_settings()
    default = settings.api_token.get_secret_value() if settings.api_token else None
    return api_url(settings), token if token is not None else default


class Client:
    """The blocking client; use it as a context manager or call ``close()``."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 30.0) -> None:
        self.base_url, token = _settings_url_token(base_url, token)
        self.timeout = timeout
        self.http = httpx.Client(base_url=self.base_url, headers=_headers(token), timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, call: Call, *, stream: bool = False) -> httpx.Response:
        try:
            response = self.http.send(call.build(self.http, self.timeout), stream=stream)
        except httpx.TransportError as exc:
            raise unreachable(self.base_url, exc) from None
        if response.is_error:
            raw = response.read()
            response.close()
            raise refused(response, raw)
        return response

    def _call(self, call: Call) -> Any:
        return call.parse(self._send(call))

    # --- jobs ------------------------------------------------------------------------------

    def submit(self, spec: BaseModel | dict[str, Any]) -> SubmittedJob:
        """Queue a job spec (a ``JobSpec`` or a dict); ``created`` is False for a known idempotency key."""
        return self._call(Calls.submit(spec))

    def get(self, job_id: str) -> JobRecord:
        return self._call(Calls.get(job_id))

    def cancel(self, job_id: str) -> JobRecord:
        return self._call(Calls.cancel(job_id))

    def given_up_webhooks(self, limit: int = 100) -> list[GivenUpDelivery]:
        """Webhook deliveries given up after their last retry, newest first."""
        return self._call(Calls.given_up(limit))

    def redeliver_webhook(self, delivery_id: str) -> GivenUpDelivery:
        """Queue one given-up delivery again (same delivery id)."""
        return self._call(Calls.redeliver(delivery_id))

    def redeliver_webhooks(self) -> int:
        """Queue every given-up delivery again; how many."""
        return self._call(Calls.redeliver(None))["redelivered"]

    def artifacts(self, job_id: str) -> list[ArtifactLink]:
        """The job's artifacts (screenshots, final page, logs, downloads, large data)."""
        return self._call(Calls.artifacts(job_id))

    def artifact(self, job_id: str, name: str) -> bytes:
        return self._send(Calls.artifact(job_id, name)).content

    def save_artifacts(self, job_id: str, folder: str | Path) -> list[Path]:
        """Download every artifact of the job into ``folder`` (created if needed), streamed to disk."""
        saved = []
        for link in self.artifacts(job_id):
            target = artifact_target(folder, link.name)
            with closing(self._send(Calls.artifact(job_id, link.name), stream=True)) as response, \
                    open(target, "wb") as fh:
                for chunk in response.iter_bytes():
                    fh.write(chunk)
            saved.append(target)
        return saved

    def pause(self, job_id: str) -> JobRecord:
        """Stop a running job before its next step; it keeps its browser until resumed (or its pause limit)."""
        return self._call(Calls.steer(job_id, "pause"))

    def resume(self, job_id: str) -> JobRecord:
        return self._call(Calls.steer(job_id, "resume"))

    def hand_back(self, job_id: str) -> JobRecord:
        """A human is done with a job waiting for one (request_human): it goes on with its next step."""
        return self._call(Calls.steer(job_id, "hand-back"))

    def send_input(self, job_id: str, name: str, value: str) -> JobRecord:
        """Push a value (a code that came by SMS or e-mail) to a running job: the agent types it as
        <secret>name</secret>, never seeing it; a job waiting for a human goes on with it."""
        return self._call(Calls.job_input(job_id, name, value))

    def follow_up(self, job_id: str, task: str) -> FollowUpAccepted:
        """Run ``task`` in a finished job's kept session (``options.keep_session``); then
        ``wait(job_id, after=accepted.last_event_id)`` for its result."""
        return self._call(Calls.follow_up(job_id, task))

    def jobs(self, *, state: str | None = None, labels: dict[str, str] | None = None, limit: int = 50,
             cursor: int | None = None, schedule: str | None = None, tenant: str | None = None) -> JobPage:
        """A page of jobs, newest first; ``schedule`` (an id) keeps the jobs its runs created;
        ``tenant`` (the admin's filter) one tenant's (a tenant's key lists only its own anyway)."""
        return self._call(Calls.jobs(state, labels, limit, cursor, schedule, tenant))

    def events(self, job_id: str, *, follow: bool = True, last_event_id: str | None = None) -> Iterator[JobEvent]:
        """The job's events as they come; the stream ends with an event of type ``end``."""
        response = self._send(Calls.events(job_id, follow, last_event_id), stream=True)
        parser = SseParser()
        try:
            for line in response.iter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event
                    if event.type == EventType.end:
                        return
        finally:
            response.close()

    def follow(self, job_id: str, after: str | None = None) -> Iterator[JobEvent]:
        """Every event of the job (after event id ``after``) until it is final, however long it stays
        silent: a stream that breaks or times out is resumed from the last event seen
        (``Last-Event-ID``), and an API that cannot be reached (or answers 502/503/504 while it
        restarts) is tried again with backoff."""
        policy = Reconnect(after)
        while True:
            try:
                with closing(self.events(job_id, last_event_id=policy.last)) as stream:
                    yield from (event for event in stream if policy.passes(event))
                if (pause := policy.ended(self.get(job_id))) is None:
                    return
            except RETRYABLE as exc:
                pause = policy.failed(exc)
            time.sleep(pause)

    def wait(self, job_id: str, after: str | None = None) -> JobRecord:
        """Block until the job is final (``succeeded``, ``failed`` or ``cancelled``); returns its record.
        ``after``: an event id to follow from (a follow-up's ``last_event_id``)."""
        for _ in self.follow(job_id, after):
            pass
        return self.get(job_id)

    # --- batches ---------------------------------------------------------------------------

    def submit_batch(self, jobs: list[BaseModel | dict[str, Any]] | bytes, *, defaults: dict[str, Any] | None = None,
                     webhook_url: str | None = None) -> BatchRecord:
        """Queue many jobs at once: specs (with shared ``defaults``), or a body as is (JSON or JSONL)."""
        body = jobs if isinstance(jobs, bytes) else batch_body(jobs, defaults, webhook_url)
        return self._call(Calls.submit_batch(body))

    def batch(self, batch_id: str) -> BatchRecord:
        return self._call(Calls.batch(batch_id))

    def cancel_batch(self, batch_id: str) -> BatchRecord:
        return self._call(Calls.batch(batch_id, "cancel"))

    def batches(self, *, limit: int = 50, before: float | None = None) -> list[BatchRecord]:
        """Recent batches, newest first."""
        return self._call(Calls.batches(limit, before))

    def live_workers(self) -> int:
        """Workers whose heartbeat is fresh (0 when none is, or Redis is down: ``/readyz``)."""
        try:
            return live_count(self._call(Calls.readyz()))
        except RequestRefused:
            return 0

    def results(self, batch_id: str) -> Iterator[ResultLine]:
        """One line per job, in submission order."""
        for raw in self.result_lines(batch_id):
            yield result_line(raw)

    def result_lines(self, batch_id: str) -> Iterator[str]:
        """The results as the API sends them: JSON text, one job per line."""
        response = self._send(Calls.results(batch_id), stream=True)
        try:
            yield from (line for line in response.iter_lines() if line)
        finally:
            response.close()

    def wait_batch(self, batch_id: str, interval: float = 1.0) -> BatchRecord:
        while not (record := self.batch(batch_id)).finished:
            time.sleep(interval)
        return record

    # --- crawls ---------------------------------------------------------------------------

    def start_crawl(self, spec: CrawlSpec | dict[str, Any]) -> CrawlRecord:
        """Start a crawl (``CrawlSpec``): its start URLs and sitemaps' pages, then the links in scope."""
        return self._call(Calls.start_crawl(spec))

    def crawls(self, *, limit: int = 50, before: float | None = None) -> list[CrawlRecord]:
        """Recent crawls, newest first (a tenant's key: its own)."""
        return self._call(Calls.crawls(limit, before))

    def crawl(self, crawl_id: str) -> CrawlRecord:
        return self._call(Calls.crawl(crawl_id))

    def cancel_crawl(self, crawl_id: str) -> CrawlRecord:
        return self._call(Calls.crawl(crawl_id, "cancel"))

    def resume_crawl(self, crawl_id: str) -> CrawlRecord:
        """Resume a cancelled crawl from where it stopped (a completed one: 409)."""
        return self._call(Calls.crawl(crawl_id, "resume"))

    def crawl_results(self, crawl_id: str, *, offset: int = 0, limit: int | None = None) -> Iterator[CrawlLine]:
        """One line per page queued, in the order they were queued (``limit`` of them after ``offset``)."""
        response = self._send(Calls.crawl_results(crawl_id, offset, limit), stream=True)
        try:
            yield from (CrawlLine.model_validate_json(line) for line in response.iter_lines() if line)
        finally:
            response.close()

    def wait_crawl(self, crawl_id: str, interval: float = 1.0) -> CrawlRecord:
        while (record := self.crawl(crawl_id)).finished_at is None:
            time.sleep(interval)
        return record

    # --- schedules -------------------------------------------------------------------------

    def schedules(self) -> list[Schedule]:
        return self._call(Calls.schedules())

    def create_schedule(self, spec: BaseModel | dict[str, Any]) -> Schedule:
        return self._call(Calls.create_schedule(spec))

    def schedule(self, schedule_id: str, action: str = "") -> Any:
        """'' (get), pause, resume (-> ``Schedule``), run (-> ``BatchRecord``), runs (-> batches), delete."""
        return self._call(Calls.schedule(schedule_id, action))

    def schedule_changes(self, schedule_id: str, since: datetime | float | None = None,
                         limit: int | None = None) -> list[RunChanges]:
        """What each run of the schedule changed against the run before it, oldest first (those
        compared after ``since``: a datetime or epoch seconds); at most ``limit`` of the newest."""
        return self._call(Calls.schedule_changes(schedule_id, since, limit))

    # --- interactive sessions ----------------------------------------------------------------

    def open_session(self, start_url: str | None = None, *, allowed_networks: list[str] | None = None,
                     idle_timeout: float | None = None, viewport: Viewport | tuple[int, int] | None = None,
                     allowed_domains: list[str] | None = None, denied_domains: list[str] | None = None,
                     ) -> SessionRecord:
        """Lease a browser context on a worker and open ``start_url`` in it; returns once it is open.
        ``viewport`` is the size of its tabs: a ``Viewport``, or (width, height)."""
        return self._call(SessionCalls.open(_session_options(start_url, allowed_networks, idle_timeout, viewport,
                                                             allowed_domains, denied_domains)))

    def sessions(self) -> list[SessionRecord]:
        return self._call(SessionCalls.list()).sessions

    def session(self, session_id: str) -> SessionRecord:
        return self._call(SessionCalls.get(session_id))

    def navigate(self, session_id: str, url: str) -> CommandResult:
        return self._call(SessionCalls.command(session_id, "navigate", {"url": url}))

    def get_state(self, session_id: str, *, text: bool = False) -> SessionView:
        """The element index (and with ``text`` the readable text) the navigator would see, wrapped as untrusted."""
        return self._call(SessionCalls.state(session_id, text))

    def click(self, session_id: str, index: int) -> CommandResult:
        return self._call(SessionCalls.command(session_id, "click", {"index": index}))

    def type_text(self, session_id: str, index: int, text: str) -> CommandResult:
        return self._call(SessionCalls.command(session_id, "type", {"index": index, "text": text}))

    def select(self, session_id: str, index: int, option: str) -> CommandResult:
        return self._call(SessionCalls.command(session_id, "select", {"index": index, "option": option}))

    def scroll(self, session_id: str, direction: str | None = None, *, text: str | None = None) -> CommandResult:
        """One screen ``up`` or ``down``, or to ``text``."""
        return self._call(SessionCalls.command(session_id, "scroll", {"direction": direction, "text": text}))

    def screenshot(self, session_id: str) -> bytes:
        """A JPEG of the current tab."""
        return self._send(SessionCalls.screenshot(session_id)).content

    def tabs(self, session_id: str) -> TabList:
        return self._call(SessionCalls.tabs(session_id))

    def close_session(self, session_id: str) -> CommandResult:
        return self._call(SessionCalls.close(session_id))
    # --- auth profiles ---------------------------------------------------------------------

    def put_profile(self, name: str, state: BaseModel | dict[str, Any], *, if_version: int | None = None) -> ProfileInfo:
        """Create or replace a profile from a Playwright storage state (a ``StorageState`` or its dict)."""
        return self._call(Calls.put_profile(name, state, if_version))

    def profiles(self, *, tenant: str | None = None) -> list[ProfileInfo]:
        """Your profiles (the admin's: everyone's, or ``tenant``'s)."""
        return self._call(Calls.profiles(tenant))

    def export_profile(self, name: str) -> StorageState:
        """The profile's storage state, in Playwright's format (``.model_dump(exclude_none=True)``)."""
        return self._call(Calls.export_profile(name))

    def delete_profile(self, name: str) -> None:
        self._call(Calls.delete_profile(name))

    # --- credential sets -------------------------------------------------------------------

    def put_credentials(self, name: str, secrets: dict[str, str], *, domains: list[str] | None = None,
                        tenant: str | None = None) -> CredentialInfo:
        """Create or replace a credential set (values sealed; never shown again); ``domains``: where its
        secrets may be typed (None: anywhere). ``tenant``: the admin's, for a tenant's set."""
        return self._call(Calls.put_credentials(name, secrets, domains, tenant))

    def credentials(self, *, tenant: str | None = None) -> list[CredentialInfo]:
        """Your sets' names, secret names and domains (the admin's: everyone's, or ``tenant``'s); never a value."""
        return self._call(Calls.credentials(None, tenant))

    def credential(self, name: str, *, tenant: str | None = None) -> CredentialInfo:
        return self._call(Calls.credentials(name, tenant))

    def delete_credentials(self, name: str, *, tenant: str | None = None) -> None:
        self._call(Calls.delete_credentials(name, tenant))

    # --- tenants (the admin's) -------------------------------------------------------------

    def tenants(self) -> list[TenantInfo]:
        """Every tenant (never a key); the admin's token only."""
        return self._call(Calls.tenants()).tenants

    def create_tenant(self, name: str, *, limits: BaseModel | dict[str, Any] | None = None) -> TenantKey:
        """A tenant and its key (``.key``: shown only now); ``limits`` (``TenantLimits``) bound its jobs."""
        return self._call(Calls.create_tenant(name, limits))

    def tenant(self, name: str) -> TenantInfo:
        return self._call(Calls.tenant(name))

    def rotate_tenant(self, name: str) -> TenantKey:
        """A new key for the tenant; the old one fails at once."""
        return self._call(Calls.tenant(name, "rotate"))

    def revoke_tenant(self, name: str) -> TenantInfo:
        """The tenant's key fails at once everywhere; its objects stay."""
        return self._call(Calls.tenant(name, "revoke"))

    def set_tenant_limits(self, name: str, limits: BaseModel | dict[str, Any]) -> TenantInfo:
        """Replace the tenant's ceilings and quotas (``TenantLimits``); its key stays."""
        return self._call(Calls.tenant_limits(name, limits))

    def tenant_usage(self, name: str) -> TenantUsage:
        """What the tenant uses now, beside its quotas."""
        return self._call(Calls.tenant_usage(name))

    # --- recipes ---------------------------------------------------------------------------

    def save_recipe(self, job_id: str, name: str, params: dict[str, str] | None = None) -> RecipeInfo:
        """Save a succeeded agent job as recipe ``name`` (a new version if it exists); ``params`` maps
        each parameter's name to the value the job used (None: inferred from the task's quotes)."""
        return self._call(Calls.save_recipe(job_id, name, params))

    def recipes(self, *, tenant: str | None = None) -> list[RecipeInfo]:
        """Your recipes (the admin's: everyone's, or ``tenant``'s)."""
        return self._call(Calls.recipes(tenant))

    def recipe(self, name: str, version: int | None = None) -> RecipeInfo:
        return self._call(Calls.recipe(name, version))

    def delete_recipe(self, name: str) -> None:
        self._call(Calls.delete_recipe(name))


class AsyncClient:
    """The asyncio client: every method of ``Client``, with the same meaning, awaited (and async
    iterators where ``Client`` returns iterators); the calls, parsing and retry rules are the shared
    ones above. ``transport`` reaches an API in process (``httpx.ASGITransport(app)``, as the MCP
    server mounted on the API does)."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 30.0, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url, token = _settings_url_token(base_url, token)
        self.timeout = timeout
        self.http = httpx.AsyncClient(base_url=self.base_url, headers=_headers(token), timeout=timeout,
                                      transport=transport)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.http.aclose()

    async def _send(self, call: Call, *, stream: bool = False) -> httpx.Response:
        try:
            response = await self.http.send(call.build(self.http, self.timeout), stream=stream)
        except httpx.TransportError as exc:
            raise unreachable(self.base_url, exc) from None
        if response.is_error:
            raw = await response.aread()
            await response.aclose()
            raise refused(response, raw)
        return response

    async def _call(self, call: Call) -> Any:
        return call.parse(await self._send(call))

    async def submit(self, spec: BaseModel | dict[str, Any]) -> SubmittedJob:
        return await self._call(Calls.submit(spec))

    async def get(self, job_id: str) -> JobRecord:
        return await self._call(Calls.get(job_id))

    async def cancel(self, job_id: str) -> JobRecord:
        return await self._call(Calls.cancel(job_id))

    async def given_up_webhooks(self, limit: int = 100) -> list[GivenUpDelivery]:
        return await self._call(Calls.given_up(limit))

    async def redeliver_webhook(self, delivery_id: str) -> GivenUpDelivery:
        return await self._call(Calls.redeliver(delivery_id))

    async def redeliver_webhooks(self) -> int:
        return (await self._call(Calls.redeliver(None)))["redelivered"]

    async def artifacts(self, job_id: str) -> list[ArtifactLink]:
        """The job's artifacts (screenshots, final page, logs, downloads, large data)."""
        return await self._call(Calls.artifacts(job_id))

    async def artifact(self, job_id: str, name: str) -> bytes:
        return (await self._send(Calls.artifact(job_id, name))).content

    async def save_artifacts(self, job_id: str, folder: str | Path) -> list[Path]:
        saved = []
        for link in await self.artifacts(job_id):
            target = artifact_target(folder, link.name)
            async with aclosing(await self._send(Calls.artifact(job_id, link.name), stream=True)) as response:
                with open(target, "wb") as fh:
                    async for chunk in response.aiter_bytes():
                        fh.write(chunk)
            saved.append(target)
        return saved

    async def pause(self, job_id: str) -> JobRecord:
        return await self._call(Calls.steer(job_id, "pause"))

    async def resume(self, job_id: str) -> JobRecord:
        return await self._call(Calls.steer(job_id, "resume"))

    async def hand_back(self, job_id: str) -> JobRecord:
        return await self._call(Calls.steer(job_id, "hand-back"))

    async def send_input(self, job_id: str, name: str, value: str) -> JobRecord:
        return await self._call(Calls.job_input(job_id, name, value))

    async def follow_up(self, job_id: str, task: str) -> FollowUpAccepted:
        return await self._call(Calls.follow_up(job_id, task))

    async def jobs(self, *, state: str | None = None, labels: dict[str, str] | None = None, limit: int = 50,
                   cursor: int | None = None, schedule: str | None = None, tenant: str | None = None) -> JobPage:
        return await self._call(Calls.jobs(state, labels, limit, cursor, schedule, tenant))

    async def events(self, job_id: str, *, follow: bool = True,
                     last_event_id: str | None = None) -> AsyncIterator[JobEvent]:
        response = await self._send(Calls.events(job_id, follow, last_event_id), stream=True)
        parser = SseParser()
        try:
            async for line in response.aiter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event
                    if event.type == EventType.end:
                        return
        finally:
            await response.aclose()

    async def follow(self, job_id: str, after: str | None = None) -> AsyncIterator[JobEvent]:
        """``Client.follow``: every event until the job is final, across breaks (``Reconnect``)."""
        policy = Reconnect(after)
        while True:
            try:
                async with aclosing(self.events(job_id, last_event_id=policy.last)) as stream:
                    async for event in stream:
                        if policy.passes(event):
                            yield event
                if (pause := policy.ended(await self.get(job_id))) is None:
                    return
            except RETRYABLE as exc:
                pause = policy.failed(exc)
            await asyncio.sleep(pause)

    async def wait(self, job_id: str, after: str | None = None) -> JobRecord:
        async with aclosing(self.follow(job_id, after)) as events:
            async for _ in events:
                pass
        return await self.get(job_id)

    async def submit_batch(self, jobs: list[BaseModel | dict[str, Any]] | bytes, *,
                           defaults: dict[str, Any] | None = None, webhook_url: str | None = None) -> BatchRecord:
        body = jobs if isinstance(jobs, bytes) else batch_body(jobs, defaults, webhook_url)
        return await self._call(Calls.submit_batch(body))

    async def batch(self, batch_id: str) -> BatchRecord:
        return await self._call(Calls.batch(batch_id))

    async def cancel_batch(self, batch_id: str) -> BatchRecord:
        return await self._call(Calls.batch(batch_id, "cancel"))

    async def batches(self, *, limit: int = 50, before: float | None = None) -> list[BatchRecord]:
        return await self._call(Calls.batches(limit, before))

    async def live_workers(self) -> int:
        try:
            return live_count(await self._call(Calls.readyz()))
        except RequestRefused:
            return 0

    async def results(self, batch_id: str) -> AsyncIterator[ResultLine]:
        async with aclosing(self.result_lines(batch_id)) as lines:
            async for raw in lines:
                yield result_line(raw)

    async def result_lines(self, batch_id: str) -> AsyncIterator[str]:
        response = await self._send(Calls.results(batch_id), stream=True)
        try:
            async for line in response.aiter_lines():
                if line:
                    yield line
        finally:
            await response.aclose()

    async def wait_batch(self, batch_id: str, interval: float = 1.0) -> BatchRecord:
        while not (record := await self.batch(batch_id)).finished:
            await asyncio.sleep(interval)
        return record

    async def start_crawl(self, spec: CrawlSpec | dict[str, Any]) -> CrawlRecord:
        return await self._call(Calls.start_crawl(spec))

    async def crawls(self, *, limit: int = 50, before: float | None = None) -> list[CrawlRecord]:
        return await self._call(Calls.crawls(limit, before))

    async def crawl(self, crawl_id: str) -> CrawlRecord:
        return await self._call(Calls.crawl(crawl_id))

    async def cancel_crawl(self, crawl_id: str) -> CrawlRecord:
        return await self._call(Calls.crawl(crawl_id, "cancel"))

    async def resume_crawl(self, crawl_id: str) -> CrawlRecord:
        return await self._call(Calls.crawl(crawl_id, "resume"))

    async def crawl_results(self, crawl_id: str, *, offset: int = 0, limit: int | None = None
                            ) -> AsyncIterator[CrawlLine]:
        response = await self._send(Calls.crawl_results(crawl_id, offset, limit), stream=True)
        try:
            async for line in response.aiter_lines():
                if line:
                    yield CrawlLine.model_validate_json(line)
        finally:
            await response.aclose()

    async def wait_crawl(self, crawl_id: str, interval: float = 1.0) -> CrawlRecord:
        while (record := await self.crawl(crawl_id)).finished_at is None:
            await asyncio.sleep(interval)
        return record

    async def schedules(self) -> list[Schedule]:
        return await self._call(Calls.schedules())

    async def create_schedule(self, spec: BaseModel | dict[str, Any]) -> Schedule:
        return await self._call(Calls.create_schedule(spec))

    async def schedule(self, schedule_id: str, action: str = "") -> Any:
        return await self._call(Calls.schedule(schedule_id, action))

    async def schedule_changes(self, schedule_id: str, since: datetime | float | None = None,
                               limit: int | None = None) -> list[RunChanges]:
        return await self._call(Calls.schedule_changes(schedule_id, since, limit))

    # --- interactive sessions ----------------------------------------------------------------

    async def open_session(self, start_url: str | None = None, *, allowed_networks: list[str] | None = None,
                           idle_timeout: float | None = None, viewport: Viewport | tuple[int, int] | None = None,
                           allowed_domains: list[str] | None = None, denied_domains: list[str] | None = None,
                           ) -> SessionRecord:
        return await self._call(SessionCalls.open(_session_options(start_url, allowed_networks, idle_timeout,
                                                                   viewport, allowed_domains, denied_domains)))

    async def sessions(self) -> list[SessionRecord]:
        return (await self._call(SessionCalls.list())).sessions

    async def session(self, session_id: str) -> SessionRecord:
        return await self._call(SessionCalls.get(session_id))

    async def navigate(self, session_id: str, url: str) -> CommandResult:
        return await self._call(SessionCalls.command(session_id, "navigate", {"url": url}))

    async def get_state(self, session_id: str, *, text: bool = False) -> SessionView:
        return await self._call(SessionCalls.state(session_id, text))

    async def click(self, session_id: str, index: int) -> CommandResult:
        return await self._call(SessionCalls.command(session_id, "click", {"index": index}))

    async def type_text(self, session_id: str, index: int, text: str) -> CommandResult:
        return await self._call(SessionCalls.command(session_id, "type", {"index": index, "text": text}))

    async def select(self, session_id: str, index: int, option: str) -> CommandResult:
        return await self._call(SessionCalls.command(session_id, "select", {"index": index, "option": option}))

    async def scroll(self, session_id: str, direction: str | None = None, *, text: str | None = None) -> CommandResult:
        return await self._call(SessionCalls.command(session_id, "scroll", {"direction": direction, "text": text}))

    async def screenshot(self, session_id: str) -> bytes:
        return (await self._send(SessionCalls.screenshot(session_id))).content

    async def tabs(self, session_id: str) -> TabList:
        return await self._call(SessionCalls.tabs(session_id))

    async def close_session(self, session_id: str) -> CommandResult:
        return await self._call(SessionCalls.close(session_id))
    async def put_profile(self, name: str, state: BaseModel | dict[str, Any], *,
                          if_version: int | None = None) -> ProfileInfo:
        return await self._call(Calls.put_profile(name, state, if_version))

    async def profiles(self, *, tenant: str | None = None) -> list[ProfileInfo]:
        return await self._call(Calls.profiles(tenant))

    async def export_profile(self, name: str) -> StorageState:
        return await self._call(Calls.export_profile(name))

    async def delete_profile(self, name: str) -> None:
        await self._call(Calls.delete_profile(name))

    async def put_credentials(self, name: str, secrets: dict[str, str], *, domains: list[str] | None = None,
                              tenant: str | None = None) -> CredentialInfo:
        return await self._call(Calls.put_credentials(name, secrets, domains, tenant))

    async def credentials(self, *, tenant: str | None = None) -> list[CredentialInfo]:
        return await self._call(Calls.credentials(None, tenant))

    async def credential(self, name: str, *, tenant: str | None = None) -> CredentialInfo:
        return await self._call(Calls.credentials(name, tenant))

    async def delete_credentials(self, name: str, *, tenant: str | None = None) -> None:
        await self._call(Calls.delete_credentials(name, tenant))

    async def tenants(self) -> list[TenantInfo]:
        return (await self._call(Calls.tenants())).tenants

    async def create_tenant(self, name: str, *, limits: BaseModel | dict[str, Any] | None = None) -> TenantKey:
        return await self._call(Calls.create_tenant(name, limits))

    async def tenant(self, name: str) -> TenantInfo:
        return await self._call(Calls.tenant(name))

    async def rotate_tenant(self, name: str) -> TenantKey:
        return await self._call(Calls.tenant(name, "rotate"))

    async def revoke_tenant(self, name: str) -> TenantInfo:
        return await self._call(Calls.tenant(name, "revoke"))

    async def set_tenant_limits(self, name: str, limits: BaseModel | dict[str, Any]) -> TenantInfo:
        return await self._call(Calls.tenant_limits(name, limits))

    async def tenant_usage(self, name: str) -> TenantUsage:
        return await self._call(Calls.tenant_usage(name))

    async def save_recipe(self, job_id: str, name: str, params: dict[str, str] | None = None) -> RecipeInfo:
        return await self._call(Calls.save_recipe(job_id, name, params))

    async def recipes(self, *, tenant: str | None = None) -> list[RecipeInfo]:
        return await self._call(Calls.recipes(tenant))

    async def recipe(self, name: str, version: int | None = None) -> RecipeInfo:
        return await self._call(Calls.recipe(name, version))

    async def delete_recipe(self, name: str) -> None:
        await self._call(Calls.delete_recipe(name))
