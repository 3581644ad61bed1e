"""Proxy pools without a browser: the operator's setting, the checks at submission (an unknown
pool, a pool the tenant was not granted, a pool beside a proxy), and the pool's choices (sticky,
cooled down, bounded moves) with their metrics. The pools on real pages through real pproxy
processes: tests/agent/test_proxy_pools.py."""

from __future__ import annotations

import json
import time

import pytest
from prometheus_client import REGISTRY
from pydantic import ValidationError

from config import ConfigError, load_settings
from config.proxy_pools import ProxyPool
from workers.agent import BlockReason
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.specs.checks import check_spec
from workers.pipeline.features.proxy_pools import JobProxies, PoolHealth, sticky_index

PASSWORD = "pool-pass-7Yq"
POOLS = {"res": {"proxies": [{"server": "http://127.0.0.1:3128", "username": "u", "password": PASSWORD, "label": "a"},
                             {"server": "socks5://127.0.0.1:1080", "username": "u", "password": PASSWORD, "label": "b"},
                             {"server": "http://127.0.0.1:3129"}],
                 "max_rotations": 2, "cooldown": 30},
         "dc": {"proxies": [{"server": "http://127.0.0.1:3130"}]}}


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_the_setting_is_json_of_named_pools_and_masked_never_shows_a_password(monkeypatch):
    monkeypatch.setenv("BROWSERD_PROXY_POOLS", json.dumps(POOLS))
    settings = load_settings()
    assert set(settings.proxy_pools) == {"res", "dc"}
    pool = settings.proxy_pools["res"]
    assert pool.max_rotations == 2 and pool.proxies[0].server == "http://127.0.0.1:3128"
    assert [pool.label(i) for i in range(3)] == ["a", "b", "2"]
    shown = json.dumps(settings.masked())
    assert PASSWORD not in shown and "127.0.0.1:3128" not in shown and "res: 3 proxies (a, b, 2)" in shown
    assert PASSWORD not in repr(settings)


@pytest.mark.parametrize("pools, message", [
    ({"Bad Name": {"proxies": [{"server": "http://p:1"}]}}, "is not a pool name"),
    ({"p": {"proxies": []}}, "at least 1 item"),
    ({"p": {"proxies": [{"server": "ftp://p:21"}]}}, "give the proxy as http://host:port"),
    ({"p": {"proxies": [{"server": "http://u:pw@p:1"}]}}, "not in the address"),
    ({"p": {"proxies": [{"server": "http://p:1", "password": "x"}]}}, "needs a 'username'"),
    ({"p": {"proxies": [{"server": "http://p:1", "label": "x"}, {"server": "http://q:1", "label": "x"}]}}, "label once"),
    ({"p": {"proxies": [{"server": "http://p:1"}], "max_rotations": 99}}, "less than or equal to 20"),
])
def test_a_bad_pool_setting_fails_at_start_naming_the_variable(monkeypatch, pools, message):
    monkeypatch.setenv("BROWSERD_PROXY_POOLS", json.dumps(pools))
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "BROWSERD_PROXY_POOLS" in str(caught.value) and message in str(caught.value)
    assert "pw@" not in str(caught.value) and "'x'" not in str(caught.value)  # credentials are never echoed


def test_a_spec_names_a_pool_or_a_proxy_not_both():
    with pytest.raises(ValidationError, match="not both"):
        JobSpec(task="x", proxy={"server": "http://p:1"}, proxy_pool="res")
    with pytest.raises(ValidationError, match="should match pattern"):
        JobSpec(task="x", proxy_pool="Not A Pool")


def test_an_unknown_pool_is_refused_at_submission_naming_the_known_ones():
    settings = load_settings(proxy_pools=POOLS)
    with pytest.raises(SpecError) as caught:
        check_spec(JobSpec(task="x", proxy_pool="nope"), settings)
    assert caught.value.problems[0].field == "proxy_pool" and "dc, res" in str(caught.value)
    spec = check_spec(JobSpec(task="x", proxy_pool="res"), settings)
    assert spec.proxy_pool == "res" and PASSWORD not in spec.model_dump_json()


def _pools() -> dict[str, ProxyPool]:
    return load_settings(proxy_pools=POOLS).proxy_pools


