"""The console's pages: jobs, a job's live steps, batches, crawls, schedules, recipes, the submit form and settings.

A tenant's key signs in too (``access``): its pages list and open only its tenant's jobs, batches
and schedules (another's id is a 404 page, like none), its submissions are its jobs within its
ceilings and quotas, and the operator's pages (recipes, settings, tenants) are 404 to it.

Pages read the job kernel directly (the same store the API reads) and change things through the
kernel's own functions (``submit_job``, ``cancel_job``, ``cancel_batch``, ``steering``,
``ScheduleStore``), so a job cancelled (paused, resumed, followed up) here is treated exactly as
``POST /v1/jobs/{id}/cancel`` (``pause``, ``resume``, ``follow-up``) would.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from pydantic import ValidationError
from starlette.concurrency import iterate_in_threadpool

import workers.jobs.lifecycle.steering as steering
from config import Settings, env_name
from daemon.console.access import Actor, Session, Viewer, form_fields, form_files, gate_of
from daemon.console.auth import COOKIE_PATH
from daemon.console.charts import outcomes
from daemon.console.forms import UPLOAD_LIMITS, SubmitForm, Upload, to_spec
from daemon.console.rendering import render
from daemon.console.secrets import masked_settings
from workers.jobs import live, takeover
from workers.jobs.artifacts.names import (
    NoSuchArtifact,
    UnsafeName,
    by_run,
    content_type,
    serving_headers,
)
from workers.jobs.artifacts.store import ArtifactStore, JobArtifacts
from workers.jobs.batches.models import BatchRecord
from workers.jobs.batches.store import BatchStore
from workers.jobs.crawls.models import CrawlRecord, CrawlSpec
from workers.jobs.crawls.store import CrawlStore
from workers.jobs.ids import is_id
from workers.jobs.errors import CrawlNotCancelled, SpecError
from workers.jobs.lifecycle.cancelling import cancel_batch, cancel_job
from workers.jobs.lifecycle.crawling import cancel_crawl, resume_crawl, start_crawl
from workers.jobs.lifecycle.steering import SteerRefused
from workers.jobs.lifecycle.submission import submit_job
from workers.jobs.specs.checks import problems_of
from workers.jobs.model.record import JobRecord
from workers.jobs.model.spec import MAX_INPUT_FILE_BYTES, STORED_NAME, FollowUpRequest, InputRequest
from workers.jobs.secrets.sealing import NO_KEY
from workers.jobs.model.status import JobStatus
from workers.jobs.recipes.models import RecipeInfo, describe_step
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.schedules.change_store import ChangeFeed
from workers.jobs.schedules.store import ScheduleStore
from workers.jobs.store.jobs import LIST_LIMIT_MAX, JobStore
from workers.jobs.store.streams import END, sse
from workers.jobs.tenants.ceilings import tenant_ceiling
from workers.jobs.tenants.models import QuotaExceeded, TenantExists, TenantKey, TenantLimits, is_tenant_name
from workers.jobs.tenants.store import TenantStore
from workers.jobs.tenants.principal import Principal

router = APIRouter(prefix=COOKIE_PATH, include_in_schema=False)

PAGE = 50
RECENT = LIST_LIMIT_MAX  # jobs read for the outcome chart and the list of recent batches


class NotFound(Exception):
    """No such job, batch, schedule or recipe: a 404 page."""


class BadFilter(Exception):
    """A filter the list cannot apply: a 422 page saying why."""


class BadInput(Exception):
    """A form field that cannot be used (an empty follow-up task): a 422 page naming it."""


class NotNow(Exception):
    """The job's state does not allow what was asked (pause, resume, follow-up): a 409 page saying why."""


def store_of(request: Request) -> JobStore:
    return request.app.state.store


def settings_of(request: Request) -> Settings:
    return request.app.state.settings


def _admin(session: Session) -> None:
    """The operator's pages: absent for a tenant's session."""
    if not session.who.admin:
        raise NotFound("No such page.")


async def _job(request: Request, job_id: str, who: Principal) -> JobRecord:
    record = await store_of(request).get(job_id)
    if record is None or not who.sees(record.tenant):
        raise NotFound(f"No job with id {job_id!r} (finished jobs are kept "
                       f"{settings_of(request).result_ttl}s, BROWSERD_RESULT_TTL).")
    return record


