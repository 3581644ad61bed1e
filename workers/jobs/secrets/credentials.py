"""Named credential sets: secrets stored once, sealed, and referenced by jobs (``JobSpec.credentials``).

One hash (``Keys.credentials``) maps a set's name to JSON holding its secret names, the domains it
may be typed on, its creation time and its values as one Fernet token (``sealing.seal``). Listing
shows names only; the values leave Redis only to a worker holding ``BROWSERD_SECRETS_KEY``, for the
job about to use them. Each tenant's sets live under its own keys (``Keys.owned_by``): a store is
one owner's (``tenant`` None: the operator's), so no name given to it reaches another's set.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from redis.asyncio import Redis

from config import Settings
from workers.jobs.secrets.models import CredentialInfo, CredentialSet, OpenedCredentials
from workers.jobs.secrets.sealing import seal, unseal
from workers.jobs.store.keys import Keys


class CredentialStore:
    """One owner's sets: ``tenant``'s (None: the operator's)."""

    def __init__(self, redis: Redis, settings: Settings, keys: Keys | None = None, *, tenant: str | None = None) -> None:
        self.redis, self.settings, self.tenant = redis, settings, tenant
        self.keys = (keys or Keys()).owned_by(tenant)

    async def put(self, entry: CredentialSet) -> CredentialInfo:
        """Create or replace a set (the values are sealed before they reach Redis)."""
        values = {k: v.get_secret_value() for k, v in entry.secrets.items()}
        info = CredentialInfo(name=entry.name, secrets=sorted(values), domains=entry.domains,
                              created_at=datetime.now(UTC), tenant=self.tenant)
        stored = {"secrets": info.secrets, "domains": info.domains, "created_at": time.time(),
                  "sealed": seal(values, self.settings)}
        await self.redis.hset(self.keys.credentials, entry.name, json.dumps(stored))
        return info

    async def list(self) -> list[CredentialInfo]:
        raw = await self.redis.hgetall(self.keys.credentials)
        return sorted((_info(name, value, self.tenant) for name, value in raw.items()), key=lambda i: i.name)

    async def info(self, name: str) -> CredentialInfo | None:
        raw = await self.redis.hget(self.keys.credentials, name)
        return None if raw is None else _info(name, raw, self.tenant)

    async def exists(self, name: str) -> bool:
        return bool(await self.redis.hexists(self.keys.credentials, name))

    async def delete(self, name: str) -> bool:
        return bool(await self.redis.hdel(self.keys.credentials, name))

    async def opened(self, name: str) -> OpenedCredentials | None:
        """The set's values, opened (workers only), with its domains; None when no such set."""
        raw = await self.redis.hget(self.keys.credentials, name)
        if raw is None:
            return None
        stored = json.loads(raw)
        return OpenedCredentials(values=unseal(stored["sealed"], self.settings), domains=stored.get("domains", []))


def _info(name: str, raw: str, tenant: str | None) -> CredentialInfo:
    stored = json.loads(raw)
    return CredentialInfo(name=name, secrets=stored["secrets"], domains=stored.get("domains", []),
                          created_at=datetime.fromtimestamp(stored["created_at"], UTC), tenant=tenant)