def _job_starting_at(index: int, size: int) -> str:
    return next(f"job{i}" for i in range(1000) if sticky_index(f"job{i}", size) == index)


def test_a_job_keeps_its_proxy_and_the_same_job_gets_the_same_one_anywhere():
    health = PoolHealth(_pools())
    for job in ("a", "b", "c", "d"):
        assert health.pick("res", job) == health.pick("res", job) == PoolHealth(_pools()).pick("res", job)
    assert {health.pick("res", f"j{i}") for i in range(40)} == {0, 1, 2}  # the pool is shared out


def test_a_failed_proxy_is_cooled_down_and_skipped_until_then(monkeypatch):
    health = PoolHealth(_pools())
    job = _job_starting_at(0, 3)
    failures = _value("browserd_proxy_failures_total", pool="res", proxy="a")
    proxies = JobProxies("res", health.pools["res"], health, job)
    first = proxies.first()
    assert proxies.label == "a" and first.display == "proxy a of pool 'res'" and PASSWORD not in repr(first)
    replacement = proxies.replace(first, "cannot connect")
    assert replacement is not None and proxies.label == "b"
    assert _value("browserd_proxy_failures_total", pool="res", proxy="a") == failures + 1
    assert _value("browserd_proxy_cooled_down", pool="res", proxy="a") == 1
    assert health.pick("res", job) == 1  # another job starting there goes past it
    now = time.monotonic()
    monkeypatch.setattr("workers.pipeline.features.proxy_pools.time.monotonic", lambda: now + 31)
    assert health.pick("res", job) == 0 and _value("browserd_proxy_cooled_down", pool="res", proxy="a") == 0


def test_moves_are_bounded_and_each_proxy_is_tried_once():
    health = PoolHealth(_pools())
    proxies = JobProxies("res", health.pools["res"], health, _job_starting_at(0, 3))

    class Gate:
        notices: list[str] = []

        def switch_upstream(self, upstream, notice):
            self.notices.append(notice)

    proxies.gate = Gate()  # type: ignore[assignment]
    rotations = _value("browserd_proxy_rotations_total", pool="res", reason="http_429")
    blocks = _value("browserd_proxy_blocks_total", pool="res", proxy="a", reason="http_429")
    assert proxies.answered(200) is False and proxies.label == "a"
    assert proxies.answered(429) is True and proxies.label == "b"
    assert _value("browserd_proxy_blocks_total", pool="res", proxy="a", reason="http_429") == blocks + 1
    assert _value("browserd_proxy_rotations_total", pool="res", reason="http_429") == rotations + 1
    assert "HTTP 429" in Gate.notices[-1] and "move 1 of 2" in Gate.notices[-1]
    assert proxies.blocked(BlockReason.blocked_by_site) is True and proxies.label == "2"
    assert proxies.answered(403) is False and proxies.label == "2"  # max_rotations (2) reached
    assert all("127.0.0.1" not in n and PASSWORD not in n for n in Gate.notices)  # the model never sees a proxy


def test_every_pool_proxy_has_series_from_the_start():
    PoolHealth(_pools())
    assert REGISTRY.get_sample_value("browserd_proxy_pages_total", {"pool": "dc", "proxy": "0"}) is not None
    assert REGISTRY.get_sample_value("browserd_proxy_cooled_down", {"pool": "res", "proxy": "b"}) is not None


async def test_a_cooldown_is_shared_with_the_other_workers_through_redis(redis):
    from workers.jobs.store.connection import connect

    one, two = connect(redis.url), connect(redis.url)
    try:
        first, second = PoolHealth(_pools(), one), PoolHealth(_pools(), two)  # two workers
        job = _job_starting_at(0, 3)
        proxies = JobProxies("res", first.pools["res"], first, job)
        assert proxies.replace(proxies.first(), "cannot connect") is not None
        await first.flush()
        assert second.pick("res", job) == 0  # not read yet
        await second.refresh("res")
        assert second.pick("res", job) == 1 and _value("browserd_proxy_cooled_down", pool="res", proxy="a") == 1
        assert 0 < await two.pttl("browserd:proxy:res:a:cooled") <= 30_000
        assert PASSWORD not in str(await two.keys("*"))
    finally:
        await one.aclose()
        await two.aclose()