async def _batch(request: Request, batch_id: str, who: Principal) -> BatchRecord:
    record = await BatchStore(store_of(request)).get(batch_id)
    if record is None or not who.sees(record.tenant):
        raise NotFound(f"No batch with id {batch_id!r}.")
    return record


def _labels(text: str) -> dict[str, str]:
    key, sep, value = text.partition("=")
    if text and (not sep or not key):
        raise BadFilter(f"The label filter {text!r} is not key=value.")
    return {key: value} if text else {}


def _schedule(text: str) -> str:
    """A schedule id to filter by ('' for none); one that matches no schedule lists no jobs, as an
    unknown label does, but text that cannot be an id is refused."""
    if text and not is_id(text):
        raise BadFilter(f"The schedule filter {text!r} is not a schedule id (32 lowercase hex digits).")
    return text


# --- jobs --------------------------------------------------------------------------------------

@router.get("/", response_class=HTMLResponse)
async def jobs_page(request: Request, session: Viewer, state: str = "", label: str = "", batch: str = "",
                    schedule: str = "", cursor: int | None = None) -> Response:
    store = store_of(request)
    who = session.who
    wanted = JobStatus(state) if state in JobStatus.__members__ else None
    labels = _labels(label.strip())
    schedule = _schedule(schedule.strip())
    if batch:
        await _batch(request, batch, who)
        ids = await BatchStore(store).job_ids(batch)
        records = [r for r in [await store.get(i) for i in ids[:LIST_LIMIT_MAX]] if r is not None]
        jobs = [r for r in records if (wanted is None or r.state == wanted)
                and all(r.labels.get(k) == v for k, v in labels.items()) and (not schedule or r.schedule == schedule)]
        next_cursor = None
    else:
        page = await store.list(state=wanted.value if wanted else None, labels=labels, schedule=schedule or None,
                                limit=PAGE, cursor=cursor, tenant=who.tenant)
        jobs, next_cursor = page.jobs, page.next_cursor
    recent = (await store.list(limit=RECENT, tenant=who.tenant)).jobs
    more = urlencode({"state": state, "label": label, "schedule": schedule, "cursor": next_cursor}) \
        if next_cursor else None
    return render(request, "jobs.html", {
        "jobs": jobs, "filters": {"state": state, "label": label, "batch": batch, "schedule": schedule},
        "states": list(JobStatus),
        "more": more, "outcomes": outcomes(recent), **await _counts(store, who),
    }, csrf=session.csrf)


async def _counts(store: JobStore, who: Principal) -> dict[str, object]:
    """The counters: the fleet's jobs by state and its workers for the admin; a tenant's own live
    jobs only (the fleet is not its to see)."""
    if who.tenant is None:
        return {"counts": await store.counts(), "workers": len(await store.live_workers())}
    queued, running = await store.redis.hmget(store.keys.tenant_usage(who.tenant), ["queued", "running"])
    return {"counts": {"queued": max(0, int(queued or 0)), "running": max(0, int(running or 0))}, "workers": None}


@router.get("/counters", response_class=HTMLResponse)
async def counters(request: Request, session: Viewer) -> Response:
    """The live counters (htmx polls this fragment)."""
    return render(request, "_counters.html", await _counts(store_of(request), session.who))


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: str, session: Viewer) -> Response:
    job = await _job(request, job_id, session.who)
    files = await asyncio.to_thread(_artifacts_of(request, job_id).list)
    return render(request, "job.html", {"job": job, "artifacts": by_run(files)}, csrf=session.csrf)


def _store(request: Request) -> ArtifactStore:
    return ArtifactStore.from_settings(settings_of(request))


def _artifacts_of(request: Request, job_id: str) -> JobArtifacts:
    return _store(request).job(job_id)


@router.get("/jobs/{job_id}/artifacts/{name}")
async def job_artifact(request: Request, job_id: str, name: str, session: Viewer) -> Response:
    """One artifact, as ``GET /v1/jobs/{id}/artifacts/{name}`` serves it (screenshots shown inline)."""
    await _job(request, job_id, session.who)
    folder = _artifacts_of(request, job_id)
    try:
        size = await asyncio.to_thread(folder.size, name)
    except (UnsafeName, NoSuchArtifact) as exc:
        raise NotFound(str(exc)) from None
    return StreamingResponse(iterate_in_threadpool(folder.chunks(name)), media_type=content_type(name),
                             headers=serving_headers(name, size))


