"""``/v1/schedules``: create, list, pause, resume, delete and run now; each run is a batch."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from config import Settings
from daemon.api.credentials import check_credentials, credential_store
from daemon.api.profiles import check_profiles, profile_store
from daemon.api.deps import ERRORS, Store, admin_only
from daemon.api.errors import ApiError, ErrorBody
from daemon.api.recipes import check_recipes, recipe_store
from workers.jobs.batches.models import BatchRecord
from workers.jobs.schedules.models import Schedule, ScheduleSpec
from workers.jobs.schedules.store import ScheduleStore, check

router = APIRouter(prefix="/v1", dependencies=[Depends(admin_only)], responses=ERRORS, tags=["schedules"])


def _not_found(schedule_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no schedule with id {schedule_id!r}")


async def _found(schedule: Schedule | None, schedule_id: str) -> Schedule:
    if schedule is None:
        raise _not_found(schedule_id)
    return schedule


@router.post("/schedules", status_code=201, response_model=Schedule)
async def create_schedule(spec: ScheduleSpec, request: Request, store: Store) -> Schedule:
    """A cron expression or interval that runs a job or batch template; its template is checked now."""
    specs = check(spec, request.app.state.settings)
    await check_credentials(specs, credential_store(request, store), batch=spec.batch is not None)
    await check_profiles(specs, profile_store(request, store), batch=spec.batch is not None)
    await check_recipes(specs, recipe_store(request, store), batch=spec.batch is not None)
    return await ScheduleStore(store).create(spec)


@router.get("/schedules", response_model=list[Schedule])
async def list_schedules(store: Store) -> list[Schedule]:
    """Every schedule, oldest first, with its next firing and run counts."""
    return await ScheduleStore(store).list()


@router.get("/schedules/{schedule_id}", response_model=Schedule)
async def get_schedule(schedule_id: str, store: Store) -> Schedule:
    return await _found(await ScheduleStore(store).get(schedule_id), schedule_id)


@router.post("/schedules/{schedule_id}/pause", response_model=Schedule)
async def pause_schedule(schedule_id: str, store: Store) -> Schedule:
    """Stop firing (runs already queued go on)."""
    return await _found(await ScheduleStore(store).set_enabled(schedule_id, False), schedule_id)


@router.post("/schedules/{schedule_id}/resume", response_model=Schedule)
async def resume_schedule(schedule_id: str, store: Store) -> Schedule:
    return await _found(await ScheduleStore(store).set_enabled(schedule_id, True), schedule_id)


@router.delete("/schedules/{schedule_id}", status_code=204)
async def delete_schedule(schedule_id: str, store: Store) -> None:
    """Remove the schedule (its past runs stay until their records expire)."""
    if not await ScheduleStore(store).delete(schedule_id):
        raise _not_found(schedule_id)


@router.post("/schedules/{schedule_id}/run", status_code=201, response_model=BatchRecord,
             responses={503: {"model": ErrorBody, "description": "The broker is unreachable."}})
async def run_schedule_now(schedule_id: str, request: Request, store: Store) -> BatchRecord:
    """Start a run now, whatever the policy and even when paused; returns its batch."""
    settings: Settings = request.app.state.settings
    schedules = ScheduleStore(store)
    await _found(await schedules.get(schedule_id), schedule_id)
    record = await schedules.fire(schedule_id, settings, force=True)
    if record is None:
        raise _not_found(schedule_id)
    return record


@router.get("/schedules/{schedule_id}/runs", response_model=list[BatchRecord])
async def schedule_runs(schedule_id: str, store: Store, limit: int = 50) -> list[BatchRecord]:
    """The schedule's runs (batches), newest first; each one's results are at /v1/batches/{id}/results."""
    schedules = ScheduleStore(store)
    await _found(await schedules.get(schedule_id), schedule_id)
    return await schedules.runs(schedule_id, max(1, min(limit, 200)))
