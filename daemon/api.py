"""The HTTP API (``browserd serve``): submit, inspect, follow, cancel and list jobs.

Every ``/v1`` route needs ``Authorization: Bearer $BROWSERD_API_TOKEN`` when a token is set;
``/healthz`` and ``/readyz`` never do. The OpenAPI schema is at ``/openapi.json`` (docs: ``/docs``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from config import Settings, get_settings
from daemon import errors
from daemon.errors import ApiError, ErrorBody, invalid
from daemon.records import JobEvent, JobRecord
from daemon.store import LIST_LIMIT_MAX, JobStore, connect
from workers.models import JobSpec, JobStatus

log = logging.getLogger("browserd.api")

WORKER_FRESH_SECONDS = 10.0  # a worker heartbeat younger than this counts as reachable
SSE_BLOCK_MS = 5000  # longest silence on an event stream before a keep-alive comment


class SubmitResponse(JobRecord):
    created: bool = Field(description="False when the idempotency key matched an existing job.")


class JobPage(BaseModel):
    jobs: list[JobRecord]
    next_cursor: int | None = Field(None, description="Pass as ?cursor= for the next (older) page.")


class Health(BaseModel):
    status: str
    workers: int | None = None


ERRORS = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    404: {"model": ErrorBody, "description": "No such job."},
    422: {"model": ErrorBody, "description": "Invalid request; `fields` names each bad field."},
}

bearer = HTTPBearer(auto_error=False, description="The value of BROWSERD_API_TOKEN.")


def require_token(request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
    expected = request.app.state.settings.api_token
    if expected is None:
        return
    given = creds.credentials if creds else ""
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        raise ApiError(
            401, "unauthorized", "missing or wrong bearer token: send 'Authorization: Bearer <BROWSERD_API_TOKEN>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


def store_of(request: Request) -> JobStore:
    return request.app.state.store


Store = Annotated[JobStore, Depends(store_of)]
router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], responses=ERRORS)


def max_steps_of(spec: JobSpec, settings: Settings) -> int:
    if spec.script is not None:
        return len(spec.script)
    return spec.options.max_steps or settings.max_steps


def check_spec(spec: JobSpec, settings: Settings) -> JobSpec:
    """What pydantic cannot check alone: the script's actions, and a timeout the queue can honour."""
    from workers.celery_app import max_job_timeout

    if spec.timeout is not None and spec.timeout > max_job_timeout(settings):
        raise invalid("timeout", f"at most {max_job_timeout(settings):g} seconds here "
                      "(BROWSERD_VISIBILITY_TIMEOUT bounds how long one job may run)")
    if spec.script is not None:
        from workers.agent import validate_script

        try:
            spec.script = validate_script(spec.script)
        except ValueError as exc:
            raise invalid("script", str(exc)) from None
    return spec


def _not_found(job_id: str, settings: Settings) -> ApiError:
    return ApiError(404, "not_found", f"no job with id {job_id!r} (finished jobs are kept "
                    f"{settings.result_ttl}s, BROWSERD_RESULT_TTL)")


@router.post("/jobs", status_code=201, response_model=SubmitResponse,
             responses={200: {"model": SubmitResponse, "description": "Existing job with this idempotency key."}})
async def submit_job(spec: JobSpec, request: Request, response: Response, store: Store) -> SubmitResponse:
    """Queue a job: an agent ``task`` or a ``script`` of actions. Same idempotency key, same job."""
    from workers.tasks import send_job

    settings: Settings = request.app.state.settings
    spec = check_spec(spec, settings)
    job_id, created = await store.create(spec, max_steps=max_steps_of(spec, settings))
    if created:
        try:
            await asyncio.to_thread(send_job, job_id, spec.priority, spec.timeout or settings.job_timeout)
        except Exception as exc:
            log.error("could not queue job %s: %s", job_id, exc)
            await store.cancel(job_id)
            raise ApiError(503, "unavailable", "the job could not be queued (the broker is unreachable); "
                           "check Redis and BROWSERD_REDIS_URL, then submit again") from None
    else:
        response.status_code = 200
    record = await store.get(job_id)
    if record is None:
        raise _not_found(job_id, settings)
    return SubmitResponse(**record.model_dump(), created=created)


@router.get("/jobs/{job_id}", response_model=JobRecord)
async def get_job(job_id: str, request: Request, store: Store) -> JobRecord:
    """A job's state, attempts, progress and, once finished, its result."""
    record = await store.get(job_id)
    if record is None:
        raise _not_found(job_id, request.app.state.settings)
    return record


@router.post("/jobs/{job_id}/cancel", status_code=202, response_model=JobRecord,
             responses={409: {"model": ErrorBody, "description": "The job already finished."}})
