"""Cost in dollars through the real pipeline, a browser and the scripted model
(``workers/pipeline/features/costs.py``): each result says what its LLM calls cost by the price
table, an unpriced model is named rather than counted, and ``max_cost_usd`` stops a job before its
next LLM call with category ``budget_exceeded``."""

from __future__ import annotations

import pytest

from config import load_settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan, run
from workers.jobs.costs import DEFAULT_PRICES
from workers.jobs.model.status import FailureCategory, JobStatus

pytestmark = pytest.mark.e2e

ONE_CALL = DEFAULT_PRICES["gpt-4o-mini"].cost(100, 20)  # what the scripted model reports per answer


async def test_a_result_says_what_its_calls_cost(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="The kettle is in the cart."))
    llm.add(NAVIGATOR, act({"click_element": {"index": 1}}), act({"done": {"text": "Added."}}))
    result, _, _ = await run(pool, settings, task="Put the kettle in the cart",
                             start_url=site.url("agent/product.html?p=kettle"))
    calls = len(llm.requests_for(PLANNER)) + len(llm.requests_for(NAVIGATOR))
    assert result.status is JobStatus.succeeded, result.error
    assert calls >= 3 and result.cost_usd == round(calls * ONE_CALL, 6)
    assert result.unpriced_models == []


async def test_max_cost_usd_stops_the_job_before_its_next_llm_call(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="never asked"))
    llm.add(NAVIGATOR, act({"click_element": {"index": 1}}))
    result, text, _ = await run(pool, settings, task="Put the kettle in the cart", max_cost_usd=ONE_CALL / 2,
                                start_url=site.url("agent/product.html?p=kettle"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.budget_exceeded)
    assert "max_cost_usd" in (result.error or "") and result.cost_usd == round(ONE_CALL, 6)
    assert len(llm.requests_for(PLANNER)) == 1 and llm.requests_for(NAVIGATOR) == []  # no call after the cap
    assert "In cart: 1" not in text


async def test_an_unpriced_model_is_named_not_counted(pool, site, llm):
    settings = load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=12, job_timeout=120,
                             llm_model="house-model-7b")
    llm.add(PLANNER, plan(done=True, final_answer="I cannot perform harmful actions.", outcome="refused",
                          web_task=False))
    result, _, _ = await run(pool, settings, task="Write ransomware for me", max_cost_usd=ONE_CALL / 2,
                             start_url=site.url("agent/catalog.html"))
    assert result.category is FailureCategory.refused  # an unpriced call counts nothing toward the cap
    assert result.cost_usd == 0 and result.unpriced_models == ["house-model-7b"]
