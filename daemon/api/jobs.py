"""``/v1/jobs``: submit, inspect, follow (server-sent events), cancel, pause, resume, hand back, send input,
follow up and list jobs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from config import Settings
from daemon.api.credentials import check_credentials, credential_store
from daemon.api.profiles import check_profiles, profile_store
from daemon.api.deps import ERRORS, Caller, Store, caller
from daemon.api.errors import ApiError, ErrorBody, invalid
from daemon.api.recipes import check_recipes, recipe_store
import workers.jobs.lifecycle.steering as steering
from workers.jobs.artifacts.names import NoSuchArtifact
from workers.jobs.artifacts.offload import ainline
from workers.jobs.artifacts.store import JobArtifacts
from workers.jobs.ids import is_id
from workers.jobs.lifecycle.cancelling import cancel_job as cancel_job_in
from workers.jobs.lifecycle.steering import SteerRefusal, SteerRefused
from workers.jobs.lifecycle.submission import submit_job as submit_to_queue
from workers.jobs.model.record import FollowUpAccepted, JobPage, JobRecord, SubmittedJob
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import FollowUpRequest, InputRequest, JobSpec
from workers.jobs.secrets.sealing import NO_KEY
from workers.jobs.model.status import JobStatus
from workers.jobs.specs.checks import check_spec
from workers.jobs.store.jobs import LIST_LIMIT_MAX, JobStore
from workers.jobs.store.outcomes import CancelOutcome
from workers.jobs.store.streams import sse
from workers.jobs.tenants.ceilings import tenant_ceiling
from workers.jobs.tenants.principal import Principal, resolve
from workers.jobs.tenants.store import TenantStore

log = logging.getLogger("browserd.api")


router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS)


def _not_found(job_id: str, settings: Settings) -> ApiError:
    return ApiError(404, "not_found", f"no job with id {job_id!r} (finished jobs are kept "
                    f"{settings.result_ttl}s, BROWSERD_RESULT_TTL)")


@router.post("/jobs", status_code=201, response_model=SubmittedJob,
             responses={200: {"model": SubmittedJob, "description": "Existing job with this idempotency key."},
                        503: {"model": ErrorBody, "description": "The broker is unreachable."}})
async def submit_job(spec: JobSpec, request: Request, response: Response, store: Store, who: Caller) -> SubmittedJob:
    """Queue a job: an agent ``task``, a ``script`` of actions or a saved ``recipe``. Same idempotency key, same job.
    A tenant's job is its own, within its ceilings (422 naming the one it asks past)."""
    settings: Settings = request.app.state.settings
    spec = check_spec(spec, settings, tenant_ceiling(who, settings))
    await check_credentials([spec], credential_store(request, store, who.tenant), batch=False)
    await check_profiles([spec], profile_store(request, store, who.tenant), batch=False)
    await check_recipes([spec], recipe_store(request, store, who.tenant), batch=False)
    made = await submit_to_queue(store, spec, settings, tenant=who.tenant)
    job_id, created = made.job_id, made.created
    if not created:
        response.status_code = 200
    record = await store.get(job_id)
    if record is None:
        raise _not_found(job_id, settings)
    return SubmittedJob(**dict(record), created=created)  # its fields as they are: read once, not re-validated


@router.get("/jobs/{job_id}", response_model=JobRecord)
async def get_job(job_id: str, request: Request, store: Store, who: Caller) -> JobRecord:
    """A job's state, attempts, progress and, once finished, its result (a result kept as an
    artifact because of its size, ``result.result_artifact``, is read back in; so is each run's,
    for a job with follow-ups)."""
    record = await owned_job(job_id, request, store, who)
    folder = request.app.state.artifacts.job(job_id)
    record.result = await _read_back(job_id, record.result, folder)
    for run in record.runs:
        run.result = await _read_back(job_id, run.result, folder)
    return record


async def _read_back(job_id: str, result: JobResult | None, folder: JobArtifacts) -> JobResult | None:
    if result is None or result.result_artifact is None:
        return result
    try:
        return await ainline(result, folder)
    except NoSuchArtifact:
        raise ApiError(410, "gone", f"job {job_id}'s result was stored as an artifact that no longer exists "
                       f"({result.result_artifact})") from None