async def cancel_job(job_id: str, request: Request, store: Store) -> JobRecord:
    """Cancel: a queued job never starts; a running one stops before its next action."""
    outcome, state = await store.cancel(job_id)
    if outcome == "cancelled":  # it never started: no worker will count or report it
        from daemon.finishing import Finisher

        await Finisher(store).finished(job_id)
    if outcome == "missing":
        raise _not_found(job_id, request.app.state.settings)
    if outcome == "finished":
        raise ApiError(409, "conflict", f"job {job_id} already finished ({state}); there is nothing to cancel")
    record = await store.get(job_id)
    if record is None:
        raise _not_found(job_id, request.app.state.settings)
    return record


@router.get("/jobs", response_model=JobPage)
async def list_jobs(
    store: Store,
    state: JobStatus | None = None,
    label: Annotated[list[str], Query(description="k=v; repeat to require several labels")] = [],  # noqa: B006
    limit: Annotated[int, Query(ge=1, le=LIST_LIMIT_MAX)] = 50,
    cursor: Annotated[int | None, Query(ge=0)] = None,
) -> JobPage:
    """Jobs newest first, filtered by state and labels, a page at a time."""
    labels: dict[str, str] = {}
    for item in label:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise invalid("label", f"{item!r} is not key=value")
        labels[key] = value
    page = await store.list(state=state.value if state else None, labels=labels, limit=limit, cursor=cursor)
    return JobPage(jobs=page.jobs, next_cursor=page.next_cursor)


@router.get("/jobs/{job_id}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."}})
async def job_events(
    job_id: str,
    request: Request,
    store: Store,
    follow: bool = True,
    last_event_id: Annotated[str | None, Header(pattern=r"^\d+-\d+$")] = None,
) -> StreamingResponse:
    """The job's steps and state changes as server-sent events; with ``follow``, live until it ends.

    Each event has ``id`` (resume with ``Last-Event-ID``), ``event`` (``state``, ``step``,
    ``cancel_requested``) and JSON ``data``; a final ``end`` event closes the stream.
    """
    if await store.get(job_id) is None:
        raise _not_found(job_id, request.app.state.settings)
    return StreamingResponse(
        _sse(store, job_id, last_event_id or "0-0", follow, request),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _sse_event(event: JobEvent) -> str:
    return f"id: {event.id}\nevent: {event.type}\ndata: {json.dumps(event.data, separators=(',', ':'))}\n\n"


async def _sse(store: JobStore, job_id: str, after: str, follow: bool, request: Request) -> AsyncIterator[str]:
    while True:
        batch = await store.events(job_id, after, block_ms=SSE_BLOCK_MS if follow else None)
        for event in batch:
            yield _sse_event(event)
            after = event.id
            if event.final:
                yield "event: end\ndata: {}\n\n"
                return
        if batch:
            continue
        record = await store.get(job_id)
        if not follow or record is None or record.state.finished or await request.is_disconnected():
            yield "event: end\ndata: {}\n\n"
            return
        yield ": keep-alive\n\n"


health = APIRouter()


@health.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """The API process is up."""
    return Health(status="ok")


@health.get("/readyz", response_model=Health, responses={503: {"model": ErrorBody}})
async def readyz(store: Store) -> Health:
    """Redis answers and at least one worker sent a heartbeat recently."""
    try:
        await store.redis.ping()
    except Exception as exc:
        raise ApiError(503, "not_ready", f"Redis is unreachable ({type(exc).__name__}); check BROWSERD_REDIS_URL") from None
    workers = await store.live_workers(WORKER_FRESH_SECONDS)
    if not workers:
        raise ApiError(503, "not_ready", f"no worker sent a heartbeat in the last {WORKER_FRESH_SECONDS:g}s; "
                       "start one with 'browserd worker'")
    return Health(status="ready", workers=len(workers))


def create_app(settings: Settings | None = None) -> FastAPI:
    from workers.celery_app import broker_url, check_limits

    settings = settings or get_settings()
    broker_url(settings)
    check_limits(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        import workers.agent  # noqa: F401  (script validation; loaded now, not on the first request)
        import workers.tasks  # noqa: F401  (the Celery app that publishes jobs)

        app.state.store = JobStore(connect(settings.redis_url or ""), result_ttl=settings.result_ttl)
        try:
            yield
        finally:
            await app.state.store.redis.aclose()

    app = FastAPI(
        title="browserd",
        version="0.1.0",
        description="Run LLM browser agents at scale on pooled headless Chromium.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    errors.install(app)
    app.include_router(router)
    app.include_router(health)
    include_operations(app, settings)
    return app


def include_operations(app: FastAPI, settings: Settings) -> None:
    """Batches, schedules, and ``/metrics`` (outside bearer auth, like the health checks)."""
    from daemon import batch_api, schedule_api
    from daemon.metrics import MetricsApp

    app.include_router(batch_api.router)
    app.include_router(schedule_api.router)
    app.add_route("/metrics", MetricsApp.from_url(settings.redis_url or ""), include_in_schema=False)
