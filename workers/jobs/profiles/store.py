"""Auth profiles: a named browser storage state (cookies, per-origin localStorage), sealed at rest.

A profile is what a login leaves behind, kept so later jobs start logged in (``JobSpec.profile``)
and refreshed by jobs that save their end state (``save_profile``). The state is Playwright's
``storageState`` format, so users can bring one and take one away (``StorageState``). IndexedDB
is not kept: reading it needs a walk of every database of every origin, and logins rarely live there.

At rest: one hash (``Keys.profiles``) maps a name to JSON holding the version, the time of the last
write, counts of cookies and origins, and the state as one Fernet token under
``BROWSERD_SECRETS_KEY`` (``secrets.sealing.seal_json``: the same key and sealing as job secrets).
Listing shows the counts only; the state leaves Redis opened only to an export or a worker running
a job that names the profile, and never reaches a log, a job record or a metric.

Concurrency: **last writer wins, with a version.** Every write (an import, a job's save) bumps
the profile's version in one Lua call (``profile_put.lua``), so two jobs saving at once both
succeed, one after the other, and the profile holds whichever wrote last. An import may pass
``if_version`` to write only over the version it read (compare-and-set; ``ProfileConflict``
otherwise).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis

from config import Settings
from workers.jobs.profiles.models import (
    NO_PROFILE_KEY,
    ProfileConflict,
    ProfileInfo,
    ProfileMissing,
    StorageState,
    check_size,
)
from workers.jobs.secrets.sealing import SecretsUnavailable, seal_json, unseal_json
from workers.jobs.store.keys import Keys
from workers.jobs.store.scripts import source


class ProfileStore:
    """One owner's profiles: ``tenant``'s (None: the operator's), under its own keys (``Keys.owned_by``)."""

    def __init__(self, redis: Redis, settings: Settings, keys: Keys | None = None, *, tenant: str | None = None) -> None:
        self.redis, self.settings, self.tenant = redis, settings, tenant
        self.keys = (keys or Keys()).owned_by(tenant)
        self._put = redis.register_script(source("profile_put"))

    @property
    def available(self) -> bool:
        return self.settings.secrets_key is not None

    def _require_key(self) -> None:
        if not self.available:
            raise SecretsUnavailable(NO_PROFILE_KEY)

    async def put(self, name: str, state: StorageState, *, if_version: int | None = None) -> ProfileInfo:
        """Create or replace a profile (sealed before it reaches Redis); bumps its version."""
        self._require_key()
        check_size(state)
        now = time.time()
        entry = {"updated_at": now, "cookies": len(state.cookies), "origins": len(state.origins),
                 "sealed": seal_json(state.model_dump(mode="json", exclude_none=True), self.settings)}
        version = int(await self._put(keys=[self.keys.profiles],
                                      args=[name, json.dumps(entry), "" if if_version is None else str(if_version)]))
        if version < 0:
            raise ProfileConflict(name, if_version or 0)
        return ProfileInfo(name=name, version=version, cookies=len(state.cookies), origins=len(state.origins),
                           updated_at=datetime.fromtimestamp(now, UTC), tenant=self.tenant)

    async def list(self) -> list[ProfileInfo]:
        raw = await self.redis.hgetall(self.keys.profiles)
        return sorted((_info(name, value, self.tenant) for name, value in raw.items()), key=lambda i: i.name)

    async def info(self, name: str) -> ProfileInfo | None:
        raw = await self.redis.hget(self.keys.profiles, name)
        return None if raw is None else _info(name, raw, self.tenant)

    async def exists(self, name: str) -> bool:
        return bool(await self.redis.hexists(self.keys.profiles, name))

    async def delete(self, name: str) -> bool:
        return bool(await self.redis.hdel(self.keys.profiles, name))

    async def state(self, name: str) -> StorageState:
        """The profile's storage state, opened (an export, or a worker starting a job)."""
        self._require_key()
        raw = await self.redis.hget(self.keys.profiles, name)
        if raw is None:
            raise ProfileMissing(name)
        opened = unseal_json(json.loads(raw)["sealed"], self.settings, f"auth profile {name!r}")
        return StorageState.model_validate(opened)


def _info(name: str, raw: str, tenant: str | None) -> ProfileInfo:
    entry: dict[str, Any] = json.loads(raw)
    return ProfileInfo(name=name, version=entry["version"], cookies=entry["cookies"], origins=entry["origins"],
                       updated_at=datetime.fromtimestamp(entry["updated_at"], UTC), tenant=tenant)
