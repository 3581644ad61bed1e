"""Recipes at the prepare stage (``workers/pipeline/features/recipes.py``), through a local run of the
pipeline with the shared store's Redis: a recipe job gets the plan and the job as the recipe runs
it; a recipe deleted, marked broken or changed since the job was queued fails it before any
browser, as the tenant's to fix. (What a run teaches the recipe: tests/jobs/test_recipes.py and,
with a browser, tests/recipes.)"""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from config import Settings
from tests.pipeline.stages import BrowserGoneBrowsers, NoBrowsers, inputs_probe
from workers.agent import JobInputs
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.recipes.models import Recipe, RecipeStep, ReplayOutcome, ReplayPlan
from workers.jobs.recipes.store import RecipeStore
from workers.pipeline import FEATURES, run_local


def prices(name: str) -> Recipe:
    return Recipe(name=name, task="read the prices of {{q}}", start_url="http://shop.test/search?q={{q}}",
                  params={"q": "mugs"}, steps=[RecipeStep(action="click_element", params={"index": 3})])


async def test_a_recipe_job_runs_the_recipes_plan_and_task(client: aioredis.Redis, settings: Settings) -> None:
    saved = await RecipeStore(client).save(prices("prices"))
    seen: list[JobInputs] = []
    await run_local(JobSpec(recipe="prices", params={"q": "teapots"}), settings=settings,
                    browsers=BrowserGoneBrowsers(), redis=client, features=(*FEATURES, inputs_probe(seen)))
    inputs = seen[0]
    assert inputs.replay == ReplayPlan(recipe=saved, params={"q": "teapots"})
    assert inputs.spec.task == "read the prices of teapots"
    assert str(inputs.spec.start_url) == "http://shop.test/search?q=teapots"


async def _broken(store: RecipeStore, name: str) -> None:
    await store.save(prices(name))
    for _ in range(store.max_failures):
        await store.record_run(name, ReplayOutcome.failed, "no element 3")


async def _deleted(store: RecipeStore, name: str) -> None:
    await store.save(prices(name))
    assert await store.delete(name)


async def _changed(store: RecipeStore, name: str) -> None:
    await store.save(prices(name))
    await store.save(prices(name).model_copy(update={"params": {"q": "mugs", "colour": "blue"}}))


@pytest.mark.parametrize("make, says", [
    (_deleted, "recipe '{name}' no longer exists (deleted after the job was queued)"),
    (_broken, "recipe '{name}' is marked broken: {failures} failures in a row; the last: no element 3"),
    (_changed, "recipe '{name}' changed since the job was queued: params.colour: recipe '{name}' needs this parameter"),
], ids=["deleted", "broken", "changed"])
async def test_a_recipe_that_cannot_run_as_queued_fails_the_job_before_the_browser(
        client: aioredis.Redis, settings: Settings, make, says: str) -> None:  # type: ignore[no-untyped-def]
    name = f"prices-{make.__name__.strip('_')}"
    await make(RecipeStore(client, max_failures=settings.recipe_max_failures), name)
    browsers = NoBrowsers()
    result = await run_local(JobSpec(recipe=name, params={"q": "teapots"}), settings=settings,
                             browsers=browsers, redis=client)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.recipe_unavailable)
    assert result.error is not None and result.error.startswith(says.format(name=name, failures=settings.recipe_max_failures)), \
        result.error
    assert browsers.asked == 0


async def test_a_recipe_job_that_never_reached_the_page_does_not_count_against_the_recipe(
        client: aioredis.Redis, settings: Settings) -> None:
    """No browser free, or the browser gone before the first step: the recipe was never tried, so it
    is not one failure closer to being marked broken."""
    store = RecipeStore(client, max_failures=settings.recipe_max_failures)
    await store.save(prices("untried"))
    for _ in range(settings.recipe_max_failures + 1):
        result = await run_local(JobSpec(recipe="untried", params={"q": "teapots"}), settings=settings,
                                 browsers=BrowserGoneBrowsers(), redis=client)
        assert result.status == JobStatus.failed and result.steps == []
    info = await store.get("untried")
    assert info is not None and info.stats.runs == 0 and info.stats.broken == ""
