"""Replaying recipes in one process: a recorded agent run replays with no LLM, and heals on a changed shop.

Recipes live where a worker's jobs find them, in a real redis-server's recipe store; each job runs
through the pipeline (``tests.support.jobs``) with that store around it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from tests.agent.scripted import PLANNER, act, last_state, plan, task_of
from tests.support.jobs import run_job
from tests.support.llm_server import Reply, offered_tool
from tests.support.redis_server import RedisServer
from tests.support.shop import (
    CHANGED_FIELDS,
    ShopModel,
    SwitchableShop,
    last_model_output,
    task,
)
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.recipes.models import Recipe
from workers.jobs.recipes.recording import infer_params, recipe_from_run
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.store.connection import connect


@pytest.fixture
def shop() -> Iterator[SwitchableShop]:
    with SwitchableShop() as site:
        yield site


@pytest_asyncio.fixture
async def recipes(redis: RedisServer) -> AsyncIterator[RecipeStore]:
    """The shared store's recipes, empty for each test."""
    client = connect(redis.url)
    await client.flushdb()
    yield RecipeStore(client)
    await client.aclose()


async def saved(recipes: RecipeStore, recipe: Recipe) -> None:
    """``recipe`` as the current version of its name (what a recipe job replays)."""
    assert await recipes.save(recipe) is not None


async def run(pool, settings, spec: JobSpec, recipes: RecipeStore | None = None):
    async with pool.lease() as lease:
        return await run_job(spec, lease, settings=settings, redis=recipes.redis if recipes else None)


def agent_spec(url: str, query: str) -> JobSpec:
    return JobSpec(task=task(query), start_url=url, allowed_networks=["127.0.0.1/32"],
                   options={"planning_interval": 100})


def recipe_job(**extra) -> JobSpec:
    return JobSpec(recipe="shop-search", allowed_networks=["127.0.0.1/32"], **extra)


async def recorded(pool, settings, llm, url: str):
    model = ShopModel()
    llm.responder = model
    spec = agent_spec(url, "mug")
    result = await run(pool, settings, spec)
    assert result.status == JobStatus.succeeded, result.error
    params = infer_params(spec.task or "", result.steps)
    recipe = recipe_from_run("shop-search", spec, result.steps, params, source_job=None,
                             seconds=result.totals.seconds, llm_calls=result.totals.llm_calls)
    return result, recipe, model


async def test_a_recorded_search_replays_with_no_llm_call(pool, settings, llm, shop, recipes):
    result, recipe, model = await recorded(pool, settings, llm, shop.url("/"))
    assert recipe.params == {"q": "mug"}
    assert [s.action for s in recipe.steps] == ["input_text", "click_element", "extract_fields"]
    assert recipe.steps[0].params["text"] == "{{q}}" and "mug" not in recipe.task
    assert result.data["names"] == ["Enamel Camp Mug"]
    before = model.calls

    await saved(recipes, recipe)
    replayed = await run(pool, settings, recipe_job(params={"q": "tent"}), recipes)
    assert replayed.status == JobStatus.succeeded, replayed.error
    assert model.calls == before  # not one LLM request
    assert replayed.data == {"names": ["Two-Person Tent"], "prices": ["$349.00"]}
    assert all(s.replayed for s in replayed.steps) and replayed.totals.llm_calls == 0


async def test_a_changed_shop_heals_with_the_agent(pool, settings, llm, shop, recipes):
    _, recipe, model = await recorded(pool, settings, llm, shop.url("/"))
    shop.change()
    model.fields = CHANGED_FIELDS
    before = model.calls
    await saved(recipes, recipe)
    healed = await run(pool, settings, recipe_job(params={"q": "mug"}), recipes)
    assert healed.status == JobStatus.succeeded, healed.error
    assert model.calls > before
    assert healed.data["names"] == ["Enamel Camp Mug"]
    assert any(s.replayed and s.error for s in healed.steps)  # the step that no longer matched
    assert any(not s.replayed for s in healed.steps)  # the agent's
    hint = next(m["content"] for r in llm.requests[-(model.calls - before):] for m in r["messages"]
                if m["role"] == "assistant" and "could not be replayed" in str(m.get("content")))
    assert "untrusted_content_" in hint and "extract_fields" in hint  # the recorded steps, guarded as page text


