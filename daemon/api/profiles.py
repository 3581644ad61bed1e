"""``/v1/profiles``: auth profiles (a browser storage state, sealed at rest) jobs start from and save to.

The body of ``PUT`` and the answer of ``GET /v1/profiles/{name}`` are Playwright's
``storageState`` JSON, so a state made with Playwright can be brought and taken away. Every route
needs ``BROWSERD_SECRETS_KEY`` (profiles are kept encrypted with it) and refuses clearly without
(409 ``profiles_unavailable``). A profile is its maker's: a tenant's key reaches only its own
(another tenant's name answers 404, and a job naming it is refused as if it did not exist); the
admin's reaches the operator's, and any tenant's with ``?tenant=``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from daemon.api.deps import ERRORS, Caller, Owner, Store, TenantQuery, caller, owners
from daemon.api.errors import ApiError, ErrorBody
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import STORED_NAME, JobSpec
from workers.jobs.profiles.models import (
    NO_PROFILE_KEY,
    ProfileConflict,
    ProfileInfo,
    ProfileMissing,
    StorageState,
    check_size,
)
from workers.jobs.profiles.store import ProfileStore

VERSION_HEADER = "X-Browserd-Profile-Version"
# 409, not a 5xx: the server works, its configuration refuses the request (no key to seal profiles with).
UNAVAILABLE = {409: {"model": ErrorBody, "description": "The server has no BROWSERD_SECRETS_KEY to keep profiles "
                     "with (error 'profiles_unavailable'), or if_version is not the profile's version ('conflict')."}}

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses={**ERRORS, **UNAVAILABLE},
                   tags=["profiles"])
Name = Annotated[str, Path(pattern=STORED_NAME, description="Letters, digits and _.- (at most 64).")]


def profile_store(request: Request, store: Store, tenant: str | None) -> ProfileStore:
    """``tenant``'s profiles (None: the operator's)."""
    return ProfileStore(store.redis, request.app.state.settings, store.keys, tenant=tenant)


def _usable(profiles: ProfileStore) -> ProfileStore:
    if not profiles.available:
        raise ApiError(409, "profiles_unavailable", NO_PROFILE_KEY)
    return profiles


async def check_profiles(specs: list[JobSpec], profiles: ProfileStore, *, batch: bool) -> None:
    """Refuse specs naming a profile that does not exist, or any profile on a server without the key."""
    for index, spec in enumerate(specs):
        for field, name in (("profile", spec.profile), ("save_profile", spec.save_profile)):
            if name is None:
                continue
            error = None
            if not profiles.available:
                error = SpecError.at(field, NO_PROFILE_KEY)
            elif field == "profile" and not await profiles.exists(name):
                error = SpecError.at(field, f"no auth profile named {name!r}; create it with PUT /v1/profiles/{name}")
            if error is not None:
                raise error.within(f"jobs[{index}]") if batch else error


@router.put("/profiles/{name}", response_model=ProfileInfo,
            responses={413: {"model": ErrorBody, "description": "The storage state is too large."}})
async def put_profile(name: Name, state: StorageState, request: Request, store: Store, response: Response, tenant: Owner,
                      if_version: Annotated[int | None, Query(ge=0, description="Write only over this version "
                                                              "(0: only if the profile does not exist).")] = None
                      ) -> ProfileInfo:
    """Create or replace a profile (the caller's own; the admin's: ``?tenant=``'s) from a Playwright
    storage state; each write bumps its version."""
    profiles = _usable(profile_store(request, store, tenant))
    try:
        check_size(state)
        info = await profiles.put(name, state, if_version=if_version)
    except ValueError as exc:
        raise ApiError(413, "too_large", str(exc)) from None
    except ProfileConflict as exc:
        raise ApiError(409, "conflict", str(exc)) from None
    response.headers[VERSION_HEADER] = str(info.version)
    return info


@router.get("/profiles", response_model=list[ProfileInfo])
async def list_profiles(request: Request, store: Store, who: Caller, tenant: TenantQuery = None) -> list[ProfileInfo]:
    """Every profile's name, version and counts (a tenant's own; the admin's all, or ``?tenant=``'s);
    never its contents."""
    found: list[ProfileInfo] = []
    for owner in await owners(who, tenant, store):
        found += await _usable(profile_store(request, store, owner)).list()
    return found


@router.get("/profiles/{name}", response_model=StorageState, response_model_exclude_none=True)
async def export_profile(name: Name, request: Request, store: Store, response: Response, tenant: Owner
                         ) -> StorageState:
    """The profile's storage state in Playwright's format (cookie values included: it is a login)."""
    profiles = _usable(profile_store(request, store, tenant))
    info = await profiles.info(name)
    try:
        state = await profiles.state(name)
    except ProfileMissing as exc:
        raise ApiError(404, "not_found", str(exc)) from None
    if info is not None:
        response.headers[VERSION_HEADER] = str(info.version)
    return state


@router.delete("/profiles/{name}", status_code=204)
async def delete_profile(name: Name, request: Request, store: Store, tenant: Owner) -> None:
    """Forget a profile; queued jobs that start from it fail instead of running logged out."""
    if not await _usable(profile_store(request, store, tenant)).delete(name):
        raise ApiError(404, "not_found", f"no auth profile named {name!r}")