@router.post("/jobs/{job_id}/cancel", status_code=202, response_model=JobRecord,
             responses={409: {"model": ErrorBody, "description": "The job already finished."}})
async def cancel_job(job_id: str, request: Request, store: Store, who: Caller) -> JobRecord:
    """Cancel: a queued job never starts; a running (or paused) one stops before its next action; a
    finished job's kept session (``options.keep_session``) is closed, freeing its browser."""
    await owned_job(job_id, request, store, who)
    done = await cancel_job_in(store, job_id)
    if done.outcome is CancelOutcome.missing:
        raise _not_found(job_id, request.app.state.settings)
    if done.outcome is CancelOutcome.finished:
        raise ApiError(409, "conflict", f"job {job_id} already finished ({done.state}); there is nothing to cancel")
    record = await store.get(job_id)
    if record is None:
        raise _not_found(job_id, request.app.state.settings)
    return record


def _refused(exc: SteerRefused, job_id: str, settings: Settings) -> ApiError:
    if exc.reason is SteerRefusal.missing:
        return _not_found(job_id, settings)
    return ApiError(409, "conflict", exc.message)


async def _current(job_id: str, request: Request, store: Store) -> JobRecord:
    record = await store.get(job_id)
    if record is None:
        raise _not_found(job_id, request.app.state.settings)
    return record


async def owned_job(job_id: str, request: Request, store: Store, who: Caller) -> JobRecord:
    """The job, if the caller may see it: another tenant's job answers 404 exactly like no job."""
    record = await store.get(job_id)
    if record is None or not who.sees(record.tenant):
        raise _not_found(job_id, request.app.state.settings)
    return record


STEER_ERRORS: dict[int | str, dict[str, object]] = {
    409: {"model": ErrorBody, "description": "The job's state does not allow it now; the message says why."}}


@router.post("/jobs/{job_id}/pause", status_code=202, response_model=JobRecord, responses=STEER_ERRORS)
async def pause_job(job_id: str, request: Request, store: Store, who: Caller) -> JobRecord:
    """Pause a running job: the agent stops before its next step, keeping its browser and history,
    until resumed, cancelled, or paused longer than BROWSERD_PAUSE_MAX_SECONDS (then it fails timeout)."""
    await owned_job(job_id, request, store, who)
    return await _steer(steering.pause, job_id, request, store)


@router.post("/jobs/{job_id}/resume", status_code=202, response_model=JobRecord, responses=STEER_ERRORS)
async def resume_job(job_id: str, request: Request, store: Store, who: Caller) -> JobRecord:
    """Resume a paused job: the agent goes on with its next step."""
    await owned_job(job_id, request, store, who)
    return await _steer(steering.resume, job_id, request, store)


@router.post("/jobs/{job_id}/hand-back", status_code=202, response_model=JobRecord, responses=STEER_ERRORS)
async def hand_back_job(job_id: str, request: Request, store: Store, who: Caller) -> JobRecord:
    """A human is done: a job waiting for one (its agent used request_human) goes on with its next step,
    told the URL its tab shows now; a paused job is resumed."""
    await owned_job(job_id, request, store, who)
    return await _steer(steering.hand_back, job_id, request, store)


@router.post("/jobs/{job_id}/input", status_code=202, response_model=JobRecord, responses=STEER_ERRORS)
async def job_input(job_id: str, body: InputRequest, request: Request, store: Store, who: Caller) -> JobRecord:
    """Push a value to a running job (a code that came by SMS or e-mail): the agent types it as
    <secret>name</secret> and never sees it; it is sealed, never shown in the record or events, and
    scrubbed from what the job writes. A job waiting for a human goes on with it (a hand-back)."""
    await owned_job(job_id, request, store, who)
    settings = request.app.state.settings
    if settings.secrets_key is None:
        raise invalid("value", NO_KEY)
    try:
        await steering.push_input(store, job_id, body, settings)
    except SteerRefused as exc:
        raise _refused(exc, job_id, settings) from None
    return await _current(job_id, request, store)


