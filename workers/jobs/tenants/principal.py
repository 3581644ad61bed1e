"""Who is calling: the operator (the admin token) or a tenant (its key). One resolution for every
edge (the API's dependency, the console's session, MCP over HTTP, an open event stream), so a key
revoked in Redis fails everywhere at its next check.

The admin sees everything (and may filter by tenant); a tenant sees only what its key made: a
record whose ``tenant`` is another's, or none (the operator's), is as absent to it as an unknown id.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from pydantic import SecretStr

from workers.jobs.tenants.models import TenantLimits
from workers.jobs.tenants.store import TenantStore, looks_like_key


@dataclass(frozen=True)
class Principal:
    """``tenant`` None: the operator (admin), who owns what single-tenant browserd always made."""

    tenant: str | None = None
    limits: TenantLimits | None = None

    @property
    def admin(self) -> bool:
        return self.tenant is None

    def sees(self, owner: str | None) -> bool:
        """Whether a record owned by ``owner`` exists for this caller."""
        return self.admin or owner == self.tenant

    def owner_filter(self, requested: str | None) -> str | None:
        """The tenant a listing is limited to: the admin's ``?tenant=`` (None: all), a tenant's own."""
        return requested if self.admin else self.tenant


ADMIN = Principal()


async def resolve(given: str, admin_token: SecretStr | None, tenants: TenantStore) -> Principal | None:
    """The principal a bearer value names; None: refuse it (wrong, revoked or rotated key).

    Without an admin token every request is the admin, as single-tenant browserd always was (the
    API refuses to create tenants then: ``routes``)."""
    if looks_like_key(given):
        tenant = await tenants.resolve(given)
        return Principal(tenant.name, tenant.limits) if tenant is not None else None
    if admin_token is None:
        return ADMIN
    if hmac.compare_digest(given.encode(), admin_token.get_secret_value().encode()):
        return ADMIN
    return None
