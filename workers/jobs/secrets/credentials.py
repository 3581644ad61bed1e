"""Named credential sets: secrets stored once, sealed, and referenced by jobs (``JobSpec.credentials``).

One hash (``Keys.credentials``) maps a set's name to JSON holding its secret names, its creation
time and its values as one Fernet token (``sealing.seal``). Listing shows names only; the values
leave Redis only to a worker holding ``BROWSERD_SECRETS_KEY``, for the job about to use them.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from redis.asyncio import Redis

from config import Settings
from workers.jobs.secrets.models import CredentialInfo, CredentialSet
from workers.jobs.secrets.sealing import seal, unseal
from workers.jobs.store.keys import Keys


class CredentialStore:
    def __init__(self, redis: Redis, settings: Settings, keys: Keys | None = None) -> None:
        self.redis, self.settings, self.keys = redis, settings, keys or Keys()

    async def put(self, entry: CredentialSet) -> CredentialInfo:
        """Create or replace a set (the values are sealed before they reach Redis)."""
        values = {k: v.get_secret_value() for k, v in entry.secrets.items()}
        info = CredentialInfo(name=entry.name, secrets=sorted(values), created_at=datetime.now(UTC))
        stored = {"secrets": info.secrets, "created_at": time.time(), "sealed": seal(values, self.settings)}
        await self.redis.hset(self.keys.credentials, entry.name, json.dumps(stored))
        return info

    async def list(self) -> list[CredentialInfo]:
        raw = await self.redis.hgetall(self.keys.credentials)
        return sorted((_info(name, value) for name, value in raw.items()), key=lambda i: i.name)

    async def exists(self, name: str) -> bool:
        return bool(await self.redis.hexists(self.keys.credentials, name))

    async def delete(self, name: str) -> bool:
        return bool(await self.redis.hdel(self.keys.credentials, name))

    async def values(self, name: str) -> dict[str, str] | None:
        """The set's values, opened (workers only); None when no such set."""
        raw = await self.redis.hget(self.keys.credentials, name)
        return None if raw is None else unseal(json.loads(raw)["sealed"], self.settings)


def _info(name: str, raw: str) -> CredentialInfo:
    stored = json.loads(raw)
    return CredentialInfo(name=name, secrets=stored["secrets"], created_at=datetime.fromtimestamp(stored["created_at"], UTC))