async def _steer(action: Callable[[JobStore, str], Awaitable[object]], job_id: str, request: Request,
                 store: Store) -> JobRecord:
    try:
        await action(store, job_id)
    except SteerRefused as exc:
        raise _refused(exc, job_id, request.app.state.settings) from None
    return await _current(job_id, request, store)


@router.post("/jobs/{job_id}/follow-up", status_code=202, response_model=FollowUpAccepted, responses=STEER_ERRORS)
async def follow_up_job(job_id: str, body: FollowUpRequest, request: Request, store: Store,
                        who: Caller) -> FollowUpAccepted:
    """Run another task in a finished job's kept session (``options.keep_session``): same browser
    context, same history. The job is running again; the follow-up is a new entry in its ``runs``,
    and the job's result becomes the follow-up's once it ends."""
    await owned_job(job_id, request, store, who)
    try:
        claim = await steering.follow_up(store, job_id, body)
    except SteerRefused as exc:
        raise _refused(exc, job_id, request.app.state.settings) from None
    record = await _current(job_id, request, store)
    return FollowUpAccepted(**dict(record), run=claim.run, last_event_id=claim.event_id)


@router.get("/jobs", response_model=JobPage)
async def list_jobs(
    store: Store,
    who: Caller,
    state: JobStatus | None = None,
    label: Annotated[list[str], Query(description="k=v; repeat to require several labels")] = [],  # noqa: B006
    schedule: Annotated[str | None, Query(description="a schedule id: only the jobs its runs created")] = None,
    limit: Annotated[int, Query(ge=1, le=LIST_LIMIT_MAX)] = 50,
    cursor: Annotated[int | None, Query(ge=0)] = None,
    tenant: Annotated[str | None, Query(description="admin only: one tenant's jobs (a tenant sees only its own)")] = None,
) -> JobPage:
    """Jobs newest first, filtered by state, labels and schedule, a page at a time. A filter that
    cannot name anything (a label without ``=``, a schedule that is no id) is refused; one that
    matches nothing (an unknown label or schedule) gives an empty page."""
    labels: dict[str, str] = {}
    for item in label:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise invalid("label", f"{item!r} is not key=value")
        labels[key] = value
    if schedule is not None and not is_id(schedule):
        raise invalid("schedule", f"{schedule!r} is not a schedule id (32 lowercase hex digits)")
    page = await store.list(state=state.value if state else None, labels=labels, schedule=schedule, limit=limit,
                            cursor=cursor, tenant=who.owner_filter(tenant))
    return JobPage(jobs=page.jobs, next_cursor=page.next_cursor)


@router.get("/jobs/{job_id}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."}})
async def job_events(
    job_id: str,
    request: Request,
    store: Store,
    who: Caller,
    follow: bool = True,
    last_event_id: Annotated[str | None, Header(pattern=r"^\d+-\d+$")] = None,
) -> StreamingResponse:
    """The job's steps and state changes as server-sent events; with ``follow``, live until it ends.

    Each event has ``id`` (resume with ``Last-Event-ID``), ``event`` (``state``, ``step``, ``agent``,
    ``cancel_requested``, ``pause_requested``, ``resume_requested``, ``session``) and JSON ``data``;
    a final ``end`` event closes the stream (after the last run's final state, for a job with follow-ups).
    """
    await owned_job(job_id, request, store, who)
    events = sse(store, job_id, last_event_id or "0-0", follow=follow, gone=request.is_disconnected)
    return StreamingResponse(
        while_valid(events, request, store, who),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def while_valid(chunks: AsyncIterator[str], request: Request, store: Store, who: Principal) -> AsyncIterator[str]:
    """An open stream that ends when its tenant's key is revoked or rotated: the key is resolved again
    before each chunk (events, and the keep-alive at least every few seconds)."""
    if who.admin:
        async for chunk in chunks:
            yield chunk
        return
    tenants = TenantStore(store.redis, store.keys)
    async for chunk in chunks:
        again = await resolve(_bearer(request), request.app.state.settings.api_token, tenants)
        if again != who:
            log.info("event stream closed: tenant %s's key no longer holds", who.tenant)
            return
        yield chunk


def _bearer(request: Request) -> str:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value if scheme.lower() == "bearer" else ""
