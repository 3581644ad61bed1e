"""``/v1/credentials``: named secret sets, stored sealed, referenced by jobs (``"credentials": name``).

Values go in and never come out: listing shows each set's secret names, and only a worker holding
``BROWSERD_SECRETS_KEY`` opens a set, for the job that names it. A set is its maker's: a tenant's key
reaches only its own sets (another tenant's name answers 404, and a job naming it is refused as if
it did not exist); the admin's reaches the operator's, and any tenant's with ``?tenant=``.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from daemon.api.deps import ERRORS, Caller, Owner, Store, TenantQuery, caller, owners
from daemon.api.errors import ApiError, invalid
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.secrets.credentials import CredentialStore
from workers.jobs.secrets.models import CredentialInfo, CredentialSet
from workers.jobs.secrets.sealing import NO_KEY

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS, tags=["credentials"])


def credential_store(request: Request, store: Store, tenant: str | None) -> CredentialStore:
    """``tenant``'s sets (None: the operator's)."""
    return CredentialStore(store.redis, request.app.state.settings, store.keys, tenant=tenant)


async def check_credentials(specs: list[JobSpec], creds: CredentialStore, *, batch: bool) -> None:
    """Refuse specs naming a credential set that does not exist (422 at ``[jobs[i].]credentials``)."""
    for index, spec in enumerate(specs):
        if spec.credentials and not await creds.exists(spec.credentials):
            error = SpecError.at("credentials", f"no credential set named {spec.credentials!r}; create it with "
                                 "POST /v1/credentials")
            raise error.within(f"jobs[{index}]") if batch else error


def _not_found(name: str) -> ApiError:
    return ApiError(404, "not_found", f"no credential set named {name!r}")


@router.post("/credentials", status_code=201, response_model=CredentialInfo)
async def put_credentials(entry: CredentialSet, request: Request, store: Store, tenant: Owner) -> CredentialInfo:
    """Create (or replace) a named set of secrets, the caller's own (the admin's: ``?tenant=``'s);
    the values are sealed before they are stored. ``domains`` binds where they may be typed."""
    if request.app.state.settings.secrets_key is None:
        raise invalid("secrets", NO_KEY)
    return await credential_store(request, store, tenant).put(entry)


@router.get("/credentials", response_model=list[CredentialInfo])
async def list_credentials(request: Request, store: Store, who: Caller, tenant: TenantQuery = None
                           ) -> list[CredentialInfo]:
    """Every set's name, secret names and domains (a tenant's own; the admin's all, or ``?tenant=``'s);
    never a value."""
    found: list[CredentialInfo] = []
    for owner in await owners(who, tenant, store):
        found += await credential_store(request, store, owner).list()
    return found


@router.get("/credentials/{name}", response_model=CredentialInfo)
async def get_credentials(name: str, request: Request, store: Store, tenant: Owner) -> CredentialInfo:
    """One set's secret names and domains; never a value."""
    found = await credential_store(request, store, tenant).info(name)
    if found is None:
        raise _not_found(name)
    return found


@router.delete("/credentials/{name}", status_code=204)
async def delete_credentials(name: str, request: Request, store: Store, tenant: Owner) -> None:
    """Forget a set; jobs that name it and have not started fail instead of running without it."""
    if not await credential_store(request, store, tenant).delete(name):
        raise _not_found(name)
