"""The auth profile store on a real redis-server: sealed at rest, versioned, last writer wins,
compare-and-set on request; and a proxy password sealed in the job record."""

from __future__ import annotations

import asyncio

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from config import load_settings
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.profiles.models import ProfileConflict, ProfileMissing, StorageState
from workers.jobs.profiles.store import ProfileStore
from workers.jobs.secrets.sealing import SecretsUnavailable, proxy_password, seal_spec

KEY = Fernet.generate_key().decode()


def _state(value: str) -> StorageState:
    return StorageState.model_validate({
        "cookies": [{"name": "sid", "value": value, "domain": "shop.test", "path": "/", "expires": -1,
                     "httpOnly": True, "secure": True, "sameSite": "Strict"}],
        "origins": [{"origin": "https://shop.test", "localStorage": [{"name": "token", "value": f"tok-{value}"}]}]})


@pytest.fixture
def profiles(store) -> ProfileStore:
    return ProfileStore(store.redis, load_settings(secrets_key=KEY), store.keys)


async def test_a_profile_is_sealed_at_rest_and_opens_with_the_key(profiles: ProfileStore):
    info = await profiles.put("acme", _state("very-secret-session"))
    assert (info.name, info.version, info.cookies, info.origins) == ("acme", 1, 1, 1)
    raw = await profiles.redis.hget(profiles.keys.profiles, "acme")
    assert "very-secret-session" not in raw and "shop.test" not in raw
    assert await profiles.state("acme") == _state("very-secret-session")
    assert [p.name for p in await profiles.list()] == ["acme"]
    other_key = ProfileStore(profiles.redis, load_settings(secrets_key=Fernet.generate_key().decode()), profiles.keys)
    with pytest.raises(SecretsUnavailable, match="auth profile 'acme'"):
        await other_key.state("acme")
    assert await profiles.delete("acme") and not await profiles.exists("acme")
    with pytest.raises(ProfileMissing):
        await profiles.state("acme")


async def test_without_a_key_profiles_are_refused(store):
    keyless = ProfileStore(store.redis, load_settings(secrets_key=None), store.keys)
    with pytest.raises(SecretsUnavailable, match="BROWSERD_SECRETS_KEY"):
        await keyless.put("acme", _state("x"))


async def test_concurrent_saves_each_bump_the_version_and_the_last_writer_wins(profiles: ProfileStore):
    """The rule: every write is one Lua call that bumps the version; no write is lost or merged."""
    infos = await asyncio.gather(*(profiles.put("acme", _state(f"writer-{n}")) for n in range(20)))
    assert sorted(i.version for i in infos) == list(range(1, 21))
    last = max(infos, key=lambda i: i.version)
    writer = next(n for n, i in enumerate(infos) if i is last)
    assert (await profiles.state("acme")).cookies[0].value == f"writer-{writer}"
    assert (await profiles.info("acme")).version == 20


async def test_if_version_writes_only_over_the_version_read(profiles: ProfileStore):
    await profiles.put("acme", _state("one"))
    await profiles.put("acme", _state("two"), if_version=1)
    with pytest.raises(ProfileConflict, match="no longer at version 1"):
        await profiles.put("acme", _state("three"), if_version=1)
    assert (await profiles.state("acme")).cookies[0].value == "two"
    with pytest.raises(ProfileConflict):
        await profiles.put("new", _state("x"), if_version=3)
    assert (await profiles.put("new", _state("x"), if_version=0)).version == 1


@pytest.mark.parametrize("bad, where", [
    ({"origins": [{"origin": "https://a.test/path", "localStorage": []}]}, "origin"),
    ({"origins": [{"origin": "file:///etc", "localStorage": []}]}, "origin"),
    ({"origins": [{"origin": "https://a.test"}, {"origin": "https://a.test"}]}, "origins"),
    ({"cookies": [{"name": "a", "value": "b"}]}, "domain"),
    ({"cookies": [{"name": "a", "value": "b", "domain": "x", "sameSite": "Sometimes"}]}, "sameSite"),
])
def test_bad_storage_states_are_refused(bad, where):
    with pytest.raises(ValidationError) as caught:
        StorageState.model_validate(bad)
    assert where in str(caught.value)


def test_a_proxy_password_is_sealed_and_the_record_shows_it_masked():
    settings = load_settings(secrets_key=KEY)
    spec = seal_spec(JobSpec(task="x", proxy={"server": "socks5://proxy.test:1080", "username": "u",
                                              "password": "pp-secret"}), settings)
    stored = spec.model_dump_json(exclude_none=True)
    assert "pp-secret" not in stored and '"password":"**********"' in stored
    again = JobSpec.model_validate_json(stored)
    assert proxy_password(again.proxy, settings) == "pp-secret"
    with pytest.raises(SpecError, match="BROWSERD_SECRETS_KEY") as err:
        seal_spec(JobSpec(task="x", proxy={"server": "http://p.test:8080", "username": "u", "password": "pw"}),
                  load_settings(secrets_key=None))
    assert err.value.problems[0].field == "proxy.password"
    with pytest.raises(SpecError) as forged:
        seal_spec(JobSpec(task="x", proxy={"server": "http://p.test:8080", "username": "u",
                                           "sealed_password": "gAAAA"}), settings)
    assert forged.value.problems[0].field == "proxy.sealed_password"
