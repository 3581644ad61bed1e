"""What every ``/v1`` router depends on: who is calling (``caller``: the admin token or a tenant's
key), the job store, the error table.

A router whose objects carry their tenant takes ``Caller`` and filters by it; every other router
depends on ``admin_only``, which answers a tenant's key 404 as if the route held nothing, so a route
is closed to tenants until its objects are owned (never open and leaking). Named objects (credential
sets, profiles, recipes) live in their owner's namespace: ``Owner`` is the one a route acts in, and
``owners`` the ones a listing reads."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from config.logs import note
from daemon.api.errors import ApiError, ErrorBody
from workers.jobs.store.jobs import JobStore
from workers.jobs.tenants.models import OPERATOR_TENANT, TENANT_NAME
from workers.jobs.tenants.principal import Principal, resolve
from workers.jobs.tenants.store import TenantStore

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    404: {"model": ErrorBody, "description": "No such job."},
    422: {"model": ErrorBody, "description": "Invalid request; `fields` names each bad field."},
}

bearer = HTTPBearer(auto_error=False, description="BROWSERD_API_TOKEN (the admin) or a tenant's key.")


def store_of(request: Request) -> JobStore:
    return request.app.state.store


Store = Annotated[JobStore, Depends(store_of)]


def unauthorized() -> ApiError:
    return ApiError(401, "unauthorized", "missing, wrong or revoked bearer token: send 'Authorization: Bearer "
                    "<BROWSERD_API_TOKEN or a tenant key>'", headers={"WWW-Authenticate": "Bearer"})


async def caller(request: Request, store: Store,
                 creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
    """The principal of this request, resolved once per request (a revoked key fails at once)."""
    known = getattr(request.state, "principal", None)
    if isinstance(known, Principal):
        return known
    who = await resolve(creds.credentials if creds else "", request.app.state.settings.api_token,
                        TenantStore(store.redis, store.keys))
    if who is None:
        raise unauthorized()
    request.state.principal = who
    note(tenant=who.tenant or OPERATOR_TENANT)  # this request's log lines name its tenant (never its key)
    return who


Caller = Annotated[Principal, Depends(caller)]


def not_found() -> ApiError:
    return ApiError(404, "not_found", "not found")


async def admin_only(who: Caller) -> None:
    """The operator's routes (and those whose objects are not owned yet): 404 to a tenant's key."""
    if not who.admin:
        raise not_found()


TenantQuery = Annotated[str | None, Query(
    pattern=TENANT_NAME, description=f"admin only: the tenant whose objects to act on or list ('{OPERATOR_TENANT}': "
    "the admin's own); ignored for a tenant's key, which always acts on its own.")]


def _owner(requested: str | None) -> str | None:
    return None if requested == OPERATOR_TENANT else requested


async def owner(who: Caller, tenant: TenantQuery = None) -> str | None:
    """Whose named object a route reads or writes: a tenant's own, whatever it asks; the admin's
    ``?tenant=`` (none: the operator's own, where single-tenant browserd kept everything)."""
    return who.tenant if not who.admin else _owner(tenant)


Owner = Annotated[str | None, Depends(owner)]


async def owners(who: Principal, tenant: str | None, store: JobStore) -> list[str | None]:
    """Whose named objects a listing reads: a tenant's own; the admin's ``?tenant=``, else everyone's
    (the operator's, then each tenant's by name)."""
    if not who.admin:
        return [who.tenant]
    if tenant is not None:
        return [_owner(tenant)]
    return [None, *sorted(t.name for t in await TenantStore(store.redis, store.keys).list())]
