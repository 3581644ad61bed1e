"""workers.jobs politeness: registrable domains, a job's limits, and the Redis slots and spacing on a
real redis-server (leases that lapse, reservations that space navigations)."""

from __future__ import annotations

import asyncio

import pytest

from config import Settings
from workers.jobs.errors import SpecError
from workers.jobs.politeness.domains import job_domain, registrable_domain, url_domain
from workers.jobs.politeness.options import PolitenessOptions, limits_for, robots_remedy
from workers.jobs.politeness.robots import MAX_BODY, RobotsCache, RobotsFile, robots_url
from workers.jobs.politeness.slots import (
    BackoffRule,
    DomainLimits,
    HeldSlot,
    SLOT_POLL_SECONDS,
    SlotWaitCancelled,
    SlotWaitExpired,
    retry_after_seconds,
)
from workers.pipeline.features.politeness import LocalLimits
from workers.jobs.specs.batch_body import BatchRequest
from workers.jobs.specs.checks import validate_jobs
from workers.jobs.store.jobs import JobStore


@pytest.mark.parametrize(("host", "domain"), [
    ("www.shop.example.co.uk", "example.co.uk"),
    ("img.example.com", "example.com"),
    ("EXAMPLE.com.", "example.com"),
    ("a.github.io", "a.github.io"),  # a private suffix: each user's site is its own
    ("127.0.0.1", "127.0.0.1"),
    ("[::1]", "::1"),
    ("localhost", "localhost"),
    ("co.uk", "co.uk"),
])
def test_registrable_domain_uses_the_bundled_suffix_list(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


def test_a_jobs_domain_is_its_start_url_else_its_scripts_first_page() -> None:
    assert url_domain("about:blank") is None and url_domain("data:text/html,x") is None
    assert job_domain("https://www.example.com/a", None) == "example.com"
    script = [{"wait": {"seconds": 1}}, {"go_to_url": {"url": "http://127.0.0.1:8000/x"}}]
    assert job_domain(None, script) == "127.0.0.1"
    assert job_domain(None, [{"done": {"text": "x"}}]) is None


def test_a_job_may_be_stricter_but_not_looser_unless_allowed() -> None:
    strict = Settings(politeness_max_concurrent=2, politeness_min_delay=1.0, respect_robots_txt=True)
    own = limits_for(PolitenessOptions(max_concurrent=1, min_delay=2.0), strict)
    assert (own.max_concurrent, own.min_delay, own.respect_robots_txt) == (1, 2.0, True)
    for field, value in [("max_concurrent", 3), ("min_delay", 0.5), ("respect_robots_txt", False)]:
        with pytest.raises(SpecError) as err:
            limits_for(PolitenessOptions(**{field: value}), strict)
        assert err.value.problems[0].field == f"politeness.{field}"
        # at run time (settings tightened since submission) the settings' value wins instead
        ran = limits_for(PolitenessOptions(**{field: value}), strict, refuse=False)
        assert (ran.max_concurrent, ran.min_delay, ran.respect_robots_txt) == (2, 1.0, True)
    loose = strict.model_copy(update={"politeness_allow_looser": True})
    assert limits_for(PolitenessOptions(max_concurrent=5, respect_robots_txt=False), loose).max_concurrent == 5
    assert limits_for(PolitenessOptions(max_concurrent=5), Settings()).max_concurrent == 5  # no global limit


@pytest.fixture
def limits(store: JobStore) -> DomainLimits:
    return DomainLimits(store.redis, store.keys, lease=1.0)


async def test_slots_are_counted_per_domain_and_released(limits: DomainLimits) -> None:
    assert await limits.try_slot("example.com", "a", 2) and await limits.try_slot("example.com", "b", 2)
    assert not await limits.try_slot("example.com", "c", 2), "a third job on the domain waits"
    assert await limits.try_slot("example.com", "a", 2), "a holder renews its own slot"
    assert await limits.try_slot("other.org", "c", 2), "another domain has its own slots"
    assert await limits.try_slot("example.com", "d", 0), "limit 0 is no limit"
    await limits.release(HeldSlot("example.com", "d"))
    await limits.release(HeldSlot("example.com", "a"))
    assert await limits.try_slot("example.com", "c", 2)
    assert sorted(await limits.holders("example.com")) == ["b", "c"]


async def test_a_slot_nobody_renews_lapses_and_a_renewed_one_does_not(limits: DomainLimits) -> None:
    assert await limits.try_slot("example.com", "dead", 2) and await limits.try_slot("example.com", "alive", 2)
    for _ in range(8):  # 1.6 s: past the 1 s lease of the slot nobody renews
        await limits.renew([HeldSlot("example.com", "alive")])
        await asyncio.sleep(0.2)
    assert await limits.holders("example.com") == ["alive"]
    assert await limits.try_slot("example.com", "next", 2), "the dead worker's slot was freed"


async def test_waiting_for_a_slot_ends_when_one_frees_or_gives_up(limits: DomainLimits) -> None:
    assert await limits.try_slot("example.com", "a", 1)
    with pytest.raises(SlotWaitExpired):
        await limits.wait_slot("example.com", "b", 1, patience=0.5)
    with pytest.raises(SlotWaitCancelled):
        await limits.wait_slot("example.com", "b", 1, patience=5, cancelled=lambda: True)
    waiter = asyncio.ensure_future(limits.wait_slot("example.com", "b", 1, patience=10))
    await asyncio.sleep(0.3)
    assert not waiter.done()
    await limits.release(HeldSlot("example.com", "a"))
    assert await asyncio.wait_for(waiter, 5) == HeldSlot("example.com", "b")


async def test_a_slot_released_in_this_process_is_taken_by_its_waiter_at_once(store: JobStore) -> None:
    """A release wakes this process's waiters (no idle half poll per hand-on); the Redis script still
    decides, so the limit holds; another process's release is seen at the next poll."""
    limits, other = (DomainLimits(store.redis, store.keys, lease=10.0) for _ in range(2))  # two workers
    assert await limits.try_slot("example.com", "a", 1)
    waiters = [asyncio.ensure_future(limits.wait_slot("example.com", job, 1, patience=10)) for job in ("b", "c")]
    await asyncio.sleep(0.25)  # both just past their second ask: polling alone would ask again 0.15 s on
    loop = asyncio.get_running_loop()
    released = loop.time()
    await limits.release(HeldSlot("example.com", "a"))
    done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    assert loop.time() - released < SLOT_POLL_SECONDS / 2, "the waiter asked again when the slot was released"
    assert len(done) == 1 and len(pending) == 1, "one slot: one waiter got it, the other still waits"
    assert await limits.holders("example.com") == [done.pop().result().job_id]
    assert await other.try_slot("example.com", "x", 1) is False
    last = pending.pop()
    holder = (await limits.holders("example.com"))[0]
    await other.release(HeldSlot("example.com", holder))  # another worker's release: seen at the next poll
    assert (await asyncio.wait_for(last, SLOT_POLL_SECONDS * 5)).job_id in ("b", "c")


async def test_a_waiter_of_a_run_with_no_shared_store_is_woken_by_a_release() -> None:
    local = LocalLimits()
    assert await local.try_slot("example.com", "a", 1)
    waiter = asyncio.ensure_future(local.wait_slot("example.com", "b", 1, patience=10))
    await asyncio.sleep(0.25)  # just past its second ask: polling alone would ask again 0.15 s on
    loop = asyncio.get_running_loop()
    released = loop.time()
    await local.release(HeldSlot("example.com", "a"))
    assert await asyncio.wait_for(waiter, 5) == HeldSlot("example.com", "b")
    assert loop.time() - released < SLOT_POLL_SECONDS / 2


async def test_navigations_are_spaced_by_the_strictest_delay_reserved(limits: DomainLimits) -> None:
    waits = [await limits.reserve_navigation("example.com", 1.0) for _ in range(3)]
    assert waits[0] == 0 and 0.9 < waits[1] <= 1.0 and 1.9 < waits[2] <= 2.0
    assert await limits.reserve_navigation("other.org", 1.0) == 0
    assert 3.8 < await limits.reserve_navigation("example.com", 2.0) <= 4.0, "a stricter job spaces itself more"


async def test_a_429_backs_the_domain_off_for_every_worker_honouring_retry_after_capped(store: JobStore) -> None:
    rule = BackoffRule(cap=60.0, recovery=30.0)
    one, other = (DomainLimits(store.redis, store.keys, 1.0, rule) for _ in range(2))  # two workers
    assert await other.reserve_navigation("example.com", 0) == 0, "no back-off yet: no wait"
    hit = await one.back_off("example.com", retry_after=20)
    assert (hit.domain, hit.level) == ("example.com", 1) and 19 < hit.seconds <= 20
    assert 19 < await other.reserve_navigation("example.com", 0) <= 20, "the other worker waits out Retry-After"
    assert await other.reserve_navigation("other.org", 0) == 0, "another site is not slowed"
    capped = await one.back_off("example.com", retry_after=86400)
    assert capped.level == 2 and 59 < capped.seconds <= 60, "Retry-After is honoured up to the cap"


async def test_each_hit_doubles_the_spacing_up_to_the_cap_and_it_recovers_a_level_per_quiet_period(
        store: JobStore) -> None:
    rule = BackoffRule(cap=8.0, recovery=30.0, base=1.0)
    limits = DomainLimits(store.redis, store.keys, 1.0, rule)
    levels = [(await limits.back_off("slow.example")).level for _ in range(6)]
    assert levels == [1, 2, 3, 4, 5, 6]
    assert [rule.spacing(n) for n in range(6)] == [0, 1, 2, 4, 8, 8]
    key = store.keys.domain_backoff("slow.example")
    # the last hit was 65 s ago (two quiet periods): level 6 -> 4, spacing 8 s, no Retry-After left
    seconds, micros = await store.redis.time()
    await store.redis.hset(key, mapping={"at": seconds + micros / 1e6 - 65, "until": 0})
    first = await limits.reserve_navigation("slow.example", 0)
    second = await limits.reserve_navigation("slow.example", 0)
    assert first == 0 and 7.9 < second <= 8.0, (first, second)
    assert (await limits.back_off("slow.example")).level == 5, "a new hit climbs from the recovered level"
    await store.redis.hset(key, mapping={"at": seconds + micros / 1e6 - 5 * 30 - 1, "until": 0})
    await store.redis.delete(store.keys.domain_last_navigation("slow.example"))
    assert [await limits.reserve_navigation("slow.example", 0) for _ in range(2)] == [0, 0], "fully recovered"
    assert 0.9 < await limits.reserve_navigation("slow.example", 1.0) <= 1.0, "min_delay still spaces"


async def test_without_a_shared_store_the_same_back_off_holds_in_the_process() -> None:
    local = LocalLimits(BackoffRule(cap=10.0, recovery=30.0))
    assert (await local.back_off("example.com", retry_after=5)).level == 1
    assert 4 < await local.reserve_navigation("example.com", 0) <= 5
    hit = await local.back_off("example.com", retry_after=500)
    assert hit.level == 2 and 9 < hit.seconds <= 10


@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0), (" 7 ", 7.0), ("0", 0.0), (None, None), ("", None), ("soon", None), ("-5", None),
    ("Fri, 27 Nov 2026 10:00:30 GMT", 30.0), ("Fri, 27 Nov 2026 09:00:00 GMT", 0.0),
])
def test_retry_after_is_delay_seconds_or_an_http_date(value: str | None, seconds: float | None) -> None:
    now = 1795773600.0  # Fri, 27 Nov 2026 10:00:00 GMT
    assert retry_after_seconds(value, now) == seconds