@router.get("/jobs/{job_id}/summary", response_class=HTMLResponse)
async def job_summary(request: Request, job_id: str, session: Viewer) -> Response:
    job = await _job(request, job_id, session.who)
    return render(request, "_job_summary.html", {"job": job}, csrf=session.csrf)


@router.get("/jobs/{job_id}/events")
async def job_events(request: Request, job_id: str, session: Viewer) -> StreamingResponse:
    """The job's events for the live step view: the same stream as ``GET /v1/jobs/{id}/events``."""
    await _job(request, job_id, session.who)
    after = request.headers.get("last-event-id") or "0-0"
    if not all(part.isdigit() for part in after.split("-", 1)):
        after = "0-0"
    return StreamingResponse(sse(store_of(request), job_id, after, follow=True, gone=request.is_disconnected),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/jobs/{job_id}/live")
async def job_live(request: Request, job_id: str, session: Viewer) -> StreamingResponse:
    """The job's browser tab as JPEG frames (server-sent events) while this stream is open."""
    await _job(request, job_id, session.who)
    return StreamingResponse(_live(request, job_id), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _live(request: Request, job_id: str) -> AsyncIterator[str]:
    store = store_of(request)
    await live.watch(store, job_id)
    renewed = time.monotonic()
    yield "event: watching\ndata: {}\n\n"
    async with aclosing(live.frames(store, job_id)) as frames:
        async for frame in frames:
            if frame is not None:
                yield f"event: frame\ndata: {frame}\n\n"
            if time.monotonic() - renewed < live.RENEW_SECONDS:
                continue
            record = await store.get(job_id)
            if record is None or record.state.finished or await request.is_disconnected():
                yield END
                return
            await live.watch(store, job_id)
            renewed = time.monotonic()


@router.post("/jobs/{job_id}/cancel")
async def job_cancel(request: Request, job_id: str, session: Actor) -> Response:
    await _job(request, job_id, session.who)
    await cancel_job(store_of(request), job_id)
    return RedirectResponse(f"{COOKIE_PATH}/jobs/{job_id}", status_code=303)


@router.post("/jobs/{job_id}/pause")
async def job_pause(request: Request, job_id: str, session: Actor) -> Response:
    return await _steer(request, job_id, steering.pause, session.who)


@router.post("/jobs/{job_id}/resume")
async def job_resume(request: Request, job_id: str, session: Actor) -> Response:
    return await _steer(request, job_id, steering.resume, session.who)


@router.post("/jobs/{job_id}/hand-back")
async def job_hand_back(request: Request, job_id: str, session: Actor) -> Response:
    """A human is done: the operator's control of the browser (if they held it) ends, and the job goes on."""
    await _job(request, job_id, session.who)  # another tenant's job: 404 before anything else
    store = store_of(request)
    held = await takeover.holder(store, job_id)
    if held is not None and held.token != _control_token(request, session):
        raise NotNow(f"{held.who} controls this job's browser now: only they can hand it back")
    await takeover.release(store, job_id, _control_token(request, session))
    return await _steer(request, job_id, steering.hand_back, session.who)


def _control_token(request: Request, session: Session) -> str:
    """The console session that may hold control (one sign-in); a console without a token has one."""
    signed = gate_of(request).session_of(session.cookie)
    return signed.session_id if signed is not None else "open-console"


@router.post("/jobs/{job_id}/control")
async def job_control(request: Request, job_id: str, session: Actor) -> Response:
    """Take control of a running job's browser (or renew it): the job is paused; one operator at a time."""
    job = await _job(request, job_id, session.who)
    if job.state is not JobStatus.running:
        raise NotNow(f"job {job_id} is {job.state.value}: only a running job's browser can be taken over")
    store = store_of(request)
    token = _control_token(request, session)
    client = request.client.host if request.client else "?"
    try:
        held = await takeover.take(store, job_id, f"console session {token[:8]} from {client}", token)
    except takeover.ControlRefused as exc:
        raise NotNow(str(exc)) from None
    if not job.paused:
        await _steer(request, job_id, steering.pause, session.who)
    return JSONResponse({"controlling": True, "who": held.who, "renew_seconds": takeover.CONTROL_TTL / 3})


@router.post("/jobs/{job_id}/control/events")
async def job_control_events(request: Request, job_id: str, session: Actor) -> Response:
    """The controller's input events (JSON: a list), sent on to the job's tab; anyone else is refused."""
    await _job(request, job_id, session.who)
    body = await request.body()
    try:
        events = takeover.EVENTS.validate_json(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise BadInput(f"events{''.join(f'[{p}]' for p in error['loc'])}: {error['msg']}") from None
    if not 0 < len(events) <= takeover.MAX_EVENTS:
        raise BadInput(f"events: 1 to {takeover.MAX_EVENTS} a post")
    try:
        await takeover.send(store_of(request), job_id, _control_token(request, session), events)
    except takeover.ControlRefused as exc:
        raise NotNow(str(exc)) from None
    return Response(status_code=204)


@router.post("/jobs/{job_id}/input")
async def job_input(request: Request, job_id: str, session: Actor) -> Response:
    fields = await form_fields(request)
    try:
        body = InputRequest(name=fields.get("name", [""])[0], value=fields.get("value", [""])[0])
    except ValidationError as exc:
        error = exc.errors()[0]
        raise BadInput(f"{error['loc'][0]}: {error['msg'].removeprefix('Value error, ')}") from None
    settings = settings_of(request)
    if settings.secrets_key is None:
        raise BadInput(f"value: {NO_KEY}")
    return await _steer(request, job_id, lambda store, job: steering.push_input(store, job, body, settings),
                        session.who)


@router.post("/jobs/{job_id}/follow-up")
async def job_follow_up(request: Request, job_id: str, session: Actor) -> Response:
    task = (await form_fields(request)).get("task", [""])[0]
    try:
        body = FollowUpRequest(task=task)
    except ValidationError as exc:
        raise BadInput(f"task: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return await _steer(request, job_id, lambda store, job: steering.follow_up(store, job, body), session.who)


async def _steer(request: Request, job_id: str, action: Callable[[JobStore, str], Awaitable[object]],
                 who: Principal) -> Response:
    await _job(request, job_id, who)
    try:
        await action(store_of(request), job_id)
    except SteerRefused as exc:
        raise NotNow(exc.message) from None
    return RedirectResponse(f"{COOKIE_PATH}/jobs/{job_id}", status_code=303)


# --- submit ------------------------------------------------------------------------------------

@router.get("/submit", response_class=HTMLResponse)
async def submit_page(request: Request, session: Viewer) -> Response:
    pools = sorted(settings_of(request).proxy_pools)
    return render(request, "submit.html", {"form": SubmitForm.empty(), "proxy_pools": pools, **UPLOAD_LIMITS}, csrf=session.csrf)


@router.post("/submit", response_class=HTMLResponse)
async def submit(request: Request, session: Actor) -> Response:
    files = [Upload(f.filename or "", await f.read(MAX_INPUT_FILE_BYTES + 1))  # one byte over: refused by name
             for f in await form_files(request)]
    form = SubmitForm.from_fields(await form_fields(request), files)
    settings = settings_of(request)
    spec = to_spec(form, settings, tenant_ceiling(session.who, settings))
    if spec is None:
        return render(request, "submit.html", {"form": form, "proxy_pools": sorted(settings.proxy_pools),
                                              **UPLOAD_LIMITS},
                      csrf=session.csrf, status=422)
    try:
        job_id = (await submit_job(store_of(request), spec, settings, tenant=session.who.tenant)).job_id
    except QuotaExceeded as exc:
        return over_quota(request, exc, session.csrf)
    return RedirectResponse(f"{COOKIE_PATH}/jobs/{job_id}", status_code=303)


# --- batches -----------------------------------------------------------------------------------

@router.get("/batches", response_class=HTMLResponse)
async def batches_page(request: Request, session: Viewer) -> Response:
    """Batches of the most recent jobs, newest first, and a box to open one by id."""
    store = store_of(request)
    seen: list[str] = []
    for job in (await store.list(limit=RECENT, tenant=session.who.tenant)).jobs:
        if job.batch and job.batch not in seen:
            seen.append(job.batch)
    batches = BatchStore(store)
    records = [b for b in [await batches.get(i) for i in seen] if b is not None and session.who.sees(b.tenant)]
    return render(request, "batches.html", {"batches": records}, csrf=session.csrf)


@router.get("/batches/open")
async def batch_open(session: Viewer, id: str = "") -> Response:  # noqa: A002
    return RedirectResponse(f"{COOKIE_PATH}/batches/{quote(id.strip(), safe='')}", status_code=303)


@router.get("/batches/{batch_id}", response_class=HTMLResponse)
async def batch_page(request: Request, batch_id: str, session: Viewer) -> Response:
    batch = await _batch(request, batch_id, session.who)
    return render(request, "batch.html", {"batch": batch}, csrf=session.csrf)


@router.get("/batches/{batch_id}/summary", response_class=HTMLResponse)
async def batch_summary(request: Request, batch_id: str, session: Viewer) -> Response:
    return render(request, "_batch_summary.html", {"batch": await _batch(request, batch_id, session.who)},
                  csrf=session.csrf)


@router.get("/batches/{batch_id}/results")
async def batch_results(request: Request, batch_id: str, session: Viewer) -> StreamingResponse:
    await _batch(request, batch_id, session.who)

    async def lines() -> AsyncIterator[bytes]:
        async for line in BatchStore(store_of(request)).results(batch_id, _store(request)):
            yield (json.dumps(line, separators=(",", ":"), default=str) + "\n").encode()

    return StreamingResponse(lines(), media_type="application/x-ndjson", headers={
        "Content-Disposition": f'attachment; filename="batch-{batch_id}.jsonl"'})


@router.post("/batches/{batch_id}/cancel")
async def batch_cancel(request: Request, batch_id: str, session: Actor) -> Response:
    batch = await _batch(request, batch_id, session.who)
    await cancel_batch(store_of(request), batch_id, batch.tenant)
    return RedirectResponse(f"{COOKIE_PATH}/batches/{batch_id}", status_code=303)


# --- crawls ------------------------------------------------------------------------------------

CRAWL_LINES = 50  # a crawl page's results lines per page


async def _crawl(request: Request, crawl_id: str, who: Principal) -> CrawlRecord:
    """The crawl, if this session may see it: another tenant's is a 404 page exactly like an unknown id."""
    record = await CrawlStore(store_of(request)).get(crawl_id)
    if record is None or not who.sees(record.tenant):
        raise NotFound(f"No crawl with id {crawl_id!r} (finished crawls are kept "
                       f"{settings_of(request).result_ttl}s, BROWSERD_RESULT_TTL).")
    return record


@router.get("/crawls", response_class=HTMLResponse)
async def crawls_page(request: Request, session: Viewer) -> Response:
    crawls = await CrawlStore(store_of(request)).recent(PAGE, tenant=session.who.tenant)
    return render(request, "crawls.html", {"crawls": crawls, "admin": session.who.admin}, csrf=session.csrf)


def over_quota(request: Request, exc: QuotaExceeded, csrf: str) -> Response:
    """The 429 page of a submission past one of the tenant's quotas (its message names the quota)."""
    return render(request, "error.html", {"title": "Over quota", "message": str(exc)}, csrf=csrf, status=429)


CRAWL_FORM_FIELDS = ("start_urls", "max_depth", "max_pages", "task", "spec")  # the start form's inputs


def crawl_from_form(fields: dict[str, str]) -> CrawlSpec:
    """The start form's crawl: its start URLs (one a line), depth, pages and task over the rest of the
    spec written as JSON (``spec``, as ``POST /v1/crawls`` takes it); ``BadInput`` names the field."""
    raw = fields.get("spec", "").strip()
    try:
        spec = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise BadInput(f"spec: not JSON ({exc})") from None
    if not isinstance(spec, dict):
        raise BadInput("spec: a JSON object of the crawl's fields, e.g. {\"allowed_networks\": [\"10.0.0.0/8\"]}")
    urls = [u.strip() for u in fields.get("start_urls", "").splitlines() if u.strip()]
    given: dict[str, object] = {"start_urls": urls or None, "task": fields.get("task", "").strip() or None}
    for name in ("max_depth", "max_pages"):
        value = fields.get(name, "").strip()
        if value:
            if not value.isdigit():
                raise BadInput(f"{name}: a whole number, not {value[:40]!r}")
            given[name] = int(value)
    try:
        return CrawlSpec.model_validate({**spec, **{k: v for k, v in given.items() if v is not None}})
    except ValidationError as exc:
        raise BadInput(str(problems_of(exc))) from None


@router.post("/crawls", response_class=HTMLResponse)
async def crawl_start(request: Request, session: Actor) -> Response:
    """Start a crawl, as ``POST /v1/crawls`` does (the session's tenant's, within its ceilings and quotas)."""
    fields = await form_fields(request)
    spec = crawl_from_form({k: (fields.get(k) or [""])[-1] for k in CRAWL_FORM_FIELDS})
    store, settings = store_of(request), settings_of(request)
    try:
        record = await start_crawl(store, spec, settings, session.who, recipes_of(request, session.who.tenant))
    except SpecError as exc:
        raise BadInput(str(exc)) from None
    except QuotaExceeded as exc:
        return over_quota(request, exc, session.csrf)
    return RedirectResponse(f"{COOKIE_PATH}/crawls/{record.id}", status_code=303)


@router.get("/crawls/open")
async def crawl_open(session: Viewer, id: str = "") -> Response:  # noqa: A002
    return RedirectResponse(f"{COOKIE_PATH}/crawls/{quote(id.strip(), safe='')}", status_code=303)


@router.get("/crawls/{crawl_id}", response_class=HTMLResponse)
async def crawl_page(request: Request, crawl_id: str, session: Viewer, offset: int = 0) -> Response:
    crawl = await _crawl(request, crawl_id, session.who)
    if offset < 0:
        raise BadFilter(f"The offset {offset} is negative: results lines are counted from 0.")
    crawls = CrawlStore(store_of(request))
    async with aclosing(crawls.results(crawl_id, crawl.batch_id, _store(request), offset, CRAWL_LINES)) as found:
        lines = [line async for line in found]
    pages = {"offset": offset, "previous": max(offset - CRAWL_LINES, 0) if offset else None,
             "next": offset + CRAWL_LINES if offset + CRAWL_LINES < crawl.queued else None}
    return render(request, "crawl.html", {"crawl": crawl, "lines": lines, "pages": pages,
                                          "admin": session.who.admin}, csrf=session.csrf)


@router.get("/crawls/{crawl_id}/summary", response_class=HTMLResponse)
async def crawl_summary(request: Request, crawl_id: str, session: Viewer) -> Response:
    return render(request, "_crawl_summary.html", {"crawl": await _crawl(request, crawl_id, session.who),
                                                   "admin": session.who.admin}, csrf=session.csrf)


@router.get("/crawls/{crawl_id}/results")
async def crawl_results(request: Request, crawl_id: str, session: Viewer) -> StreamingResponse:
    crawl = await _crawl(request, crawl_id, session.who)
    lines = CrawlStore(store_of(request)).results(crawl_id, crawl.batch_id, _store(request))

    async def body() -> AsyncIterator[bytes]:
        async for line in lines:
            yield (line.model_dump_json() + "\n").encode()

    return StreamingResponse(body(), media_type="application/x-ndjson", headers={
        "Content-Disposition": f'attachment; filename="crawl-{crawl_id}.jsonl"'})


@router.post("/crawls/{crawl_id}/cancel")
async def crawl_cancel(request: Request, crawl_id: str, session: Actor) -> Response:
    """As ``POST /v1/crawls/{id}/cancel``: the crawl's batch is cancelled, so no page is queued any more."""
    crawl = await _crawl(request, crawl_id, session.who)
    await cancel_crawl(store_of(request), crawl_id, crawl.batch_id, crawl.tenant)  # its frontier kept
    return RedirectResponse(f"{COOKIE_PATH}/crawls/{crawl_id}", status_code=303)


@router.post("/crawls/{crawl_id}/resume")
async def crawl_resume(request: Request, crawl_id: str, session: Actor) -> Response:
    """As ``POST /v1/crawls/{id}/resume``: a cancelled crawl goes on from its frontier."""
    await _crawl(request, crawl_id, session.who)
    try:
        await resume_crawl(store_of(request), crawl_id, settings_of(request))
    except CrawlNotCancelled as exc:
        raise NotNow(str(exc)) from None
    except SpecError as exc:
        raise BadInput(str(exc)) from None
    except QuotaExceeded as exc:
        return over_quota(request, exc, session.csrf)
    return RedirectResponse(f"{COOKIE_PATH}/crawls/{crawl_id}", status_code=303)


# --- schedules ---------------------------------------------------------------------------------

CONSOLE_CHANGES = 10  # the newest runs' changes a schedule's page shows

@router.get("/schedules", response_class=HTMLResponse)
async def schedules_page(request: Request, session: Viewer) -> Response:
    schedules = await ScheduleStore(store_of(request)).list(session.who.tenant)
    return render(request, "schedules.html", {"schedules": schedules}, csrf=session.csrf)


@router.get("/schedules/{schedule_id}", response_class=HTMLResponse)
async def schedule_page(request: Request, schedule_id: str, session: Viewer) -> Response:
    schedules = ScheduleStore(store_of(request))
    schedule = await schedules.get(schedule_id)
    if schedule is None or not session.who.sees(schedule.tenant):
        raise NotFound(f"No schedule with id {schedule_id!r}.")
    runs = await schedules.runs(schedule_id, 50)
    crawl_ids = await CrawlStore(store_of(request)).of_batches([b.id for b in runs])
    changes = list(reversed(await ChangeFeed(store_of(request)).entries(schedule_id, limit=CONSOLE_CHANGES)))
    return render(request, "schedule.html", {"schedule": schedule, "runs": runs, "changes": changes,
                                              "crawl_of": dict(zip([b.id for b in runs], crawl_ids))},
                  csrf=session.csrf)


@router.post("/schedules/{schedule_id}/{action}")
async def schedule_action(request: Request, schedule_id: str, action: str, session: Actor) -> Response:
    schedules = ScheduleStore(store_of(request))
    schedule = await schedules.get(schedule_id)
    if action not in ("pause", "resume", "run") or schedule is None or not session.who.sees(schedule.tenant):
        raise NotFound(f"No schedule with id {schedule_id!r}, or no action {action!r} (pause, resume, run).")
    if action == "run":
        batch = await schedules.fire(schedule_id, settings_of(request), force=True)
        if batch is not None:
            crawl_id = (await CrawlStore(store_of(request)).of_batches([batch.id]))[0]
            page = f"crawls/{crawl_id}" if crawl_id else f"batches/{batch.id}"
            return RedirectResponse(f"{COOKIE_PATH}/{page}", status_code=303)
    else:
        await schedules.set_enabled(schedule_id, action == "resume")
    return RedirectResponse(f"{COOKIE_PATH}/schedules", status_code=303)


# --- recipes -----------------------------------------------------------------------------------

def recipes_of(request: Request, tenant: str | None = None) -> RecipeStore:
    """``tenant``'s recipes (None: the operator's): each tenant's live under its own keys."""
    store = store_of(request)
    return RecipeStore.configured(store.redis, store.keys, settings_of(request), tenant)


def _owner(tenant: str | None) -> str | None:
    """A page's ``?tenant=`` (the console is the admin's): a name that is no tenant's names nothing."""
    if tenant is not None and not is_tenant_name(tenant):
        raise NotFound(f"No tenant {tenant!r}.")
    return tenant


@router.get("/recipes", response_class=HTMLResponse)
async def recipes_page(request: Request, session: Viewer) -> Response:
    """Everyone's recipes: the operator's, then each tenant's (named in their row)."""
    _admin(session)
    store = store_of(request)
    owners = [None, *sorted(t.name for t in await TenantStore(store.redis, store.keys).list())]
    recipes = [info for owner in owners for info in await recipes_of(request, owner).list()]
    return render(request, "recipes.html", {"recipes": recipes}, csrf=session.csrf)


async def _recipe(request: Request, name: str, version: int | None = None, tenant: str | None = None) -> RecipeInfo:
    found = re.fullmatch(STORED_NAME, name)
    info = await recipes_of(request, _owner(tenant)).get(name, version) if found else None
    if info is None:
        raise NotFound(f"No recipe {name!r}" + (f" with a version {version}." if version else "."))
    return info


@router.get("/recipes/{name}", response_class=HTMLResponse)
async def recipe_page(request: Request, name: str, session: Viewer, version: int | None = None,
                      tenant: str | None = None) -> Response:
    _admin(session)
    info = await _recipe(request, name, version, tenant)
    steps = [describe_step(step) for step in info.recipe.steps]
    return render(request, "recipe.html", {"info": info, "steps": steps}, csrf=session.csrf)


@router.post("/recipes/{name}/delete")
async def recipe_delete(request: Request, name: str, session: Actor, tenant: str | None = None) -> Response:
    _admin(session)
    await _recipe(request, name, tenant=tenant)
    await recipes_of(request, _owner(tenant)).delete(name)
    return RedirectResponse(f"{COOKIE_PATH}/recipes", status_code=303)


# --- tenants (the operator's) -----------------------------------------------------------------

def _tenants(request: Request) -> TenantStore:
    store = store_of(request)
    return TenantStore(store.redis, store.keys)


async def _tenants_page(request: Request, session: Session, made: TenantKey | None = None,
                        error: str | None = None, status: int = 200) -> Response:
    tenants = await _tenants(request).list()
    return render(request, "tenants.html", {"tenants": tenants, "made": made, "error": error}, csrf=session.csrf,
                  status=status)


@router.get("/tenants", response_class=HTMLResponse)
async def tenants_page(request: Request, session: Viewer) -> Response:
    """Tenants and their keys' ids (never a key); create, rotate, revoke. A key is shown once, in
    the page that answers its create or rotate (``Cache-Control: no-store``), never again."""
    _admin(session)
    return await _tenants_page(request, session)


@router.post("/tenants", response_class=HTMLResponse)
async def tenant_create(request: Request, session: Actor) -> Response:
    _admin(session)
    name = (await form_fields(request)).get("name", [""])[0].strip()
    if settings_of(request).api_token is None:
        return await _tenants_page(request, session, error="Set BROWSERD_API_TOKEN first: without it every request "
                                   "is the admin, and a tenant's objects would be open to anyone.", status=409)
    if not is_tenant_name(name):
        return await _tenants_page(request, session, error=f"{name!r} is not a tenant name: lowercase letters, "
                                   "digits, '-' and '_', at most 63 characters.", status=422)
    try:
        made = await _tenants(request).create(name, TenantLimits())
    except TenantExists as exc:
        return await _tenants_page(request, session, error=str(exc), status=409)
    return await _tenants_page(request, session, made=made, status=201)


@router.post("/tenants/{name}/{action}", response_class=HTMLResponse)
async def tenant_action(request: Request, name: str, action: str, session: Actor) -> Response:
    _admin(session)
    tenants = _tenants(request)
    if action not in ("rotate", "revoke") or not is_tenant_name(name) or await tenants.get(name) is None:
        raise NotFound(f"No tenant {name!r}, or no action {action!r} (rotate, revoke).")
    if action == "rotate":
        return await _tenants_page(request, session, made=await tenants.rotate(name))
    await tenants.revoke(name)
    return await _tenants_page(request, session)


# --- settings ----------------------------------------------------------------------------------

@router.get("/settings", response_class=HTMLResponse)
async def settings_page(request: Request, session: Viewer) -> Response:
    _admin(session)
    settings = settings_of(request)
    rows = [{"name": env_name(name), "value": value, "about": type(settings).model_fields[name].description or ""}
            for name, value in masked_settings(settings).items()]
    roles = {role: settings.model_for(role) for role in ("planner", "navigator", "extractor")}
    return render(request, "settings.html", {"rows": rows, "roles": roles}, csrf=session.csrf)


async def on_not_found(request: Request, exc: Exception) -> Response:
    return render(request, "error.html", {"title": "Not found", "message": str(exc)}, status=404)


async def on_bad_filter(request: Request, exc: Exception) -> Response:
    return render(request, "error.html", {"title": "Bad filter", "message": str(exc)}, status=422)


async def on_bad_input(request: Request, exc: Exception) -> Response:
    return render(request, "error.html", {"title": "Invalid input", "message": str(exc)}, status=422)


async def on_not_now(request: Request, exc: Exception) -> Response:
    return render(request, "error.html", {"title": "Not now", "message": str(exc)}, status=409)
