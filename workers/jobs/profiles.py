"""Auth profiles: a named browser storage state (cookies, per-origin localStorage), sealed at rest.

A profile is what a login leaves behind, kept so later jobs start logged in (``JobSpec.profile``)
and refreshed by jobs that save their end state (``save_profile``). The state is Playwright's
``storageState`` format, so users can bring one and take one away (``StorageState``). IndexedDB
is not kept: reading it needs a walk of every database of every origin, and logins rarely live there.

At rest: one hash (``Keys.profiles``) maps a name to JSON holding the version, the time of the last
write, counts of cookies and origins, and the state as one Fernet token under
``BROWSERD_SECRETS_KEY`` (``secrets.seal_json``: the same key and sealing as job secrets). Listing
shows the counts only; the state leaves Redis opened only to an export or a worker running a job
that names the profile, and never reaches a log, a job record or a metric.

Concurrency: **last writer wins, with a version.** Every write (an import, a job's save) bumps
the profile's version in one Lua call, so two jobs saving at once both succeed, one after the
other, and the profile holds whichever wrote last. An import may pass ``if_version`` to write only
over the version it read (compare-and-set; ``ProfileConflict`` otherwise).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from redis.asyncio import Redis

from config import Settings
from workers.jobs.errors import JobsError
from workers.jobs.keys import Keys
from workers.jobs.secrets import SecretsUnavailable, seal_json, unseal_json

MAX_COOKIES = 3000
MAX_ORIGINS = 200
MAX_ITEMS_PER_ORIGIN = 2000
MAX_STATE_BYTES = 2 * 1024 * 1024
NO_PROFILE_KEY = ("this server has no BROWSERD_SECRETS_KEY, so it cannot keep auth profiles (they are stored "
                  "encrypted); ask its operator to set one")

# KEYS[1] profiles hash; ARGV[1] name, ARGV[2] entry JSON (no version), ARGV[3] expected version or ''.
# Returns the new version, or -1 when ARGV[3] is given and is not the current version.
PUT_PROFILE = r"""
local current = redis.call('HGET', KEYS[1], ARGV[1])
local version = 0
if current then version = cjson.decode(current)['version'] or 0 end
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= version then return -1 end
local entry = cjson.decode(ARGV[2])
entry['version'] = version + 1
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return version + 1
"""


class ProfileMissing(JobsError):
    """No profile of that name (``detail`` says more where a job named it)."""

    def __init__(self, name: str, detail: str | None = None) -> None:
        self.name = name
        super().__init__(detail or f"no auth profile named {name!r}")


class ProfileConflict(JobsError):
    """``if_version`` was given and the profile has moved on."""

    def __init__(self, name: str, expected: int) -> None:
        self.name, self.expected = name, expected
        super().__init__(f"auth profile {name!r} is no longer at version {expected} (another write came first)")


class Cookie(BaseModel):
    """A cookie as Playwright writes it; ``expires`` -1 is a session cookie."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=4096)
    value: str = Field(max_length=16384)
    domain: str = Field(min_length=1, max_length=255)
    path: str = Field("/", max_length=1024)
    expires: float = -1
    httpOnly: bool = False  # noqa: N815  (Playwright's names)
    secure: bool = False
    sameSite: Literal["Strict", "Lax", "None"] | None = None  # noqa: N815


class StorageItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    value: str


class OriginState(BaseModel):
    model_config = ConfigDict(extra="ignore")

    origin: str
    localStorage: list[StorageItem] = Field(default_factory=list, max_length=MAX_ITEMS_PER_ORIGIN)  # noqa: N815

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
                or parts.query or parts.fragment or parts.username:
            raise ValueError(f"{value!r} is not an origin (scheme://host[:port])")
        return value.rstrip("/")


class StorageState(BaseModel):
    """Playwright's ``storageState``: ``{"cookies": [...], "origins": [{"origin", "localStorage"}]}``."""

    model_config = ConfigDict(extra="ignore")

    cookies: list[Cookie] = Field(default_factory=list, max_length=MAX_COOKIES)
    origins: list[OriginState] = Field(default_factory=list, max_length=MAX_ORIGINS)

    @field_validator("origins")
    @classmethod
    def _unique(cls, value: list[OriginState]) -> list[OriginState]:
        seen = [o.origin for o in value]
        if len(set(seen)) != len(seen):
            raise ValueError("each origin at most once")
        return value


class ProfileInfo(BaseModel):
    """What browserd shows of a profile without opening it."""

    name: str
    version: int
    cookies: int
    origins: int
    updated_at: datetime


def check_size(state: StorageState) -> str:
    """The state as compact JSON, refused above ``MAX_STATE_BYTES``."""
    raw = state.model_dump_json(exclude_none=True)
    if len(raw) > MAX_STATE_BYTES:
        raise ValueError(f"the storage state is {len(raw)} bytes; at most {MAX_STATE_BYTES}")
    return raw


class ProfileStore:
    def __init__(self, redis: Redis, settings: Settings, keys: Keys | None = None) -> None:
        self.redis, self.settings, self.keys = redis, settings, keys or Keys()
        self._put = redis.register_script(PUT_PROFILE)

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
                           updated_at=datetime.fromtimestamp(now, UTC))

    async def list(self) -> list[ProfileInfo]:
        raw = await self.redis.hgetall(self.keys.profiles)
        return sorted((_info(name, value) for name, value in raw.items()), key=lambda i: i.name)

    async def info(self, name: str) -> ProfileInfo | None:
        raw = await self.redis.hget(self.keys.profiles, name)
        return None if raw is None else _info(name, raw)

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


def _info(name: str, raw: str) -> ProfileInfo:
    entry: dict[str, Any] = json.loads(raw)
    return ProfileInfo(name=name, version=entry["version"], cookies=entry["cookies"], origins=entry["origins"],
                       updated_at=datetime.fromtimestamp(entry["updated_at"], UTC))

