"""``/v1/schedules``: create, list, pause, resume, delete and run now; each run is a batch."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from config import Settings
from daemon.api.credentials import check_credentials, credential_store
from daemon.api.profiles import check_profiles, profile_store
from daemon.api.deps import ERRORS, Caller, Store, caller
from daemon.api.errors import ApiError, ErrorBody
from daemon.api.recipes import check_recipes, recipe_store
from workers.jobs.recipes.checks import check_crawl_recipe
from workers.jobs.crawls.models import CrawlSpec
from workers.jobs.batches.models import BatchRecord
from workers.jobs.schedules.change_store import MAX_RUNS_KEPT, ChangeFeed
from workers.jobs.schedules.changes import RunChanges
from workers.jobs.schedules.models import Schedule, ScheduleSpec
from workers.jobs.schedules.store import ScheduleStore, check
from workers.jobs.tenants.ceilings import tenant_ceiling
from workers.jobs.tenants.principal import Principal

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS, tags=["schedules"])


def _not_found(schedule_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no schedule with id {schedule_id!r}")


async def _found(schedule: Schedule | None, schedule_id: str, who: Principal) -> Schedule:
    """The schedule, if the caller may see it: another tenant's answers 404 exactly like none."""
    if schedule is None or not who.sees(schedule.tenant):
        raise _not_found(schedule_id)
    return schedule


async def _owned(store: Store, schedule_id: str, who: Principal) -> Schedule:
    return await _found(await ScheduleStore(store).get(schedule_id), schedule_id, who)


@router.post("/schedules", status_code=201, response_model=Schedule)
async def create_schedule(spec: ScheduleSpec, request: Request, store: Store, who: Caller) -> Schedule:
    """A cron expression or interval that runs a job or batch template; its template is checked now
    (a tenant's within its ceilings, again at each run)."""
    settings = request.app.state.settings
    specs = check(spec, settings, tenant_ceiling(who, settings))
    await check_credentials(specs, credential_store(request, store, who.tenant), batch=spec.batch is not None)
    await check_profiles(specs, profile_store(request, store, who.tenant), batch=spec.batch is not None)
    await check_recipes(specs, recipe_store(request, store, who.tenant), batch=spec.batch is not None)
    if spec.crawl is not None:  # its pages replay the tenant's own recipe, as a crawl's do
        await check_crawl_recipe(CrawlSpec.model_validate(spec.crawl), recipe_store(request, store, who.tenant), "crawl")
    return await ScheduleStore(store).create(spec, who.tenant)


@router.get("/schedules", response_model=list[Schedule])
async def list_schedules(store: Store, who: Caller,
                         tenant: Annotated[str | None, Query(description="admin only: one tenant's schedules")] = None,
                         ) -> list[Schedule]:
    """Every schedule (a tenant's own), oldest first, with its next firing and run counts."""
    return await ScheduleStore(store).list(who.owner_filter(tenant))


@router.get("/schedules/{schedule_id}", response_model=Schedule)
async def get_schedule(schedule_id: str, store: Store, who: Caller) -> Schedule:
    return await _owned(store, schedule_id, who)


@router.post("/schedules/{schedule_id}/pause", response_model=Schedule)
async def pause_schedule(schedule_id: str, store: Store, who: Caller) -> Schedule:
    """Stop firing (runs already queued go on)."""
    await _owned(store, schedule_id, who)
    return await _found(await ScheduleStore(store).set_enabled(schedule_id, False), schedule_id, who)


@router.post("/schedules/{schedule_id}/resume", response_model=Schedule)
async def resume_schedule(schedule_id: str, store: Store, who: Caller) -> Schedule:
    await _owned(store, schedule_id, who)
    return await _found(await ScheduleStore(store).set_enabled(schedule_id, True), schedule_id, who)


@router.delete("/schedules/{schedule_id}", status_code=204)
async def delete_schedule(schedule_id: str, store: Store, who: Caller) -> None:
    """Remove the schedule (its past runs stay until their records expire)."""
    await _owned(store, schedule_id, who)
    if not await ScheduleStore(store).delete(schedule_id):
        raise _not_found(schedule_id)


@router.post("/schedules/{schedule_id}/run", status_code=201, response_model=BatchRecord,
             responses={503: {"model": ErrorBody, "description": "The broker is unreachable."}})
async def run_schedule_now(schedule_id: str, request: Request, store: Store, who: Caller) -> BatchRecord:
    """Start a run now, whatever the policy and even when paused; returns its batch."""
    settings: Settings = request.app.state.settings
    schedules = ScheduleStore(store)
    await _owned(store, schedule_id, who)
    record = await schedules.fire(schedule_id, settings, force=True)
    if record is None:
        raise _not_found(schedule_id)
    return record


@router.get("/schedules/{schedule_id}/runs", response_model=list[BatchRecord])
async def schedule_runs(schedule_id: str, store: Store, who: Caller, limit: int = 50) -> list[BatchRecord]:
    """The schedule's runs (batches), newest first; each one's results are at /v1/batches/{id}/results."""
    schedules = ScheduleStore(store)
    await _owned(store, schedule_id, who)
    return await schedules.runs(schedule_id, max(1, min(limit, 200)))


@router.get("/schedules/{schedule_id}/changes", response_model=list[RunChanges])
async def schedule_changes(
        schedule_id: str, store: Store, who: Caller,
        since: Annotated[datetime | None, Query(description="only runs compared after this time (ISO 8601 or epoch "
                                                "seconds)")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_RUNS_KEPT, description="the newest runs at most")] = MAX_RUNS_KEPT,
) -> list[RunChanges]:
    """What each run changed against the run before it, oldest first: items added, changed (field by
    field) and removed, keyed by the output schema's x-key (else by page URL), and pages gone."""
    await _owned(store, schedule_id, who)
    return await ChangeFeed(store).entries(schedule_id, since, limit)
