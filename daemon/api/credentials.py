"""``/v1/credentials``: named secret sets, stored sealed, referenced by jobs (``"credentials": name``).

Values go in and never come out: listing shows each set's secret names, and only a worker holding
``BROWSERD_SECRETS_KEY`` opens a set, for the job that names it.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from daemon.api.deps import ERRORS, Store, admin_only
from daemon.api.errors import ApiError, invalid
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.secrets.credentials import CredentialStore
from workers.jobs.secrets.models import CredentialInfo, CredentialSet
from workers.jobs.secrets.sealing import NO_KEY

router = APIRouter(prefix="/v1", dependencies=[Depends(admin_only)], responses=ERRORS, tags=["credentials"])


def credential_store(request: Request, store: Store) -> CredentialStore:
    return CredentialStore(store.redis, request.app.state.settings, store.keys)


async def check_credentials(specs: list[JobSpec], creds: CredentialStore, *, batch: bool) -> None:
    """Refuse specs naming a credential set that does not exist (422 at ``[jobs[i].]credentials``)."""
    for index, spec in enumerate(specs):
        if spec.credentials and not await creds.exists(spec.credentials):
            error = SpecError.at("credentials", f"no credential set named {spec.credentials!r}; create it with "
                                 "POST /v1/credentials")
            raise error.within(f"jobs[{index}]") if batch else error


@router.post("/credentials", status_code=201, response_model=CredentialInfo)
async def put_credentials(entry: CredentialSet, request: Request, store: Store) -> CredentialInfo:
    """Create (or replace) a named set of secrets; the values are sealed before they are stored."""
    if request.app.state.settings.secrets_key is None:
        raise invalid("secrets", NO_KEY)
    return await credential_store(request, store).put(entry)


@router.get("/credentials", response_model=list[CredentialInfo])
async def list_credentials(request: Request, store: Store) -> list[CredentialInfo]:
    """Every set's name and secret names; never a value."""
    return await credential_store(request, store).list()


@router.delete("/credentials/{name}", status_code=204)
async def delete_credentials(name: str, request: Request, store: Store) -> None:
    """Forget a set; jobs that name it and have not started fail instead of running without it."""
    if not await credential_store(request, store).delete(name):
        raise ApiError(404, "not_found", f"no credential set named {name!r}")