async def test_without_healing_a_wrong_locator_fails_naming_the_step(pool, settings, llm, shop, recipes):
    _, recipe, model = await recorded(pool, settings, llm, shop.url("/"))
    wrong = recipe.model_copy(deep=True)
    wrong.steps[1].params["locator"] = {"tag": "button", "role": "button", "name": "Checkout now", "text": "Checkout now",
                                        "attributes": {"id": "checkout"}}
    before = model.calls
    await saved(recipes, wrong)
    failed = await run(pool, settings, recipe_job(params={"q": "mug"}, heal=False), recipes)
    assert failed.status == JobStatus.failed
    assert "recipe 'shop-search' step 2" in failed.error and "Checkout now" in failed.error
    assert model.calls == before


def frame_model(request) -> Reply:
    """Subscribes the task's quoted email in the cross-origin newsletter frame, then is done."""
    if offered_tool(request) == PLANNER:
        return plan(done='"done"' in (last_model_output(request) or ""), final_answer="subscribed")
    state = last_state(request)
    email = re.search(r'"([^"]+@[^"]+)"', task_of(request)).group(1)
    box = re.search(r"\[(\d+)\]<input type=email", state)
    button = re.search(r"\[(\d+)\]<button>Subscribe", state)
    if f"typed {email!r}" not in state:
        return act({"input_text": {"index": int(box.group(1)), "text": email}})
    return act({"click_element": {"index": int(button.group(1))}}, {"done": {"text": "subscribed"}})


async def test_a_recipe_step_inside_a_cross_origin_iframe_replays(pool, settings, llm, site, other_site, recipes):
    llm.responder = frame_model
    url = site.url(f"locators/shop.html?other=http://127.0.0.1:{other_site.port}")
    spec = JobSpec(task='Subscribe "a@example.test" to the newsletter', start_url=url, allowed_networks=["127.0.0.1/32"],
                   options={"planning_interval": 100})
    result = await run(pool, settings, spec)
    assert result.status == JobStatus.succeeded, result.error
    params = infer_params(spec.task or "", result.steps)
    recipe = recipe_from_run("newsletter", spec, result.steps, params, source_job=None, seconds=1, llm_calls=1)
    assert recipe.steps[0].params["locator"]["frame_path"][0]["url"] == "/locators/newsletter.html"
    calls = len(llm.requests)

    await saved(recipes, recipe.model_copy(update={"name": "shop-search"}))  # the name recipe_job replays
    async with pool.lease() as lease:
        replayed = await run_job(recipe_job(params={"email": "b@example.test"}), lease, settings=settings,
                                 redis=recipes.redis)
    assert replayed.status == JobStatus.succeeded, replayed.error
    assert len(llm.requests) == calls and all(s.replayed and not s.error for s in replayed.steps)
    typed, clicked = (a for s in replayed.steps for a in s.actions)
    assert typed.result.startswith("typed 'b@example.test'") and clicked.result.startswith("clicked")
    assert typed.locator.frame_path[0].url == clicked.locator.frame_path[0].url == "/locators/newsletter.html"


DECOY = ('<form action="/decoy" method="get"><input name="q" type="search" placeholder="e.g. jacket" aria-label="Search">'
         '<button type="submit">Search</button></form>')


async def test_a_decoy_copy_of_the_form_never_takes_the_replay_elsewhere(pool, settings, llm, shop, recipes):
    _, recipe, model = await recorded(pool, settings, llm, shop.url("/"))
    shop.httpd.transform = lambda page: page.replace("<body>", "<body>" + DECOY, 1)  # a copy above the real one
    before = model.calls
    await saved(recipes, recipe)
    async with pool.lease() as lease:
        result = await run_job(recipe_job(params={"q": "tent"}, heal=False), lease, settings=settings,
                               redis=recipes.redis)
        url = await lease.page.url()
    assert model.calls == before
    assert "/decoy" not in url
    assert result.status == JobStatus.succeeded, result.error  # the recorded form is told from its copy by
    assert result.data["names"] == ["Two-Person Tent"]            # where it is, its other features being equal
