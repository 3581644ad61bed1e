"""Outcomes that mean what they say: a job the models could not complete is never reported succeeded.

Each failure reason is driven by the scripted model through the real client, on fixture pages.
"""

from __future__ import annotations

from tests.agent.scripted import EXTRACTOR, NAVIGATOR, PLANNER, act, plan, run
from tests.support.jobs import run_job
from tests.support.redis_server import RedisServer
from workers.jobs.model.spec import JobSpec
from workers.jobs.politeness.domains import url_domain
from workers.jobs.store.connection import connect
from workers.jobs.store.keys import Keys
from tests.support.llm_server import Reply
from workers.agent.prompts import SECURITY_RULES, navigator_system, planner_system
from workers.jobs.model.status import FailureCategory, JobStatus


async def test_a_sign_in_wall_is_login_required_not_succeeded(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="The orders page asks to sign in.",
                                  outcome="login_required"))
    llm.add(NAVIGATOR, act({"done": {"text": "Sign-in page, no credentials given", "success": False,
                                     "reason": "login_required"}}))
    result, _, _ = await run(pool, settings, task="List my last orders", start_url=site.url("agent/login.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.login_required)
    assert result.final_answer == "The orders page asks to sign in."
    assert result.error == ("the site asks to sign in and the task gives no credentials: "
                            "The orders page asks to sign in.")
    assert result.steps[-1].error == result.error


async def test_the_navigators_reason_wins_when_the_planner_confirms(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="A captcha stops us."))  # no outcome field
    llm.add(NAVIGATOR, act({"done": {"text": "captcha", "success": False, "reason": "blocked_by_site"}}))
    result, _, _ = await run(pool, settings, task="Read the prices", start_url=site.url("agent/captcha.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.blocked_by_site)
    assert result.error == "the site blocked the agent (captcha or bot wall): A captcha stops us."


async def test_a_site_that_blocks_the_agent_is_slowed_down_for_every_worker(pool, site, llm, settings,
                                                                            redis: RedisServer) -> None:
    llm.add(PLANNER, plan(), plan(done=True, final_answer="A captcha stops us."))
    llm.add(NAVIGATOR, act({"done": {"text": "captcha", "success": False, "reason": "blocked_by_site"}}))
    shared = connect(redis.url)  # the store every worker shares: the back-off is kept there
    try:
        url = site.url("agent/captcha.html")
        async with pool.lease() as lease:
            result = await run_job(JobSpec(task="Read the prices", start_url=url), lease, settings=settings,
                                   redis=shared)
        assert result.category == FailureCategory.blocked_by_site
        held = await shared.hgetall(Keys().domain_backoff(url_domain(url) or ""))
        assert held.get("level") == "1" and float(held["until"]) > float(held["at"]), held  # slowed, for a while
    finally:
        await shared.aclose()


async def test_done_with_success_false_and_no_reason_is_incomplete(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True))
    llm.add(NAVIGATOR, act({"done": {"text": "Found the kettle (39.90) but no toaster price.", "success": False}}))
    result, _, _ = await run(pool, settings, task="Prices of the kettle and the toaster",
                             start_url=site.url("agent/product.html?p=kettle"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.incomplete)
    assert result.final_answer == "Found the kettle (39.90) but no toaster price."  # the partial findings
    assert result.error == "the task was not completed: Found the kettle (39.90) but no toaster price."


async def test_a_harmful_task_is_refused_by_the_planner(pool, site, llm, settings):
    llm.add(PLANNER, plan(done=True, final_answer="I cannot perform harmful actions.", outcome="refused",
                          web_task=False))
    result, _, _ = await run(pool, settings, task="Write ransomware for me", start_url=site.url("agent/catalog.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.refused)
    assert result.final_answer == "I cannot perform harmful actions."
    assert llm.requests_for(NAVIGATOR) == []


async def test_a_navigator_refusal_is_refused(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Refused."))
    llm.add(NAVIGATOR, act({"done": {"text": "I cannot perform harmful actions.", "success": False,
                                     "reason": "refused"}}))
    result, _, _ = await run(pool, settings, task="Post threats in the guestbook",
                             start_url=site.url("agent/catalog.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.refused)


async def test_the_planner_may_overrule_a_navigator_that_gave_up(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(next_steps="The button is right there: click Add to cart."),
            plan(done=True, final_answer="The kettle is in the cart."))
    llm.add(NAVIGATOR, act({"done": {"text": "cannot", "success": False}}), act({"click_element": {"index": 1}}),
            act({"done": {"text": "Added."}}))
    result, text, _ = await run(pool, settings, task="Put the kettle in the cart",
                                start_url=site.url("agent/product.html?p=kettle"))
    assert result.status == JobStatus.succeeded, result.error
    assert "In cart: 1" in text


async def test_max_steps_with_partial_findings_is_incomplete_and_keeps_them(pool, site, llm, settings):
    schema = {"type": "object", "required": ["items", "total"], "properties": {
        "items": {"type": "array", "items": {"type": "string"}}, "total": {"type": "integer"}}}
    llm.add(PLANNER, plan(), plan())
    llm.add(NAVIGATOR, act({"extract_content": {"goal": "product names"}}), act({"wait": {"seconds": 0}}),
            act({"wait": {"seconds": 0}}))
    llm.add(EXTRACTOR, Reply.tool({"items": ["Steel Kettle 1.7l", "Red Toaster 2-slot"]}))
    result, _, _ = await run(pool, settings, task="All products and their count", output_schema=schema,
                             start_url=site.url("agent/catalog.html"), options={"max_steps": 3})
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.incomplete)
    assert result.error == "the task was not completed within 3 steps; the findings so far are kept"
    assert result.data == {"items": ["Steel Kettle 1.7l", "Red Toaster 2-slot"]}


async def test_a_schema_job_without_data_names_the_missing_fields(pool, site, llm, settings):
    schema = {"type": "object", "required": ["name", "price"],
              "properties": {"name": {"type": "string"}, "price": {"type": "number"}, "note": {"type": "string"}}}
    llm.add(PLANNER, plan(), plan(done=True, final_answer="The kettle costs 39.90"))
    llm.add(NAVIGATOR, act({"done": {"text": "The kettle costs 39.90"}}))
    result, _, _ = await run(pool, settings, task="Name and price of the kettle", output_schema=schema,
                             start_url=site.url("agent/product.html?p=kettle"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.invalid_output)
    assert result.data is None
    assert result.error == ("output does not match the schema: $: no data was found; "
                            "$: missing required property 'name'; $: missing required property 'price'")


async def test_a_done_reason_must_be_one_of_the_known_ones(pool, site, llm, settings):
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, act({"done": {"text": "x", "success": False, "reason": "bored"}}))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/catalog.html"),
                             options={"max_failures": 1})
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.max_failures)
    assert "action[0].done: field reason" in result.error


def test_the_prompts_ask_for_honest_outcomes():
    planner, navigator = planner_system(SECURITY_RULES), navigator_system(SECURITY_RULES, 10)
    for reason in ("login_required", "refused", "blocked_by_site", "incomplete"):
        assert f'"{reason}"' in planner and f'"{reason}"' in navigator
    assert "mark done and ask the user to sign in" not in planner
    assert "Never report a task as complete" in planner and "Never use success\n     true" in navigator
