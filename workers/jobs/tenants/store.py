"""Tenants in Redis: their records (hashed keys, ceilings), and resolving a bearer key to one.

A key is ``bdk_<key id>_<secret>`` (``secrets.token_urlsafe``): the key id finds the record in one
``HGET`` and the secret's sha256 is compared in constant time. Only the hash is stored, so a
Redis dump yields no key. Revoking or rotating rewrites the record, and every request (and every
open event stream, ``still_valid``) resolves the key again, so the old key fails at once.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime

from redis.asyncio import Redis

from workers.jobs.store.keys import Keys
from workers.jobs.tenants.models import (
    KEY_PREFIX,
    TenantExists,
    TenantInfo,
    TenantKey,
    TenantLimits,
    TenantMissing,
    TenantStored,
)

KEY_ID_BYTES = 6
SECRET_BYTES = 32


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_key() -> tuple[str, str, str]:
    key_id = secrets.token_hex(KEY_ID_BYTES)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    return key_id, secret, f"{KEY_PREFIX}_{key_id}_{secret}"


def looks_like_key(value: str) -> bool:
    """Whether a bearer value has a tenant key's shape (else only the admin token can match it)."""
    return value.startswith(f"{KEY_PREFIX}_") and value.count("_") >= 2


def key_id_of(key: str) -> str:
    """The public key id of a key (``bdk_<key id>_<secret>``)."""
    return key.removeprefix(f"{KEY_PREFIX}_").partition("_")[0]


class TenantStore:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis, self.keys = redis, keys or Keys()

    async def any(self) -> bool:
        """Whether any tenant was ever created: without one, browserd is single-tenant."""
        return bool(await self.redis.hlen(self.keys.tenants))

    async def _get(self, name: str) -> TenantStored | None:
        raw = await self.redis.hget(self.keys.tenants, name)
        return TenantStored.model_validate_json(raw) if raw else None

    async def get(self, name: str) -> TenantInfo | None:
        stored = await self._get(name)
        return TenantInfo.model_validate(stored.model_dump(exclude={"key_sha256"})) if stored else None

    async def list(self) -> list[TenantInfo]:
        raw = await self.redis.hgetall(self.keys.tenants)
        stored = sorted((TenantStored.model_validate_json(v) for v in raw.values()), key=lambda t: t.name)
        return [TenantInfo.model_validate(t.model_dump(exclude={"key_sha256"})) for t in stored]

    async def _write(self, stored: TenantStored, old_key_id: str | None) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self.keys.tenants, stored.name, stored.model_dump_json())
            if old_key_id is not None and old_key_id != stored.key_id:
                pipe.hdel(self.keys.tenant_keys, old_key_id)
            if not stored.revoked:
                pipe.hset(self.keys.tenant_keys, stored.key_id, stored.name)
            else:
                pipe.hdel(self.keys.tenant_keys, stored.key_id)
            await pipe.execute()

    async def create(self, name: str, limits: TenantLimits) -> TenantKey:
        key_id, secret, key = _new_key()
        stored = TenantStored(name=name, key_id=key_id, key_sha256=_digest(secret), created_at=datetime.now(UTC),
                              limits=limits)
        if not await self.redis.hsetnx(self.keys.tenants, name, stored.model_dump_json()):
            raise TenantExists(name)
        await self.redis.hset(self.keys.tenant_keys, key_id, name)
        return TenantKey(**stored.model_dump(exclude={"key_sha256"}), key=key)

    async def rotate(self, name: str) -> TenantKey:
        """A new key for the tenant (un-revoking it); the old key fails from now on."""
        stored = await self._get(name)
        if stored is None:
            raise TenantMissing(name)
        key_id, secret, key = _new_key()
        old = stored.key_id
        stored = stored.model_copy(update={"key_id": key_id, "key_sha256": _digest(secret), "revoked": False,
                                           "rotated_at": datetime.now(UTC)})
        await self._write(stored, old)
        return TenantKey(**stored.model_dump(exclude={"key_sha256"}), key=key)

    async def revoke(self, name: str) -> TenantInfo:
        """The tenant's key fails from now on; its objects stay (rotate gives it a new key)."""
        stored = await self._get(name)
        if stored is None:
            raise TenantMissing(name)
        stored = stored.model_copy(update={"revoked": True})
        await self._write(stored, stored.key_id)
        return TenantInfo.model_validate(stored.model_dump(exclude={"key_sha256"}))

    async def set_limits(self, name: str, limits: TenantLimits) -> TenantInfo:
        """The tenant's ceilings and quotas from now on (its key unchanged): the next submission,
        session and dispatch read them."""
        stored = await self._get(name)
        if stored is None:
            raise TenantMissing(name)
        stored = stored.model_copy(update={"limits": limits})
        await self._write(stored, stored.key_id)
        return TenantInfo.model_validate(stored.model_dump(exclude={"key_sha256"}))

    async def _live(self, key_id: str) -> TenantStored | None:
        """The record of the tenant whose current, unrevoked key has this id."""
        name = await self.redis.hget(self.keys.tenant_keys, key_id)
        if not name:
            return None
        stored = await self._get(name.decode() if isinstance(name, bytes) else name)
        if stored is None or stored.revoked or stored.key_id != key_id:
            return None
        return stored

    async def by_key_id(self, key_id: str) -> TenantInfo | None:
        """The live tenant whose current key has this id (a console session signed in with it);
        None once that key is revoked or rotated."""
        stored = await self._live(key_id)
        return TenantInfo.model_validate(stored.model_dump(exclude={"key_sha256"})) if stored else None

    async def resolve(self, key: str) -> TenantInfo | None:
        """The live tenant this key belongs to; None for any other string (unknown, revoked, rotated)."""
        if not looks_like_key(key):
            return None
        key_id, _, secret = key.removeprefix(f"{KEY_PREFIX}_").partition("_")
        stored = await self._live(key_id)
        if stored is None or not hmac.compare_digest(_digest(secret), stored.key_sha256):
            return None
        return TenantInfo.model_validate(stored.model_dump(exclude={"key_sha256"}))