def test_a_robots_refusal_names_what_makes_the_job_follow_robots_txt_and_what_lifts_it() -> None:
    asked = PolitenessOptions(respect_robots_txt=True)
    assert "it asked to (--respect-robots-txt, job field politeness.respect_robots_txt): leave that out" in \
        robots_remedy(asked, Settings())
    operator = Settings(respect_robots_txt=True)
    assert "BROWSERD_RESPECT_ROBOTS_TXT makes every job follow robots.txt: no job can open it" in \
        robots_remedy(asked, operator)
    looser = operator.model_copy(update={"politeness_allow_looser": True})
    assert "politeness.respect_robots_txt=false (BROWSERD_POLITENESS_ALLOW_LOOSER allows it here)" in \
        robots_remedy(PolitenessOptions(), looser)


async def test_robots_rules_follow_rfc_9309_and_are_cached(store: JobStore) -> None:
    body = "User-agent: *\nDisallow: /private\n\nUser-agent: browserd\nDisallow: /nobrowserd\n"
    found = RobotsFile(200, body)
    assert found.refusal("http://x.test/public", "browserd") is None
    assert "robots.txt" in (found.refusal("http://x.test/nobrowserd/a", "browserd") or "")
    assert found.refusal("http://x.test/private", "browserd") is None, "the browserd group replaces *"
    assert found.refusal("http://x.test/private", "otherbot") is not None
    assert RobotsFile(404).refusal("http://x.test/private", "browserd") is None, "4xx: all allowed"
    assert "could not be read" in (RobotsFile(503).refusal("http://x.test/", "browserd") or "")
    assert RobotsFile(0, error="reset").refusal("http://x.test/", "browserd") is not None
    assert robots_url("HTTP://Example.com:8080/a/b?q") == ("http://example.com:8080",
                                                         "http://example.com:8080/robots.txt")
    cache = RobotsCache(store.redis, store.keys, ttl=60)
    assert await cache.get("http://x.test") is None
    await cache.put("http://x.test", found)
    assert await cache.get("http://x.test") == found
    await cache.put("http://down.test", RobotsFile(0, error="reset"))
    assert 0 < await store.redis.ttl(store.keys.robots("http://down.test")) <= 60


