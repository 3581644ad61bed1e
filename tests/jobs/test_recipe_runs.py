"""What a worker makes of a job and a recipe before running it: which domain it is on, and whether an
automatic job replays a recipe that extracts with the model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config import load_settings
from tests.jobs.test_recipes import TASK, run_steps
from workers.agent import replay_spec
from workers.jobs.model.spec import JobSpec
from workers.jobs.recipes.models import Recipe, RecipeStep, ReplayPlan
from workers.jobs.recipes.recording import recipe_from_run
from workers.pipeline import LocalRecords, Services
from workers.pipeline.features.politeness import job_site
from workers.pipeline.features.recipes import RecipeReplay


def test_a_recipe_job_is_on_its_recipes_domain():
    recipe = recipe_from_run("shop", JobSpec(task=TASK, start_url="http://www.shop.test/?q=blue+mug"), run_steps(),
                             {"q": "blue mug"}, source_job=None, seconds=12.0, llm_calls=4)
    job = JobSpec(recipe="shop", params={"q": "tea"})
    plan = ReplayPlan(recipe=recipe, params={"q": "tea"})
    assert job_site(job, replay_spec(job, plan)) == "shop.test"
    assert job_site(job, job) is None, "no recipe to replay and no start URL: no domain"
    own = JobSpec(recipe="shop", params={"q": "tea"}, start_url="http://other.test/")
    assert job_site(own, replay_spec(own, plan)) == "other.test", "a job's own start URL comes first"


async def test_an_automatic_job_replays_a_recipe_that_extracts_with_the_model_only_when_allowed(store):
    recipes = RecipeReplay(Services(settings=load_settings(), records=LocalRecords(), redis=store.redis, keys=store.keys))
    operators = recipes.store(None)  # the operator's recipes (a tenant's job: its own, recipes.store(tenant))
    assert operators is not None
    await operators.save(Recipe(name="read", task="read the prices of {{q}}", params={"q": "mugs"},
                                    steps=[RecipeStep(action="extract_content", params={"goal": "prices"})]))
    plain = await recipes.choose(JobSpec(task="read the prices of teapots", auto_recipe="read"))
    assert plain.plan is None and plain.record_as is None, "the agent runs; the recipe stays as it is"
    allowed = await recipes.choose(JobSpec(task="read the prices of teapots", auto_recipe="read", llm_extraction=True))
    assert allowed.plan is not None and allowed.plan.params == {"q": "teapots"}


def test_llm_extraction_belongs_to_a_recipe_job_or_an_automatic_one():
    with pytest.raises(ValidationError, match="llm_extraction"):
        JobSpec(task="read the prices", llm_extraction=True)
    JobSpec(task="read the prices", auto_recipe="read", llm_extraction=True)
