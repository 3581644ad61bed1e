"""``/v1/tenants``: the operator's API keys for tenants (admin only): create, list, set limits
(ceilings and quotas), read usage, rotate, revoke.

A key is shown once, in the answer to create or rotate; Redis keeps only its hash
(``workers.jobs.tenants.store``). Creating one needs ``BROWSERD_API_TOKEN``: without it every
request is the admin, so tenants would hide nothing (409 ``no_admin_token``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Path, Request

from daemon.api.deps import ERRORS, Store, admin_only
from daemon.api.errors import ApiError, ErrorBody
from workers.jobs.tenants.ceilings import check_networks, operator_ceiling
from workers.jobs.sessions.store import SessionStore
from workers.jobs.tenants.dispatch import Dispatcher
from workers.jobs.tenants.models import (
    TENANT_NAME,
    TenantExists,
    TenantInfo,
    TenantKey,
    TenantLimits,
    TenantList,
    TenantMissing,
    TenantRequest,
    TenantUsage,
)
from workers.jobs.tenants.quotas import Quotas
from workers.jobs.tenants.store import TenantStore

router = APIRouter(prefix="/v1/tenants", dependencies=[Depends(admin_only)], tags=["tenants"], responses={
    **ERRORS,
    404: {"model": ErrorBody, "description": "No such tenant (or the caller is a tenant)."},
    409: {"model": ErrorBody, "description": "The name is taken, or the server has no BROWSERD_API_TOKEN."},
})
Name = Annotated[str, Path(pattern=TENANT_NAME)]
T = TypeVar("T")


def tenant_store(store: Store) -> TenantStore:
    return TenantStore(store.redis, store.keys)


Tenants = Annotated[TenantStore, Depends(tenant_store)]


def _missing(exc: TenantMissing) -> ApiError:
    return ApiError(404, "not_found", str(exc))


@router.post("", status_code=201, response_model=TenantKey)
async def create_tenant(body: TenantRequest, request: Request, tenants: Tenants) -> TenantKey:
    """A tenant and its key (shown only now). ``limits`` bound what its jobs and sessions may open;
    its networks must lie inside the operator's (``BROWSERD_ALLOWED_NETWORKS``)."""
    settings = request.app.state.settings
    if settings.api_token is None:
        raise ApiError(409, "no_admin_token", "set BROWSERD_API_TOKEN first: without it every request is the admin "
                       "and a tenant's objects would be open to anyone")
    check_networks(body.limits.allowed_networks, operator_ceiling(settings), "limits.allowed_networks")
    try:
        return await tenants.create(body.name, body.limits)
    except TenantExists as exc:
        raise ApiError(409, "conflict", str(exc)) from None


@router.get("", response_model=TenantList)
async def list_tenants(tenants: Tenants) -> TenantList:
    """Every tenant, by name; never a key."""
    return TenantList(tenants=await tenants.list())


@router.get("/{name}", response_model=TenantInfo)
async def get_tenant(name: Name, tenants: Tenants) -> TenantInfo:
    found = await tenants.get(name)
    if found is None:
        raise _missing(TenantMissing(name))
    return found


@router.put("/{name}/limits", response_model=TenantInfo)
async def set_tenant_limits(name: Name, body: TenantLimits, request: Request, tenants: Tenants) -> TenantInfo:
    """Replace the tenant's ceilings and quotas (its key stays); the next submission, session and
    dispatch use them. Its networks must lie inside the operator's."""
    check_networks(body.allowed_networks, operator_ceiling(request.app.state.settings), "allowed_networks")
    return await _existing(tenants.set_limits(name, body))


@router.get("/{name}/usage", response_model=TenantUsage)
async def tenant_usage(name: Name, request: Request, store: Store, tenants: Tenants) -> TenantUsage:
    """What the tenant uses now, beside its quotas: queued, running, released to the broker, held by
    fair dispatch, submitted today (UTC), open sessions."""
    if await tenants.get(name) is None:
        raise _missing(TenantMissing(name))
    sessions = len(await SessionStore(store.redis, store.keys).list(name))
    parked = await Dispatcher(store, request.app.state.settings).parked(name)
    return await Quotas(store.redis, store.keys).usage(name, parked=parked, sessions=sessions)


@router.post("/{name}/rotate", response_model=TenantKey)
async def rotate_tenant(name: Name, tenants: Tenants) -> TenantKey:
    """A new key (shown only now; a revoked tenant is live again with it); the old key fails at once."""
    return await _existing(tenants.rotate(name))


@router.post("/{name}/revoke", response_model=TenantInfo)
async def revoke_tenant(name: Name, tenants: Tenants) -> TenantInfo:
    """The tenant's key fails at once everywhere (API, MCP, open event streams); its objects stay."""
    return await _existing(tenants.revoke(name))


async def _existing(change: Awaitable[T]) -> T:
    try:
        return await change
    except TenantMissing as exc:
        raise _missing(exc) from None