async def test_a_hostile_robots_txt_is_read_safely(store: JobStore) -> None:
    """Binary garbage is no rules; a huge file is cut at MAX_BODY (rules past it are not seen)."""
    garbage = RobotsFile(200, "\x00\xff<html>Disallow-ish: /\x1b[31m\n" * 1000)
    assert garbage.refusal("http://x.test/a", "browserd") is None
    huge = RobotsFile(200, "# " + "x" * (2 * MAX_BODY) + "\nUser-agent: *\nDisallow: /\n")
    cache = RobotsCache(store.redis, store.keys, ttl=60)
    await cache.put("http://huge.test", huge)
    kept = await cache.get("http://huge.test")
    assert kept is not None and len(kept.body) == MAX_BODY
    assert kept.refusal("http://huge.test/a", "browserd") is None


def test_a_looser_job_in_a_batch_is_refused_with_its_index_and_field() -> None:
    settings = Settings(politeness_max_concurrent=2)
    good = {"script": [{"done": {"text": "x"}}], "politeness": {"max_concurrent": 1}}
    loose = {"script": [{"done": {"text": "x"}}], "politeness": {"max_concurrent": 3}}
    assert len(validate_jobs(BatchRequest(jobs=[good, good]), settings)) == 2
    with pytest.raises(SpecError) as err:
        validate_jobs(BatchRequest(jobs=[good, loose]), settings)
    assert [p.field for p in err.value.problems] == ["jobs[1].politeness.max_concurrent"]
