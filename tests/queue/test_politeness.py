"""Politeness end to end: real redis-server, two real Celery worker processes, real Chromium, and a
site on 127.0.0.1 that measures what the jobs did to it (``VisitRecorder``). Script jobs, no LLM.

The stack allows 2 jobs at once per domain (``BROWSERD_POLITENESS_MAX_CONCURRENT=2``). The two
workers consume different queues (``high`` / ``normal,low``), so a test can choose which worker
runs a job; the test that kills a worker runs last.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.queue.stack import Proc, Stack, stack, wait_until
from tests.support.servers import VisitRecorder

LIMIT = 2
FINAL = {"succeeded", "failed", "cancelled"}


@pytest.fixture(scope="module")
def deploy() -> Iterator[tuple[Stack, Proc, Proc]]:
    with stack(job_timeout=90, visibility_timeout=300, politeness_max_concurrent=LIMIT, metrics_port=0) as s:
        high = s.start_worker(4, queues="high")
        rest = s.start_worker(4, queues="normal,low")
        yield s, high, rest


def visit(url: str, text: str = "ok") -> list[dict[str, Any]]:
    return [{"go_to_url": {"url": url}}, {"done": {"text": text}}]


def politeness_events(s: Stack, job_id: str) -> list[dict[str, Any]]:
    return [data for kind, data in s.events(job_id) if kind == "politeness"]


def worker_sample(s: Stack, name: str, **labels: str) -> float:
    """``name``'s value summed over every live worker's metrics endpoint."""
    total = 0.0
    for key in s.redis.keys("browserd:worker:*"):
        port = s.redis.hget(key, "metrics_port")
        if not port:
            continue
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
            text = resp.read().decode()
        total += sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                     if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))
    return total


BAD_OPTIONS = [
    ({"max_concurrent": 0}, "politeness.max_concurrent", "greater than or equal"),
    ({"max_concurrent": LIMIT + 1}, "politeness.max_concurrent", "not looser"),
    ({"min_delay": -1}, "politeness.min_delay", "greater than or equal"),
    ({"min_delay": 99999}, "politeness.min_delay", "less than or equal"),
    ({"respect_robots_txt": "perhaps"}, "politeness.respect_robots_txt", "boolean"),
    ({"burst": 3}, "politeness.burst", "Extra inputs"),
]


@pytest.mark.parametrize(("options", "field", "says"), BAD_OPTIONS)
def test_bad_politeness_options_get_422_naming_the_field(deploy: tuple[Stack, Proc, Proc], options: dict[str, Any],
                                                         field: str, says: str) -> None:
    s, _, _ = deploy
    status, err = s.call("POST", "/v1/jobs", {"script": visit("http://127.0.0.1:9/"), "politeness": options})
    assert status == 422, err
    assert field in [f["field"] for f in err["fields"]], err
    assert says in err["message"], err


def test_20_jobs_on_one_domain_over_2_workers_never_run_more_than_2_at_once(
        deploy: tuple[Stack, Proc, Proc]) -> None:
    s, _, _ = deploy
    with VisitRecorder(hold=1.0) as site:
        jobs = [s.submit({"script": visit(site.url(f"/c/{i}")), "priority": "high" if i % 2 else "normal"})
                for i in range(20)]
        done = [s.wait_state(j["id"], FINAL, timeout=240) for j in jobs]
        assert [d["state"] for d in done] == ["succeeded"] * 20, [d.get("error") for d in done]
        assert len(site.arrivals("/c/")) == 20
        assert site.most_in_flight == LIMIT, f"{site.most_in_flight} page loads at once at the site"
    assert len({d["worker"] for d in done}) == 2, "both worker processes ran jobs"
    waited = [e for d in done for e in politeness_events(s, d["id"])]
    assert any(e["kind"] == "slot" and e["state"] == "waiting" and e["domain"] == "127.0.0.1" for e in waited)
    assert any(e["kind"] == "slot" and e["state"] == "acquired" and e["waited"] > 0 for e in waited)
    assert not s.redis.zrange("browserd:polite:127.0.0.1:slots", 0, -1), "every slot was released"
    assert worker_sample(s, "browserd_politeness_wait_seconds_count", kind="slot") >= 1
    assert worker_sample(s, "browserd_politeness_waiting_jobs", kind="slot") == 0


def test_navigations_to_one_domain_are_spaced_by_min_delay(deploy: tuple[Stack, Proc, Proc]) -> None:
    s, _, _ = deploy
    delay, jobs_n = 1.5, 4
    with VisitRecorder() as site:
        jobs = [s.submit({"script": [{"go_to_url": {"url": site.url(f"/d/{i}/a", host="localhost")}},
                                     {"go_to_url": {"url": site.url(f"/d/{i}/b", host="localhost")}},
                                     {"done": {"text": "ok"}}],
                          "politeness": {"min_delay": delay}, "priority": "high" if i % 2 else "normal"})
                for i in range(jobs_n)]
        done = [s.wait_state(j["id"], FINAL, timeout=180) for j in jobs]
        assert [d["state"] for d in done] == ["succeeded"] * jobs_n, [d.get("error") for d in done]
        times = site.arrivals("/d/")
    assert len(times) == 2 * jobs_n
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Each navigation starts at its reserved time, exactly ``delay`` after the one before; what the
    # site sees adds how long Chrome then takes to reach it (through the egress proxy, a first
    # connection slower than later ones: up to ~0.5 s seen here), hence ``lag`` on single gaps.
    # The whole span can shrink by at most one such lag.
    lag = 0.75
    assert min(gaps) > delay - lag, gaps
    assert times[-1] - times[0] > (len(times) - 1) * delay - lag, gaps
    paced = [e for d in done for e in politeness_events(s, d["id"]) if e["kind"] == "navigation"]
    assert paced and all(e["domain"] == "localhost" and 0 < e["seconds"] for e in paced)


def test_robots_txt_disallows_navigations_when_asked_and_is_fetched_once(deploy: tuple[Stack, Proc, Proc]) -> None:
    s, _, _ = deploy
    robots = "User-agent: *\nDisallow: /private\n"
    with VisitRecorder(robots=robots) as site:
        polite = {"respect_robots_txt": True}
        start = s.submit({"start_url": site.url("/private/start"), "script": [{"done": {"text": "x"}}],
                          "politeness": polite})
        start_done = s.wait_state(start["id"], FINAL, timeout=120)
        later = s.submit({"script": [{"go_to_url": {"url": site.url("/public/a")}},
                                     {"go_to_url": {"url": site.url("/private/b")}}, {"done": {"text": "x"}}],
                          "politeness": polite})
        later_done = s.wait_state(later["id"], FINAL, timeout=120)
        rude = s.submit({"script": visit(site.url("/private/c"))})  # robots.txt is optional here
        rude_done = s.wait_state(rude["id"], FINAL, timeout=120)
        pages = [path for path, _ in site.visits]
        fetches = site.robots_fetches

    assert (start_done["state"], start_done["category"]) == ("failed", "url_blocked"), start_done
    assert "robots.txt" in start_done["error"] and "/private/start" in start_done["error"]
    assert start_done["error"].endswith("the job follows robots.txt because it asked to (--respect-robots-txt, "
                                        "job field politeness.respect_robots_txt): leave that out to open it")
    assert later_done["state"] == "failed" and "robots.txt" in later_done["error"], later_done
    assert later_done["result"]["steps"][0]["actions"][0]["ok"], "the allowed page opened"
    assert rude_done["state"] == "succeeded", rude_done
    assert pages == ["/public/a", "/private/c"], "no disallowed page was ever requested"
    assert fetches == 1, "robots.txt is cached in Redis for every worker"
    assert any(e["kind"] == "robots" and e["state"] == "refused" for e in politeness_events(s, start["id"]))


def test_robots_txt_is_fetched_under_the_jobs_egress_policy(deploy: tuple[Stack, Proc, Proc]) -> None:
    """A robots.txt that redirects to an address the job may not reach (127.0.0.2: loopback, but
    outside the stack's 127.0.0.1/32) is not followed there: the egress gate refuses it."""
    s, _, _ = deploy
    with VisitRecorder() as target, VisitRecorder() as site:
        site.robots = (302, f"http://127.0.0.2:{target.port}/robots.txt")
        job = s.submit({"start_url": site.url("/page"), "script": [{"done": {"text": "x"}}],
                        "politeness": {"respect_robots_txt": True}})
        done = s.wait_state(job["id"], FINAL, timeout=120)
        assert target.robots_fetches == 0 and not target.visits
        assert site.robots_fetches == 1 and not site.visits
    assert (done["state"], done["category"]) == ("failed", "url_blocked"), done
    assert "robots.txt" in done["error"] and "egress policy refused 127.0.0.2" in done["error"], done["error"]


def test_a_job_cancelled_while_it_waits_for_a_slot_ends_cancelled(deploy: tuple[Stack, Proc, Proc]) -> None:
    s, _, _ = deploy
    with VisitRecorder() as site:
        one = {"max_concurrent": 1}
        holder = s.submit({"script": [{"go_to_url": {"url": site.url("/w/holder")}}, {"wait": {"seconds": 5}},
                                      {"done": {"text": "x"}}], "politeness": one})
        wait_until(lambda: site.arrivals("/w/holder"), 120, "the holder to open its page")
        waiter = s.submit({"script": visit(site.url("/w/waiter")), "politeness": one})
        wait_until(lambda: any(e["state"] == "waiting" for e in politeness_events(s, waiter["id"])), 60,
                   "the second job to wait for a slot")
        assert s.call("POST", f"/v1/jobs/{waiter['id']}/cancel")[0] in (200, 202)
        cancelled = s.wait_state(waiter["id"], FINAL, timeout=60)
        held = s.wait_state(holder["id"], FINAL, timeout=60)
        assert not site.arrivals("/w/waiter")
    assert cancelled["state"] == "cancelled" and "waiting for a slot" in (cancelled.get("error") or ""), cancelled
    assert held["state"] == "succeeded", held


def test_a_killed_workers_slot_frees_itself(deploy: tuple[Stack, Proc, Proc]) -> None:
    """Runs last: it kills the ``high`` worker."""
    s, high, rest = deploy
    with VisitRecorder() as site:
        one = {"max_concurrent": 1}
        holder = s.submit({"script": [{"go_to_url": {"url": site.url("/k/holder")}},
                                      {"wait": {"seconds": 60}}, {"done": {"text": "x"}}],
                           "politeness": one, "priority": "high"})
        wait_until(lambda: site.arrivals("/k/holder"), 120, "the holder to open its page")
        waiter = s.submit({"script": visit(site.url("/k/waiter")), "politeness": one, "priority": "normal"})
        wait_until(lambda: any(e["kind"] == "slot" and e["state"] == "waiting"
                               for e in politeness_events(s, waiter["id"])), 60, "the second job to wait for a slot")
        assert s.worker_of(s.job(holder["id"])) is high and not site.arrivals("/k/waiter")
        high.kill9()
        done = s.wait_state(waiter["id"], FINAL, timeout=90)
        assert done["state"] == "succeeded", done
        assert site.arrivals("/k/waiter")
    assert s.worker_of(done) is rest
    acquired = [e for e in politeness_events(s, waiter["id"]) if e["state"] == "acquired"]
    assert acquired and acquired[0]["waited"] > 0
