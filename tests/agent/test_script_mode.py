"""Script mode: a job's list of actions run with no LLM, on real pages in real Chromium."""

from __future__ import annotations

import pytest

from tests.support.jobs import run_job
from tests.support.schemas import anyof_bomb
from workers.jobs.model.actions import validate_script
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus


async def test_script_reads_fields_and_finishes(pool, site):
    spec = JobSpec(script=[
        {"go_to_url": {"url": site.url("agent/catalog.html")}},
        {"extract_fields": {"fields": {"title": "h1", "mail": "#mail@href"}}},
        {"extract_fields": {"fields": {"names": "tr.item .name", "prices": "tr.item .price"}, "all": True}},
        {"scroll_to_bottom": {}},
        {"wait": {"seconds": 0.1}},
        {"done": {"text": "catalog read"}},
    ])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == "catalog read"
    assert result.data == {
        "title": "Kitchen catalog",
        "mail": "mailto:shop@example.test",
        "names": ["Steel Kettle 1.7l", "Red Toaster 2-slot", "Coffee Grinder Pro"],
        "prices": ["39.90", "24.50", "79.00"],
    }
    assert [s.actions[0].name for s in result.steps] == [
        "go_to_url", "extract_fields", "extract_fields", "scroll_to_bottom", "wait", "done"]
    assert all(s.actions[0].ok for s in result.steps)
    assert "bottom" in result.steps[3].actions[0].result
    assert result.totals.steps == 6 and result.totals.llm_calls == 0


async def test_script_output_is_checked_against_the_schema(pool, site):
    schema = {"type": "object", "required": ["title", "price"],
              "properties": {"title": {"type": "string"}, "price": {"type": "number"}}}
    spec = JobSpec(start_url=site.url("agent/catalog.html"), output_schema=schema,
                   script=[{"extract_fields": {"fields": {"title": "h1", "price": ".price"}}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.invalid_output
    assert "$.price: expected number, got string" in result.error
    assert result.data == {"title": "Kitchen catalog", "price": "39.90"}


async def test_a_schema_from_before_the_bounds_fails_its_job_at_the_check_deadline(pool, site):
    """Issue 22, finding 5: a job queued before output schemas were bounded (its spec never checked
    against them) with the anyOf bomb; its data, an object, matches none of 2^26 branches. The check
    stops itself at its deadline and the job fails saying so, where it used to hold the worker."""
    spec = JobSpec(start_url=site.url("agent/catalog.html"), output_schema=anyof_bomb(),
                   script=[{"extract_fields": {"fields": {"title": "h1"}}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.invalid_output)
    assert "checking the data against the output schema took longer than 10s" in result.error
    assert result.data == {"title": "Kitchen catalog"}


async def test_a_failing_script_action_fails_the_job_and_names_it(pool, site):
    spec = JobSpec(start_url=site.url("agent/catalog.html"),
                   script=[{"scroll_to_text": {"text": "Prices include VAT"}},
                           {"scroll_to_text": {"text": "no such words anywhere"}},
                           {"done": {"text": "never"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.action_error
    assert "script[1] scroll_to_text" in result.error and "not found" in result.error
    assert [s.actions[0].ok for s in result.steps] == [True, False]


async def test_script_refuses_a_denied_domain(pool, site):
    spec = JobSpec(denied_domains=["localhost"],
                   script=[{"go_to_url": {"url": site.url("agent/catalog.html")}},
                           {"go_to_url": {"url": "http://localhost:9/secret"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.url_blocked
    assert result.error == ("blocked: http://localhost:9/secret: domain not allowed: localhost is on the job's "
                            "denied_domains (localhost); open it by dropping --deny localhost (job field denied_domains)")


@pytest.mark.parametrize("bad, message", [
    ([{"click_element": {}}], "script[0].click_element: field index: Field required"),
    ([{"go_to_url": {"url": "http://x"}}, {"teleport": {}}], "script[1]: unknown action 'teleport'"),
    ([{"wait": {"seconds": 1}, "done": {}}], "script[0]: must be an object with exactly one action name"),
    ([{"input_text": {"index": 2, "text": "a", "speed": 3}}], "script[0].input_text: field speed: Extra inputs"),
])
def test_validate_script_names_the_bad_action(bad, message):
    with pytest.raises(ValueError) as err:
        validate_script(bad)
    assert message in str(err.value)


def test_validate_script_fills_defaults():
    assert validate_script([{"wait": {}}, {"done": {"text": "ok"}}]) == [
        {"wait": {"intent": "", "seconds": 3.0}}, {"done": {"intent": "", "text": "ok", "success": True}}]


@pytest.mark.e2e  # a pool of its own
async def test_a_browser_that_dies_mid_job_fails_it_as_browser_crash(site):
    import asyncio
    import os

    from cdp import BrowserPool
    from tests.conftest import egress_config

    spec = JobSpec(script=[
        {"go_to_url": {"url": site.url("agent/catalog.html")}},
        {"wait": {"seconds": 10}},
        {"done": {"text": "never"}},
    ])
    async with BrowserPool(egress_config(warm=0)) as own_pool:
        async with own_pool.lease() as lease:
            job = asyncio.ensure_future(run_job(spec, lease))
            await asyncio.sleep(1.5)
            os.kill(lease.browser.pid, 9)
            result = await asyncio.wait_for(job, 5)  # at once: not after the rest of the 10 s wait
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.browser_crash, result.error


async def test_a_closed_network_is_refused_naming_the_flag_that_opens_it(pool, site):
    """127.0.0.2 is loopback, and only 127.0.0.1/32 is open (tests/conftest.py): the refusal names
    the rule and the exact flag, job field and setting that open it."""
    spec = JobSpec(script=[{"go_to_url": {"url": "http://127.0.0.2:8080/private"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked), result.error
    assert result.error == ("blocked: http://127.0.0.2:8080/private: address 127.0.0.2 is loopback, a private network "
                            "the job has not opened; open it with --allow-network 127.0.0.2/32 (job field "
                            "allowed_networks), within what the operator allows: BROWSERD_ALLOWED_NETWORKS, opened "
                            "for every job of the operator's own, and a tenant's allowed_networks for its jobs")


async def test_a_host_that_does_not_resolve_fails_as_dns_error(pool, site):
    spec = JobSpec(script=[{"go_to_url": {"url": "http://no-such-host.invalid/"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.dns_error), result.error
    assert result.error.startswith("cannot resolve no-such-host.invalid: ") and "blocked" not in result.error
